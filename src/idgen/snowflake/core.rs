//! The shared engine of snowflake kinds: the worker identity (fixed or leased, with heartbeat,
//! and claimed anew when another node took the lease over), the clock checks, and `Sequencer`,
//! a lock-free (tick, worker, next sequence) triple per sequence space.

use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;

use super::layout::Layout;
use super::lease::{Lease, LeaseSettings, Leaser, Window};
use crate::idgen::clock::Clock;
use crate::idgen::config::{SequenceStart, SnowflakeConfig};
use crate::idgen::error::{IdGenError, Result};
use crate::idgen::metrics::Metrics;

/// Why a take did not succeed right away.
pub enum Step {
    /// Try again after this wait (bounded by `max_backward_wait`).
    Wait(Duration),
    Fail(IdGenError),
}

pub struct Core {
    pub name: String,
    pub layout: Layout,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<Metrics>,
    /// The worker id issued under now (reporting only: takes read it from their sequencer).
    worker: AtomicU64,
    /// One sequencer per sequence space (one, or one per slot of a biased generator).
    seqs: Box<[Sequencer]>,
    lease: Option<Leased>,
    heartbeat: Mutex<Option<JoinHandle<()>>>,
    /// Highest clock tick seen; a lower reading means the clock went back.
    seen: AtomicU64,
    /// Highest tick issued (persisted with heartbeats and at release).
    high: AtomicU64,
    max_backward_wait_ms: u64,
    max_borrow_ticks: u64,
    seq_start: SequenceStart,
}

/// The lease side of a generator without a fixed worker id.
struct Leased {
    leaser: Arc<Leaser>,
    /// Read on every take: may the node issue now?
    window: Arc<Window>,
    /// The lease held now (or the one lost, until a new one is claimed).
    current: Mutex<Arc<Lease>>,
    /// What a take that finds the window closed tells its caller.
    state: Mutex<LeaseState>,
    every: Duration,
}

enum LeaseState {
    Held,
    /// Taken over by another node; claiming a new worker id.
    Lost {
        worker: u64,
        last_error: String,
    },
    ShutDown,
}

impl Core {
    /// Starts a generator's engine with `spaces` sequence spaces.
    pub async fn start(
        name: &str,
        cfg: &SnowflakeConfig,
        layout: Layout,
        spaces: usize,
        pool: Option<&mysql_async::Pool>,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<Core>> {
        let (worker, start_after, lease) = match cfg.worker_id {
            Some(w) => (w, 0, None),
            None => {
                let pool = pool.cloned().ok_or_else(|| IdGenError::NoStore {
                    name: name.to_string(),
                })?;
                let settings = LeaseSettings {
                    name: name.to_string(),
                    group: cfg.lease_group.clone().unwrap_or_else(|| name.to_string()),
                    capacity: layout.worker_capacity(),
                    ttl: Duration::from_millis(cfg.lease_ttl_ms),
                    safety: Duration::from_millis(cfg.lease_safety_ms),
                    timeout: Duration::from_millis(cfg.store_timeout_ms),
                };
                let leaser = Leaser::new(pool, clock.clone(), settings);
                let lease = leaser.claim().await?;
                lease.open();
                let start_after = first_tick(&layout, &lease, None);
                let leased = Leased {
                    window: leaser.window().clone(),
                    leaser,
                    current: Mutex::new(Arc::new(lease)),
                    state: Mutex::new(LeaseState::Held),
                    every: Duration::from_millis(cfg.heartbeat_ms),
                };
                (leased.worker(), start_after, Some(leased))
            }
        };
        metrics.worker_id.store(worker, Relaxed);
        tracing::info!(
            generator = name,
            worker,
            start_after,
            "snowflake worker id acquired"
        );
        let seqs = (0..spaces)
            .map(|_| Sequencer::new(&layout, start_after, worker))
            .collect();
        let core = Arc::new(Core {
            name: name.to_string(),
            layout,
            clock,
            metrics,
            worker: AtomicU64::new(worker),
            seqs,
            lease,
            heartbeat: Mutex::new(None),
            seen: AtomicU64::new(start_after),
            high: AtomicU64::new(start_after),
            max_backward_wait_ms: cfg.max_backward_wait_ms,
            max_borrow_ticks: cfg.max_borrow_ms / layout.unit.ms(),
            seq_start: cfg.sequence_start,
        });
        if let Some(l) = &core.lease {
            let task = tokio::spawn(keep_lease(Arc::downgrade(&core), l.every));
            *lock(&core.heartbeat) = Some(task);
        }
        Ok(core)
    }

    /// The worker id issued under now.
    pub fn worker_id(&self) -> u64 {
        self.worker.load(Relaxed)
    }

    /// Unix ms of the highest issued tick.
    pub fn last_issued_ms(&self) -> u64 {
        self.layout.epoch_ms + self.layout.ticks_ms(self.high.load(Acquire))
    }

    /// Stops issuing and releases the worker lease (recording the last issued timestamp).
    pub async fn shutdown(&self) {
        if let Some(t) = lock(&self.heartbeat).take() {
            t.abort();
        }
        if let Some(l) = &self.lease {
            *lock(&l.state) = LeaseState::ShutDown;
            l.window.revoke();
            // Let a take that passed the lease check before the revoke finish its CAS.
            tokio::time::sleep(Duration::from_millis(2)).await;
            let lease = lock(&l.current).clone();
            if let Err(e) = lease.release(self.last_issued_ms()).await {
                tracing::warn!(generator = %self.name, error = %e, "could not release the worker lease; it expires by itself");
            }
        }
    }

    /// Reserves `n` consecutive sequence numbers in one tick of sequence space `space`:
    /// returns (tick, worker, first sequence).
    #[inline]
    pub fn take(&self, space: usize, n: u64) -> std::result::Result<(u64, u64, u64), Step> {
        self.seqs[space].take(self, n)
    }

    /// Moves every sequence space to the worker id of `lease` (claimed after the previous one
    /// was taken over), then opens the lease. Runs with the window closed: a take that loaded
    /// the old worker's state fails its CAS, and none starts until `open`.
    fn switch_to(&self, l: &Leased, lease: Lease) {
        // Under the state lock, so a concurrent shutdown either sees the new lease (and releases
        // it) or keeps it closed.
        let mut state = lock(&l.state);
        if matches!(*state, LeaseState::ShutDown) {
            return; // never opened; the claim expires by itself
        }
        let old = self.worker_id();
        let new = lease.worker_id;
        // Getting the old id back: continue after this node's own last tick too.
        let own_high = (new == old).then(|| {
            let seqs = self.seqs.iter().map(|s| s.tick(&self.layout));
            seqs.fold(self.high.load(Acquire), u64::max)
        });
        let start_after = first_tick(&self.layout, &lease, own_high);
        self.seen.fetch_max(start_after, AcqRel);
        self.high.fetch_max(start_after, AcqRel);
        for s in self.seqs.iter() {
            s.restart(&self.layout, start_after, new);
        }
        self.worker.store(new, Relaxed);
        self.metrics.worker_id.store(new, Relaxed);
        Metrics::add(&self.metrics.lease_reacquisitions, 1);
        *state = LeaseState::Held;
        lease.open();
        *lock(&l.current) = Arc::new(lease);
        tracing::info!(
            generator = %self.name,
            old_worker = old,
            new_worker = new,
            start_after,
            "snowflake generator claimed a new worker id and issues again"
        );
    }

    /// The error of a take that found the lease window closed.
    #[cold]
    fn closed(&self) -> IdGenError {
        let name = self.name.clone();
        let worker_id = self.worker_id();
        let Some(l) = &self.lease else {
            return IdGenError::LeaseExpired { name, worker_id };
        };
        match &*lock(&l.state) {
            LeaseState::Held => IdGenError::LeaseExpired { name, worker_id },
            LeaseState::Lost { worker, last_error } => IdGenError::LeaseLost {
                name,
                worker_id: *worker,
                last_error: last_error.clone(),
            },
            LeaseState::ShutDown => IdGenError::ShutDown { name },
        }
    }

    fn start_seq(&self, tick: u64, n: u64) -> u64 {
        let cap = self.layout.seq_capacity();
        let span = (cap / 16).max(1);
        let s = match self.seq_start {
            SequenceStart::Zero => 0,
            SequenceStart::Rotating => tick % span,
            SequenceStart::Random => rand::rng().random_range(0..span),
        };
        if s + n > cap {
            0
        } else {
            s
        }
    }

    fn fail(&self, e: IdGenError) -> Step {
        Step::Fail(e)
    }

    /// Waits for `Step::Wait`s (bounded) until `f` succeeds or fails.
    pub async fn with_waits<T>(
        &self,
        mut f: impl FnMut() -> std::result::Result<T, Step>,
    ) -> Result<T> {
        let budget = Duration::from_millis(self.max_backward_wait_ms * 4 + 20);
        let mut waited = Duration::ZERO;
        loop {
            match f() {
                Ok(v) => return Ok(v),
                Err(Step::Fail(e)) => return Err(e),
                Err(Step::Wait(d)) => {
                    if waited >= budget {
                        return Err(IdGenError::ClockBehind {
                            name: self.name.clone(),
                            behind: d,
                        });
                    }
                    self.clock.sleep(d).await;
                    waited += d;
                }
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tick a new owner of `lease`'s worker id issues strictly after: the previous owner's
/// recorded last timestamp, or this node's own highest tick when it gets its old id back.
fn first_tick(layout: &Layout, lease: &Lease, own_high: Option<u64>) -> u64 {
    let recorded = layout.tick_of(lease.previous_last_ms);
    recorded.max(own_high.unwrap_or(0)).min(layout.max_tick())
}

impl Leased {
    fn worker(&self) -> u64 {
        lock(&self.current).worker_id
    }
}

/// Renews the lease every `every`; when another node took it over, claims a new worker id.
async fn keep_lease(core: Weak<Core>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(c) = core.upgrade() else { return };
        let Some(l) = &c.lease else { return };
        let lease = lock(&l.current).clone();
        match lease.renew(c.last_issued_ms()).await {
            Ok(true) => Metrics::add(&c.metrics.lease_renewals, 1),
            Ok(false) => {
                tracing::warn!(
                    generator = %c.name,
                    worker = lease.worker_id,
                    "worker lease was taken over by another node (it lapsed, e.g. while the sequence store was out of reach); stopped issuing with it and claiming a new worker id"
                );
                {
                    let mut state = lock(&l.state);
                    if matches!(*state, LeaseState::ShutDown) {
                        return;
                    }
                    *state = LeaseState::Lost {
                        worker: lease.worker_id,
                        last_error: "none yet".into(),
                    };
                }
                c.metrics.worker_id.store(u64::MAX, Relaxed);
                drop(c);
                if !reclaim(&core, every).await {
                    return;
                }
            }
            Err(e) => {
                Metrics::add(&c.metrics.store_errors, 1);
                tracing::warn!(generator = %c.name, error = %e, "worker lease renewal failed; retrying");
            }
        }
    }
}

/// Claims a new worker id, retrying with backoff until it succeeds (true) or the generator is
/// gone (false). Each attempt is bounded by the store timeout.
async fn reclaim(core: &Weak<Core>, every: Duration) -> bool {
    let max = every.max(Duration::from_secs(1));
    let mut backoff = every.min(Duration::from_millis(250));
    loop {
        let Some(c) = core.upgrade() else {
            return false;
        };
        let Some(l) = &c.lease else { return false };
        match l.leaser.claim().await {
            Ok(lease) => {
                c.switch_to(l, lease);
                return true;
            }
            Err(e) => {
                Metrics::add(&c.metrics.store_errors, 1);
                tracing::warn!(generator = %c.name, error = %e, retry_in = ?backoff, "could not claim a new worker id yet; retrying");
                if let LeaseState::Lost { last_error, .. } = &mut *lock(&l.state) {
                    *last_error = e.to_string();
                }
            }
        }
        drop(c);
        // Jitter keeps nodes that lost their leases together from claiming in lockstep.
        let jitter = rand::rng().random_range(0..=backoff.as_millis() as u64 / 4);
        tokio::time::sleep(backoff + Duration::from_millis(jitter)).await;
        backoff = (backoff * 2).min(max);
    }
}

/// A (tick, worker, next sequence) triple packed in one atomic:
/// `tick << (worker_bits + sequence_bits + 1) | worker << (sequence_bits + 1) | next`
/// (it fits: the layout's bits sum to at most 63). Keeping the worker id in the same word as
/// its timeline means a take can never pair one worker's timeline with another worker id.
pub struct Sequencer {
    state: AtomicU64,
}

/// Shifts of the packed fields: (tick, worker).
#[inline]
fn shifts(l: &Layout) -> (u32, u32) {
    let w = l.sequence_bits + 1;
    (w + l.worker_bits, w)
}

impl Sequencer {
    /// A sequencer for `worker` whose next ID lies strictly after `tick`.
    pub fn new(l: &Layout, tick: u64, worker: u64) -> Sequencer {
        Sequencer {
            state: AtomicU64::new(Self::spent(l, tick, worker)),
        }
    }

    /// The state "tick `tick` of `worker` is used up".
    fn spent(l: &Layout, tick: u64, worker: u64) -> u64 {
        let (t, w) = shifts(l);
        (tick << t) | (worker << w) | l.seq_capacity()
    }

    /// The last tick reserved.
    fn tick(&self, l: &Layout) -> u64 {
        self.state.load(Acquire) >> shifts(l).0
    }

    /// Moves to `worker`'s timeline, strictly after `tick`. A concurrent take that loaded the
    /// old state fails its CAS and starts over (the states differ: another worker, or the same
    /// worker strictly later).
    fn restart(&self, l: &Layout, tick: u64, worker: u64) {
        self.state.store(Self::spent(l, tick, worker), Release);
    }

    /// Reserves `n` consecutive sequence numbers in one tick: returns (tick, worker, first
    /// sequence).
    #[inline]
    pub fn take(&self, core: &Core, n: u64) -> std::result::Result<(u64, u64, u64), Step> {
        let l = &core.layout;
        let cap = l.seq_capacity();
        if n > cap {
            return Err(core.fail(IdGenError::BlockTooLarge {
                name: core.name.clone(),
                requested: n,
                max: cap,
            }));
        }
        let (tbits, wbits) = shifts(l);
        let wmask = (1u64 << l.worker_bits) - 1;
        loop {
            // Load the state before checking the lease: a CAS that succeeds then proves the
            // state (and its worker id) did not change since a moment the lease was valid.
            let cur = self.state.load(Acquire);
            if let Some(lease) = &core.lease {
                if !lease.window.valid(core.clock.mono_ns()) {
                    return Err(core.fail(core.closed()));
                }
            }
            // Load `seen` before reading the clock, so a concurrent reader's later tick is no
            // false "backwards".
            let seen = core.seen.load(Acquire);
            let now = l.tick_of(core.clock.wall_ms());
            if now < seen {
                Metrics::add(&core.metrics.clock_backwards, 1);
                let back = l.ticks_ms(seen - now);
                if back <= core.max_backward_wait_ms {
                    return Err(Step::Wait(Duration::from_millis(back)));
                }
            } else if now > seen {
                core.seen.fetch_max(now, AcqRel);
            }
            let (last, worker, next) = (
                cur >> tbits,
                (cur >> wbits) & wmask,
                cur & ((1u64 << wbits) - 1),
            );
            let (mut tick, mut seq) = if now > last {
                (now, core.start_seq(now, n))
            } else {
                (last, next)
            };
            let mut waste = 0;
            if seq + n > cap {
                // This tick is spent: borrow the next one.
                waste = cap - seq;
                tick += 1;
                seq = core.start_seq(tick, n);
            }
            if tick > now + core.max_borrow_ticks {
                let excess = l.ticks_ms(tick - now - core.max_borrow_ticks);
                if excess <= core.max_backward_wait_ms {
                    return Err(Step::Wait(Duration::from_millis(excess.max(1))));
                }
                return Err(core.fail(IdGenError::ClockBehind {
                    name: core.name.clone(),
                    behind: Duration::from_millis(l.ticks_ms(tick - now)),
                }));
            }
            if tick > l.max_tick() {
                return Err(core.fail(IdGenError::LayoutExhausted {
                    name: core.name.clone(),
                    ends: super::layout::format_ms(l.end_ms()),
                }));
            }
            let new = (tick << tbits) | (worker << wbits) | (seq + n);
            if self
                .state
                .compare_exchange(cur, new, AcqRel, Acquire)
                .is_ok()
            {
                if tick > last {
                    core.high.fetch_max(tick, AcqRel);
                    if tick > now {
                        Metrics::add(&core.metrics.borrowed_ticks, 1);
                    }
                }
                if waste > 0 {
                    Metrics::add(&core.metrics.wasted_ids, waste);
                }
                return Ok((tick, worker, seq));
            }
        }
    }
}
