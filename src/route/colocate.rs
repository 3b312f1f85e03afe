//! Whether a statement naming several sharded tables can run per shard: each shard must hold
//! every pair of rows that can join.

use std::sync::Arc;

use super::plan::{unsupported, PlanContext};
use super::{Algorithm, Placement, TableRule};
use crate::sql::{DmlAnalysis, FromTree, Outer, QualifiedColumn, TableRef, TopTable};
use crate::wire::errors::SqlError;

/// The rule for a table a statement names (schema from the statement, else the session's).
pub fn rule_for(ctx: &PlanContext, t: &TableRef) -> Option<Arc<TableRule>> {
    let schema = t.schema.as_deref().or(ctx.db);
    ctx.tables.lookup_shared(schema, &t.name).cloned()
}

/// Schemas every MariaDB server has, each its own: their tables are on every backend.
const SYSTEM_SCHEMAS: [&str; 4] = ["information_schema", "performance_schema", "mysql", "sys"];

/// A table the statement names that lives on the default backend only: one configured as
/// such, or one not configured at all (idgate places unconfigured tables there), as opposed to
/// a common table expression, `DUAL` or a system schema's table.
pub fn default_only_table(ctx: &PlanContext, a: &DmlAnalysis) -> Option<String> {
    a.relations.iter().find_map(|t| match rule_for(ctx, t) {
        Some(r) => matches!(r.placement, Placement::Single { .. }).then(|| r.name.clone()),
        None => unconfigured_table(t, &a.ctes).then(|| t.name.clone()),
    })
}

/// Whether `t`, which no rule places, is a table (so on the default backend only), not one of
/// the statement's common table expressions `ctes` (lowercase), `DUAL` or a system schema's.
pub fn unconfigured_table(t: &TableRef, ctes: &[String]) -> bool {
    let system = t
        .schema
        .as_deref()
        .is_some_and(|s| SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(s)));
    let lower = t.name.to_lowercase();
    let not_a_table = t.schema.is_none() && (lower == "dual" || ctes.contains(&lower));
    !system && !not_a_table && !t.name.is_empty()
}

/// Where rows of a sharded table live: tables placed alike keep equal sharding values together.
pub(super) fn placement_key(rule: &TableRule) -> Option<(&Algorithm, &[String], Vec<String>)> {
    match &rule.placement {
        Placement::Sharded {
            columns,
            algorithm,
            shards,
        } => {
            // Under `slot` every sharding column carries the same low bits (a biased id and its
            // bias column), so a join on any of them stays on one shard.
            let usable = match algorithm {
                Algorithm::Slot { .. } => columns.len(),
                _ => 1,
            };
            let cols = columns
                .iter()
                .take(usable)
                .map(|c| c.to_lowercase())
                .collect();
            Some((algorithm, shards, cols))
        }
        _ => None,
    }
}

/// Whether two sharded tables are placed alike (same algorithm, same shards in the same
/// order), so that equal sharding values of both land on one shard and their joins run per
/// shard.
pub fn placed_alike(a: &TableRule, b: &TableRule) -> bool {
    match (placement_key(a), placement_key(b)) {
        (Some((aa, sa, _)), Some((ab, sb, _))) => aa == ab && sa == sb,
        _ => false,
    }
}

/// What idgate does with the joins refused here in a SELECT, text or prepared (the session runs
/// such joins in the gateway; `session/statement/join.rs`).
pub(super) const GATEWAY_ONLY: &str =
    "except in a SELECT joining plain tables (idgate runs that join in the gateway)";

/// Whether `e` is a refusal of [`check_colocated`] for tables not placed alike (not one of a
/// subquery), which a SELECT can have idgate run in the gateway instead.
pub fn is_colocation_refusal(e: &SqlError) -> bool {
    e.message.contains(GATEWAY_ONLY)
}

/// A statement naming several sharded tables runs per shard only when every one is a table of
/// its own FROM, joined (through `=` on sharding columns, in ON or WHERE) to the first, all
/// placed alike: then each shard holds every pair of rows that can join.
pub fn check_colocated(
    ctx: &PlanContext,
    a: &DmlAnalysis,
    rules: &[Arc<TableRule>],
    rule: &TableRule,
) -> Result<(), SqlError> {
    if let Some(single) = default_only_table(ctx, a) {
        return Err(unsupported(format!(
            "statements over sharded table `{}` together with `{single}` (on the default backend \
             only) are not supported {GATEWAY_ONLY}; join sharded tables only with broadcast \
             tables, or configure `{single}` as broadcast",
            rule.name
        )));
    }
    if let Some(tree) = &a.from_tree {
        if let Err((kept, nulled)) = sharded_rows(ctx, tree) {
            return Err(unsupported(format!(
                "an outer join keeping every row of {kept} (no sharded table) while it \
                 NULL-extends sharded table `{nulled}` cannot run on each shard (each shard \
                 would add its own NULL-extended rows) and is not supported {GATEWAY_ONLY}; put \
                 a sharded table on the side the outer join keeps, or read {kept}'s rows first \
                 and pass their values"
            )));
        }
    }
    let top: Vec<(&TopTable, Arc<TableRule>)> = a
        .from
        .iter()
        .filter_map(|f| Some((f, rule_for(ctx, &f.table)?)))
        .filter(|(_, r)| placement_key(r).is_some())
        .collect();
    let named: Vec<&Arc<TableRule>> = rules
        .iter()
        .filter(|r| placement_key(r).is_some())
        .collect();
    if named.len() > top.len() && !subqueries_colocated(ctx, a, &top, named.len()) {
        let inner = named
            .iter()
            .find(|r| {
                !top.iter()
                    .any(|(_, t)| t.name.eq_ignore_ascii_case(&r.name))
            })
            .map_or(rule, |r| &***r);
        return Err(unsupported(format!(
            "sharded table `{}` inside a subquery is supported only in SELECTs whose \
             subqueries idgate can run first (IN, EXISTS, scalar, ANY/SOME/ALL, derived \
             tables, also in UNION members), that correlate it on its sharding column with a table sharded \
             alike, or that tie it to the outer query by a column equality (idgate then runs the \
             statement in the gateway); run the inner SELECT first and pass its values",
            inner.name
        )));
    }
    let mut linked = vec![false; top.len()];
    if let Some(first) = linked.first_mut() {
        *first = true;
    }
    let joined = |i: usize, j: usize| {
        let (Some(ki), Some(kj)) = (placement_key(&top[i].1), placement_key(&top[j].1)) else {
            return false;
        };
        let on_keys = ki.2.iter().any(|x| {
            kj.2.iter().any(|y| {
                let ci = (top[i].0.qualifier.clone(), x.clone());
                let cj = (top[j].0.qualifier.clone(), y.clone());
                a.equal_columns
                    .iter()
                    .any(|(l, r)| (*l == ci && *r == cj) || (*l == cj && *r == ci))
            })
        });
        ki.0.places_like(kj.0, ki.1.len()) && ki.1 == kj.1 && on_keys
    };
    let mut grew = true;
    while grew {
        grew = false;
        for j in 0..top.len() {
            if !linked[j] && (0..top.len()).any(|i| linked[i] && joined(i, j)) {
                linked[j] = true;
                grew = true;
            }
        }
    }
    if let Some(j) = linked.iter().position(|l| !l) {
        return Err(unsupported(format!(
            "a join of sharded table `{}` with sharded table `{}` is not supported unless they \
             are sharded alike (same algorithm and shards) and joined on their sharding columns \
             (`{}.{}` = `{}.{}`), {GATEWAY_ONLY}",
            top[0].1.name,
            top[j].1.name,
            top[0].0.qualifier,
            placement_key(&top[0].1)
                .and_then(|k| k.2.first().cloned())
                .unwrap_or_default(),
            top[j].0.qualifier,
            placement_key(&top[j].1)
                .and_then(|k| k.2.first().cloned())
                .unwrap_or_default(),
        )));
    }
    Ok(())
}

/// Whether `tree` holds rows of a sharded table (a sharded table's rows are each on one
/// shard; the rows of any other are on every shard alike), or, for an outer join that keeps
/// every row of a side holding none and NULL-extends one that holds some, that side and the
/// sharded table: each shard would give each kept row NULL-extended unless it holds a match,
/// and every shard would give it.
fn sharded_rows(ctx: &PlanContext, tree: &FromTree) -> Result<bool, (String, String)> {
    match tree {
        FromTree::Leaf { tables, .. } => Ok(tables.iter().any(|t| {
            rule_for(ctx, t).is_some_and(|r| matches!(r.placement, Placement::Sharded { .. }))
        })),
        FromTree::Join { left, right, outer } => {
            let (l, r) = (sharded_rows(ctx, left)?, sharded_rows(ctx, right)?);
            let wrong = match outer {
                Some(Outer::Left) => (!l && r).then_some((left, right)),
                Some(Outer::Right) => (l && !r).then_some((right, left)),
                Some(Outer::Full) if l != r => Some(if l { (right, left) } else { (left, right) }),
                _ => None,
            };
            match wrong {
                Some((kept, nulled)) => Err((describe(kept), first_sharded(ctx, nulled))),
                None => Ok(l || r),
            }
        }
    }
}

/// How a refusal names one side of a join: its tables' names (or aliases), or a derived table.
fn describe(tree: &FromTree) -> String {
    let mut names = Vec::new();
    leaf_names(tree, &mut names);
    match names.as_slice() {
        [] => "a derived table".into(),
        [one] => format!("`{one}`"),
        _ => format!("`{}`", names.join("`, `")),
    }
}

fn leaf_names(tree: &FromTree, out: &mut Vec<String>) {
    match tree {
        FromTree::Leaf { name, .. } if !name.is_empty() => out.push(name.clone()),
        FromTree::Leaf { .. } => {}
        FromTree::Join { left, right, .. } => {
            leaf_names(left, out);
            leaf_names(right, out);
        }
    }
}

/// The first sharded table of `tree`.
fn first_sharded(ctx: &PlanContext, tree: &FromTree) -> String {
    match tree {
        FromTree::Leaf { tables, .. } => tables
            .iter()
            .filter_map(|t| rule_for(ctx, t))
            .find(|r| matches!(r.placement, Placement::Sharded { .. }))
            .map(|r| r.name.clone())
            .unwrap_or_default(),
        FromTree::Join { left, right, .. } => {
            let l = first_sharded(ctx, left);
            if l.is_empty() {
                first_sharded(ctx, right)
            } else {
                l
            }
        }
    }
}

/// Whether every sharded table of the statement's subqueries is correlated, by
/// `inner.sharding = outer.sharding` in its subquery's WHERE or ON, with a table outside placed
/// alike (or joined so to one that is), and `named` (the sharded tables the statement names)
/// holds no others (derived tables): then each shard holds every pair and the whole statement
/// runs per shard.
fn subqueries_colocated(
    ctx: &PlanContext,
    a: &DmlAnalysis,
    top: &[(&TopTable, Arc<TableRule>)],
    named: usize,
) -> bool {
    let mut pending: Vec<(usize, &TopTable, Arc<TableRule>)> = Vec::new();
    for (i, s) in a.subqueries.iter().enumerate() {
        for t in &s.from {
            if let Some(r) = rule_for(ctx, &t.table).filter(|r| placement_key(r).is_some()) {
                pending.push((i, t, r));
            }
        }
    }
    if top.len() + pending.len() != named {
        return false;
    }
    // Tables known to hold their rows with the outer ones: (subquery, table, rule).
    let mut placed: Vec<(Option<usize>, &TopTable, Arc<TableRule>)> =
        top.iter().map(|(t, r)| (None, *t, Arc::clone(r))).collect();
    while !pending.is_empty() {
        let at = pending.iter().position(|(i, t, r)| {
            let sub = &a.subqueries[*i];
            let ours = |q: &str| sub.from.iter().any(|f| f.qualifier == q);
            // The table a qualified column of this subquery refers to: its own, else an
            // outer one.
            let refers = |c: &QualifiedColumn| {
                placed.iter().find(|(j, p, _)| {
                    p.qualifier == c.0 && (*j == Some(*i) || (!ours(&c.0) && *j != Some(*i)))
                })
            };
            let Some(kt) = placement_key(r) else {
                return false;
            };
            sub.equal_columns.iter().any(|(l, rr)| {
                [(l, rr), (rr, l)].into_iter().any(|(x, y)| {
                    let Some((_, _, other)) = refers(y) else {
                        return false;
                    };
                    let Some(ko) = placement_key(other) else {
                        return false;
                    };
                    x.0 == t.qualifier
                        && kt.2.contains(&x.1)
                        && ko.2.contains(&y.1)
                        && kt.0.places_like(ko.0, kt.1.len())
                        && kt.1 == ko.1
                })
            })
        });
        let Some(at) = at else {
            return false;
        };
        let (i, t, r) = pending.swap_remove(at);
        placed.push((Some(i), t, r));
    }
    true
}

/// A recursive common table expression over a sharded table: each shard would follow the
/// links through its own rows only, and a row's next one may be on another shard.
pub fn check_recursive_reads(ctx: &PlanContext, a: &DmlAnalysis) -> Result<(), SqlError> {
    for (cte, t) in &a.recursive_reads {
        let Some(r) = rule_for(ctx, t).filter(|r| matches!(r.placement, Placement::Sharded { .. }))
        else {
            continue;
        };
        return Err(unsupported(format!(
            "a recursive common table expression (`WITH RECURSIVE {cte}`) over sharded table \
             `{}` is not supported: each shard would recurse over its own rows only, while the \
             rows it links may be on other shards; SELECT the rows it needs and follow the links \
             in the application, or configure `{}` as broadcast (every backend then holds all \
             of its rows)",
            r.name, r.name
        )));
    }
    Ok(())
}
