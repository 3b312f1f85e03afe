//! The shared engine of snowflake kinds: the worker identity (fixed or leased, with heartbeat,
//! and claimed anew when another node took the lease over), the clock checks, and `Sequencer`,
//! a lock-free (tick, worker, next sequence) triple per sequence space.

use crate::idgen::store_pool::StorePool;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;

use self::keeper::Leased;
use super::layout::Layout;
use crate::idgen::clock::Clock;
use crate::idgen::config::{SequenceStart, SnowflakeConfig};
use crate::idgen::error::{IdGenError, Result};
use crate::idgen::metrics::Metrics;

mod keeper;
#[cfg(test)]
mod tests;

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

impl Core {
    /// Starts a generator's engine with `spaces` sequence spaces.
    pub async fn start(
        name: &str,
        cfg: &SnowflakeConfig,
        layout: Layout,
        spaces: usize,
        pool: Option<&StorePool>,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<Core>> {
        let (worker, start_after, lease) = match cfg.worker_id {
            Some(w) => (w, 0, None),
            None => {
                let pool = pool.cloned().ok_or_else(|| IdGenError::NoStore {
                    name: name.to_string(),
                })?;
                let (leased, start_after) = Leased::claim(name, cfg, &layout, pool, &clock).await?;
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
            let task = tokio::spawn(keeper::keep_lease(Arc::downgrade(&core), l.every));
            *lock(&core.heartbeat) = Some(task);
        }
        Ok(core)
    }

    /// The worker id issued under now.
    pub fn worker_id(&self) -> u64 {
        self.worker.load(Relaxed)
    }

    /// A leased worker id's state: ms left before the node must stop issuing (0 when it may not
    /// issue now) and, when it may not, why. `None` for a fixed worker id.
    pub fn lease_status(&self) -> Option<(u64, Option<String>)> {
        let l = self.lease.as_ref()?;
        let now = self.clock.mono_ns();
        let left_ms = l.window.until_ns().saturating_sub(now) / 1_000_000;
        let why = (!l.window.valid(now)).then(|| self.closed().to_string());
        Some((left_ms, why))
    }

    /// How far (ms) the highest issued timestamp runs ahead of the clock: ticks borrowed from
    /// the future after a burst or a clock that went back.
    pub fn borrowed_ms(&self) -> u64 {
        let now = self.layout.tick_of(self.clock.wall_ms());
        self.layout
            .ticks_ms(self.high.load(Acquire).saturating_sub(now))
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
            l.stop();
            // Let a take that passed the lease check before the revoke finish its CAS.
            tokio::time::sleep(Duration::from_millis(2)).await;
            let lease = l.current();
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
            // The lease is checked after the clock is read: a valid lease then vouches for the
            // tick too (a take stalled between them cannot stamp a later tick).
            if let Some(lease) = &core.lease {
                if !lease.window.valid(core.clock.mono_ns()) {
                    return Err(core.fail(core.closed()));
                }
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
