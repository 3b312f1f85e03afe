//! Binding a prepared statement's parameters into its text: each `?` becomes a literal with the
//! same meaning the server gives the bound value, so idgate can run a prepared INSERT as a
//! rewritten text statement.

use mysql_common::constants::ColumnType;
use mysql_common::value::Value;

use super::error::SqlParseError;

/// Appends `v` as a SQL literal. Strings go as `_charset X'…'`, which needs no escaping (so
/// NO_BACKSLASH_ESCAPES cannot change it) and is still a string in numeric context; BLOB-typed
/// parameters go as `_binary X'…'` so their bytes are not converted.
pub fn push_literal(out: &mut Vec<u8>, v: &Value, ty: ColumnType, charset: &str) {
    use std::io::Write;
    match v {
        Value::NULL => out.extend_from_slice(b"NULL"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => push_float(out, *f as f64, f.is_finite()),
        Value::Double(d) => push_float(out, *d, d.is_finite()),
        Value::Date(y, m, d, h, i, s, us) => {
            let _ = write!(out, "'{y:04}-{m:02}-{d:02} {h:02}:{i:02}:{s:02}.{us:06}'");
        }
        Value::Time(neg, days, h, i, s, us) => {
            let hours = *days as u64 * 24 + *h as u64;
            let sign = if *neg { "-" } else { "" };
            let _ = write!(out, "'{sign}{hours}:{i:02}:{s:02}.{us:06}'");
        }
        Value::Bytes(b) => {
            let binary = matches!(
                ty,
                ColumnType::MYSQL_TYPE_TINY_BLOB
                    | ColumnType::MYSQL_TYPE_MEDIUM_BLOB
                    | ColumnType::MYSQL_TYPE_LONG_BLOB
                    | ColumnType::MYSQL_TYPE_BLOB
                    | ColumnType::MYSQL_TYPE_GEOMETRY
                    | ColumnType::MYSQL_TYPE_BIT
            );
            out.push(b'_');
            out.extend_from_slice(if binary {
                b"binary"
            } else {
                charset.as_bytes()
            });
            out.extend_from_slice(b" X'");
            for byte in b {
                let _ = write!(out, "{byte:02X}");
            }
            out.push(b'\'');
        }
    }
}

fn push_float(out: &mut Vec<u8>, v: f64, finite: bool) {
    use std::io::Write;
    if finite {
        // Rust prints the shortest text that reads back as the same double; add an exponent
        // so MySQL treats it as a DOUBLE, not an exact DECIMAL, as the bound value was.
        let _ = write!(out, "{v:e}");
    } else {
        out.extend_from_slice(b"NULL");
    }
}

/// The statement with each `?` (at the byte offsets given) replaced by its parameter's literal.
pub fn bind_placeholders(
    stmt: &[u8],
    placeholders: &[usize],
    params: &[(Value, ColumnType)],
    charset: &str,
) -> Result<Vec<u8>, SqlParseError> {
    if placeholders.len() != params.len() {
        return Err(SqlParseError::Internal(format!(
            "{} placeholders but {} parameters",
            placeholders.len(),
            params.len()
        )));
    }
    let mut out = Vec::with_capacity(stmt.len() + 16 * params.len());
    let mut at = 0;
    for (&pos, (v, ty)) in placeholders.iter().zip(params) {
        if pos < at || stmt.get(pos) != Some(&b'?') {
            return Err(SqlParseError::Internal(
                "placeholder offsets out of order".into(),
            ));
        }
        out.extend_from_slice(&stmt[at..pos]);
        push_literal(&mut out, v, *ty, charset);
        at = pos + 1;
    }
    out.extend_from_slice(&stmt[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(v: Value, ty: ColumnType) -> String {
        let mut out = Vec::new();
        push_literal(&mut out, &v, ty, "utf8mb4");
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn literals() {
        assert_eq!(lit(Value::Int(-3), ColumnType::MYSQL_TYPE_LONGLONG), "-3");
        assert_eq!(lit(Value::NULL, ColumnType::MYSQL_TYPE_NULL), "NULL");
        assert_eq!(
            lit(
                Value::Bytes(b"a'\\".to_vec()),
                ColumnType::MYSQL_TYPE_VAR_STRING
            ),
            "_utf8mb4 X'61275C'"
        );
        assert_eq!(
            lit(Value::Bytes(vec![0, 255]), ColumnType::MYSQL_TYPE_BLOB),
            "_binary X'00FF'"
        );
        assert_eq!(
            lit(Value::Double(1.5), ColumnType::MYSQL_TYPE_DOUBLE),
            "1.5e0"
        );
        assert_eq!(
            lit(
                Value::Date(2024, 2, 29, 1, 2, 3, 4),
                ColumnType::MYSQL_TYPE_DATETIME
            ),
            "'2024-02-29 01:02:03.000004'"
        );
        assert_eq!(
            lit(
                Value::Time(true, 1, 2, 3, 4, 5),
                ColumnType::MYSQL_TYPE_TIME
            ),
            "'-26:03:04.000005'"
        );
    }

    #[test]
    fn binds_in_order() {
        let sql = b"INSERT INTO t (a, b) VALUES (?, ?)";
        let q: Vec<usize> = sql
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'?')
            .map(|(i, _)| i)
            .collect();
        let params = [
            (Value::Int(1), ColumnType::MYSQL_TYPE_LONG),
            (Value::Bytes(b"x".to_vec()), ColumnType::MYSQL_TYPE_STRING),
        ];
        let out = bind_placeholders(sql, &q, &params, "utf8mb4").unwrap();
        assert_eq!(
            out,
            b"INSERT INTO t (a, b) VALUES (1, _utf8mb4 X'78')".to_vec()
        );
        assert!(bind_placeholders(sql, &q[..1], &params, "utf8mb4").is_err());
    }
}

/// Binds the parameters of a prepared INSERT into its text *and* its analysis, so that executing
/// it needs no new parse: every byte offset moves by the length the literals before it added, and
/// each placeholder value takes the kind of its bound value.
pub fn bind_insert(
    stmt: &[u8],
    a: &super::InsertAnalysis,
    params: &[(Value, ColumnType)],
    charset: &str,
) -> Result<(Vec<u8>, super::InsertAnalysis), SqlParseError> {
    use super::{InsertBody, ValueKind};
    let text = bind_placeholders(stmt, &a.placeholders, params, charset)?;
    // (original offset of each `?`, new offset, literal length), in text order; `grown[k]`: the
    // bytes the first k literals added. Lookups are binary searches, so binding stays linear
    // in the number of placeholders.
    let mut marks = Vec::with_capacity(params.len());
    let mut grown: Vec<isize> = Vec::with_capacity(params.len() + 1);
    grown.push(0);
    let mut lit = Vec::new();
    for (&pos, (v, ty)) in a.placeholders.iter().zip(params) {
        lit.clear();
        push_literal(&mut lit, v, *ty, charset);
        marks.push((pos, lit.len()));
    }
    marks.sort_unstable_by_key(|m| m.0);
    let marks: Vec<(usize, usize, usize)> = marks
        .into_iter()
        .map(|(pos, len)| {
            let shift = *grown.last().unwrap_or(&0);
            grown.push(shift + len as isize - 1);
            (pos, (pos as isize + shift) as usize, len)
        })
        .collect();
    // A position after any `?` it follows moves by what those added.
    let map = |pos: usize| -> usize {
        let before = marks.partition_point(|m| m.0 < pos);
        (pos as isize + grown[before]) as usize
    };
    let span = |r: &std::ops::Range<usize>| -> std::ops::Range<usize> {
        match marks.binary_search_by_key(&r.start, |m| m.0) {
            Ok(k) if r.end == r.start + 1 => {
                let (_, new, len) = marks[k];
                new..new + len
            }
            _ => map(r.start)..map(r.end),
        }
    };
    let kind = |k: &ValueKind| -> ValueKind {
        match k {
            ValueKind::Placeholder(n) => match params.get(*n).map(|p| &p.0) {
                Some(Value::NULL) => ValueKind::Null,
                Some(Value::Int(i)) => ValueKind::Int(*i as i128),
                Some(Value::UInt(u)) => ValueKind::Int(*u as i128),
                Some(Value::Bytes(b)) => ValueKind::Str(b.clone()),
                _ => ValueKind::Other,
            },
            other => other.clone(),
        }
    };
    let mut b = a.clone();
    if let Some(cols) = b.columns.as_mut() {
        for c in cols {
            c.span = span(&c.span);
        }
    }
    match &mut b.body {
        InsertBody::Values { rows } => {
            for row in rows {
                row.span = span(&row.span);
                for v in &mut row.values {
                    v.span = span(&v.span);
                    v.kind = kind(&v.kind);
                }
            }
        }
        InsertBody::Set { assignments } => {
            for asg in assignments {
                asg.column.span = span(&asg.column.span);
                asg.value.span = span(&asg.value.span);
                asg.value.kind = kind(&asg.value.kind);
            }
        }
        InsertBody::Select { query } => *query = map(query.start)..map(query.end),
    }
    b.placeholders.clear();
    b.column_list_insert_at = b.column_list_insert_at.map(map);
    b.set_list_start = b.set_list_start.map(map);
    b.rows_start = b.rows_start.map(map);
    b.suffix_start = map(b.suffix_start);
    Ok((text, b))
}

#[cfg(test)]
mod bind_tests {
    use super::*;

    #[test]
    fn a_bound_analysis_equals_parsing_the_bound_text() {
        let sql = b"INSERT INTO t (id, v, n) VALUES (?, ?, 1), (NULL, ?, ?) ON DUPLICATE KEY UPDATE v = 'x'";
        let a = crate::sql::analyze_insert(sql).unwrap();
        let params = [
            (Value::NULL, ColumnType::MYSQL_TYPE_NULL),
            (
                Value::Bytes("é'x".as_bytes().to_vec()),
                ColumnType::MYSQL_TYPE_VAR_STRING,
            ),
            (Value::Int(-7), ColumnType::MYSQL_TYPE_LONGLONG),
            (Value::UInt(42), ColumnType::MYSQL_TYPE_LONGLONG),
        ];
        let (text, bound) = bind_insert(sql, &a, &params, "utf8mb4").unwrap();
        let mut parsed = crate::sql::analyze_insert(&text).unwrap();
        // A bound string keeps its value (parsing `_utf8mb4 X'…'` only says "an expression"),
        // so rows can still be routed by a string sharding column.
        if let crate::sql::InsertBody::Values { rows } = &mut parsed.body {
            rows[0].values[1].kind = crate::sql::ValueKind::Str("é'x".as_bytes().to_vec());
        }
        assert_eq!(bound, parsed);
        let set = b"INSERT INTO t SET v = ?, id = ?";
        let a = crate::sql::analyze_insert(set).unwrap();
        let params = [
            (
                Value::Bytes(b"long value".to_vec()),
                ColumnType::MYSQL_TYPE_STRING,
            ),
            (Value::Int(0), ColumnType::MYSQL_TYPE_LONG),
        ];
        let (text, bound) = bind_insert(set, &a, &params, "utf8mb4").unwrap();
        let mut parsed = crate::sql::analyze_insert(&text).unwrap();
        if let crate::sql::InsertBody::Set { assignments } = &mut parsed.body {
            assignments[0].value.kind = crate::sql::ValueKind::Str(b"long value".to_vec());
        }
        assert_eq!(bound, parsed);
    }
}
