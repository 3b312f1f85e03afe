//! The book's page of statements idgate answers itself (`docs/src/reference/admin-statements.md`)
//! shows each one idgate has, and nothing else: every statement in the first column of its
//! tables is recognized, and every kind of statement idgate answers appears there.

use std::collections::BTreeSet;

use super::admin::{admin_statement, AdminStatement};
use super::admin_migrate::{MigrateStatement, MigrateStep};
use super::{explain_route_target, session_query, SessionQuery};

const PAGE: &str = include_str!("../../docs/src/reference/admin-statements.md");

/// The kind of statement `stmt` is for this page, or `None` when idgate does not answer it.
fn kind(stmt: &str) -> Option<&'static str> {
    let b = stmt.as_bytes();
    if explain_route_target(b).is_some() {
        return Some("EXPLAIN ROUTE");
    }
    if let Some(SessionQuery::NextValues { .. }) = session_query(b) {
        return Some(if stmt.contains("NEXTVAL") {
            "NEXTVAL"
        } else if stmt.contains(" VALUES FROM ") {
            "NEXT n VALUES"
        } else {
            "NEXT VALUE FOR"
        });
    }
    Some(match admin_statement(b)? {
        AdminStatement::Status => "SHOW IDGATE STATUS",
        AdminStatement::Backends => "SHOW IDGATE BACKENDS",
        AdminStatement::Generators => "SHOW IDGATE GENERATORS",
        AdminStatement::Sessions => "SHOW IDGATE SESSIONS",
        AdminStatement::Tables => "SHOW IDGATE TABLES",
        AdminStatement::Reload => "IDGATE RELOAD",
        AdminStatement::Migrate(m) => match m {
            MigrateStatement::Start { .. } => "IDGATE MIGRATE START",
            MigrateStatement::Status { table: None } => "SHOW IDGATE MIGRATIONS",
            MigrateStatement::Status { table: Some(_) } => "IDGATE MIGRATE STATUS",
            MigrateStatement::Step { step, .. } => match step {
                MigrateStep::Verify => "IDGATE MIGRATE VERIFY",
                MigrateStep::Switch => "IDGATE MIGRATE SWITCH",
                MigrateStep::Reverse => "IDGATE MIGRATE REVERSE",
                MigrateStep::Complete => "IDGATE MIGRATE COMPLETE",
                MigrateStep::Cancel => "IDGATE MIGRATE CANCEL",
            },
            MigrateStatement::Malformed(_) => return None,
        },
        AdminStatement::Switchover(s) => match s {
            crate::sql::admin_switchover::SwitchoverStatement::To { .. } => "IDGATE SWITCHOVER",
            crate::sql::admin_switchover::SwitchoverStatement::Malformed(_) => return None,
        },
        AdminStatement::UnknownShow | AdminStatement::KillUnsupported(_) => return None,
        AdminStatement::Kill { .. } | AdminStatement::KillExpression { .. } => "KILL",
        AdminStatement::KillQueryId { .. } => "KILL QUERY ID",
        AdminStatement::KillUser { .. } => "KILL USER",
        AdminStatement::ProcessList { .. } => "SHOW PROCESSLIST",
        AdminStatement::ConnectionId { .. } => "CONNECTION_ID()",
        AdminStatement::ProcessListQuery { .. } => "information_schema.PROCESSLIST",
        AdminStatement::PseudoThreadId => "@@pseudo_thread_id",
    })
}

/// Every kind `kind` names: a new one there must be added here, and so to the page.
const ALL: &[&str] = &[
    "EXPLAIN ROUTE",
    "NEXTVAL",
    "NEXT VALUE FOR",
    "NEXT n VALUES",
    "SHOW IDGATE STATUS",
    "SHOW IDGATE BACKENDS",
    "SHOW IDGATE GENERATORS",
    "SHOW IDGATE SESSIONS",
    "SHOW IDGATE TABLES",
    "IDGATE RELOAD",
    "IDGATE MIGRATE START",
    "SHOW IDGATE MIGRATIONS",
    "IDGATE MIGRATE STATUS",
    "IDGATE MIGRATE VERIFY",
    "IDGATE MIGRATE SWITCH",
    "IDGATE MIGRATE REVERSE",
    "IDGATE MIGRATE COMPLETE",
    "IDGATE MIGRATE CANCEL",
    "IDGATE SWITCHOVER",
    "KILL",
    "KILL QUERY ID",
    "KILL USER",
    "SHOW PROCESSLIST",
    "CONNECTION_ID()",
    "information_schema.PROCESSLIST",
    "@@pseudo_thread_id",
];

#[test]
fn the_page_shows_every_statement_idgate_answers_and_only_those() {
    let mut shown = BTreeSet::new();
    for line in PAGE.lines() {
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let stmt = rest.split('`').next().unwrap_or("");
        match kind(stmt) {
            Some(k) => {
                shown.insert(k);
            }
            None => panic!("the page shows `{stmt}`, which idgate does not answer itself"),
        }
    }
    let missing: Vec<&&str> = ALL.iter().filter(|k| !shown.contains(*k)).collect();
    assert!(missing.is_empty(), "the page lacks {missing:?}");
    assert_eq!(shown.len(), ALL.len(), "{shown:?}");
}
