//! Plans for statements the shape planner refuses but idgate can still answer as one server
//! would: subqueries over placed tables (or, in a statement about placed tables, over the
//! default backend's) run first and bound in as literals, and joins (or correlated subqueries)
//! of tables not placed alike run in the gateway.

use super::colocate::{default_only_table, is_colocation_refusal, rule_for, unconfigured_table};
use super::plan::PlanContext;
use super::statement::Plan;
use super::Placement;
use crate::route::JoinSide;
use crate::sql::{self, StatementKind, Subquery};
use crate::wire::errors::SqlError;

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

/// The sharding columns of a join side's table, when it is sharded.
pub fn sharding_columns(ctx: &PlanContext, side: &JoinSide) -> Option<Vec<String>> {
    if side.derived {
        return None;
    }
    match &rule_for(ctx, &side.table)?.placement {
        Placement::Sharded { columns, .. } => Some(columns.clone()),
        _ => None,
    }
}

/// The outer-level subqueries of `stmt` naming a sharded or broadcast table, if any.
pub fn placed_subqueries(stmt: &[u8], ctx: &PlanContext) -> Option<Vec<Subquery>> {
    let subs: Vec<Subquery> = sql::find_subqueries(stmt)?
        .into_iter()
        .filter(|s| {
            stmt.get(s.inner.clone())
                .is_some_and(|t| ctx.tables.placed_mentioned_in(t))
        })
        .collect();
    (!subs.is_empty()).then_some(subs)
}

/// The subqueries of an INSERT's VALUES, SET or ON DUPLICATE KEY UPDATE that must run first
/// through idgate: run where the row goes, one over sharded or broadcast tables would read that
/// backend's rows only, and in a row that goes to a shard any subquery would read that shard's
/// copy of its tables. The INSERT is planned again with their values bound in.
pub fn insert_subqueries(
    stmt: &[u8],
    a: &sql::InsertAnalysis,
    ctx: &PlanContext,
) -> Option<Vec<Subquery>> {
    if matches!(a.body, sql::InsertBody::Select { .. }) {
        return None;
    }
    let schema = a.table.schema.as_deref().or(ctx.db);
    let placed_target = ctx
        .tables
        .lookup(schema, &a.table.name)
        .is_some_and(|r| !matches!(r.placement, Placement::Single { .. }));
    if placed_target {
        sql::find_subqueries(stmt).filter(|s| !s.is_empty())
    } else {
        placed_subqueries(stmt, ctx)
    }
}

/// The plan of a SELECT, or a single-table UPDATE or DELETE, the planner refused, when idgate
/// can run its subqueries first. A multi-table UPDATE/DELETE keeps its refusal.
pub fn subquery_plan(stmt: &[u8], ctx: &PlanContext) -> Option<Plan> {
    match sql::classify(stmt) {
        StatementKind::Select => {
            // Correlated by column equalities: the whole statement runs in the gateway.
            if let Some(plan) = correlated_plan(stmt, ctx) {
                return Some(plan);
            }
        }
        StatementKind::Update | StatementKind::Delete if !sql::is_multi_table_write(stmt) => {}
        _ => return None,
    }
    placed_subqueries(stmt, ctx)
        .or_else(|| default_backend_subqueries(stmt, ctx))
        .map(Plan::Subqueries)
}

/// The subqueries to run first in an inner query idgate refused to route as it is: those over
/// placed tables, else those over the default backend's tables alone (as for the outer
/// statement, [`subquery_plan`]).
pub fn nested_subqueries(inner: &[u8], ctx: &PlanContext) -> Option<Vec<Subquery>> {
    placed_subqueries(inner, ctx).or_else(|| default_backend_subqueries(inner, ctx))
}

/// The outer-level subqueries of `stmt` over tables of the default backend alone (the planner
/// refused the statement, which names a sharded or broadcast table too): run first there and
/// bound in, so the other backends get a statement naming only tables they hold.
fn default_backend_subqueries(stmt: &[u8], ctx: &PlanContext) -> Option<Vec<Subquery>> {
    let subs: Vec<Subquery> = sql::find_subqueries(stmt)?
        .into_iter()
        .filter(|s| {
            stmt.get(s.inner.clone()).is_some_and(|t| {
                !ctx.tables.placed_mentioned_in(t)
                    && sql::analyze_dml(t)
                        .ok()
                        .is_some_and(|a| default_only_table(ctx, &a).is_some())
            })
        })
        .collect();
    (!subs.is_empty()).then_some(subs)
}

/// Whether `subs[i]` is a correlated subquery the whole statement runs in the gateway for once
/// the others are bound (`correlated_plan` takes it with them replaced): it stays as written
/// while they run first.
pub fn correlated_later(stmt: &[u8], subs: &[Subquery], i: usize, ctx: &PlanContext) -> bool {
    // Alone, it would have been taken before the subqueries were looked at.
    if subs.len() < 2 {
        return false;
    }
    let parts: Vec<(std::ops::Range<usize>, Vec<u8>)> = subs
        .iter()
        .enumerate()
        .filter(|&(n, _)| n != i)
        .map(|(_, s)| (s.replace.clone(), b"(SELECT NULL)".to_vec()))
        .collect();
    correlated_plan(&sql::splice(stmt, &parts), ctx).is_some()
}

/// The plan of a SELECT the planner refused because its tables are not placed alike, when
/// idgate can run the join in the gateway.
pub fn join_plan(stmt: &[u8], refusal: &SqlError, ctx: &PlanContext) -> Option<Plan> {
    if let Some(plan) = correlated_plan(stmt, ctx) {
        return Some(plan);
    }
    if sql::classify(stmt) != StatementKind::Select || !is_colocation_refusal(refusal) {
        return None;
    }
    match super::analyze_join(stmt) {
        // A derived table over placed tables runs first on the subquery path: here it would be
        // read through routing that cannot evaluate it.
        Ok(Some(shape))
            if shape.sides.iter().any(|s| {
                s.derived
                    && stmt
                        .get(s.name_at.clone())
                        .is_none_or(|t| ctx.tables.placed_mentioned_in(t))
            }) =>
        {
            None
        }
        Ok(Some(shape)) => shape
            .sides
            .iter()
            .any(|s| sharding_columns(ctx, s).is_some())
            .then(|| Plan::Join(Box::new(shape))),
        Ok(None) => None,
        Err(why) => Some(Plan::Refuse(unsupported(why.0))),
    }
}

/// The plan of a SELECT the planner refused whose subqueries over configured tables are
/// correlated with it by column equalities: run in the gateway like a join, each subquery's
/// table fetched by the outer rows' values (`route::analyze_correlated`).
pub fn correlated_plan(stmt: &[u8], ctx: &PlanContext) -> Option<Plan> {
    if sql::classify(stmt) != StatementKind::Select {
        return None;
    }
    // A table no rule places lives on the default backend, as a `single` one does.
    let ctes = sql::analyze_dml(stmt).map(|a| a.ctes).unwrap_or_default();
    let configured = |t: &sql::TableRef| rule_for(ctx, t).is_some() || unconfigured_table(t, &ctes);
    let shape = super::analyze_correlated(stmt, &configured).ok()??;
    shape
        .sides
        .iter()
        .any(|s| sharding_columns(ctx, s).is_some())
        .then(|| Plan::Join(Box::new(shape)))
}
