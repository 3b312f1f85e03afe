//! Worker-id leases in `idgate_workers`, timed by the store's clock. A node claims a free or
//! expired worker id, renews it with heartbeats (recording its last issued timestamp), and
//! releases it on a clean shutdown. Locally, the lease counts as valid only until
//! `ttl - safety` after the start of the last successful renewal, measured on the monotonic
//! clock, so the node stops issuing before the store could hand the id to another node.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

use crate::idgen::store_pool::StorePool;
use mysql_async::prelude::*;
use rand::Rng;

use crate::idgen::clock::Clock;
use crate::idgen::error::{IdGenError, Result};
use crate::idgen::store::{bounded, DB_NOW_MS};

const CREATE: &str = "CREATE TABLE IF NOT EXISTS idgate_workers (
    lease_group VARCHAR(128) NOT NULL,
    worker_id INT UNSIGNED NOT NULL,
    owner VARCHAR(64) NULL,
    lease_until_ms BIGINT NOT NULL DEFAULT 0,
    last_ms BIGINT NOT NULL DEFAULT 0,
    renewals BIGINT UNSIGNED NOT NULL DEFAULT 0,
    updated_at TIMESTAMP(3) NULL,
    PRIMARY KEY (lease_group, worker_id)
) ENGINE=InnoDB";

#[derive(Clone)]
pub struct LeaseSettings {
    pub name: String,
    pub group: String,
    pub capacity: u64,
    pub ttl: Duration,
    pub safety: Duration,
    pub timeout: Duration,
}

/// Until when (monotonic ns) the node may issue under its current lease. One per generator,
/// shared by every lease it holds over time, so the take path reads a single atomic.
#[derive(Debug, Default)]
pub struct Window {
    until_ns: AtomicU64,
}

impl Window {
    #[inline]
    pub fn valid(&self, now_ns: u64) -> bool {
        now_ns < self.until_ns.load(Acquire)
    }

    /// Monotonic ns until which the node may issue (0 when revoked).
    pub fn until_ns(&self) -> u64 {
        self.until_ns.load(Acquire)
    }

    /// Stops issuing at once (shutdown, or the lease was taken over).
    pub fn revoke(&self) {
        self.until_ns.store(0, Release);
    }

    fn extend_to(&self, until_ns: u64) {
        self.until_ns.fetch_max(until_ns, AcqRel);
    }
}

/// Claims worker ids for one generator, as often as it needs them.
pub struct Leaser {
    pool: StorePool,
    clock: Arc<dyn Clock>,
    s: LeaseSettings,
    window: Arc<Window>,
    table_ready: AtomicBool,
}

pub struct Lease {
    pub worker_id: u64,
    /// Last issued timestamp (Unix ms) recorded by the previous owner of this worker id.
    pub previous_last_ms: u64,
    /// Monotonic ns when the claim was sent: the lease runs from there.
    claimed_ns: u64,
    owner: String,
    leaser: Arc<Leaser>,
}

impl Leaser {
    pub fn new(pool: StorePool, clock: Arc<dyn Clock>, s: LeaseSettings) -> Arc<Leaser> {
        Arc::new(Leaser {
            pool,
            clock,
            s,
            window: Arc::new(Window::default()),
            table_ready: AtomicBool::new(false),
        })
    }

    pub fn window(&self) -> &Arc<Window> {
        &self.window
    }

    /// Claims a free or expired worker id under a fresh owner token. The lease does not count
    /// locally until [`Lease::open`]: the caller first sets up the id's timeline.
    pub async fn claim(self: &Arc<Self>) -> Result<Lease> {
        let s = &self.s;
        let name = s.name.clone();
        let owner = format!(
            "{}-{:016x}",
            std::process::id(),
            rand::rng().random::<u64>()
        );
        let mut conn = bounded(&name, "connecting", s.timeout, self.pool.get_conn()).await?;
        if !self.table_ready.load(Acquire) {
            bounded(
                &name,
                "creating idgate_workers",
                s.timeout,
                conn.query_drop(CREATE),
            )
            .await?;
            self.table_ready.store(true, Release);
        }
        let claim = format!(
            "UPDATE idgate_workers SET owner = ?, lease_until_ms = {DB_NOW_MS} + ?, \
             renewals = renewals + 1, updated_at = NOW(3) \
             WHERE lease_group = ? AND worker_id < ? AND (owner IS NULL OR lease_until_ms < {DB_NOW_MS}) \
             ORDER BY lease_until_ms, worker_id LIMIT 1"
        );
        let ttl_ms = s.ttl.as_millis() as u64;
        for _ in 0..16 {
            let sent = self.clock.mono_ns();
            bounded(
                &name,
                "claiming a worker id",
                s.timeout,
                conn.exec_drop(&claim, (&owner, ttl_ms, &s.group, s.capacity)),
            )
            .await?;
            if conn.affected_rows() == 1 {
                let row: Option<(u64, i64)> = bounded(
                    &name,
                    "reading the claimed worker id",
                    s.timeout,
                    conn.exec_first(
                        "SELECT worker_id, last_ms FROM idgate_workers WHERE lease_group = ? AND owner = ?",
                        (&s.group, &owner),
                    ),
                )
                .await?;
                let Some((worker_id, last_ms)) = row else {
                    return Err(IdGenError::StoreProtocol {
                        name,
                        detail: "the claimed worker id vanished".into(),
                    });
                };
                return Ok(Lease {
                    worker_id,
                    previous_last_ms: last_ms.max(0) as u64,
                    claimed_ns: sent,
                    owner,
                    leaser: self.clone(),
                });
            }
            // No free or expired id: add the next one, unless the space is full.
            let next: Option<u64> = bounded(
                &name,
                "counting worker ids",
                s.timeout,
                conn.exec_first(
                    "SELECT CAST(COALESCE(MAX(worker_id) + 1, 0) AS UNSIGNED) FROM idgate_workers \
                     WHERE lease_group = ? AND worker_id < ?",
                    (&s.group, s.capacity),
                ),
            )
            .await?;
            let next = next.unwrap_or(0);
            if next >= s.capacity {
                return Err(IdGenError::WorkerIdsExhausted {
                    name,
                    capacity: s.capacity,
                });
            }
            bounded(
                &name,
                "adding a worker id",
                s.timeout,
                conn.exec_drop(
                    "INSERT IGNORE INTO idgate_workers (lease_group, worker_id, owner, lease_until_ms, last_ms) \
                     VALUES (?, ?, NULL, 0, 0)",
                    (&s.group, next),
                ),
            )
            .await?;
        }
        Err(IdGenError::WorkerIdsExhausted {
            name,
            capacity: s.capacity,
        })
    }

    /// How long a renewal sent at `sent_ns` lets the node issue.
    fn until(&self, sent_ns: u64) -> u64 {
        let ok = self.s.ttl.saturating_sub(self.s.safety).as_nanos() as u64;
        sent_ns.saturating_add(ok)
    }
}

impl Lease {
    /// Lets the node issue under this lease (from the time the claim was sent).
    pub fn open(&self) {
        let l = &self.leaser;
        l.window.extend_to(l.until(self.claimed_ns));
    }

    /// Renews the lease and records `last_ms`. `Ok(false)`: another node owns the id now.
    pub async fn renew(&self, last_ms: u64) -> Result<bool> {
        let l = &self.leaser;
        let sent = l.clock.mono_ns();
        let name = &l.s.name;
        let mut conn = bounded(name, "connecting", l.s.timeout, l.pool.get_conn()).await?;
        let sql = format!(
            "UPDATE idgate_workers SET lease_until_ms = {DB_NOW_MS} + ?, last_ms = GREATEST(last_ms, ?), \
             renewals = renewals + 1, updated_at = NOW(3) \
             WHERE lease_group = ? AND worker_id = ? AND owner = ?"
        );
        bounded(
            name,
            "renewing the worker lease",
            l.s.timeout,
            conn.exec_drop(
                sql,
                (
                    l.s.ttl.as_millis() as u64,
                    last_ms,
                    &l.s.group,
                    self.worker_id,
                    &self.owner,
                ),
            ),
        )
        .await?;
        if conn.affected_rows() == 1 {
            l.window.extend_to(l.until(sent));
            Ok(true)
        } else {
            l.window.revoke();
            Ok(false)
        }
    }

    /// Gives the id back, recording `last_ms` for its next owner.
    pub async fn release(&self, last_ms: u64) -> Result<()> {
        let l = &self.leaser;
        l.window.revoke();
        let name = &l.s.name;
        let mut conn = bounded(name, "connecting", l.s.timeout, l.pool.get_conn()).await?;
        bounded(
            name,
            "releasing the worker lease",
            l.s.timeout,
            conn.exec_drop(
                "UPDATE idgate_workers SET owner = NULL, lease_until_ms = 0, last_ms = GREATEST(last_ms, ?), \
                 updated_at = NOW(3) WHERE lease_group = ? AND worker_id = ? AND owner = ?",
                (last_ms, &l.s.group, self.worker_id, &self.owner),
            ),
        )
        .await?;
        Ok(())
    }
}
