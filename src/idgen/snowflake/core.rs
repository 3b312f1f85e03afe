//! The shared engine of snowflake kinds: the worker identity (fixed or leased, with heartbeat),
//! the clock checks, and `Sequencer`, a lock-free (tick, next sequence) pair per sequence space.

use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;

use super::layout::Layout;
use super::lease::{Lease, LeaseSettings};
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
    pub worker: u64,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<Metrics>,
    lease: Option<Arc<Lease>>,
    heartbeat: Mutex<Option<JoinHandle<()>>>,
    /// Highest clock tick seen; a lower reading means the clock went back.
    seen: AtomicU64,
    /// Highest tick issued (persisted with heartbeats and at release).
    high: AtomicU64,
    /// Tick after which this node may issue (recorded by the previous owner of the worker id).
    pub start_after: u64,
    max_backward_wait_ms: u64,
    max_borrow_ticks: u64,
    seq_start: SequenceStart,
}

impl Core {
    pub async fn start(
        name: &str,
        cfg: &SnowflakeConfig,
        layout: Layout,
        pool: Option<&mysql_async::Pool>,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<Core>> {
        let (worker, lease) = match cfg.worker_id {
            Some(w) => (w, None),
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
                let lease = Lease::claim(pool, clock.clone(), settings).await?;
                (lease.worker_id, Some(Arc::new(lease)))
            }
        };
        let start_after = lease
            .as_ref()
            .map(|l| layout.tick_of(l.previous_last_ms))
            .unwrap_or(0);
        metrics.worker_id.store(worker, Relaxed);
        tracing::info!(
            generator = name,
            worker,
            start_after,
            "snowflake worker id acquired"
        );
        let core = Arc::new(Core {
            name: name.to_string(),
            layout,
            worker,
            clock,
            metrics,
            lease,
            heartbeat: Mutex::new(None),
            seen: AtomicU64::new(start_after),
            high: AtomicU64::new(start_after),
            start_after,
            max_backward_wait_ms: cfg.max_backward_wait_ms,
            max_borrow_ticks: cfg.max_borrow_ms / layout.unit.ms(),
            seq_start: cfg.sequence_start,
        });
        if core.lease.is_some() {
            let every = Duration::from_millis(cfg.heartbeat_ms);
            let task = tokio::spawn(heartbeat(Arc::downgrade(&core), every));
            *core.heartbeat.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
        }
        Ok(core)
    }

    /// Unix ms of the highest issued tick.
    pub fn last_issued_ms(&self) -> u64 {
        self.layout.epoch_ms + self.layout.ticks_ms(self.high.load(Acquire))
    }

    /// Stops issuing and releases the worker lease (recording the last issued timestamp).
    pub async fn shutdown(&self) {
        if let Some(t) = self
            .heartbeat
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            t.abort();
        }
        if let Some(l) = &self.lease {
            l.revoke();
            // Let a take that passed the lease check before the revoke finish its CAS.
            tokio::time::sleep(Duration::from_millis(2)).await;
            if let Err(e) = l.release(self.last_issued_ms()).await {
                tracing::warn!(generator = %self.name, error = %e, "could not release the worker lease; it expires by itself");
            }
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

async fn heartbeat(core: std::sync::Weak<Core>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(core) = core.upgrade() else { return };
        let Some(lease) = core.lease.clone() else {
            return;
        };
        match lease.renew(core.last_issued_ms()).await {
            Ok(true) => Metrics::add(&core.metrics.lease_renewals, 1),
            Ok(false) => {
                tracing::error!(generator = %core.name, worker = core.worker, "worker lease was taken over by another node; this generator stops issuing");
                return;
            }
            Err(e) => {
                Metrics::add(&core.metrics.store_errors, 1);
                tracing::warn!(generator = %core.name, error = %e, "worker lease renewal failed; retrying");
            }
        }
    }
}

/// A (tick, next sequence) pair packed in one atomic: `tick << (sequence_bits + 1) | next`.
pub struct Sequencer {
    state: AtomicU64,
}

impl Sequencer {
    /// A sequencer whose next ID lies strictly after `tick`.
    pub fn after(core: &Core) -> Sequencer {
        let s = core.layout.sequence_bits + 1;
        Sequencer {
            state: AtomicU64::new((core.start_after << s) | core.layout.seq_capacity()),
        }
    }

    /// Reserves `n` consecutive sequence numbers in one tick: returns (tick, first sequence).
    #[inline]
    pub fn take(&self, core: &Core, n: u64) -> std::result::Result<(u64, u64), Step> {
        let l = &core.layout;
        let cap = l.seq_capacity();
        if n > cap {
            return Err(core.fail(IdGenError::BlockTooLarge {
                name: core.name.clone(),
                requested: n,
                max: cap,
            }));
        }
        let bits = l.sequence_bits + 1;
        loop {
            if let Some(lease) = &core.lease {
                if !lease.valid(core.clock.mono_ns()) {
                    return Err(core.fail(IdGenError::LeaseExpired {
                        name: core.name.clone(),
                        worker_id: core.worker,
                    }));
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
            let cur = self.state.load(Acquire);
            let (last, next) = (cur >> bits, cur & ((1u64 << bits) - 1));
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
            let new = (tick << bits) | (seq + n);
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
                return Ok((tick, seq));
            }
        }
    }
}
