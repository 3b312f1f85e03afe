//! A join no single backend can evaluate, bound in the gateway: the driving table's rows are
//! fetched with its own conditions, each further table's rows in batches of the distinct key
//! values of a table fetched before it (`route::JoinShape::fetch_order`), and the statement is
//! given back with each table replaced by a literal table of its rows, for one backend to run.
//! Bounded: each table's rows by `max_subquery_rows`, all tables' bytes together by
//! `merge_memory_limit`. A row-wise join streams batches of driving rows through the same
//! pieces (the session's `stream_join`).

use std::collections::HashSet;

use super::GatewayLimits;
use crate::exec::cursor::{Cursor, FetchLimits, Fetched};
use crate::route::join_steps::{join_steps, Steps, BATCH};
use crate::route::{JoinShape, JoinSide};
use crate::sql;
use crate::wire::errors::SqlError;

/// MariaDB's ER_OUT_OF_RESOURCES, as a fetch gives past `merge_memory_limit`.
const ER_OUT_OF_RESOURCES: u16 = 1037;

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

/// Bytes of fetched rows, as counted against `merge_memory_limit`.
fn row_bytes(rows: &[sql::BoundRow]) -> u64 {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| v.as_ref().map_or(1, |v| v.len() + 1))
                .sum::<usize>() as u64
        })
        .sum()
}

/// The distinct non-NULL values of `column` in `f`'s rows as literals (NULL never equals
/// anything, so it finds no partner); `None` when `f` has no such column.
fn key_values(f: &Fetched, column: &str) -> Option<Vec<Vec<u8>>> {
    let at = f
        .columns
        .iter()
        .position(|c| String::from_utf8_lossy(&c.name).eq_ignore_ascii_case(column))?;
    let mut seen: HashSet<&[u8]> = HashSet::new();
    let mut values = Vec::new();
    for row in &f.rows {
        if let Some(Some(v)) = row.get(at) {
            if seen.insert(v.as_slice()) {
                let mut lit = Vec::new();
                sql::render_value(&f.columns[at], Some(v), &mut lit);
                values.push(lit);
            }
        }
    }
    Some(values)
}

/// `tables` as "`a`, `b` and `c`".
fn table_list(shape: &JoinShape) -> String {
    let names: Vec<String> = shape
        .sides
        .iter()
        .map(|s| format!("`{}`", s.table.name))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// A fetch's limit error told as the join's.
fn join_limit_error(
    e: SqlError,
    shape: &JoinShape,
    side: &JoinSide,
    limits: GatewayLimits,
) -> SqlError {
    let what = if shape.correlated {
        format!(
            "the statement over {} (with correlated subqueries), which idgate evaluates \
             itself because the tables are not placed alike,",
            table_list(shape)
        )
    } else {
        format!(
            "the join of {}, which idgate evaluates itself because the tables are not placed \
             alike,",
            table_list(shape)
        )
    };
    if e.code == ER_OUT_OF_RESOURCES {
        return SqlError::new(
            ER_OUT_OF_RESOURCES,
            b"HY001",
            format!(
                "Out of memory: {what} reads more than merge_memory_limit ({} bytes) of rows \
                 (at `{}`); narrow it with conditions on `{}`'s own columns or raise \
                 merge_memory_limit",
                limits.max_bytes, side.table.name, side.qualifier
            ),
        );
    }
    if e.code == sql::ER_NOT_SUPPORTED_YET && e.message.contains("max_subquery_rows") {
        return unsupported(format!(
            "{what} reads more than max_subquery_rows ({}) rows of `{}`; narrow it with \
             conditions on `{}`'s own columns or raise max_subquery_rows",
            limits.max_rows, side.table.name, side.qualifier
        ));
    }
    e
}

/// Fetches one side's rows; `used` counts the bytes all sides hold.
pub async fn fetch_side<C: Cursor>(
    cursor: &mut C,
    select: &[u8],
    shape: &JoinShape,
    side: usize,
    rows_so_far: u64,
    used: &mut u64,
    limits: GatewayLimits,
) -> Result<Result<Fetched, SqlError>, C::End> {
    let fetch = FetchLimits {
        max_rows: limits.max_rows.saturating_sub(rows_so_far),
        max_bytes: limits.max_bytes.saturating_sub(*used),
        enough: None,
    };
    Ok(match cursor.fetch(select, fetch).await? {
        Ok(f) => {
            *used += row_bytes(&f.rows);
            Ok(f)
        }
        Err(e) => Err(join_limit_error(e, shape, &shape.sides[side], limits)),
    })
}

/// Fetches every table after the driving one (whose rows `got` holds), in `steps` order.
pub async fn fetch_further<C: Cursor>(
    cursor: &mut C,
    stmt: &[u8],
    shape: &JoinShape,
    steps: &Steps,
    got: &mut [Option<Fetched>],
    used: &mut u64,
    limits: GatewayLimits,
) -> Result<Result<(), SqlError>, C::End> {
    for f in steps.fetches.iter().skip(1) {
        let side = &shape.sides[f.side];
        let by = f.key.as_ref().and_then(|(from, from_column, column)| {
            let values = key_values(got.get(*from)?.as_ref()?, from_column)?;
            Some((values, column))
        });
        let fetched = match by {
            None => {
                let select = crate::route::side_select(stmt, side, None);
                match fetch_side(cursor, &select, shape, f.side, 0, used, limits).await? {
                    Ok(f) => f,
                    Err(e) => return Ok(Err(e)),
                }
            }
            Some((values, column)) => {
                let batches: Vec<&[Vec<u8>]> = if values.is_empty() {
                    vec![&[]]
                } else {
                    values.chunks(BATCH).collect()
                };
                let mut all: Option<Fetched> = None;
                for batch in batches {
                    let cond = crate::route::batch_condition(side, column, batch);
                    let select = crate::route::side_select(stmt, side, Some(&cond));
                    let so_far = all.as_ref().map_or(0, |f| f.rows.len() as u64);
                    let part =
                        match fetch_side(cursor, &select, shape, f.side, so_far, used, limits)
                            .await?
                        {
                            Ok(f) => f,
                            Err(e) => return Ok(Err(e)),
                        };
                    match &mut all {
                        None => all = Some(part),
                        Some(a) => a.rows.extend(part.rows),
                    }
                }
                match all {
                    Some(f) => f,
                    None => return Ok(Err(unsupported("a join idgate could not fetch".into()))),
                }
            }
        };
        if let Some(slot) = got.get_mut(f.side) {
            *slot = Some(fetched);
        }
    }
    Ok(Ok(()))
}

/// `stmt` with each table replaced by a literal table of its fetched rows.
pub fn bind_fetched(
    stmt: &[u8],
    shape: &JoinShape,
    got: Vec<Option<Fetched>>,
) -> Result<Vec<u8>, SqlError> {
    let mut tables = Vec::with_capacity(got.len());
    for f in got {
        let f = f.ok_or_else(|| unsupported("a join idgate could not fetch".into()))?;
        let text = sql::render_derived(&f.columns, &f.rows)
            .map_err(|e| SqlError::new(e.code, e.state, e.message))?;
        tables.push(text);
    }
    Ok(crate::route::bind_tables(stmt, shape, tables))
}

/// Fetches every table's rows and gives `stmt` with each table replaced by a literal table
/// of them. `Ok(Err(_))`: the statement's answer is this error.
pub async fn bind_join<C: Cursor>(
    cursor: &mut C,
    stmt: &[u8],
    shape: &JoinShape,
    limits: GatewayLimits,
) -> Result<Result<Vec<u8>, SqlError>, C::End> {
    let steps = cursor.plan(|ctx| join_steps(shape, ctx));
    let d = steps.driver();
    let mut used = 0u64;
    let driver_sql = crate::route::side_select(stmt, &shape.sides[d], None);
    let mut got: Vec<Option<Fetched>> = shape.sides.iter().map(|_| None).collect();
    match fetch_side(cursor, &driver_sql, shape, d, 0, &mut used, limits).await? {
        Ok(f) => got[d] = Some(f),
        Err(e) => return Ok(Err(e)),
    }
    if let Err(e) = fetch_further(cursor, stmt, shape, &steps, &mut got, &mut used, limits).await? {
        return Ok(Err(e));
    }
    Ok(bind_fetched(stmt, shape, got))
}
