//! Sending a write to several held connections with the statement that starts its part, and
//! ending the transactions idgate opened on them: COMMIT/ROLLBACK of the connections that joined
//! the client's transaction, or the commit protocol of `xa::commit` for its participants.

use super::SessionConns;
use crate::exec::collect::{collect, Collected};
use crate::exec::BackendError;
use crate::wire::command::query_packet;
use crate::wire::errors::SqlError;
use crate::wire::packets;
use crate::xa::commit::{self, Ending, Participant};
use crate::xa::Coordinator;

/// How [`SessionConns::finish_participants`] ended the transaction.
#[derive(Debug)]
pub struct Finished {
    /// What the client is to hear: the transaction did not commit.
    pub error: Option<SqlError>,
    /// How a transaction with XA branches ended, when it was committed (for the counters).
    pub xa_commit: Option<Ending>,
}

impl SessionConns {
    /// Sends `sql` to each listed held connection (pipelined after the statement that starts
    /// a transaction there, where one is needed) and collects each answer.
    pub async fn send_all(
        &mut self,
        targets: &[(usize, Vec<u8>)],
        begin: &[Option<Vec<u8>>],
    ) -> Result<Vec<Collected>, BackendError> {
        for ((i, sql), b) in targets.iter().zip(begin) {
            let be = self.get_mut(*i);
            if let Some(b) = b {
                be.write_command(&query_packet(b));
            }
            be.write_command(&query_packet(sql));
        }
        for (i, _) in targets {
            self.get_mut(*i).flush().await?;
        }
        let mut out = Vec::with_capacity(targets.len());
        for ((i, _), b) in targets.iter().zip(begin) {
            let be = self.get_mut(*i);
            if b.is_some() {
                let started = collect(be).await?;
                be.next_response();
                if started.is_err() {
                    out.push(started);
                    collect(be).await?;
                    continue;
                }
            }
            out.push(collect(be).await?);
        }
        Ok(out)
    }

    /// Ends the transaction idgate opened on each connection with COMMIT or ROLLBACK; returns
    /// the connections on which it failed, with the backend's error packet.
    pub async fn finish_all(
        &mut self,
        idx: &[usize],
        commit: bool,
    ) -> Result<Vec<(usize, Vec<u8>)>, BackendError> {
        let sql = if commit { &b"COMMIT"[..] } else { b"ROLLBACK" };
        for i in idx {
            self.get_mut(*i).write_command(&query_packet(sql));
        }
        for i in idx {
            self.get_mut(*i).flush().await?;
        }
        let mut failed = Vec::new();
        for i in idx {
            if let Collected::Err(e) = collect(self.get_mut(*i)).await? {
                failed.push((*i, e));
            }
        }
        Ok(failed)
    }

    /// Without XA: COMMIT or ROLLBACK on the connections that joined the client's transaction,
    /// before the default backend gets the client's own statement. `Some`: the first failure,
    /// naming its backend.
    pub async fn end_joined(&mut self, commit: bool) -> Result<Option<SqlError>, BackendError> {
        let joined: Vec<usize> = self
            .held
            .iter()
            .enumerate()
            .filter(|(_, h)| h.in_txn)
            .map(|(i, _)| i)
            .collect();
        self.txn.savepoints.clear();
        if joined.is_empty() {
            return Ok(None);
        }
        for &i in &joined {
            self.held[i].leave_txn();
        }
        let failed = self.finish_all(&joined, commit).await?;
        let Some((i, e)) = failed.into_iter().next() else {
            return Ok(None);
        };
        let (code, state, msg) = packets::parse_err(&e);
        let backend = &self.held[i].backend;
        Ok(Some(SqlError::new(
            code,
            &state,
            format!("{} (on backend `{backend}`)", String::from_utf8_lossy(msg)),
        )))
    }

    /// Ends the transaction on every participant with the commit protocol (`xa` records
    /// two-phase decisions). Broken connections are dropped afterwards.
    pub async fn finish_participants(
        &mut self,
        commit: bool,
        xa: Option<&Coordinator>,
    ) -> Finished {
        let gtrid = self.txn.gtrid.take();
        self.txn.savepoints.clear();
        let mut idx = Vec::new();
        let mut joined = Vec::new();
        for (i, h) in self.held.iter_mut().enumerate() {
            if h.in_txn {
                idx.push(i);
                joined.push((h.backend.clone(), h.xa.clone(), h.wrote));
                h.leave_txn();
            }
        }
        if idx.is_empty() {
            return Finished {
                error: None,
                xa_commit: None,
            };
        }
        let any_xa = joined.iter().any(|(_, xa, _)| xa.is_some());
        let mut parts: Vec<Participant> = self
            .conns(&idx)
            .into_iter()
            .zip(joined)
            .map(|(conn, (backend, xa, wrote))| Participant {
                conn,
                backend,
                xa,
                wrote,
            })
            .collect();
        let (ending, error) = commit::finish(&mut parts, commit, gtrid.as_ref(), xa).await;
        drop(parts);
        self.drop_broken();
        Finished {
            error,
            xa_commit: (any_xa && ending != Ending::RolledBack).then_some(ending),
        }
    }
}
