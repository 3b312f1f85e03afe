//! The value each row of an INSERT gives each global key, as SQL text the lookup backend and the
//! shards evaluate alike: the row's literal, or the column's literal default.

use super::GlobalKey;
use crate::exec::metadata::TableMeta;
use crate::route::insert::value_of;
use crate::sql::{InsertAnalysis, ValueKind, ER_NOT_SUPPORTED_YET};
use crate::wire::errors::SqlError;

/// Per row, per key: the key's values (one per column, SQL text as the client wrote it, in its
/// character set), or `None` when one of them is NULL (a unique key never meets NULL values).
pub type RowKeys = Vec<Vec<Option<Vec<Vec<u8>>>>>;

/// Reads every row's key values; refuses values it cannot know before the row is written.
/// `evaluated`: the statement's key expressions were evaluated first and written as the
/// literals they gave (`exec::primitives::key_expressions`), so an expression there is one.
pub fn row_keys(
    stmt: &[u8],
    a: &InsertAnalysis,
    meta: &TableMeta,
    keys: &[GlobalKey],
    rows: usize,
    evaluated: bool,
) -> Result<RowKeys, SqlError> {
    (0..rows)
        .map(|row| {
            keys.iter()
                .map(|k| {
                    let mut vals = Vec::with_capacity(k.columns.len());
                    for c in &k.columns {
                        let v = match value_of(a, meta, row, &c.name) {
                            Some(v) => match &v.kind {
                                ValueKind::Null => None,
                                ValueKind::Default => default_of(k, c)?,
                                ValueKind::Int(_) | ValueKind::Str(_) => {
                                    Some(stmt.get(v.span.clone()).unwrap_or_default().to_vec())
                                }
                                ValueKind::Other if evaluated => {
                                    Some(stmt.get(v.span.clone()).unwrap_or_default().to_vec())
                                }
                                ValueKind::Placeholder(_) | ValueKind::Other => {
                                    return Err(refusal(
                                        k,
                                        &c.name,
                                        "a literal value (an expression is evaluated only \
                                         where the row lands)",
                                    ))
                                }
                            },
                            None => default_of(k, c)?,
                        };
                        match v {
                            Some(v) => vals.push(v),
                            None => return Ok(None),
                        }
                    }
                    Ok(Some(vals))
                })
                .collect()
        })
        .collect()
}

/// The column's default as SQL text; `None` for NULL.
fn default_of(k: &GlobalKey, c: &super::KeyColumn) -> Result<Option<Vec<u8>>, SqlError> {
    match c.default.as_deref() {
        Some(d) if d.eq_ignore_ascii_case("NULL") => Ok(None),
        Some(d)
            if d.starts_with('\'')
                || (!d.is_empty()
                    && d.bytes()
                        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'.'))) =>
        {
            Ok(Some(d.as_bytes().to_vec()))
        }
        Some(_) => Err(refusal(
            k,
            &c.name,
            "a value (its default is an expression)",
        )),
        None => Err(refusal(k, &c.name, "a value (it has no default)")),
    }
}

fn refusal(k: &GlobalKey, column: &str, what: &str) -> SqlError {
    SqlError::new(
        ER_NOT_SUPPORTED_YET,
        b"42000",
        format!(
            "idgate: `{}` keeps unique key `{}` across shards through a lookup, so each row must \
             give column `{column}` {what}",
            k.table, k.name
        ),
    )
}
