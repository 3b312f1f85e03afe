//! SHOW, DESCRIBE and information_schema statements about sharded or broadcast tables whose
//! backends do not include the default one: answered by a backend that holds the table, so the
//! application sees one table wherever its shards live. `SHOW TABLES` and `SHOW TABLE STATUS`
//! list the default backend's tables plus those placed elsewhere.

use super::plan::Route;
use super::statement::{Plan, StatementContext};
use super::{Placement, TableRule};
use crate::sql::{self, StatementKind, TableNames};

/// Sharded and broadcast rules the default backend holds no part of.
fn rules_away_from_default<'a>(ctx: &StatementContext<'a>) -> Vec<&'a TableRule> {
    ctx.tables
        .tables
        .rules()
        .filter(|r| !matches!(r.placement, Placement::Single { .. }))
        .filter(|r| !r.backends().iter().any(|b| b == ctx.default_backend))
        .collect()
}

/// `Some`: the statement is about a table the default backend does not hold: one backend that
/// holds it answers, or (`SHOW [FULL] TABLES`, `SHOW TABLE STATUS`) the default backend's rows
/// are completed with those of the tables placed elsewhere.
pub fn route_metadata(stmt: &[u8], kind: StatementKind, ctx: &StatementContext) -> Option<Plan> {
    if kind == StatementKind::Select && !sql::mentions(stmt, b"information_schema") {
        return None;
    }
    let away = rules_away_from_default(ctx);
    if away.is_empty() {
        return None;
    }
    if kind == StatementKind::Show && sql::lists_tables(stmt) {
        let mut backends: Vec<String> = Vec::new();
        for b in away.iter().filter_map(|r| r.backends().first()) {
            if !backends.contains(b) {
                backends.push(b.clone());
            }
        }
        return Some(Plan::ListTables {
            backends,
            names: away.iter().map(|r| r.name.clone()).collect(),
        });
    }
    let named = |r: &&&TableRule| match kind {
        StatementKind::Select => sql::string_literal_is(stmt, &r.name),
        _ => sql::identifiers_mention(stmt, &TableNames::new([r.name.as_str()])),
    };
    let backend = away.iter().find(named)?.backends().first()?;
    Some(Plan::Routed(Route::One(backend.clone()), kind))
}
