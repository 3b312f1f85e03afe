//! SQL on the sequence store for segment generators. Every statement runs in autocommit, so a
//! range is durable once its OK packet arrived; a cached value is never written back. When the
//! store moves to another node of its replication group, the first reservation there raises
//! the tag's high-water mark to the highest id this instance reserved (`GREATEST`), so a range
//! acknowledged by a primary that failed before it replicated is not handed out again.

use std::sync::atomic::{AtomicU64, Ordering};

use std::time::Duration;

use crate::idgen::store_pool::StorePool;
use mysql_async::prelude::*;

use crate::idgen::error::{IdGenError, Result};
use crate::idgen::store::bounded;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS idgate_segments (
    biz_tag VARCHAR(128) NOT NULL PRIMARY KEY,
    max_id BIGINT NOT NULL,
    step INT UNSIGNED NOT NULL,
    description VARCHAR(256),
    updated_at TIMESTAMP(3) NULL
) ENGINE=InnoDB";

pub struct SegmentStore {
    pub pool: StorePool,
    pub name: String,
    pub tag: String,
    pub timeout: Duration,
    /// The highest `max_id` this instance reserved.
    highest: AtomicU64,
    /// The store's generation (`StorePool::generation`) the last reservation saw.
    seen: AtomicU64,
}

impl SegmentStore {
    pub fn new(pool: StorePool, name: &str, tag: &str, timeout: Duration) -> SegmentStore {
        let seen = AtomicU64::new(pool.generation());
        SegmentStore {
            pool,
            name: name.to_string(),
            tag: tag.to_string(),
            timeout,
            highest: AtomicU64::new(0),
            seen,
        }
    }

    /// Creates the table if missing, inserts the tag's row (first ID = `start`) if missing, and
    /// raises the high-water mark to `start - 1` if it is below (never lowers it).
    pub async fn prepare(&self, start: u64, step: u32, description: Option<&str>) -> Result<()> {
        let name = &self.name;
        let mut conn = bounded(name, "connecting", self.timeout, self.pool.get_conn()).await?;
        bounded(
            name,
            "creating idgate_segments",
            self.timeout,
            conn.query_drop(CREATE),
        )
        .await?;
        let mark = start - 1;
        bounded(
            name,
            "inserting the tag's row",
            self.timeout,
            conn.exec_drop(
                "INSERT IGNORE INTO idgate_segments (biz_tag, max_id, step, description, updated_at) \
                 VALUES (?, ?, ?, ?, NOW(3))",
                (&self.tag, mark, step, description),
            ),
        )
        .await?;
        bounded(
            name,
            "raising the tag's start",
            self.timeout,
            conn.exec_drop(
                "UPDATE idgate_segments SET max_id = ?, updated_at = NOW(3) WHERE biz_tag = ? AND max_id < ?",
                (mark, &self.tag, mark),
            ),
        )
        .await?;
        Ok(())
    }

    /// Reserves `(new_max - inc, new_max]` and returns `new_max`.
    pub async fn reserve(&self, inc: u64) -> Result<u64> {
        let name = &self.name;
        let mut conn = bounded(name, "connecting", self.timeout, self.pool.get_conn()).await?;
        let generation = self.pool.generation();
        let highest = self.highest.load(Ordering::Acquire);
        if generation != self.seen.load(Ordering::Acquire) && highest > 0 {
            bounded(
                name,
                "raising the tag to the ranges reserved before the store moved",
                self.timeout,
                conn.exec_drop(
                    "UPDATE idgate_segments SET max_id = GREATEST(max_id, ?), updated_at = NOW(3) \
                     WHERE biz_tag = ?",
                    (highest, &self.tag),
                ),
            )
            .await?;
        }
        self.seen.store(generation, Ordering::Release);
        bounded(
            name,
            "reserving a range",
            self.timeout,
            conn.exec_drop(
                "UPDATE idgate_segments SET max_id = LAST_INSERT_ID(max_id + ?), updated_at = NOW(3) \
                 WHERE biz_tag = ?",
                (inc, &self.tag),
            ),
        )
        .await?;
        if conn.affected_rows() != 1 {
            return Err(IdGenError::StoreProtocol {
                name: name.clone(),
                detail: format!(
                    "no row for tag `{}` in idgate_segments (was it deleted?); restart idgate to recreate it",
                    self.tag
                ),
            });
        }
        match conn.last_insert_id() {
            Some(max) if max >= inc => {
                self.highest.fetch_max(max, Ordering::AcqRel);
                Ok(max)
            }
            other => Err(IdGenError::StoreProtocol {
                name: name.clone(),
                detail: format!("range reservation returned last_insert_id {other:?}"),
            }),
        }
    }
}
