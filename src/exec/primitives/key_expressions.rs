//! Expressions an INSERT gives a `unique: global` key's columns (`UUID()`, `LOWER('Ann@X')`,
//! `CONCAT('a', 'b')`): the lookup must claim the value the row will hold, so each is evaluated
//! once, first, on the lookup backend within the statement, and written into the statement as
//! the literal it gave; the row then stores exactly the value claimed, as one server evaluates
//! each row's expressions once. Expressions whose value depends on when or in which statement
//! they run (time, LAST_INSERT_ID, sequences, variables, subqueries) are refused: evaluated
//! apart, they would not agree with the rest of the row.

use std::ops::Range;

use crate::exec::cursor::{Cursor, FetchLimits};
use crate::exec::metadata::TableMeta;
use crate::route::insert::value_of;
use crate::sql::{self, InsertAnalysis, ValueKind, ER_NOT_SUPPORTED_YET};
use crate::unique::GlobalKey;
use crate::wire::errors::SqlError;

/// MariaDB's "Unknown column".
const ER_BAD_FIELD_ERROR: u16 = 1054;

/// Words that make an expression's value depend on the statement it runs in.
const REFUSED: &[&str] = &[
    "NOW",
    "CURRENT_TIMESTAMP",
    "CURRENT_DATE",
    "CURRENT_TIME",
    "CURDATE",
    "CURTIME",
    "SYSDATE",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "UTC_DATE",
    "UTC_TIME",
    "UTC_TIMESTAMP",
    "UNIX_TIMESTAMP",
    "LAST_INSERT_ID",
    "ROW_COUNT",
    "FOUND_ROWS",
    "NEXTVAL",
    "LASTVAL",
    "SETVAL",
    "NEXT",
    "PREVIOUS",
    "SELECT",
    "VALUES",
    "VALUE",
    "DEFAULT",
];

/// The byte ranges of the key columns' values that are expressions, in statement order.
pub fn spans(
    a: &InsertAnalysis,
    meta: &TableMeta,
    keys: &[GlobalKey],
    rows: usize,
) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for row in 0..rows {
        for c in keys.iter().flat_map(|k| &k.columns) {
            if let Some(v) = value_of(a, meta, row, &c.name) {
                if v.kind == ValueKind::Other && !out.contains(&v.span) {
                    out.push(v.span.clone());
                }
            }
        }
    }
    out.sort_by_key(|r| r.start);
    out
}

/// Why `expr` cannot be evaluated apart from its row, if it cannot.
fn refused(expr: &[u8]) -> Option<String> {
    let mut i = 0;
    while i < expr.len() {
        match expr[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < expr.len() && expr[i] != q {
                    i += if expr[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'@' => return Some("a variable".into()),
            b':' if expr.get(i + 1) == Some(&b'=') => return Some("an assignment".into()),
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let start = i;
                while i < expr.len() && (expr[i].is_ascii_alphanumeric() || expr[i] == b'_') {
                    i += 1;
                }
                let word = String::from_utf8_lossy(&expr[start..i]).to_ascii_uppercase();
                if REFUSED.contains(&word.as_str()) {
                    return Some(format!("`{word}`"));
                }
            }
            _ => i += 1,
        }
    }
    None
}

fn refusal(a: &InsertAnalysis, expr: &[u8], why: &str) -> SqlError {
    SqlError::new(
        ER_NOT_SUPPORTED_YET,
        b"42000",
        format!(
            "idgate: `{}` keeps a unique key across shards through a lookup (unique: global), \
             which must claim each row's key value before the row is written, so idgate \
             evaluates the expression `{}` first; with {why} its value would depend on when it \
             runs: give the key a literal value",
            a.table.name,
            String::from_utf8_lossy(expr)
        ),
    )
}

/// `stmt` with each expression at `spans` replaced by the literal it gives, evaluated in one
/// SELECT on `backend` within the statement. `Ok(Err(e))`: the client is to get `e` (a refused
/// expression, or the backend's own error for it, such as a column it names).
pub async fn evaluate<C: Cursor>(
    c: &mut C,
    backend: &str,
    stmt: &[u8],
    a: &InsertAnalysis,
    spans: &[Range<usize>],
) -> Result<Result<Vec<u8>, SqlError>, C::End> {
    let mut select = b"SELECT ".to_vec();
    for (n, r) in spans.iter().enumerate() {
        let expr = stmt.get(r.clone()).unwrap_or_default();
        if let Some(why) = refused(expr) {
            return Ok(Err(refusal(a, expr, &why)));
        }
        if n > 0 {
            select.extend_from_slice(b", ");
        }
        select.extend_from_slice(expr);
    }
    let limits = FetchLimits {
        max_rows: 1,
        max_bytes: 64 << 20,
        enough: None,
    };
    let fetched = match c.fetch_on(backend, &select, limits).await? {
        Ok(f) => f,
        // An expression naming the row's own columns (`VALUES (5, a + 1)`) has no value apart.
        Err(e) if e.code == ER_BAD_FIELD_ERROR => {
            return Ok(Err(refusal(a, &select[7..], "a column of the row")))
        }
        Err(e) => return Ok(Err(e)),
    };
    let Some(row) = fetched.rows.first() else {
        return Ok(Err(refusal(a, &select, "no value")));
    };
    let mut out = Vec::with_capacity(stmt.len());
    let mut at = 0;
    for (r, (col, v)) in spans.iter().zip(fetched.columns.iter().zip(row)) {
        out.extend_from_slice(stmt.get(at..r.start).unwrap_or_default());
        sql::render_value(col, v.as_deref(), &mut out);
        at = r.end;
    }
    out.extend_from_slice(stmt.get(at..).unwrap_or_default());
    Ok(Ok(out))
}

#[cfg(test)]
mod tests {
    use super::refused;

    #[test]
    fn expressions_tied_to_their_statement_are_refused() {
        assert_eq!(refused(b"UUID()"), None);
        assert_eq!(refused(b"LOWER('Now@x')"), None, "a word inside a string");
        assert_eq!(refused(b"CONCAT('a', `b`)"), None);
        assert_eq!(refused(b"CONCAT(NOW(), 'x')"), Some("`NOW`".into()));
        assert_eq!(refused(b"next value for s"), Some("`NEXT`".into()));
        assert_eq!(refused(b"CONCAT(@tag, 'x')"), Some("a variable".into()));
        assert_eq!(refused(b"(SELECT 1)"), Some("`SELECT`".into()));
    }
}
