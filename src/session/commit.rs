//! The session's side of ending a transaction: it hands the connections that joined the
//! client's transaction to the commit protocol in `xa::commit`, then drops those that broke.

use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session};
use crate::wire::errors::SqlError;
use crate::xa::commit::{self, Ending, Participant};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Ends the transaction on every participant. `Some`: what the client is to hear (the
    /// transaction did not commit). Broken connections are dropped afterwards.
    pub(super) async fn finish_participants(
        &mut self,
        commit: bool,
    ) -> Result<Option<SqlError>, End> {
        let gtrid = self.txn.gtrid.take();
        self.txn.savepoints.clear();
        let mut idx = Vec::new();
        let mut joined = Vec::new();
        for (i, h) in self.leases.held_mut().iter_mut().enumerate() {
            if h.in_txn {
                idx.push(i);
                joined.push((h.backend.clone(), h.xa.clone(), h.wrote));
                h.leave_txn();
            }
        }
        if idx.is_empty() {
            return Ok(None);
        }
        let any_xa = joined.iter().any(|(_, xa, _)| xa.is_some());
        let coord = self.proxy.xa.clone();
        let mut parts: Vec<Participant> = self
            .leases
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
        let (ending, r) =
            commit::finish(&mut parts, commit, gtrid.as_ref(), coord.as_deref()).await;
        drop(parts);
        if any_xa && ending != Ending::RolledBack {
            self.proxy
                .metrics
                .xa_commits
                .inc(ending == Ending::TwoPhase, r.is_none());
        }
        self.leases.drop_broken();
        Ok(r)
    }
}
