//! Worker-id leases in `idgate_workers`, timed by the store's clock. A node claims a free or
//! expired worker id, renews it with heartbeats (recording its last issued timestamp), and
//! releases it on a clean shutdown. Locally, the lease counts as valid only until
//! `ttl - safety` after the start of the last successful renewal, measured on the monotonic
//! clock, so the node stops issuing before the store could hand the id to another node.

use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::*;
use mysql_async::Pool;
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

pub struct LeaseSettings {
    pub name: String,
    pub group: String,
    pub capacity: u64,
    pub ttl: Duration,
    pub safety: Duration,
    pub timeout: Duration,
}

pub struct Lease {
    pub worker_id: u64,
    /// Last issued timestamp (Unix ms) recorded by the previous owner of this worker id.
    pub previous_last_ms: u64,
    valid_until_ns: AtomicU64,
    owner: String,
    pool: Pool,
    clock: Arc<dyn Clock>,
    s: LeaseSettings,
}

impl Lease {
    pub async fn claim(pool: Pool, clock: Arc<dyn Clock>, s: LeaseSettings) -> Result<Lease> {
        let name = s.name.clone();
        let owner = format!(
            "{}-{:016x}",
            std::process::id(),
            rand::rng().random::<u64>()
        );
        let mut conn = bounded(&name, "connecting", s.timeout, pool.get_conn()).await?;
        bounded(
            &name,
            "creating idgate_workers",
            s.timeout,
            conn.query_drop(CREATE),
        )
        .await?;
        let claim = format!(
            "UPDATE idgate_workers SET owner = ?, lease_until_ms = {DB_NOW_MS} + ?, \
             renewals = renewals + 1, updated_at = NOW(3) \
             WHERE lease_group = ? AND worker_id < ? AND (owner IS NULL OR lease_until_ms < {DB_NOW_MS}) \
             ORDER BY lease_until_ms, worker_id LIMIT 1"
        );
        let ttl_ms = s.ttl.as_millis() as u64;
        for _ in 0..16 {
            let sent = clock.mono_ns();
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
                let lease = Lease {
                    worker_id,
                    previous_last_ms: last_ms.max(0) as u64,
                    valid_until_ns: AtomicU64::new(0),
                    owner,
                    pool: pool.clone(),
                    clock,
                    s,
                };
                lease.extend_from(sent);
                return Ok(lease);
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

    fn extend_from(&self, sent_ns: u64) {
        let ok = self.s.ttl.saturating_sub(self.s.safety).as_nanos() as u64;
        self.valid_until_ns
            .fetch_max(sent_ns.saturating_add(ok), AcqRel);
    }

    #[inline]
    pub fn valid(&self, now_ns: u64) -> bool {
        now_ns < self.valid_until_ns.load(Acquire)
    }

    /// Stops issuing at once (shutdown, or the lease was taken over).
    pub fn revoke(&self) {
        self.valid_until_ns.store(0, Release);
    }

    /// Renews the lease and records `last_ms`. `Ok(false)`: another node owns the id now.
    pub async fn renew(&self, last_ms: u64) -> Result<bool> {
        let sent = self.clock.mono_ns();
        let name = &self.s.name;
        let mut conn = bounded(name, "connecting", self.s.timeout, self.pool.get_conn()).await?;
        let sql = format!(
            "UPDATE idgate_workers SET lease_until_ms = {DB_NOW_MS} + ?, last_ms = GREATEST(last_ms, ?), \
             renewals = renewals + 1, updated_at = NOW(3) \
             WHERE lease_group = ? AND worker_id = ? AND owner = ?"
        );
        bounded(
            name,
            "renewing the worker lease",
            self.s.timeout,
            conn.exec_drop(
                sql,
                (
                    self.s.ttl.as_millis() as u64,
                    last_ms,
                    &self.s.group,
                    self.worker_id,
                    &self.owner,
                ),
            ),
        )
        .await?;
        if conn.affected_rows() == 1 {
            self.extend_from(sent);
            Ok(true)
        } else {
            self.revoke();
            Ok(false)
        }
    }

    /// Gives the id back, recording `last_ms` for its next owner.
    pub async fn release(&self, last_ms: u64) -> Result<()> {
        self.revoke();
        let name = &self.s.name;
        let mut conn = bounded(name, "connecting", self.s.timeout, self.pool.get_conn()).await?;
        bounded(
            name,
            "releasing the worker lease",
            self.s.timeout,
            conn.exec_drop(
                "UPDATE idgate_workers SET owner = NULL, lease_until_ms = 0, last_ms = GREATEST(last_ms, ?), \
                 updated_at = NOW(3) WHERE lease_group = ? AND worker_id = ? AND owner = ?",
                (last_ms, &self.s.group, self.worker_id, &self.owner),
            ),
        )
        .await?;
        Ok(())
    }
}
