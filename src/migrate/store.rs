//! Migration jobs in the sequence store, so a job outlives the idgate that started it and every
//! instance sees it. One row per job (`idgate_migrations`) and one per source backend
//! (`idgate_migration_streams`: its snapshot, how far the copy and the catch-up are). The
//! instance running a job holds a lease on it, renewed while it runs; another instance takes
//! the job over when the lease has run out.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};

use crate::idgen::store::DB_NOW_MS;
use crate::idgen::store_pool::StorePool;

/// How long a lease lasts without being renewed.
pub const LEASE_MS: i64 = 10_000;
/// Longest wait for one statement on the store.
const STORE_TIMEOUT: Duration = Duration::from_secs(10);

const CREATE_JOBS: &str = "CREATE TABLE IF NOT EXISTS idgate_migrations (\
    table_key VARCHAR(200) NOT NULL PRIMARY KEY, \
    target TEXT NOT NULL, \
    source_entry TEXT NOT NULL, \
    sources TEXT NOT NULL, \
    phase VARCHAR(16) NOT NULL, \
    last_error TEXT NULL, \
    created_on TEXT NOT NULL, \
    owner VARCHAR(100) NULL, \
    lease_until_ms BIGINT NOT NULL DEFAULT 0, \
    lag_events BIGINT NOT NULL DEFAULT 0, \
    lag_seconds BIGINT NOT NULL DEFAULT 0, \
    updated_ms BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB";

const CREATE_STREAMS: &str = "CREATE TABLE IF NOT EXISTS idgate_migration_streams (\
    table_key VARCHAR(200) NOT NULL, \
    source VARCHAR(100) NOT NULL, \
    start_gtid TEXT NOT NULL, \
    gtid_pos TEXT NOT NULL, \
    copy_done TINYINT NOT NULL DEFAULT 0, \
    copied_through TEXT NULL, \
    rows_copied BIGINT NOT NULL DEFAULT 0, \
    rows_estimated BIGINT NOT NULL DEFAULT 0, \
    events_applied BIGINT NOT NULL DEFAULT 0, \
    PRIMARY KEY (table_key, source)) ENGINE=InnoDB";

/// After a switch: where the stream from each new backend back to the old placement is.
const CREATE_REVERSE: &str = "CREATE TABLE IF NOT EXISTS idgate_migration_reverse (\
    table_key VARCHAR(200) NOT NULL, \
    backend VARCHAR(100) NOT NULL, \
    gtid_pos TEXT NOT NULL, \
    events_applied BIGINT NOT NULL DEFAULT 0, \
    PRIMARY KEY (table_key, backend)) ENGINE=InnoDB";

const CREATE_PLACEMENTS: &str = "CREATE TABLE IF NOT EXISTS idgate_placements (\
    table_key VARCHAR(200) NOT NULL PRIMARY KEY, \
    entry TEXT NOT NULL, \
    id_floor BIGINT UNSIGNED NOT NULL DEFAULT 0, \
    updated_ms BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB";

/// A job as the store holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub table_key: String,
    pub target: String,
    /// The placement before the move, as a `tables:` entry (empty: the default backend).
    pub source_entry: String,
    pub sources: Vec<String>,
    pub phase: String,
    pub last_error: Option<String>,
    pub created_on: Vec<String>,
    pub owner: Option<String>,
    pub lease_live: bool,
    pub lag_events: i64,
    pub lag_seconds: i64,
}

/// One source backend's progress.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamRow {
    pub source: String,
    pub start_gtid: String,
    pub gtid_pos: String,
    pub copy_done: bool,
    /// The primary key of the last row copied (hex of each value, comma-separated).
    pub copied_through: Option<String>,
    pub rows_copied: i64,
    pub rows_estimated: i64,
    pub events_applied: i64,
}

/// One table a SWITCH records as switched: its new placement's entry, the id floor its
/// generator was raised to, and where each stream back to the old placement starts.
pub struct Switched<'a> {
    pub key: &'a str,
    pub entry: &'a str,
    pub id_floor: u64,
    pub reverse: &'a [(String, String)],
}

/// Phases after which a job no longer runs.
pub fn is_finished(phase: &str) -> bool {
    matches!(phase, "cancelled" | "complete" | "reversed")
}

#[derive(Clone)]
pub struct Store {
    pool: StorePool,
}

pub(super) async fn bounded<T>(
    f: impl std::future::Future<Output = Result<T, mysql_async::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(STORE_TIMEOUT, f).await {
        Ok(r) => r.map_err(|e| format!("sequence store: {e}")),
        Err(_) => Err(format!(
            "sequence store: no answer within {} s",
            STORE_TIMEOUT.as_secs()
        )),
    }
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

impl Store {
    pub async fn open(pool: StorePool) -> Result<Store, String> {
        let store = Store { pool };
        let mut c = store.conn().await?;
        bounded(c.query_drop(CREATE_JOBS)).await?;
        bounded(c.query_drop(CREATE_STREAMS)).await?;
        bounded(c.query_drop(CREATE_PLACEMENTS)).await?;
        bounded(c.query_drop(CREATE_REVERSE)).await?;
        drop(c);
        super::requests::create_table(&store).await?;
        super::cluster_hold::create_tables(&store).await?;
        Ok(store)
    }

    pub(super) async fn conn(&self) -> Result<Conn, String> {
        bounded(self.pool.get_conn()).await
    }

    pub async fn jobs(&self) -> Result<Vec<JobRow>, String> {
        let mut c = self.conn().await?;
        let sql = format!(
            "SELECT table_key, target, sources, phase, last_error, created_on, owner, \
             lease_until_ms > {DB_NOW_MS}, lag_events, lag_seconds, source_entry \
             FROM idgate_migrations \
             ORDER BY table_key"
        );
        let rows: Vec<Row> = bounded(c.query(sql)).await?;
        Ok(rows.into_iter().filter_map(job_from_row).collect())
    }

    pub async fn job(&self, key: &str) -> Result<Option<JobRow>, String> {
        Ok(self.jobs().await?.into_iter().find(|j| j.table_key == key))
    }

    pub async fn streams(&self, key: &str) -> Result<Vec<StreamRow>, String> {
        let mut c = self.conn().await?;
        let rows: Vec<Row> = bounded(c.exec(
            "SELECT source, start_gtid, gtid_pos, copy_done, copied_through, rows_copied, \
             rows_estimated, events_applied FROM idgate_migration_streams WHERE table_key = ? \
             ORDER BY source",
            (key,),
        ))
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|mut r| {
                Some(StreamRow {
                    source: r.take_opt(0)?.ok()?,
                    start_gtid: r.take_opt(1)?.ok()?,
                    gtid_pos: r.take_opt(2)?.ok()?,
                    copy_done: r.take_opt::<i64, _>(3)?.ok()? != 0,
                    copied_through: r.take_opt(4)?.ok()?,
                    rows_copied: r.take_opt(5)?.ok()?,
                    rows_estimated: r.take_opt(6)?.ok()?,
                    events_applied: r.take_opt(7)?.ok()?,
                })
            })
            .collect())
    }

    /// Records new jobs owned by `owner` in one transaction (tables that move together),
    /// each replacing a finished one for the same table. False, and nothing recorded, when an
    /// unfinished job for one of the tables exists.
    pub async fn create(
        &self,
        jobs: &[(JobRow, Vec<StreamRow>)],
        owner: &str,
    ) -> Result<bool, String> {
        let mut c = self.conn().await?;
        let mut tx = bounded(c.start_transaction(Default::default())).await?;
        for (job, streams) in jobs {
            let existing: Option<String> = bounded(tx.exec_first(
                "SELECT phase FROM idgate_migrations WHERE table_key = ? FOR UPDATE",
                (&job.table_key,),
            ))
            .await?;
            if existing.as_deref().is_some_and(|p| !is_finished(p)) {
                return Ok(false);
            }
            record_job(&mut tx, job, streams, owner).await?;
        }
        bounded(tx.commit()).await?;
        Ok(true)
    }

    /// Takes or renews the lease on a job: true when `owner` holds it now.
    pub async fn claim(&self, key: &str, owner: &str) -> Result<bool, String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            format!(
                "UPDATE idgate_migrations SET owner = ?, lease_until_ms = {DB_NOW_MS} + ? \
                 WHERE table_key = ? AND phase NOT IN ('cancelled', 'complete', 'reversed') \
                 AND (owner = ? OR owner IS NULL OR lease_until_ms < {DB_NOW_MS})"
            ),
            (owner, LEASE_MS, key, owner),
        ))
        .await?;
        Ok(c.affected_rows() == 1)
    }

    /// Lets the lease go (the job stays for another instance, or for the record).
    pub async fn release(&self, key: &str, owner: &str) -> Result<(), String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            "UPDATE idgate_migrations SET owner = NULL, lease_until_ms = 0 \
             WHERE table_key = ? AND owner = ?",
            (key, owner),
        ))
        .await
    }

    /// Sets the phase (and the error, or none), when `owner` still holds the job.
    pub async fn set_phase(
        &self,
        key: &str,
        owner: &str,
        phase: &str,
        error: Option<&str>,
    ) -> Result<(), String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            format!(
                "UPDATE idgate_migrations SET phase = ?, last_error = ?, updated_ms = {DB_NOW_MS} \
                 WHERE table_key = ? AND owner = ?"
            ),
            (phase, error, key, owner),
        ))
        .await
    }

    /// The phase of a job whoever holds it (CANCEL of a job another instance runs).
    pub async fn force_phase(&self, key: &str, phase: &str) -> Result<(), String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            format!(
                "UPDATE idgate_migrations SET phase = ?, updated_ms = {DB_NOW_MS} \
                 WHERE table_key = ?"
            ),
            (phase, key),
        ))
        .await
    }

    /// The placements moved tables have now (`schema.table`, the `tables:` entry), which
    /// every instance routes by.
    pub async fn placements(&self) -> Result<Vec<(String, String)>, String> {
        let mut c = self.conn().await?;
        bounded(c.query("SELECT table_key, entry FROM idgate_placements ORDER BY table_key")).await
    }

    /// The highest id the table's source held or handed out when it was switched.
    pub async fn id_floor(&self, key: &str) -> Result<u64, String> {
        let mut c = self.conn().await?;
        let v: Option<u64> = bounded(c.exec_first(
            "SELECT id_floor FROM idgate_placements WHERE table_key = ?",
            (key,),
        ))
        .await?;
        Ok(v.unwrap_or(0))
    }

    /// The end of a switch: the tables' new placements and their jobs' phase, in one
    /// transaction.
    pub async fn switched(&self, tables: &[Switched<'_>]) -> Result<(), String> {
        let mut c = self.conn().await?;
        let mut tx = bounded(c.start_transaction(Default::default())).await?;
        for t in tables {
            for (backend, pos) in t.reverse {
                bounded(tx.exec_drop(
                    "REPLACE INTO idgate_migration_reverse (table_key, backend, gtid_pos) \
                     VALUES (?, ?, ?)",
                    (t.key, backend, pos),
                ))
                .await?;
            }
            bounded(tx.exec_drop(
                format!(
                    "REPLACE INTO idgate_placements (table_key, entry, id_floor, updated_ms) \
                     VALUES (?, ?, ?, {DB_NOW_MS})"
                ),
                (t.key, t.entry, t.id_floor),
            ))
            .await?;
            bounded(tx.exec_drop(
                format!(
                    "UPDATE idgate_migrations SET phase = 'switched', last_error = NULL, \
                     owner = NULL, lease_until_ms = 0, lag_events = 0, lag_seconds = 0, \
                     updated_ms = {DB_NOW_MS} WHERE table_key = ?"
                ),
                (t.key,),
            ))
            .await?;
        }
        bounded(tx.commit()).await
    }

    /// The streams back to the old placement of a switched job (backend, position, events).
    pub async fn reverse_streams(&self, key: &str) -> Result<Vec<(String, String, i64)>, String> {
        let mut c = self.conn().await?;
        bounded(c.exec(
            "SELECT backend, gtid_pos, events_applied FROM idgate_migration_reverse \
             WHERE table_key = ? ORDER BY backend",
            (key,),
        ))
        .await
    }

    pub async fn save_reverse_position(
        &self,
        key: &str,
        backend: &str,
        gtid_pos: &str,
        events_applied: i64,
    ) -> Result<(), String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            "UPDATE idgate_migration_reverse SET gtid_pos = ?, events_applied = ? \
             WHERE table_key = ? AND backend = ?",
            (gtid_pos, events_applied, key, backend),
        ))
        .await
    }

    /// The end of a REVERSE: the table is routed by its old placement again.
    pub async fn reversed(&self, keys: &[&str]) -> Result<(), String> {
        let mut c = self.conn().await?;
        let mut tx = bounded(c.start_transaction(Default::default())).await?;
        for key in keys {
            bounded(tx.exec_drop("DELETE FROM idgate_placements WHERE table_key = ?", (key,)))
                .await?;
            bounded(tx.exec_drop(
                format!(
                    "UPDATE idgate_migrations SET phase = 'reversed', owner = NULL, \
                     lease_until_ms = 0, updated_ms = {DB_NOW_MS} WHERE table_key = ?"
                ),
                (key,),
            ))
            .await?;
        }
        bounded(tx.commit()).await
    }

    pub async fn set_lag(&self, key: &str, events: i64, seconds: i64) -> Result<(), String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            "UPDATE idgate_migrations SET lag_events = ?, lag_seconds = ? WHERE table_key = ?",
            (events, seconds, key),
        ))
        .await
    }

    /// The first snapshot's position: where the catch-up starts.
    pub async fn save_start(&self, key: &str, source: &str, gtid: &str) -> Result<(), String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            "UPDATE idgate_migration_streams SET start_gtid = ?, gtid_pos = ? \
             WHERE table_key = ? AND source = ?",
            (gtid, gtid, key, source),
        ))
        .await
    }

    /// The copy's progress after a chunk.
    pub async fn save_copy(
        &self,
        key: &str,
        source: &str,
        copied_through: &str,
        rows_copied: i64,
        done: bool,
    ) -> Result<(), String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            "UPDATE idgate_migration_streams SET copied_through = ?, rows_copied = ?, \
             copy_done = ? WHERE table_key = ? AND source = ?",
            (copied_through, rows_copied, i64::from(done), key, source),
        ))
        .await
    }

    /// The catch-up's position after an applied batch.
    pub async fn save_position(
        &self,
        key: &str,
        source: &str,
        gtid_pos: &str,
        events_applied: i64,
    ) -> Result<(), String> {
        let mut c = self.conn().await?;
        bounded(c.exec_drop(
            "UPDATE idgate_migration_streams SET gtid_pos = ?, events_applied = ? \
             WHERE table_key = ? AND source = ?",
            (gtid_pos, events_applied, key, source),
        ))
        .await
    }
}

fn job_from_row(mut r: Row) -> Option<JobRow> {
    Some(JobRow {
        table_key: r.take_opt(0)?.ok()?,
        target: r.take_opt(1)?.ok()?,
        sources: list(&r.take_opt::<String, _>(2)?.ok()?),
        phase: r.take_opt(3)?.ok()?,
        last_error: r.take_opt(4)?.ok()?,
        created_on: list(&r.take_opt::<String, _>(5)?.ok()?),
        owner: r.take_opt(6)?.ok()?,
        lease_live: r.take_opt::<i64, _>(7)?.ok()? != 0,
        lag_events: r.take_opt(8)?.ok()?,
        lag_seconds: r.take_opt(9)?.ok()?,
        source_entry: r.take_opt(10)?.ok()?,
    })
}

/// One new job's rows, in the transaction that records it.
async fn record_job(
    tx: &mut mysql_async::Transaction<'_>,
    job: &JobRow,
    streams: &[StreamRow],
    owner: &str,
) -> Result<(), String> {
    for t in ["idgate_migration_streams", "idgate_migration_reverse"] {
        bounded(tx.exec_drop(
            format!("DELETE FROM {t} WHERE table_key = ?"),
            (&job.table_key,),
        ))
        .await?;
    }
    bounded(tx.exec_drop(
        format!(
            "REPLACE INTO idgate_migrations (table_key, target, source_entry, sources, phase, \
             created_on, owner, lease_until_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, \
             {DB_NOW_MS} + ?, {DB_NOW_MS})"
        ),
        (
            &job.table_key,
            &job.target,
            &job.source_entry,
            job.sources.join(","),
            &job.phase,
            job.created_on.join(","),
            owner,
            LEASE_MS,
        ),
    ))
    .await?;
    for s in streams {
        bounded(tx.exec_drop(
            "INSERT INTO idgate_migration_streams (table_key, source, start_gtid, gtid_pos, \
             rows_estimated) VALUES (?, ?, ?, ?, ?)",
            (
                &job.table_key,
                &s.source,
                &s.start_gtid,
                &s.gtid_pos,
                s.rows_estimated,
            ),
        ))
        .await?;
    }
    Ok(())
}
