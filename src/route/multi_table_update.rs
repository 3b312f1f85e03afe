//! Whether a multi-table UPDATE (`UPDATE a JOIN b …`, `UPDATE a, b …`) may run on each shard
//! beyond what any join needs (`colocate`): what it assigns, and what its refusal advises.

use std::sync::Arc;

use super::colocate::{rule_for, GATEWAY_ONLY};
use super::plan::{unsupported, PlanContext};
use super::{Placement, TableRule};
use crate::sql::DmlAnalysis;
use crate::wire::errors::{self, SqlError};

/// What idgate advises for a multi-table UPDATE it cannot run on each shard.
const MULTI_TABLE_ADVICE: &str = "a multi-table UPDATE runs on each shard only when each shard \
    holds every pair of rows that join (sharded tables sharded alike and joined on their sharding \
    columns, or joined with broadcast tables); otherwise SELECT the new values first and UPDATE \
    each table by its key";

/// A refusal of the join itself, with what to do about it in an UPDATE (not what a SELECT
/// of the same join gets).
pub(super) fn multi_table_refusal(e: SqlError) -> SqlError {
    let message = e
        .message
        .replace(&format!(", {GATEWAY_ONLY}"), "")
        .replace(&format!(" {GATEWAY_ONLY}"), "");
    SqlError::new(e.code, &e.state, format!("{message}; {MULTI_TABLE_ADVICE}"))
}

/// A multi-table UPDATE run on each shard changes each shard's rows of the tables it assigns:
/// right for a sharded table (each row is on one shard), not for a broadcast one (each shard's
/// copy would change by its own rows), nor for any column that places a row or holds a key
/// across shards.
pub(super) fn check_multi_table_update(
    ctx: &PlanContext,
    a: &DmlAnalysis,
    rules: &[Arc<TableRule>],
) -> Result<(), SqlError> {
    let rule_of = |q: &str| {
        a.from
            .iter()
            .find(|t| t.qualifier.eq_ignore_ascii_case(q))
            .and_then(|t| rule_for(ctx, &t.table))
    };
    // Any broadcast table it names, in its joins or deeper.
    let broadcast = a.relations.iter().find_map(|t| {
        rule_for(ctx, t)
            .filter(|r| matches!(r.placement, Placement::Broadcast { .. }))
            .map(|r| r.name.clone())
    });
    for (c, q) in a.assigned.iter().zip(&a.assigned_qualifiers) {
        match (q, &broadcast) {
            (None, Some(b)) => {
                return Err(unsupported(format!(
                    "a multi-table UPDATE that joins broadcast table `{b}` must name the table of \
                     each column it assigns (`t.{c} = …`, not `{c} = …`): idgate runs it on each \
                     shard and must know it changes no broadcast table"
                )))
            }
            (Some(q), _) if !a.from.iter().any(|t| t.qualifier.eq_ignore_ascii_case(q)) => {
                return Err(unsupported(format!(
                    "a multi-table UPDATE assigning `{q}.{c}`, which is not a table of its own \
                     join as idgate reads it (a parenthesized join), is not supported; write the \
                     tables one after another (`UPDATE a JOIN b ON … JOIN c ON … SET …`)"
                )))
            }
            (Some(q), _) => {
                if let Some(r) =
                    rule_of(q).filter(|r| matches!(r.placement, Placement::Broadcast { .. }))
                {
                    return Err(unsupported(format!(
                        "a multi-table UPDATE of broadcast table `{}` joined with sharded tables \
                         is not supported: each backend's copy would change by the rows of its own \
                         shard; UPDATE `{}` on its own, with the values SELECTed first",
                        r.name, r.name
                    )));
                }
            }
            _ => {}
        }
        // The column may be any sharded table's (unqualified, MariaDB finds its table).
        for r in rules.iter().filter(|r| {
            q.as_deref()
                .is_none_or(|q| rule_of(q).is_some_and(|x| Arc::ptr_eq(&x, r)))
        }) {
            let Placement::Sharded { columns, .. } = &r.placement else {
                continue;
            };
            if columns.iter().any(|s| s.eq_ignore_ascii_case(c))
                || c.eq_ignore_ascii_case(&r.id_column)
            {
                return Err(SqlError::new(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!(
                        "UPDATE of `{c}` in sharded table `{}` would move the row to another \
                         shard; delete the row and insert it again instead",
                        r.name
                    ),
                ));
            }
            if ctx
                .tables
                .global_key_columns(r)
                .iter()
                .any(|k| k.eq_ignore_ascii_case(c))
            {
                return Err(unsupported(format!(
                    "UPDATE of `{c}` in `{}`: its unique key is held across shards through a \
                     lookup (unique: global), which idgate does not change on UPDATE yet; delete \
                     the row and insert it again",
                    r.name
                )));
            }
        }
    }
    Ok(())
}
