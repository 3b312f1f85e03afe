//! An INSERT's rows placed on the backends that own them and rendered per backend, with the
//! ids spliced in, and the insert id the client is told.

use crate::exec::metadata::TableMeta;
use crate::sql::{self, IdFill, IdValue, InsertAnalysis};
use crate::wire::errors::{self, SqlError};

use super::insert::{
    err, id_index, row_count, shard_value, value_of, InsertKind, InsertPlan, RowId, UpsertRows,
};
use super::row_shards::{rows_by_shard, RowShardError};
use super::{Placement, ShardValue, TableRule};

/// The plan of an INSERT whose row ids are decided (`ids`, one per row, generated slots filled;
/// `first_generated`: the first numeric id the generator gave, if any).
pub fn place_and_render(
    stmt: &[u8],
    a: &InsertAnalysis,
    rule: &TableRule,
    meta: &TableMeta,
    ids: &[RowId],
    first_generated: Option<u64>,
) -> Result<InsertPlan, SqlError> {
    let n = row_count(a);
    if ids.len() != n {
        return Err(err(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            format!("idgate: {} ids for {n} rows", ids.len()),
        ));
    }
    let (groups, broadcast) = place(a, rule, meta, ids)?;
    let upsert = (first_generated.is_some()
        && !a.replace
        && !(a.returning && a.on_duplicate_update)
        && (a.ignore || a.on_duplicate_update))
        .then(|| UpsertRows {
            updates: a.on_duplicate_update,
            ignore: a.ignore,
            id_may_change: a.on_duplicate_update
                && sql::duplicate_update_changed_columns(stmt).map_or(true, |changed| {
                    changed
                        .iter()
                        .any(|c| c.eq_ignore_ascii_case(&rule.id_column))
                }),
            returning: a.returning,
            schema: a.table.schema.clone().unwrap_or_default(),
            table: a.table.name.clone(),
            id_column: rule.id_column.clone(),
            generated: ids
                .iter()
                .map(|r| match r {
                    RowId::Generated(id) => Some(*id),
                    _ => None,
                })
                .collect(),
            names_matched: false,
        });
    // An upsert's ids are literals: LAST_INSERT_ID(id) would set the session's value even when
    // the row is left out.
    let lid_id = if upsert.is_some() {
        None
    } else {
        first_generated
    };
    let (parts, lid_backend) = render_groups(stmt, a, rule, meta, ids, lid_id, groups)?;
    Ok(InsertPlan {
        parts,
        broadcast,
        insert_id: insert_id(ids, first_generated),
        first_generated,
        lid_backend,
        upsert,
        kind: Some(InsertKind::of(a)),
    })
}

/// Makes a one-row ON DUPLICATE KEY UPDATE name the row it matched: `id = LAST_INSERT_ID(id)`
/// added to its update list makes the backend report that row's id (and the new row's own id,
/// or 0, when it inserted it), so idgate knows which happened, and the id one server reports
/// after an update, with no second question. Only where the client's statement neither uses
/// LAST_INSERT_ID() nor assigns the id column; the caller sends it only to a backend whose own
/// LAST_INSERT_ID() the client never reads (it moves there).
pub fn name_matched_row(
    plan: &mut InsertPlan,
    stmt: &[u8],
    a: &InsertAnalysis,
    rule: &TableRule,
) -> Result<(), SqlError> {
    let (Some(u), [(_, sql, rows)]) = (&mut plan.upsert, plan.parts.as_mut_slice()) else {
        return Ok(());
    };
    if rows.len() != 1 || !a.on_duplicate_update || sql::mentions(stmt, b"LAST_INSERT_ID") {
        return Ok(());
    }
    let assigned = sql::duplicate_update_assignments(stmt).map_err(SqlError::from)?;
    if assigned
        .iter()
        .any(|(c, _)| c.eq_ignore_ascii_case(&rule.id_column))
    {
        return Ok(());
    }
    let id = super::quote_ident(&rule.id_column);
    *sql = sql::with_duplicate_update_assignment(sql, &format!("{id} = LAST_INSERT_ID({id})"));
    u.names_matched = true;
    Ok(())
}

/// Each row of the statement rendered alone, in row order, with the backend that owns it: for
/// an INSERT idgate runs row by row (unique keys held through lookup tables). Every id is a
/// literal: any row may be left out, so the caller makes the first row written LAST_INSERT_ID().
pub fn render_each_row(
    stmt: &[u8],
    a: &InsertAnalysis,
    rule: &TableRule,
    meta: &TableMeta,
    ids: &[RowId],
) -> Result<Vec<(String, Vec<u8>)>, SqlError> {
    let (groups, _) = place(a, rule, meta, ids)?;
    let single: Groups = groups
        .into_iter()
        .flat_map(|(b, rows)| rows.into_iter().map(move |r| (b.clone(), vec![r])))
        .collect();
    let (parts, _) = render_groups(stmt, a, rule, meta, ids, None, single)?;
    let mut rows: Vec<(usize, String, Vec<u8>)> = parts
        .into_iter()
        .map(|(b, sql, rows)| (rows.first().copied().unwrap_or(usize::MAX), b, sql))
        .collect();
    rows.sort_by_key(|(r, _, _)| *r);
    Ok(rows.into_iter().map(|(_, b, sql)| (b, sql)).collect())
}

/// Renders what each group's backend runs, with its rows' ids; and the backend whose part
/// sets LAST_INSERT_ID().
#[allow(clippy::type_complexity)]
fn render_groups(
    stmt: &[u8],
    a: &InsertAnalysis,
    rule: &TableRule,
    meta: &TableMeta,
    ids: &[RowId],
    first_generated: Option<u64>,
    groups: Groups,
) -> Result<(Vec<(String, Vec<u8>, Vec<usize>)>, Option<String>), SqlError> {
    let n = ids.len();
    let existing = id_index(a, meta, &rule.id_column);
    let generate = rule.generator.is_some();

    // Render each part with its rows' ids. The first generated id is written as
    // LAST_INSERT_ID(id): the backend then reports it and remembers it for the session,
    // exactly as after an AUTO_INCREMENT insert (also for LAST_INSERT_ID() inside later SQL).
    let lid_text = first_generated.map(|id| format!("LAST_INSERT_ID({id})").into_bytes());
    let mut lid_backend = None;
    let mut parts = Vec::with_capacity(groups.len());
    for (backend, rows) in groups {
        let sql = if generate {
            let values: Vec<IdValue> = rows
                .iter()
                .map(|&r| match (&ids[r], &lid_text) {
                    (RowId::Generated(id), Some(t))
                        if Some(*id) == first_generated
                            && lid_backend.get_or_insert_with(|| backend.clone()) == &backend =>
                    {
                        IdValue::Text(t)
                    }
                    (RowId::Generated(id), _) => IdValue::Literal(*id),
                    (RowId::GeneratedText(t), _) => IdValue::Text(t),
                    (RowId::Explicit(_), _) => IdValue::Keep,
                })
                .collect();
            let fill = IdFill {
                column: &rule.id_column,
                existing,
                values: &values,
            };
            if existing.is_none() && values.iter().all(|v| matches!(v, IdValue::Keep)) {
                return Err(err(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    "idgate: no id to fill",
                ));
            }
            sql::render_insert(stmt, a, &fill, &rows).map_err(SqlError::from)?
        } else if rows.len() == n {
            stmt.to_vec()
        } else {
            let values = vec![IdValue::Keep; rows.len()];
            let fill = IdFill {
                column: &rule.id_column,
                existing: Some(existing.unwrap_or(0)),
                values: &values,
            };
            sql::render_insert(stmt, a, &fill, &rows).map_err(SqlError::from)?
        };
        parts.push((backend, sql, rows));
    }
    Ok((parts, lid_backend))
}

/// MySQL reports the first generated id; with only explicit ids, the last row's positive value.
fn insert_id(ids: &[RowId], first_generated: Option<u64>) -> u64 {
    match first_generated {
        Some(id) => id,
        None => ids
            .iter()
            .rev()
            .find_map(|r| match r {
                RowId::Explicit(Some(v)) if *v > 0 => Some(*v as u64),
                _ => None,
            })
            .unwrap_or(0),
    }
}

/// Each backend with the statement's row indices it gets.
type Groups = Vec<(String, Vec<usize>)>;

/// Each backend with the rows it gets, in shard order; and whether every row goes everywhere.
fn place(
    a: &InsertAnalysis,
    rule: &TableRule,
    meta: &TableMeta,
    ids: &[RowId],
) -> Result<(Groups, bool), SqlError> {
    let n = ids.len();
    let (columns, algorithm, shards) = match &rule.placement {
        Placement::Single { backend } => {
            return Ok((vec![(backend.clone(), (0..n).collect())], false))
        }
        Placement::Broadcast { backends } => {
            let groups = backends.iter().map(|b| (b.clone(), (0..n).collect()));
            return Ok((groups.collect(), true));
        }
        Placement::Sharded {
            columns,
            algorithm,
            shards,
        } => (columns, algorithm, shards),
    };
    // The first sharding column the row gives a literal for (the id counts as given when idgate
    // generated it).
    let value = |row: usize, c: &str| {
        if c.eq_ignore_ascii_case(&rule.id_column) {
            match &ids[row] {
                RowId::Generated(id) => return Some(ShardValue::Int(*id as i128)),
                RowId::GeneratedText(t) => return Some(ShardValue::Str(t.clone())),
                RowId::Explicit(_) => {}
            }
        }
        value_of(a, meta, row, c).and_then(shard_value)
    };
    let by_shard =
        rows_by_shard(columns, algorithm, shards.len(), ids.len(), value).map_err(|e| {
            let message = match e {
                RowShardError::NoValue { row, column } => format!(
                "Row {} of the INSERT into `{}` gives no literal value for its sharding column \
                 `{column}`; idgate needs it to choose the shard",
                row + 1,
                a.table.name
            ),
                RowShardError::Algorithm(m) => m,
            };
            err(errors::ER_UNKNOWN_ERROR, b"HY000", message)
        })?;
    let groups = by_shard
        .into_iter()
        .zip(shards)
        .filter(|(rows, _)| !rows.is_empty())
        .map(|(rows, backend)| (backend.clone(), rows))
        .collect();
    Ok((groups, false))
}
