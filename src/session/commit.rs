//! The session's side of ending a transaction: the connections' part is ended in
//! `exec::conns` (COMMIT/ROLLBACK, or the commit protocol of `xa::commit`); here the outcome is
//! counted and becomes what the client hears.

use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session};
use crate::wire::errors::SqlError;
use crate::xa::commit::Ending;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Ends the transaction on every participant. `Some`: what the client is to hear (the
    /// transaction did not commit). Broken connections are dropped afterwards.
    pub(super) async fn finish_participants(&mut self, commit: bool) -> Option<SqlError> {
        let proxy = self.proxy.clone();
        let done = self
            .leases
            .finish_participants(commit, proxy.xa.as_deref())
            .await;
        if let Some(ending) = done.xa_commit {
            proxy
                .metrics
                .xa_commits
                .inc(ending == Ending::TwoPhase, done.error.is_none());
        }
        done.error
    }

    /// Without XA: COMMIT or ROLLBACK on the connections that joined the client's transaction,
    /// before the default backend gets the client's own statement. A failed COMMIT there rolls
    /// back the rest and is what the client hears.
    pub(super) async fn end_transaction(&mut self, commit: bool) -> Result<Option<SqlError>, End> {
        self.leases
            .end_joined(commit)
            .await
            .map_err(|e| self.backend_lost(e))
    }
}
