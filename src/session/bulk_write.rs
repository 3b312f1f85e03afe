//! A statement whose rows idgate writes itself on several backends (LOAD DATA LOCAL, INSERT …
//! SELECT): all-or-nothing as MariaDB's own statement is, and answered with one OK. In the
//! client's transaction each backend's part sits behind a savepoint; otherwise each backend gets
//! a transaction of its own (an XA branch in XA mode), committed only if every part succeeded.

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session};
use crate::exec::StatementScope;
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// How the bulk write's parts are made all-or-nothing.
pub(super) struct BulkTxn {
    /// Inside the client's transaction: a savepoint on each backend.
    in_txn: bool,
    /// Autocommit in XA mode: one XA branch per backend, committed with two-phase commit.
    xa_auto: bool,
    savepoint: &'static str,
}

impl BulkTxn {
    /// Autocommit in XA mode: each connection is an XA branch of its own.
    pub(super) fn xa_auto(&self) -> bool {
        self.xa_auto
    }
}

pub(super) use crate::exec::primitives::bulk_write::BulkOk;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Decides how the write on held connections `leases` is made all-or-nothing (joining the
    /// client's transaction where there is one); for each lease, the statement that starts its
    /// part, to send just before its first write.
    pub(super) async fn bulk_begin(
        &mut self,
        leases: &[usize],
        savepoint: &'static str,
        scope: StatementScope,
    ) -> Result<(BulkTxn, Vec<Option<Vec<u8>>>), End> {
        let in_txn = self.in_transaction();
        if in_txn {
            for &i in leases {
                self.join_transaction(i, scope).await?;
            }
        }
        let xa_auto = !in_txn && self.xa_mode();
        let begin = if in_txn {
            vec![Some(format!("SAVEPOINT {savepoint}").into_bytes()); leases.len()]
        } else if xa_auto {
            let proxy = self.proxy.clone();
            self.leases
                .xa_autocommit_branches(leases, proxy.xa.as_deref())
        } else {
            vec![Some(b"START TRANSACTION".to_vec()); leases.len()]
        };
        Ok((
            BulkTxn {
                in_txn,
                xa_auto,
                savepoint,
            },
            begin,
        ))
    }

    /// Commits (`keep`) or rolls back what the write did on every backend; a failed COMMIT
    /// after others committed is returned for the client (`what` names the statement).
    pub(super) async fn bulk_end(
        &mut self,
        leases: &[usize],
        txn: &BulkTxn,
        keep: bool,
        what: &str,
    ) -> Result<Option<SqlError>, End> {
        if txn.in_txn {
            let sql = if keep {
                format!("RELEASE SAVEPOINT {}", txn.savepoint)
            } else {
                format!("ROLLBACK TO SAVEPOINT {}", txn.savepoint)
            };
            for &i in leases {
                if let Err(e) = self.leases.get_mut(i).query_drop(&sql).await {
                    return Err(self.backend_lost(e));
                }
            }
            return Ok(None);
        }
        if txn.xa_auto {
            return Ok(self.finish_participants(keep).await);
        }
        let failed_on = match self.leases.finish_all(leases, keep).await {
            Ok(f) => f,
            Err(e) => return Err(self.backend_lost(e)),
        };
        Ok(failed_on.first().map(|(i, e)| {
            let (code, _, msg) = packets::parse_err(e);
            let backend = self.leases.held_mut()[*i].backend.clone();
            SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!(
                    "idgate: COMMIT failed on backend `{backend}` ({code}: {}) after the other \
                     shards committed; check the rows of this {what} on `{backend}`",
                    String::from_utf8_lossy(msg)
                ),
            )
        }))
    }

    /// Sends the statement's one OK; a generated first id becomes the session's
    /// LAST_INSERT_ID(), as after an AUTO_INCREMENT insert.
    pub(super) fn answer_bulk(&mut self, ok: &BulkOk, first_generated: Option<u64>, more: bool) {
        if let Some(id) = first_generated {
            self.last_insert_id = Some(id);
            self.lid_sync = Some(id);
        }
        if self.in_transaction() {
            self.status |= StatusFlags::SERVER_STATUS_IN_TRANS.bits();
        }
        let status = self.status_with(more);
        let start = self.writer.begin();
        packets::ok(
            self.writer.payload(),
            packets::OK_HEADER,
            ok.affected,
            ok.insert_id,
            status,
            ok.warnings,
            &ok.info,
        );
        self.writer.end(start);
    }
}
