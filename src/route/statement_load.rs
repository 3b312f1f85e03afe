//! Plans for `LOAD DATA` and the statements that would bypass idgate's ids or shards if they
//! went to the default backend as they are: LOAD DATA into a table whose ids idgate generates
//! or whose rows it places, and HANDLER or LOCK TABLES on a sharded or broadcast table.

use super::statement::{Plan, StatementContext};
use super::{Placement, Tables};
use crate::sql::{self, StatementKind, TableNames};
use crate::wire::errors::SqlError;

/// MariaDB's error for LOAD DATA LOCAL from a client that did not agree to send files.
pub const ER_LOAD_INFILE_CAPABILITY_DISABLED: u16 = 4166;

/// `Some`: a `LOAD DATA LOCAL` from a client that may send files, into a table idgate places or
/// fills ids for (anything else is decided by the usual rules).
pub fn plan_load_data(stmt: &[u8], ctx: &StatementContext) -> Option<Plan> {
    if !sql::is_load_local(stmt) || !ctx.local_files {
        return None;
    }
    let ld = match sql::analyze_load_data(stmt) {
        Ok(ld) => ld,
        Err(e) => return Some(Plan::Refuse(e.into())),
    };
    let schema = ld.table.schema.as_deref().or(ctx.tables.db);
    let rule = ctx
        .tables
        .tables
        .lookup_shared(schema, &ld.table.name)?
        .clone();
    let concerned = !matches!(rule.placement, Placement::Single { .. }) || rule.generator.is_some();
    concerned.then(|| Plan::LoadData(Box::new((ld, rule))))
}

/// `Some`: the statement names a configured table in a way idgate cannot honour.
pub fn refuse_bypass(stmt: &[u8], tables: &Tables) -> Option<SqlError> {
    let verb = String::from_utf8_lossy(&sql::first_word(stmt)).into_owned();
    if !matches!(verb.as_str(), "LOAD" | "HANDLER" | "LOCK") {
        return None;
    }
    let rule = tables.rules().find(|r| {
        let placed = !matches!(r.placement, Placement::Single { .. });
        let concerned = placed || (verb == "LOAD" && r.generator.is_some());
        concerned && sql::identifiers_mention(stmt, &TableNames::new([r.name.as_str()]))
    })?;
    let what = match verb.as_str() {
        "LOAD" => "LOAD DATA/XML",
        "HANDLER" => "HANDLER",
        _ => "LOCK TABLES",
    };
    Some(SqlError::new(
        sql::ER_NOT_SUPPORTED_YET,
        b"42000",
        format!(
            "{what} on table `{}` is not supported through idgate: it would reach only the \
             default backend and skip idgate's ids and shards; use INSERT/SELECT statements",
            rule.name
        ),
    ))
}

/// A statement of kind Other not about a configured table: `LOAD … LOCAL` from a client that
/// did not agree to send files gets MariaDB's own refusal (the backend, which idgate told it
/// may ask for files, would otherwise ask).
pub fn plan_other(stmt: &[u8], local_files: bool) -> Plan {
    if !local_files && sql::is_load_local(stmt) {
        return Plan::Refuse(local_infile_disabled());
    }
    Plan::Forward(StatementKind::Other)
}

/// MariaDB's answer to a `LOAD … LOCAL` from a client that did not agree to send files.
pub fn local_infile_disabled() -> SqlError {
    SqlError::new(
        ER_LOAD_INFILE_CAPABILITY_DISABLED,
        b"HY000",
        "The used command is not allowed because the MariaDB server or client has disabled the \
         local infile capability",
    )
}
