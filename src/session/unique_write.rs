//! The write of a statement on a `unique: global` table: the connections to the lookup
//! backends and the table's shards, all-or-nothing as one statement (`bulk_begin`), each
//! connection started only when a statement first goes there, and ended with the others.

use tokio::io::{AsyncRead, AsyncWrite};

use super::bulk_write::BulkTxn;
use super::{End, Session};
use crate::exec::collect::Collected;
use crate::exec::StatementScope;
use crate::route::TableRule;
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// Why the statement stopped: the backend's own error, or idgate's.
pub(super) enum Failure {
    Packet(Vec<u8>),
    Sql(SqlError),
}

/// The statement's held connections, by backend name, and which of them it wrote to.
pub(super) struct UniqueWrite {
    names: Vec<String>,
    leases: Vec<usize>,
    used: Vec<bool>,
    /// What starts the write on each connection, sent with its first statement.
    begin: Vec<Option<Vec<u8>>>,
    txn: BulkTxn,
}

/// Affected rows of an OK, or the failure.
pub(super) fn affected(c: &Collected) -> Result<u64, Failure> {
    match c {
        Collected::Ok(p) => Ok(packets::parse_ok(p).map_or(0, |o| o.affected_rows)),
        Collected::Err(p) => Err(Failure::Packet(p.clone())),
        Collected::Rows { .. } => Ok(0),
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Holds a connection to each lookup backend and each of the table's shards, and decides
    /// how the write is made all-or-nothing. `None`: no connection could be had, the client
    /// was told.
    pub(super) async fn open_unique_write<'b>(
        &mut self,
        lookup_backends: impl Iterator<Item = &'b str>,
        rule: &TableRule,
        scope: StatementScope,
    ) -> Result<Option<UniqueWrite>, End> {
        let mut names: Vec<String> = Vec::new();
        for b in lookup_backends {
            if !names.iter().any(|n| n == b) {
                names.push(b.to_string());
            }
        }
        for b in rule.backends() {
            if !names.contains(b) {
                names.push(b.clone());
            }
        }
        let mut leases = Vec::with_capacity(names.len());
        for n in &names {
            match self.lease_index(n).await {
                Ok(i) => leases.push(i),
                Err(e) => {
                    self.writer.send_error(&e);
                    return Ok(None);
                }
            }
        }
        let (txn, begin) = self.bulk_begin(&leases, "idgate_unique", scope).await?;
        Ok(Some(UniqueWrite {
            used: vec![false; leases.len()],
            names,
            leases,
            begin,
            txn,
        }))
    }

    /// Sends one statement on the write's connection to `backend` (after what starts the
    /// write there, the first time) and reads its whole answer.
    pub(super) async fn collect_one(
        &mut self,
        w: &mut UniqueWrite,
        backend: &str,
        sql: Vec<u8>,
    ) -> Result<Result<Collected, Failure>, End> {
        let Some(p) = w.names.iter().position(|n| n == backend) else {
            return Ok(Err(Failure::Sql(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate: no connection to backend `{backend}`"),
            ))));
        };
        w.used[p] = true;
        let begin = w.begin[p].take();
        match self.leases.send_all(&[(w.leases[p], sql)], &[begin]).await {
            Ok(mut r) => Ok(Ok(r.pop().unwrap_or(Collected::Ok(Vec::new())))),
            Err(e) => Err(self.backend_lost(e)),
        }
    }

    /// Commits what the write did (`outcome` is `Ok`) or rolls it back and tells the client
    /// why; only the connections a statement went to take part. `None`: the client got an
    /// error (`what` names the statement in a failed commit's message).
    pub(super) async fn close_unique_write<T>(
        &mut self,
        w: UniqueWrite,
        outcome: Result<T, Failure>,
        what: &str,
    ) -> Result<Option<T>, End> {
        let mut used = Vec::with_capacity(w.leases.len());
        for (&i, &u) in w.leases.iter().zip(&w.used) {
            if u {
                used.push(i);
            } else if w.txn.xa_auto() {
                self.leases.held_mut()[i].leave_txn();
            }
        }
        let t = match outcome {
            Ok(t) => t,
            Err(f) => {
                self.bulk_end(&used, &w.txn, false, what).await?;
                match f {
                    Failure::Packet(p) => self.writer.write(&p),
                    Failure::Sql(e) => self.writer.send_error(&e),
                }
                return Ok(None);
            }
        };
        if let Some(e) = self.bulk_end(&used, &w.txn, true, what).await? {
            self.writer.send_error(&e);
            return Ok(None);
        }
        Ok(Some(t))
    }
}
