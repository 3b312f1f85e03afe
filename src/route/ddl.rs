//! Where DDL about configured tables goes: every backend that holds one of the tables it is
//! about, each table's rule matched by the schema the statement (or the session) names, as for
//! DML. Foreign keys the shards cannot hold are refused: a shard checks a key against its own
//! rows only, so a key between tables whose rows are not kept together would reject good rows
//! or accept dangling ones (Vitess refuses foreign keys across shards for the same reason).

use std::sync::Arc;

use super::colocate::{placement_key, rule_for};
use super::plan::{unsupported, PlanContext};
use super::{Placement, TableRule};
use crate::config::tables::UniqueScope;
use crate::sql::{self, ForeignKey};
use crate::wire::errors::SqlError;

/// The backends a DDL statement runs on; `None`: the default backend alone (it is about no
/// sharded or broadcast table).
pub fn ddl_backends(stmt: &[u8], ctx: &PlanContext) -> Result<Option<Vec<String>>, SqlError> {
    let rules: Vec<Arc<TableRule>> = match sql::ddl_tables(stmt) {
        Some(d) => {
            for fk in &d.foreign_keys {
                check_foreign_key(ctx, fk)?;
            }
            for k in &d.unique_keys {
                check_unique_key(
                    ctx,
                    k,
                    d.action == sql::DdlAction::Create && d.read.is_empty(),
                )?;
            }
            check_placed_alike(ctx, &d.subjects)?;
            check_created_from_query(ctx, &d)?;
            d.subjects.iter().filter_map(|t| rule_for(ctx, t)).collect()
        }
        // A statement sqlparser does not read (a view, a trigger): by the names it mentions,
        // a rule limited to a schema only where that schema is the session's or is named.
        None => ctx
            .tables
            .placed_rules_named_in(stmt)
            .into_iter()
            .filter(|r| {
                r.schema.as_deref().is_none_or(|s| {
                    ctx.db.is_some_and(|d| d.eq_ignore_ascii_case(s))
                        || sql::identifiers_mention(stmt, &sql::TableNames::new([s]))
                })
            })
            .collect(),
    };
    let mut backends: Vec<String> = Vec::new();
    for r in rules
        .iter()
        .filter(|r| !matches!(r.placement, Placement::Single { .. }))
    {
        for b in r.backends() {
            if !backends.contains(b) {
                backends.push(b.clone());
            }
        }
    }
    Ok((!backends.is_empty()).then_some(backends))
}

/// A unique key on a sharded table that the shards would check per shard only is refused
/// unless the table's rule accepts that (`unique: per_shard`). With `unique: global` a new,
/// empty table gets its lookups right after CREATE TABLE; a key added to a table with rows needs
/// its lookup filled, which idgate does at start.
fn check_unique_key(
    ctx: &PlanContext,
    k: &sql::UniqueKey,
    new_empty_table: bool,
) -> Result<(), SqlError> {
    let Some(rule) = rule_for(ctx, &k.table) else {
        return Ok(());
    };
    if rule.unique == Some(UniqueScope::PerShard)
        || (rule.unique == Some(UniqueScope::Global) && new_empty_table)
        || super::unique_keys::holds_across_shards(&rule, &k.columns)
    {
        return Ok(());
    }
    let name = k
        .name
        .as_deref()
        .map_or("(unnamed)".to_string(), |n| format!("`{n}`"));
    if rule.unique == Some(UniqueScope::Global) {
        return Err(SqlError::new(
            crate::sql::ER_NOT_SUPPORTED_YET,
            b"42000",
            format!(
                "idgate: unique key {name} ({}) of `{}` (unique: global) needs a lookup table, \
                 which idgate makes and fills when it starts: create the key on every shard \
                 directly, then restart idgate",
                k.columns.join(", "),
                rule.name
            ),
        ));
    }
    Err(super::unique_keys::per_shard_refusal(
        &rule, &name, &k.columns,
    ))
}

/// One statement about several tables (`DROP TABLE a, b`, `RENAME TABLE a TO b`) runs as it
/// is on each backend, so every table it names must live on the same backends: else a backend
/// without one of them fails the statement after others ran it.
fn check_placed_alike(ctx: &PlanContext, subjects: &[sql::TableRef]) -> Result<(), SqlError> {
    let home = |t: &sql::TableRef| {
        let r = rule_for(ctx, t)?;
        if matches!(r.placement, Placement::Single { .. }) {
            return None;
        }
        let mut bs = r.backends().to_vec();
        bs.sort();
        Some(bs)
    };
    let Some(first) = subjects.first() else {
        return Ok(());
    };
    let Some(other) = subjects.iter().find(|t| home(t) != home(first)) else {
        return Ok(());
    };
    let place = |t: &sql::TableRef| describe(rule_for(ctx, t).as_deref());
    Err(unsupported(format!(
        "this statement names `{}` ({}) and `{}` ({}), which live on different backends, so no \
         backend could run it whole; name each table in a statement of its own (to rename a \
         table, first configure the new name with the same placement in idgate's `tables` and \
         reload)",
        first.name,
        place(first),
        other.name,
        place(other),
    )))
}

/// `CREATE TABLE … AS SELECT` runs as it is on each backend it goes to, each reading its own
/// rows: right only when neither the new table nor what it reads is sharded or broadcast.
fn check_created_from_query(ctx: &PlanContext, d: &sql::DdlTables) -> Result<(), SqlError> {
    let placed = |t: &&sql::TableRef| {
        rule_for(ctx, t).is_some_and(|r| !matches!(r.placement, Placement::Single { .. }))
    };
    if d.read.is_empty() {
        return Ok(());
    }
    let Some(t) = d.subjects.iter().chain(&d.read).find(placed) else {
        return Ok(());
    };
    Err(unsupported(format!(
        "CREATE TABLE … SELECT involving `{}` ({}) would copy each backend's own rows only; \
         create the table first, then fill it with INSERT … SELECT (idgate reads every shard)",
        t.name,
        describe(rule_for(ctx, t).as_deref()),
    )))
}

fn describe(rule: Option<&TableRule>) -> &'static str {
    match rule.map(|r| &r.placement) {
        Some(Placement::Sharded { .. }) => "sharded",
        Some(Placement::Broadcast { .. }) => "broadcast",
        _ => "on the default backend only",
    }
}

/// Whether every backend holding a row of the child also holds each parent row it may refer
/// to: both on the default backend only, a broadcast parent (every backend has all its rows),
/// or both sharded alike with the key mapping the child's sharding column to the parent's.
fn check_foreign_key(ctx: &PlanContext, fk: &ForeignKey) -> Result<(), SqlError> {
    let child = rule_for(ctx, &fk.child);
    let parent = rule_for(ctx, &fk.parent);
    let on_default = |r: &Option<Arc<TableRule>>| {
        r.as_ref()
            .is_none_or(|r| matches!(r.placement, Placement::Single { .. }))
    };
    let broadcast = |r: &Option<Arc<TableRule>>| {
        r.as_ref()
            .is_some_and(|r| matches!(r.placement, Placement::Broadcast { .. }))
    };
    if (on_default(&child) && on_default(&parent)) || broadcast(&parent) {
        return Ok(());
    }
    let (Some(c), Some(p)) = (&child, &parent) else {
        return Err(refusal(fk, child.as_deref(), parent.as_deref()));
    };
    let (Some(kc), Some(kp)) = (placement_key(c), placement_key(p)) else {
        return Err(refusal(fk, Some(c), Some(p)));
    };
    let alike = kc.0.places_like(kp.0, kc.1.len()) && kc.1 == kp.1;
    let on_keys = fk
        .columns
        .iter()
        .zip(&fk.referred)
        .any(|(x, y)| kc.2.contains(&x.to_lowercase()) && kp.2.contains(&y.to_lowercase()));
    if alike && on_keys {
        Ok(())
    } else {
        Err(refusal(fk, Some(c), Some(p)))
    }
}

fn refusal(fk: &ForeignKey, child: Option<&TableRule>, parent: Option<&TableRule>) -> SqlError {
    let sharding = |r: Option<&TableRule>| match r.map(|r| &r.placement) {
        Some(Placement::Sharded { columns, .. }) => columns.first().cloned(),
        _ => None,
    };
    let example = match (sharding(child), sharding(parent)) {
        (Some(c), Some(p)) => format!(
            " (here `{}`.`{c}` REFERENCES `{}`.`{p}`)",
            fk.child.name, fk.parent.name
        ),
        _ => String::new(),
    };
    unsupported(format!(
        "a foreign key from `{}` ({}) to `{}` ({}) cannot be kept by the shards: each shard \
         checks it against its own rows only, so idgate refuses it, as Vitess refuses foreign \
         keys across shards. Between sharded tables a foreign key is created on every shard \
         only when both are sharded alike and the key maps the child's sharding column to the \
         parent's{example}; a parent may also be broadcast. Otherwise leave the key out and \
         keep the relation in the application",
        fk.child.name,
        describe(child),
        fk.parent.name,
        describe(parent),
    ))
}
