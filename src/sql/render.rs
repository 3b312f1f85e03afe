//! Rendering an analysed INSERT with the id column filled, restricted to some of its rows, by
//! splicing the client's original bytes: only the id column and values are added or replaced.

use std::ops::Range;

use super::error::SqlParseError;
use super::insert::{InsertAnalysis, InsertBody};
use super::lex::push_backticked;

/// The id value to put in one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdValue<'a> {
    /// Leave the row's own value (only when the statement names the id column).
    Keep,
    /// A generated ID, written in decimal.
    Literal(u64),
    /// Bytes written as they are (e.g. a quoted UUID string).
    Text(&'a [u8]),
    /// A `?` the caller binds (prepared statements); see [`ParamSource::Id`].
    Placeholder,
}

/// How to fill the id column.
#[derive(Debug, Clone, Copy)]
pub struct IdFill<'a> {
    /// The id column's name, used when it has to be added to the column list or SET list.
    pub column: &'a str,
    /// Index of the id column in the column list or SET list when the statement names it, or
    /// its position among the table's columns when there is no column list. `None`: add it.
    pub existing: Option<usize>,
    /// One per rendered row (in the order of `rows`), or exactly one for a SET body.
    pub values: &'a [IdValue<'a>],
}

/// Where each `?` of a rendered statement gets its value, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamSource {
    /// The client's parameter with this 0-based index.
    Client(usize),
    /// The id of the rendered row with this index into `rows` (0 for a SET body).
    Id(usize),
}

/// A piece of the rendered statement.
enum Piece<'a> {
    Orig(Range<usize>),
    Bytes(&'a [u8]),
    /// The id value of rendered row `k`, then `sep`.
    Id(usize, &'static [u8]),
    /// The id column name, then `sep`.
    Name(&'static [u8]),
}

/// The statement restricted to `rows` (indices into the VALUES rows, in the order given; ignored
/// for a SET body) with the id column filled per `fill`. Prefix and suffix (`ON DUPLICATE KEY
/// UPDATE …`, `RETURNING …`) are kept; between rows in their original order the original bytes
/// are kept, otherwise rows are joined with `,`.
pub fn render_insert(
    stmt: &[u8],
    a: &InsertAnalysis,
    fill: &IdFill<'_>,
    rows: &[usize],
) -> Result<Vec<u8>, SqlParseError> {
    let pieces = plan(stmt, a, fill, rows)?;
    let mut out = Vec::with_capacity(stmt.len() + 24 * fill.values.len().max(1) + 16);
    for p in &pieces {
        match p {
            Piece::Orig(r) => out.extend_from_slice(&stmt[r.clone()]),
            Piece::Bytes(b) => out.extend_from_slice(b),
            Piece::Name(sep) => {
                push_backticked(&mut out, fill.column);
                out.extend_from_slice(sep);
            }
            Piece::Id(k, sep) => {
                match fill.values[*k] {
                    IdValue::Literal(n) => push_decimal(&mut out, n),
                    IdValue::Text(t) => out.extend_from_slice(t),
                    IdValue::Placeholder => out.push(b'?'),
                    IdValue::Keep => {
                        return Err(internal(
                            "Keep for an id column the statement does not name",
                        ))
                    }
                }
                out.extend_from_slice(sep);
            }
        }
    }
    Ok(out)
}

/// The sources of the `?` parameters of the statement [`render_insert`] renders with the same
/// arguments, in order: the client's own (possibly fewer, when rows are left out or an id `?`
/// is replaced) and the ids rendered as [`IdValue::Placeholder`].
pub fn placeholder_order(
    stmt: &[u8],
    a: &InsertAnalysis,
    fill: &IdFill<'_>,
    rows: &[usize],
) -> Result<Vec<ParamSource>, SqlParseError> {
    let pieces = plan(stmt, a, fill, rows)?;
    let mut out = Vec::new();
    for p in &pieces {
        match p {
            Piece::Orig(r) => {
                let from = a.placeholders.partition_point(|&o| o < r.start);
                let to = a.placeholders.partition_point(|&o| o < r.end);
                out.extend((from..to).map(ParamSource::Client));
            }
            Piece::Id(k, _) if fill.values[*k] == IdValue::Placeholder => {
                out.push(ParamSource::Id(*k))
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Appends `n` in decimal without a temporary string.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn internal(what: &str) -> SqlParseError {
    SqlParseError::Internal(what.to_string())
}

fn plan<'a>(
    stmt: &[u8],
    a: &InsertAnalysis,
    fill: &IdFill<'a>,
    rows: &[usize],
) -> Result<Vec<Piece<'a>>, SqlParseError> {
    if a.suffix_start > stmt.len() {
        return Err(internal("analysis of another statement"));
    }
    if fill.existing.is_none() {
        if fill.values.contains(&IdValue::Keep) {
            return Err(internal(
                "Keep for an id column the statement does not name",
            ));
        }
        let named = match &a.body {
            InsertBody::Set { assignments } => assignments
                .iter()
                .any(|x| x.column.name.eq_ignore_ascii_case(fill.column)),
            _ => a
                .columns
                .iter()
                .flatten()
                .any(|c| c.name.eq_ignore_ascii_case(fill.column)),
        };
        if named {
            return Err(internal(
                "the statement names the id column: pass its index as `existing`",
            ));
        }
    }
    let mut p = Vec::new();
    match &a.body {
        InsertBody::Select { .. } => return Err(internal("INSERT … SELECT cannot be rendered")),
        InsertBody::Set { assignments } => {
            let (Some(start), [_]) = (a.set_list_start, fill.values) else {
                return Err(internal("a SET body takes exactly one id value"));
            };
            match fill.existing {
                None => {
                    p.push(Piece::Orig(0..start));
                    p.push(Piece::Name(b" = "));
                    p.push(Piece::Id(0, b", "));
                    p.push(Piece::Orig(start..stmt.len()));
                }
                Some(i) => {
                    let v = &assignments
                        .get(i)
                        .ok_or_else(|| internal("id assignment index"))?
                        .value;
                    push_value(&mut p, 0..stmt.len(), &v.span, 0, fill.values[0]);
                }
            }
        }
        InsertBody::Values { rows: all } => {
            if rows.is_empty() || rows.len() != fill.values.len() {
                return Err(internal("one id value per rendered row is needed"));
            }
            let first = a.rows_start.ok_or_else(|| internal("no rows"))?;
            // Prefix, with the id column added to the column list if needed.
            match (fill.existing, a.column_list_insert_at, &a.columns) {
                (None, Some(at), Some(cols)) => {
                    p.push(Piece::Orig(0..at));
                    p.push(Piece::Name(if cols.is_empty() { b"" } else { b", " }));
                    p.push(Piece::Orig(at..first));
                }
                (None, _, _) => {
                    return Err(internal(
                        "no column list: pass the id column's position in the table as `existing`",
                    ))
                }
                (Some(_), _, _) => p.push(Piece::Orig(0..first)),
            }
            let in_order = rows.windows(2).all(|w| w[1] == w[0] + 1);
            for (k, &ri) in rows.iter().enumerate() {
                let row = all
                    .get(ri)
                    .ok_or_else(|| internal("row index out of range"))?;
                if k > 0 {
                    let prev = &all[rows[k - 1]];
                    if in_order {
                        p.push(Piece::Orig(prev.span.end..row.span.start));
                    } else {
                        p.push(Piece::Bytes(b","));
                    }
                }
                match fill.existing {
                    None => {
                        // Right after the row's `(`.
                        let open = row.span.start
                            + stmt[row.span.clone()]
                                .iter()
                                .position(|&b| b == b'(')
                                .ok_or_else(|| internal("row without ("))?;
                        p.push(Piece::Orig(row.span.start..open + 1));
                        p.push(Piece::Id(
                            k,
                            if row.values.is_empty() { b"" } else { b", " },
                        ));
                        p.push(Piece::Orig(open + 1..row.span.end));
                    }
                    Some(i) => {
                        let v = row
                            .values
                            .get(i)
                            .ok_or_else(|| internal("id position beyond the row's values"))?;
                        push_value(&mut p, row.span.clone(), &v.span, k, fill.values[k]);
                    }
                }
            }
            p.push(Piece::Orig(a.suffix_start..stmt.len()));
        }
    }
    Ok(p)
}

/// `within` with the value at `v` replaced by row `k`'s id (or kept).
fn push_value(
    p: &mut Vec<Piece<'_>>,
    within: Range<usize>,
    v: &Range<usize>,
    k: usize,
    id: IdValue<'_>,
) {
    if id == IdValue::Keep {
        p.push(Piece::Orig(within));
    } else {
        p.push(Piece::Orig(within.start..v.start));
        p.push(Piece::Id(k, b""));
        p.push(Piece::Orig(v.end..within.end));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimals() {
        for n in [0, 7, 10, 1_000_000_007, u64::MAX] {
            let mut out = b"x".to_vec();
            super::push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }
}
