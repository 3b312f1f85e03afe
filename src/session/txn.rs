//! The client's transaction across backends when idgate commits with XA: BEGIN is answered by
//! idgate, each backend joins with `XA START` when the transaction first touches it, and COMMIT
//! and ROLLBACK end it on every participant (see `commit.rs`). SAVEPOINTs reach every
//! participant, in both commit modes.

use std::sync::Arc;

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};

use super::query::Step;
use super::{End, Session};
use crate::exec::collect::{collect, Collected};
use crate::exec::BackendError;
use crate::sql::{self, SavepointAction, StatementKind};
use crate::wire::command::{query_packet, Command, StmtCommand};
use crate::wire::errors::SqlError;
use crate::wire::packets;
use crate::xa::xid_sql;

/// What idgate keeps of the client's transaction.
#[derive(Default)]
pub struct Txn {
    /// BEGIN / START TRANSACTION opened it (with autocommit off one is always open).
    pub explicit: bool,
    /// `START TRANSACTION READ ONLY …`: participants start with the client's statement, not as
    /// XA branches (nothing to commit atomically).
    pub plain_start: Option<Vec<u8>>,
    /// The transaction's gtrid, made when the first participant joins.
    pub gtrid: Option<Arc<[u8]>>,
    /// Savepoints in the order they were set, for participants that join later.
    pub savepoints: Vec<Vec<u8>>,
}

/// What one statement (or one command other than COM_QUERY) decides for the connections it
/// touches: whether they become writers of the transaction, and whether they join it at all.
/// Made once when the statement starts and not changed while it runs. The session holds the
/// current one because connections join deep in every execution path (relay, scatter, merge,
/// INSERT fan-out, cursors, bulk writes): threading it through each would widen a dozen
/// signatures for two booleans that are fixed before the first of them is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatementScope {
    /// The statement may change data (a connection it touches is a writer).
    pub writes: bool,
    /// Connections it touches join the client's transaction; false for a statement that ends
    /// the transaction implicitly and runs outside one.
    pub join: bool,
}

impl StatementScope {
    /// Before any command: may write, joins.
    pub const COMMAND: StatementScope = StatementScope {
        writes: true,
        join: true,
    };

    /// A command's scope; COM_QUERY's statements each get their own when they run.
    pub fn of_command(cmd: &Command) -> StatementScope {
        StatementScope {
            writes: matches!(
                cmd,
                Command::Query(_)
                    | Command::Stmt {
                        kind: StmtCommand::Execute,
                        ..
                    }
            ),
            join: true,
        }
    }
}

/// Whether a statement of this kind may change data (decides which participants need 2PC).
pub fn may_write(kind: StatementKind) -> bool {
    !matches!(
        kind,
        StatementKind::Select
            | StatementKind::Show
            | StatementKind::Explain
            | StatementKind::Set
            | StatementKind::Use
            | StatementKind::Begin
            | StatementKind::Commit
            | StatementKind::Rollback
            | StatementKind::Savepoint
    )
}

/// DDL ends a transaction (`CREATE TEMPORARY …` / `DROP TEMPORARY …` do not), and so does
/// turning autocommit on.
fn commits_implicitly(stmt: &[u8], kind: StatementKind) -> bool {
    match kind {
        StatementKind::Ddl => !sql::is_temporary_ddl(stmt),
        StatementKind::Set => sql::sets_autocommit_on(stmt),
        _ => false,
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    pub(super) fn xa_mode(&self) -> bool {
        self.proxy.xa.is_some()
    }

    /// The scope of `stmt` (of `kind`), decided before it runs: in XA mode a statement that
    /// commits the open transaction implicitly (`xa_step`) then runs outside any.
    pub(super) fn statement_scope(&self, stmt: &[u8], kind: StatementKind) -> StatementScope {
        let ends_txn = self.xa_mode()
            && self.in_transaction()
            && !matches!(
                kind,
                StatementKind::Begin | StatementKind::Commit | StatementKind::Rollback
            )
            && commits_implicitly(stmt, kind);
        StatementScope {
            writes: may_write(kind),
            join: !ends_txn,
        }
    }

    /// XA mode: makes held connection `i` a participant of the client's transaction on first
    /// touch (`XA START`, or the client's READ ONLY start), with the savepoints set so far.
    pub(super) async fn join_xa(&mut self, i: usize) -> Result<(), End> {
        let writes = self.scope.writes;
        if self.leases.held_mut()[i].in_txn {
            self.leases.held_mut()[i].wrote |= writes;
            return Ok(());
        }
        if !self.scope.join || !self.in_transaction() {
            return Ok(());
        }
        let backend = self.leases.held_mut()[i].backend.clone();
        let (start, gtrid) = match &self.txn.plain_start {
            Some(s) => (s.clone(), None),
            None => {
                let xids = &self.proxy.xa.as_ref().map(|c| &c.xids);
                let g = match (&self.txn.gtrid, xids) {
                    (Some(g), _) => g.clone(),
                    (None, Some(x)) => {
                        let g: Arc<[u8]> = x.next_gtrid().into();
                        self.txn.gtrid = Some(g.clone());
                        g
                    }
                    (None, None) => return Ok(()),
                };
                let sql = format!("XA START {}", xid_sql(&g, backend.as_bytes()));
                (sql.into_bytes(), Some(g))
            }
        };
        self.start_participant(i, &start).await?;
        let held = &mut self.leases.held_mut()[i];
        held.in_txn = true;
        held.xa = gtrid;
        held.wrote = writes;
        // Answers idgate composes itself say in-transaction from now on, as MariaDB's would.
        self.status |= StatusFlags::SERVER_STATUS_IN_TRANS.bits();
        Ok(())
    }

    /// Autocommit write over several backends in XA mode: one branch per target, in a
    /// transaction of its own; returns the `XA START` for each.
    pub(super) fn xa_autocommit_branches(
        &mut self,
        targets: &[(usize, Vec<u8>)],
    ) -> Vec<Option<Vec<u8>>> {
        let Some(coord) = self.proxy.xa.clone() else {
            return vec![None; targets.len()];
        };
        let g: Arc<[u8]> = coord.xids.next_gtrid().into();
        self.txn.gtrid = Some(g.clone());
        targets
            .iter()
            .map(|(i, _)| {
                let h = &mut self.leases.held_mut()[*i];
                h.in_txn = true;
                h.xa = Some(g.clone());
                h.wrote = true;
                Some(format!("XA START {}", xid_sql(&g, h.backend.as_bytes())).into_bytes())
            })
            .collect()
    }

    /// Sends `start` and the transaction's savepoints on connection `i`, pipelined.
    pub(super) async fn start_participant(&mut self, i: usize, start: &[u8]) -> Result<(), End> {
        let mut cmds = vec![query_packet(start)];
        for sp in &self.txn.savepoints {
            let mut s = b"SAVEPOINT ".to_vec();
            sql::push_name(&mut s, sp);
            cmds.push(query_packet(&s));
        }
        let backend = self.leases.held_mut()[i].backend.clone();
        let be = self.leases.get_mut(i);
        for c in &cmds {
            be.write_command(c);
        }
        let mut failed = None;
        let r: Result<(), BackendError> = async {
            be.flush().await?;
            for _ in &cmds {
                if let Collected::Err(e) = collect(be).await? {
                    failed.get_or_insert(e);
                }
                be.next_response();
            }
            Ok(())
        }
        .await;
        if let Err(e) = r {
            return Err(self.backend_lost(e));
        }
        if let Some(e) = failed {
            // The connection's transaction state is not what idgate needs: end the session
            // rather than run the statement outside the client's transaction.
            let (code, state, msg) = packets::parse_err(&e);
            let msg = format!(
                "idgate: cannot start the transaction on backend `{backend}`: {}",
                String::from_utf8_lossy(msg)
            );
            self.send_error(&SqlError::new(code, &state, msg.clone()));
            self.leases.get_mut(i).broken = true;
            return Err(End::Fatal(msg));
        }
        Ok(())
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
                self.txn = super::txn::Txn {
                    explicit: true,
                    plain_start: read_only.then(|| stmt.to_vec()),
                    ..Default::default()
                };
                let mut st = StatusFlags::from_bits_retain(self.status);
                st.insert(StatusFlags::SERVER_STATUS_IN_TRANS);
                st.set(StatusFlags::SERVER_STATUS_IN_TRANS_READONLY, read_only);
                self.status = st.bits();
                self.ok_step(more)
            }
            StatementKind::Commit | StatementKind::Rollback => {
                if sql::chain_or_release(stmt) {
                    self.send_error(&SqlError::new(
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
                self.txn = Default::default();
                self.clear_in_trans();
                match r {
                    Ok(None) => self.ok_step(more),
                    Ok(Some(e)) => {
                        self.send_error(&e);
                        Some(Step::Failed)
                    }
                    Err(end) => Some(Step::End(end)),
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
        self.txn = Default::default();
        self.clear_in_trans();
        match r {
            Ok(None) => Ok(()),
            Ok(Some(e)) => {
                self.send_error(&e);
                Err(Step::Failed)
            }
            Err(end) => Err(Step::End(end)),
        }
    }

    fn clear_in_trans(&mut self) {
        let mut st = StatusFlags::from_bits_retain(self.status);
        st.remove(
            StatusFlags::SERVER_STATUS_IN_TRANS | StatusFlags::SERVER_STATUS_IN_TRANS_READONLY,
        );
        self.status = st.bits();
    }

    fn ok_step(&mut self, more: bool) -> Option<Step> {
        let status = self.status_with(more);
        let start = self.writer.begin();
        packets::ok(
            self.writer.payload(),
            packets::OK_HEADER,
            0,
            0,
            status,
            0,
            b"",
        );
        self.writer.end(start);
        Some(Step::Ok)
    }

    /// SAVEPOINT / RELEASE SAVEPOINT / ROLLBACK TO inside a transaction: runs on every other
    /// participant first; the default backend's answer is the client's. `Err`: the client got
    /// an error (or the session ends).
    pub(super) async fn savepoint_elsewhere(&mut self, stmt: &[u8]) -> Result<(), Step> {
        let default = self.proxy.default_pool.name.clone();
        let others: Vec<usize> = self
            .leases
            .held_mut()
            .iter()
            .enumerate()
            .filter(|(_, h)| h.in_txn && h.backend != default)
            .map(|(i, _)| i)
            .collect();
        for i in others {
            let backend = self.leases.held_mut()[i].backend.clone();
            match self.leases.get_mut(i).query_drop_bytes(stmt).await {
                Ok(()) => {}
                Err(BackendError::Server { code, message }) => {
                    self.send_error(&SqlError::new(
                        code,
                        b"HY000",
                        format!("{message} (on backend `{backend}`)"),
                    ));
                    return Err(Step::Failed);
                }
                Err(e) => return Err(Step::End(self.backend_lost(e))),
            }
        }
        Ok(())
    }

    /// Keeps the savepoint list in step with a statement that succeeded.
    pub(super) fn track_savepoint(&mut self, stmt: &[u8]) {
        let Some((action, name)) = sql::savepoint(stmt) else {
            return;
        };
        let list = &mut self.txn.savepoints;
        // Savepoint names compare as MariaDB compares them: case-insensitively.
        let pos = list.iter().position(|s| s.eq_ignore_ascii_case(&name));
        match action {
            SavepointAction::Set => {
                if let Some(k) = pos {
                    list.remove(k);
                }
                list.push(name);
            }
            // RELEASE drops the savepoint and later ones; ROLLBACK TO keeps it, drops later ones.
            SavepointAction::Release => list.truncate(pos.unwrap_or(list.len())),
            SavepointAction::RollbackTo => list.truncate(pos.map_or(list.len(), |k| k + 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implicit_commits() {
        assert!(commits_implicitly(
            b"CREATE TABLE t (a int)",
            StatementKind::Ddl
        ));
        assert!(!commits_implicitly(
            b"create temporary table t (a int)",
            StatementKind::Ddl
        ));
        assert!(commits_implicitly(
            b"set @@session.autocommit=ON",
            StatementKind::Set
        ));
        assert!(!commits_implicitly(b"SET @x = 1", StatementKind::Set));
        assert!(!commits_implicitly(b"SELECT 1", StatementKind::Select));
    }
}
