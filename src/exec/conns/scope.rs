//! What one statement (or one command other than COM_QUERY) decides for the connections it
//! touches: whether they become writers of the transaction, and whether they join it at all.
//! Decided once, before the statement runs, from the statement's kind (the `sql` module reads
//! it) and the transaction's state, and passed to every path that joins a connection.

use crate::sql::{self, StatementKind};
use crate::wire::command::{Command, StmtCommand};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatementScope {
    /// The statement may change data (a connection it touches is a writer).
    pub writes: bool,
    /// Connections it touches join the client's transaction; false for a statement that ends
    /// the transaction implicitly and runs outside one.
    pub join: bool,
}

impl StatementScope {
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

    /// The scope of `stmt` (of `kind`): with XA (`xa_mode`) a statement that commits the open
    /// transaction (`txn_open`) implicitly runs outside any once the session committed it.
    pub fn of_statement(
        stmt: &[u8],
        kind: StatementKind,
        xa_mode: bool,
        txn_open: bool,
    ) -> StatementScope {
        let ends_txn = xa_mode
            && txn_open
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
pub fn commits_implicitly(stmt: &[u8], kind: StatementKind) -> bool {
    match kind {
        StatementKind::Ddl => !sql::is_temporary_ddl(stmt),
        StatementKind::Set => sql::sets_autocommit_on(stmt),
        _ => false,
    }
}
