//! Planning a SELECT, UPDATE, DELETE or DDL that names a configured table: from its text, the
//! byte ranges of its literals and the session's context to a [`ShapePlan`]. Pure: no I/O.

use std::ops::Range;
use std::sync::Arc;

use super::colocate::{check_colocated, check_recursive_reads, default_only_table, rule_for};
use super::ddl::ddl_backends;
use super::multi_table_update::{check_multi_table_update, multi_table_refusal};
use super::plan::{
    unsupported, Fill, KeyProbe, MergeTemplate, PlanContext, ShapeKind, ShapePlan, ShardedPlan,
    Term,
};
use super::{Placement, TableRule};
use crate::route::MergePlan;
use crate::sql::{self, DmlAnalysis, DmlKind, KeyTerm};
use crate::wire::errors::{self, SqlError};

/// Plans `stmt`, whose literals (the slots a cached plan binds) are at `literals`. An error is
/// the client's answer for this statement and is not kept for others of its shape.
pub fn plan(
    stmt: &[u8],
    literals: &[Range<usize>],
    ctx: &PlanContext,
) -> Result<ShapePlan, SqlError> {
    let a = match sql::analyze_dml(stmt) {
        Ok(a) => a,
        // Unparsable: fine for tables on the default backend only.
        Err(e) if ctx.tables.placed_mentioned_in(stmt) => return Err(e.into()),
        Err(_) => return Ok(forward()),
    };
    if a.kind == DmlKind::Ddl {
        return Ok(match ddl_backends(stmt, ctx)? {
            Some(backends) => whole(ShapeKind::Everywhere(backends)),
            None => forward(),
        });
    }
    let rules: Vec<Arc<TableRule>> = a
        .relations
        .iter()
        .filter_map(|t| rule_for(ctx, t))
        .collect();
    let placed: Vec<&Arc<TableRule>> = rules
        .iter()
        .filter(|r| !matches!(r.placement, Placement::Single { .. }))
        .collect();
    if placed.is_empty() {
        return Ok(forward());
    }
    let sharded_rules = || {
        placed
            .iter()
            .filter(|r| matches!(r.placement, Placement::Sharded { .. }))
    };
    // The target's rule first: a subquery in the select list is named before the FROM.
    let names_target = |r: &&&Arc<TableRule>| {
        a.target
            .as_ref()
            .is_some_and(|t| t.name.eq_ignore_ascii_case(&r.name))
    };
    let Some(rule) = sharded_rules()
        .find(names_target)
        .or_else(|| sharded_rules().next())
        .map(|r| Arc::clone(r))
    else {
        // Only broadcast tables: every backend has the rows. A write that reads a table of
        // the default backend alone would fail (or read a stale copy) on the others.
        if a.kind != DmlKind::Select {
            if let Some(single) = default_only_table(ctx, &a) {
                return Err(unsupported(format!(
                    "a write to broadcast table `{}` that reads `{single}` (on the default \
                     backend only) is not supported; read `{single}` first and write the values, \
                     or configure `{single}` as broadcast",
                    placed[0].name
                )));
            }
        }
        return Ok(whole(match a.kind {
            DmlKind::Select => ShapeKind::Forward,
            _ => ShapeKind::BroadcastWrite(placed[0].backends().to_vec()),
        }));
    };
    check_recursive_reads(ctx, &a)?;
    if a.multi_table {
        check_multi_table_update(ctx, &a, &rules)?;
    }
    check_colocated(ctx, &a, &rules, &rule).map_err(|e| match a.multi_table {
        true => multi_table_refusal(e),
        false => e,
    })?;
    // A multi-table UPDATE runs on each shard whichever of its tables is named first.
    let is_target = a
        .target
        .as_ref()
        .is_some_and(|t| t.name.eq_ignore_ascii_case(&rule.name))
        || (a.multi_table
            && a.from
                .iter()
                .any(|t| rule_for(ctx, &t.table).is_some_and(|r| Arc::ptr_eq(&r, &rule))));
    if !is_target {
        return Err(unsupported(format!(
            "sharded table `{}` inside a subquery or join is not supported yet; name it first \
             in FROM, joined to the other tables, or run the other part first and pass its values",
            rule.name
        )));
    }
    if let Placement::Sharded { columns, .. } = &rule.placement {
        if let Some(c) = a.assigned.iter().find(|c| {
            columns.iter().any(|s| s.eq_ignore_ascii_case(c))
                || c.eq_ignore_ascii_case(&rule.id_column)
        }) {
            return Err(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!(
                    "UPDATE of `{c}` in sharded table `{}` would move the row to another shard; \
                     delete the row and insert it again instead",
                    rule.name
                ),
            ));
        }
    }
    let global = ctx.tables.global_key_columns(&rule);
    if let Some(c) = a
        .assigned
        .iter()
        .find(|c| global.iter().any(|k| k.eq_ignore_ascii_case(c)))
    {
        return Err(unsupported(format!(
            "UPDATE of `{c}` in `{}`: its unique key is held across shards through a lookup \
             (unique: global), which idgate does not change on UPDATE yet; delete the row and \
             insert it again",
            rule.name
        )));
    }
    let probes = probes(ctx, &a, &rule);
    let mut plan = sharded(stmt, literals, &a, rule);
    if let ShapeKind::Sharded(p) = &mut plan.kind {
        p.probes = probes
            .into_iter()
            .filter_map(|key| {
                let terms = key
                    .columns
                    .iter()
                    .map(|c| {
                        let (_, terms) = p
                            .keys
                            .iter()
                            .find(|(k, _)| k.eq_ignore_ascii_case(&c.name))?;
                        match terms.as_slice() {
                            [t] => Some(t.clone()),
                            _ => None,
                        }
                    })
                    .collect::<Option<Vec<Term>>>()?;
                Some(KeyProbe { key, terms })
            })
            .collect();
    }
    Ok(plan)
}

/// The keys held through lookups that may send `a` to one shard: a SELECT, UPDATE or DELETE
/// of the table alone (no join, no subquery), so the one row a whole key can match is all it
/// reads or changes; a SELECT's rows must be its answer as they are (an aggregate without
/// GROUP BY answers even when nothing matches).
fn probes(ctx: &PlanContext, a: &DmlAnalysis, rule: &TableRule) -> Vec<crate::unique::GlobalKey> {
    let Some(target) = a.target.as_ref() else {
        return Vec::new();
    };
    let alone = matches!(a.kind, DmlKind::Select | DmlKind::Update | DmlKind::Delete)
        && a.from.len() == 1
        && a.relations.len() == 1
        && a.subqueries.is_empty()
        && !a.implicit_group;
    let schema = target.schema.as_deref().or(ctx.db);
    match (alone, schema) {
        (true, Some(schema)) => ctx
            .tables
            .global_keys(schema, &target.name, rule)
            .map(|k| k.to_vec())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn whole(kind: ShapeKind) -> ShapePlan {
    ShapePlan {
        kind,
        fixed: Vec::new(),
    }
}

fn forward() -> ShapePlan {
    whole(ShapeKind::Forward)
}

/// The plan of a statement whose target is sharded: its key conditions as terms over the
/// literal slots, and for a SELECT its merge with the per-shard SQL as a template.
fn sharded(
    stmt: &[u8],
    literals: &[Range<usize>],
    a: &DmlAnalysis,
    rule: Arc<TableRule>,
) -> ShapePlan {
    let overlaps = |x: &Range<usize>, y: &Range<usize>| x.start < y.end && y.start < x.end;
    let mut fixed_slots: Vec<usize> = Vec::new();
    let mut key_slots: Vec<usize> = Vec::new();
    let keys = a
        .keys
        .iter()
        .map(|(c, terms)| {
            let terms = terms
                .iter()
                .map(|t| match t {
                    KeyTerm::Placeholder(i) => Term::Placeholder(*i),
                    KeyTerm::Literal { at, negated } => {
                        if let Some(slot) = literals.iter().position(|r| r == at) {
                            key_slots.push(slot);
                            return Term::Slot {
                                slot,
                                negated: *negated,
                            };
                        }
                        // Written without slots (`0x1F`), or in a way the slots cut through.
                        fixed_slots
                            .extend((0..literals.len()).filter(|&s| overlaps(&literals[s], at)));
                        Term::Const(
                            stmt.get(at.clone())
                                .and_then(|t| KeyTerm::resolve_literal(t, *negated)),
                        )
                    }
                })
                .collect();
            (c.clone(), terms)
        })
        .collect();
    let merge = match (a.kind, super::merge_plan(a, stmt, true)) {
        (DmlKind::Select, Some(Ok(plan))) => {
            let weighted = plan.has_weights();
            let (mut template, fixed) = template(plan, literals);
            fixed_slots.extend(fixed);
            // Keys that turn out not to be strings need no weights from the shards.
            if let Some(Ok(lean)) = weighted
                .then(|| super::merge_plan(a, stmt, false))
                .flatten()
            {
                let (lean, fixed) = self::template(lean, literals);
                fixed_slots.extend(fixed);
                template = template.with_lean(lean);
            }
            Some(Ok(template))
        }
        (DmlKind::Select, Some(Err(what))) => {
            // The message may quote any literal outside the WHERE keys.
            fixed_slots.extend((0..literals.len()).filter(|s| !key_slots.contains(s)));
            Some(Err(what))
        }
        _ => None,
    };
    fixed_slots.sort_unstable();
    fixed_slots.dedup();
    let fixed = fixed_slots
        .into_iter()
        .filter_map(|s| Some((s, stmt.get(literals.get(s)?.clone())?.to_vec())))
        .collect();
    ShapePlan {
        kind: ShapeKind::Sharded(Box::new(ShardedPlan {
            rule,
            kind: a.kind,
            keys,
            merge,
            needs_merge: a.needs_merge,
            probes: Vec::new(),
        })),
        fixed,
    }
}

/// The merge's shard SQL with a slot for each literal of FROM … WHERE (which the merge does not
/// read and the shard SQL holds unchanged), and for the LIMIT's numbers, which each statement
/// binds as its page (and, streaming, as the rows each shard returns). A LIMIT 0 stays fixed:
/// its shard SQL asks for nothing. Every other literal is fixed.
fn template(plan: MergePlan, literals: &[Range<usize>]) -> (MergeTemplate, Vec<usize>) {
    let mut holes = Vec::new();
    let mut fixed = Vec::new();
    let (mut offset_slot, mut limit_slot) = (None, None);
    for (s, r) in literals.iter().enumerate() {
        if let Some(w) = &plan.window {
            if w.offset_at.as_ref() == Some(r) {
                offset_slot = Some(s);
                continue;
            }
            if w.limit_at == *r && plan.limit != Some(0) {
                limit_slot = Some(s);
                continue;
            }
        }
        let unread = plan.unread.start <= r.start && r.end <= plan.unread.end;
        let at = plan
            .copied
            .iter()
            .find(|(src, _)| src.start <= r.start && r.end <= src.end)
            .map(|(src, dst)| dst + (r.start - src.start));
        match (unread, at) {
            (true, Some(at)) => holes.push((at..at + r.len(), Fill::Literal(s))),
            _ => fixed.push(s),
        }
    }
    let bound_page = offset_slot.is_some() || limit_slot.is_some();
    if let Some(sum) = plan.window.as_ref().and_then(|w| w.sum_at.clone()) {
        if bound_page {
            holes.push((sum, Fill::Rows));
        }
    }
    (
        MergeTemplate::new(plan, holes, (offset_slot, limit_slot)),
        fixed,
    )
}
