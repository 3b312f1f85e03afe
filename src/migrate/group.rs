//! Tables placed alike (equal sharding values on one shard, so their joins run per shard)
//! move together. START of one also starts every other table placed alike in its database,
//! each onto the same shards; SWITCH, REVERSE, COMPLETE and CANCEL of one act on all of them
//! at once, so no statement ever meets them on two placements.

use super::start::{current_rule, source_entry, source_rule, target_rule};
use super::store::{is_finished, JobRow};
use crate::config::tables::TableConfig;
use crate::proxy::Proxy;
use crate::route::colocate::placed_alike;
use crate::route::TableRule;

/// Another table that moves with the one named: its name and the entry placing it alike the
/// named table's new placement.
#[derive(Debug, Clone, PartialEq)]
pub struct Partner {
    pub table: String,
    pub entry: String,
}

/// The tables of `schema` placed alike `table` now, each with its entry for the new placement
/// `entry` (its own generator, id column and sharding columns; the shards and algorithm of
/// `entry`). None for a table on one backend.
pub fn partners(
    proxy: &Proxy,
    schema: &str,
    table: &str,
    entry: &str,
) -> Result<Vec<Partner>, String> {
    let from = current_rule(proxy, schema, table);
    let target: TableConfig = serde_saphyr::from_str(entry)
        .map_err(|e| format!("the placement is not a valid `tables:` entry: {e}"))?;
    let Some(to) = target.sharding.as_ref() else {
        return Ok(Vec::new());
    };
    let moved_to = target_rule(proxy, &format!("{schema}.{table}"), entry)?;
    let tables = proxy.tables.load();
    let mut names: Vec<String> = tables
        .rules()
        .filter(|r| r.schema.as_deref().is_none_or(|s| s == schema))
        .map(|r| r.name.clone())
        .filter(|n| !n.eq_ignore_ascii_case(table))
        .collect();
    names.sort();
    names.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    let mut out = Vec::new();
    for name in names {
        let Some(rule) = tables.lookup(Some(schema), &name) else {
            continue;
        };
        if !placed_alike(rule, &from) {
            continue;
        }
        let now = source_entry(proxy, schema, &name);
        let mut t: TableConfig = serde_saphyr::from_str(&now)
            .map_err(|e| format!("`{schema}.{name}`'s placement cannot be read: {e}"))?;
        let Some(sharding) = t.sharding.as_mut() else {
            continue;
        };
        sharding.algorithm = to.algorithm;
        sharding.shards = to.shards.clone();
        sharding.bounds = to.bounds.clone();
        let entry = serde_saphyr::to_string(&t)
            .map_err(|e| format!("`{schema}.{name}`'s new placement cannot be written: {e}"))?;
        let key = format!("{schema}.{name}");
        if !placed_alike(&target_rule(proxy, &key, &entry)?, &moved_to) {
            return Err(format!(
                "`{key}` is placed alike `{schema}.{table}` and must move with it, but its new \
                 placement would not be alike (another slot width?); move it first"
            ));
        }
        out.push(Partner { table: name, entry });
    }
    Ok(out)
}

/// The unfinished jobs of `jobs` that move together with `j`, `j` first: those of its database
/// whose table was placed alike `j`'s before the move and is placed alike it after.
pub fn group_of(proxy: &Proxy, j: &JobRow, jobs: &[JobRow]) -> Vec<JobRow> {
    let rules = |j: &JobRow| -> Option<(TableRule, TableRule)> {
        Some((
            source_rule(proxy, j).ok()?,
            target_rule(proxy, &j.table_key, &j.target).ok()?,
        ))
    };
    let schema = |j: &JobRow| j.table_key.split_once('.').map(|(s, _)| s.to_string());
    let mut out = vec![j.clone()];
    let Some((from, to)) = rules(j) else {
        return out;
    };
    for o in jobs {
        if o.table_key == j.table_key || is_finished(&o.phase) || schema(o) != schema(j) {
            continue;
        }
        if let Some((f, t)) = rules(o) {
            if placed_alike(&f, &from) && placed_alike(&t, &to) {
                out.push(o.clone());
            }
        }
    }
    out
}

/// The keys of `group`, for messages: "`a`, `b`".
pub fn named(group: &[JobRow]) -> String {
    group
        .iter()
        .map(|j| format!("`{}`", j.table_key))
        .collect::<Vec<_>>()
        .join(", ")
}
