//! What a statement's scope decides, without a server.

use super::scope::{commits_implicitly, may_write, StatementScope};
use crate::sql::{classify, StatementKind};
use crate::wire::command::{Command, StmtCommand};

/// The scope of `stmt` as the session makes it: kind from `sql`, then the decision.
fn scope(stmt: &str, xa_mode: bool, open: bool) -> StatementScope {
    let s = stmt.as_bytes();
    StatementScope::of_statement(s, classify(s), xa_mode, open)
}

const WRITES_JOINS: StatementScope = StatementScope {
    writes: true,
    join: true,
};

#[test]
fn ddl_in_an_xa_transaction_ends_it_and_does_not_join() {
    let s = scope("CREATE TABLE t (a int)", true, true);
    assert!(!s.join);
    assert!(s.writes);
    assert!(!scope("drop table t", true, true).join);
    assert!(!scope("ALTER TABLE t ADD b int", true, true).join);
    assert!(!scope("TRUNCATE t", true, true).join);
}

#[test]
fn ddl_joins_without_an_open_transaction_or_without_xa() {
    assert_eq!(scope("CREATE TABLE t (a int)", true, false), WRITES_JOINS);
    assert_eq!(scope("CREATE TABLE t (a int)", false, true), WRITES_JOINS);
}

#[test]
fn temporary_tables_join_the_transaction() {
    assert_eq!(
        scope("CREATE TEMPORARY TABLE t (a int)", true, true),
        WRITES_JOINS
    );
    assert_eq!(
        scope("drop temporary table if exists t", true, true),
        WRITES_JOINS
    );
}

#[test]
fn turning_autocommit_on_ends_the_transaction() {
    let s = scope("SET autocommit=1", true, true);
    assert!(!s.join);
    assert!(!s.writes);
    assert!(!scope("set @@session.autocommit = ON", true, true).join);
    assert!(scope("SET autocommit=0", true, true).join);
    assert!(scope("SET @x = 1", true, true).join);
}

#[test]
fn reads_do_not_mark_writers() {
    for stmt in [
        "SELECT * FROM t",
        "SHOW TABLES",
        "EXPLAIN SELECT 1",
        "USE db",
        "SET NAMES utf8mb4",
        "SAVEPOINT a",
    ] {
        let s = scope(stmt, true, true);
        assert!(!s.writes, "{stmt}");
        assert!(s.join, "{stmt}");
    }
    for stmt in [
        "INSERT INTO t VALUES (1)",
        "UPDATE t SET a = 1",
        "DELETE FROM t",
        "REPLACE INTO t VALUES (1)",
        "CALL p()",
    ] {
        assert_eq!(scope(stmt, true, true), WRITES_JOINS, "{stmt}");
    }
}

#[test]
fn transaction_statements_do_not_end_it_by_themselves() {
    for stmt in ["BEGIN", "COMMIT", "ROLLBACK", "START TRANSACTION READ ONLY"] {
        let s = scope(stmt, true, true);
        assert!(s.join, "{stmt}");
        assert!(!s.writes, "{stmt}");
    }
}

#[test]
fn commands_other_than_queries() {
    assert_eq!(
        StatementScope::of_command(&Command::Query(b"SELECT 1")),
        WRITES_JOINS
    );
    let execute = Command::Stmt {
        kind: StmtCommand::Execute,
        id: Some(1),
    };
    assert_eq!(StatementScope::of_command(&execute), WRITES_JOINS);
    let read_only = StatementScope {
        writes: false,
        join: true,
    };
    for cmd in [
        Command::InitDb(b"db"),
        Command::FieldList,
        Command::Statistics,
        Command::SetOption(Some(0)),
        Command::ResetConnection,
        Command::Prepare(b"INSERT INTO t VALUES (?)"),
        Command::Stmt {
            kind: StmtCommand::Fetch,
            id: Some(1),
        },
        Command::Stmt {
            kind: StmtCommand::Reset,
            id: Some(1),
        },
    ] {
        assert_eq!(StatementScope::of_command(&cmd), read_only);
    }
}

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

#[test]
fn kinds_that_may_write() {
    assert!(may_write(StatementKind::Insert));
    assert!(may_write(StatementKind::Ddl));
    assert!(may_write(StatementKind::Other));
    assert!(!may_write(StatementKind::Select));
    assert!(!may_write(StatementKind::Savepoint));
}
