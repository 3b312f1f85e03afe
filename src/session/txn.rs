//! The client's transaction as the session sees it: whether one is open, idgate's answers to
//! BEGIN/COMMIT/ROLLBACK when it commits with XA (each backend joins with `XA START` when the
//! transaction first touches it, see `exec::conns`), and SAVEPOINTs, which reach every
//! participant in both commit modes. The backends' side lives in `exec::conns` (COMMIT/ROLLBACK,
//! or the commit protocol of `xa::commit`); here its outcomes are counted and become what the
//! client hears.

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};

use super::query::Step;
use super::{End, Session};
use crate::exec::conns::{commits_implicitly, JoinError, Joined, SavepointError, TxnView};
use crate::exec::StatementScope;
use crate::sql::{self, StatementKind};
use crate::wire::errors::SqlError;
use crate::xa::commit::Ending;

/// What the session keeps of the client's transaction (the backends' part, with gtrid and
/// savepoints, is in `exec::SessionConns`).
#[derive(Default)]
pub struct Txn {
    /// BEGIN / START TRANSACTION opened it (with autocommit off one is always open).
    pub explicit: bool,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Waits while `stmt` names a table being switched to a new placement (`migrate::hold`);
    /// false when the client got an error instead. A statement of an open transaction goes
    /// on: the switch waits for the transaction to end.
    pub(super) async fn wait_for_switch(&mut self, stmt: &[u8]) -> bool {
        if self.in_transaction() {
            return true;
        }
        let db = self
            .db
            .as_deref()
            .map(|d| String::from_utf8_lossy(d).into_owned());
        match self.proxy.migrations.holds.wait(stmt, db.as_deref()).await {
            Ok(()) => true,
            Err(e) => {
                self.writer.send_error(&e);
                false
            }
        }
    }

    /// True while the client has a transaction open (BEGIN, or autocommit off).
    pub(super) fn in_transaction(&self) -> bool {
        let s = StatusFlags::from_bits_retain(self.status);
        // XA mode: idgate answers BEGIN itself and keeps the transaction open until COMMIT, even
        // if a backend rolled its own part back (a deadlock there).
        let open = if self.proxy.xa.is_some() {
            self.txn.explicit
        } else {
            s.contains(StatusFlags::SERVER_STATUS_IN_TRANS)
        };
        open || !s.contains(StatusFlags::SERVER_STATUS_AUTOCOMMIT)
    }

    /// The scope of `stmt` (of `kind`), decided before it runs.
    pub(super) fn statement_scope(&self, stmt: &[u8], kind: StatementKind) -> StatementScope {
        StatementScope::of_statement(stmt, kind, self.proxy.xa.is_some(), self.in_transaction())
    }

    /// In a client transaction, makes held connection `i` part of it for a statement of
    /// `scope` (see `SessionConns::join`).
    pub(super) async fn join_transaction(
        &mut self,
        i: usize,
        scope: StatementScope,
    ) -> Result<(), End> {
        if self.leases.held_mut()[i].replica {
            return Ok(()); // reads on a replica are outside any transaction
        }
        let proxy = self.proxy.clone();
        let txn = TxnView {
            open: self.in_transaction(),
            xa: proxy.xa.as_deref(),
            default: &proxy.default_pool.name,
        };
        match self.leases.join(i, scope, txn).await {
            Ok(Joined::Coordinated) => {
                // Answers idgate composes itself say in-transaction from now on, as MariaDB's would.
                self.status |= StatusFlags::SERVER_STATUS_IN_TRANS.bits();
                Ok(())
            }
            Ok(Joined::Plain | Joined::Unchanged) => Ok(()),
            Err(JoinError::Backend(e)) => Err(self.backend_lost(e)),
            Err(e @ JoinError::Refused { code, state, .. }) => {
                // The session ends rather than run the statement outside the client's transaction.
                let msg = e.to_string();
                self.writer
                    .send_error(&SqlError::new(code, &state, msg.clone()));
                Err(End::Fatal(msg))
            }
        }
    }

    /// XA mode: transaction statements idgate handles itself. `None`: run the statement as
    /// usual (after an implicit commit, outside any transaction).
    pub(super) async fn xa_step(
        &mut self,
        stmt: &[u8],
        kind: StatementKind,
        more: bool,
    ) -> Option<Step> {
        match kind {
            StatementKind::Begin => {
                // BEGIN inside a transaction commits it first, as on MySQL.
                if let Err(step) = self.implicit_commit().await {
                    return Some(step);
                }
                let read_only = sql::starts_read_only(stmt);
                self.txn = Txn { explicit: true };
                self.leases.begin_txn(read_only.then(|| stmt.to_vec()));
                let mut st = StatusFlags::from_bits_retain(self.status);
                st.insert(StatusFlags::SERVER_STATUS_IN_TRANS);
                st.set(StatusFlags::SERVER_STATUS_IN_TRANS_READONLY, read_only);
                self.status = st.bits();
                self.ok_step(more)
            }
            StatementKind::Commit | StatementKind::Rollback => {
                if sql::chain_or_release(stmt) {
                    self.writer.send_error(&SqlError::new(
                        crate::sql::ER_NOT_SUPPORTED_YET,
                        b"42000",
                        "idgate does not support AND CHAIN or RELEASE on COMMIT/ROLLBACK across shards; \
                         send COMMIT (or ROLLBACK) and then BEGIN",
                    ));
                    return Some(Step::Failed);
                }
                let r = self
                    .finish_participants(kind == StatementKind::Commit)
                    .await;
                self.forget_txn();
                match r {
                    None => self.ok_step(more),
                    Some(e) => {
                        self.writer.send_error(&e);
                        Some(Step::Failed)
                    }
                }
            }
            _ if self.in_transaction() && commits_implicitly(stmt, kind) => {
                if let Err(step) = self.implicit_commit().await {
                    return Some(step);
                }
                // The statement itself runs outside any transaction (its scope says so).
                None
            }
            _ => None,
        }
    }

    /// Commits the open transaction before a statement that ends it on MySQL.
    async fn implicit_commit(&mut self) -> Result<(), Step> {
        let r = self.finish_participants(true).await;
        self.forget_txn();
        match r {
            None => Ok(()),
            Some(e) => {
                self.writer.send_error(&e);
                Err(Step::Failed)
            }
        }
    }

    /// The transaction ended: idgate's record of it goes, and answers no longer say it is open.
    fn forget_txn(&mut self) {
        self.txn = Txn::default();
        self.leases.forget_txn();
        let mut st = StatusFlags::from_bits_retain(self.status);
        st.remove(
            StatusFlags::SERVER_STATUS_IN_TRANS | StatusFlags::SERVER_STATUS_IN_TRANS_READONLY,
        );
        self.status = st.bits();
    }

    /// An OK packet for a statement idgate answered itself.
    pub(super) fn ok_step(&mut self, more: bool) -> Option<Step> {
        let status = self.status_with(more);
        self.writer.send_ok(0, 0, status);
        Some(Step::Ok)
    }

    /// SAVEPOINT / RELEASE SAVEPOINT / ROLLBACK TO inside a transaction: runs on every other
    /// participant first; the default backend's answer is the client's. `Err`: the client got
    /// an error (or the session ends).
    pub(super) async fn savepoint_elsewhere(&mut self, stmt: &[u8]) -> Result<(), Step> {
        let default = self.proxy.default_pool.name.clone();
        match self.leases.savepoint_on_others(stmt, &default).await {
            Ok(()) => Ok(()),
            Err(e @ SavepointError::Refused { code, .. }) => {
                self.writer
                    .send_error(&SqlError::new(code, b"HY000", e.to_string()));
                Err(Step::Failed)
            }
            Err(SavepointError::Backend(e)) => Err(Step::End(self.backend_lost(e))),
        }
    }

    /// Keeps the savepoint list in step with a statement that succeeded.
    pub(super) fn track_savepoint(&mut self, stmt: &[u8]) {
        if let Some((action, name)) = sql::savepoint(stmt) {
            self.leases.note_savepoint(action, name);
        }
    }

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
