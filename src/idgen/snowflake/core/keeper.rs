//! The lease side of a generator without a fixed worker id: renewing it, and when another node
//! took it over, claiming a new worker id in the background and switching every sequence space
//! to it.

use crate::idgen::store_pool::StorePool;
use std::sync::atomic::Ordering::*;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rand::Rng;

use super::{lock, Core};
use crate::idgen::clock::Clock;
use crate::idgen::config::SnowflakeConfig;
use crate::idgen::error::{IdGenError, Result};
use crate::idgen::metrics::Metrics;
use crate::idgen::snowflake::layout::Layout;
use crate::idgen::snowflake::lease::{Lease, LeaseSettings, Leaser, Window};

/// The lease side of a generator without a fixed worker id.
pub(super) struct Leased {
    leaser: Arc<Leaser>,
    /// Read on every take: may the node issue now?
    pub(super) window: Arc<Window>,
    /// The lease held now (or the one lost, until a new one is claimed).
    current: Mutex<Arc<Lease>>,
    /// What a take that finds the window closed tells its caller.
    state: Mutex<LeaseState>,
    pub(super) every: Duration,
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

impl Leased {
    /// Claims a first worker id; returns the lease side and the tick to issue strictly after.
    pub(super) async fn claim(
        name: &str,
        cfg: &SnowflakeConfig,
        layout: &Layout,
        pool: StorePool,
        clock: &Arc<dyn Clock>,
    ) -> Result<(Leased, u64)> {
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
        let start_after = first_tick(layout, &lease, None);
        let leased = Leased {
            window: leaser.window().clone(),
            leaser,
            current: Mutex::new(Arc::new(lease)),
            state: Mutex::new(LeaseState::Held),
            every: Duration::from_millis(cfg.heartbeat_ms),
        };
        Ok((leased, start_after))
    }

    pub(super) fn worker(&self) -> u64 {
        lock(&self.current).worker_id
    }

    /// Stops issuing for good (shutdown); a claim still under way is never opened.
    pub(super) fn stop(&self) {
        *lock(&self.state) = LeaseState::ShutDown;
        self.window.revoke();
    }

    /// The lease held now (or the one lost).
    pub(super) fn current(&self) -> Arc<Lease> {
        lock(&self.current).clone()
    }
}

impl Core {
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
    pub(super) fn closed(&self) -> IdGenError {
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
}

/// The tick a new owner of `lease`'s worker id issues strictly after: the previous owner's
/// recorded last timestamp, or this node's own highest tick when it gets its old id back.
fn first_tick(layout: &Layout, lease: &Lease, own_high: Option<u64>) -> u64 {
    let recorded = layout.tick_of(lease.previous_last_ms);
    recorded.max(own_high.unwrap_or(0)).min(layout.max_tick())
}

/// Renews the lease every `every`; when another node took it over, claims a new worker id.
pub(super) async fn keep_lease(core: Weak<Core>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(c) = core.upgrade() else { return };
        let Some(l) = &c.lease else { return };
        let lease = l.current();
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
                if !matches!(e, IdGenError::WorkerIdsExhausted { .. }) {
                    Metrics::add(&c.metrics.store_errors, 1);
                }
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
