//! The decision log: a row per distributed transaction idgate decided to commit, written after
//! every branch prepared and before any branch commits, in the sequence store. Recovery commits a
//! prepared branch whose gtrid is here and rolls back the others it owns.

use std::future::Future;
use std::time::Duration;

use crate::idgen::store_pool::StorePool;
use mysql_async::prelude::*;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS idgate_xa_decisions (
    gtrid VARBINARY(64) NOT NULL PRIMARY KEY,
    participants VARCHAR(2048) NOT NULL,
    decided_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB";

/// How long one decision-log statement may take before idgate gives up on it.
const TIMEOUT: Duration = Duration::from_secs(5);

pub struct DecisionLog {
    pool: StorePool,
}

async fn bounded<T>(
    what: &str,
    f: impl Future<Output = Result<T, mysql_async::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {} s", TIMEOUT.as_secs())),
    }
}

impl DecisionLog {
    /// Opens the log, creating its table if missing.
    pub async fn open(pool: StorePool) -> Result<DecisionLog, String> {
        let mut conn = bounded("connecting to the sequence store", pool.get_conn()).await?;
        bounded("creating idgate_xa_decisions", conn.query_drop(CREATE)).await?;
        Ok(DecisionLog { pool })
    }

    /// Records the commit decision for `gtrid`; durable when this returns Ok (autocommit).
    pub async fn record(&self, gtrid: &[u8], participants: &[String]) -> Result<(), String> {
        let mut conn = bounded("connecting to the sequence store", self.pool.get_conn()).await?;
        bounded(
            "recording the commit decision",
            conn.exec_drop(
                "INSERT INTO idgate_xa_decisions (gtrid, participants) VALUES (?, ?)",
                (gtrid, participants.join(",")),
            ),
        )
        .await
    }

    pub async fn forget(&self, gtrid: &[u8]) -> Result<(), String> {
        let mut conn = bounded("connecting to the sequence store", self.pool.get_conn()).await?;
        bounded(
            "deleting a commit decision",
            conn.exec_drop("DELETE FROM idgate_xa_decisions WHERE gtrid = ?", (gtrid,)),
        )
        .await
    }

    pub async fn contains(&self, gtrid: &[u8]) -> Result<bool, String> {
        let mut conn = bounded("connecting to the sequence store", self.pool.get_conn()).await?;
        let n: Option<u64> = bounded(
            "reading the decision log",
            conn.exec_first(
                "SELECT COUNT(*) FROM idgate_xa_decisions WHERE gtrid = ?",
                (gtrid,),
            ),
        )
        .await?;
        Ok(n.unwrap_or(0) > 0)
    }

    pub async fn all(&self) -> Result<Vec<Vec<u8>>, String> {
        let mut conn = bounded("connecting to the sequence store", self.pool.get_conn()).await?;
        bounded(
            "reading the decision log",
            conn.query("SELECT gtrid FROM idgate_xa_decisions"),
        )
        .await
    }
}
