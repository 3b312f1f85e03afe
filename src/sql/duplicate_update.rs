//! The columns an `INSERT … ON DUPLICATE KEY UPDATE` assigns: on a sharded table, changing a
//! sharding column there would leave the row on the wrong shard.

use sqlparser::ast::{AssignmentTarget, OnInsert, Statement};

use super::error::SqlParseError;
use super::lex::unquote_ident;
use super::parse::{parse_one, sanitize};

/// Unquoted names of the columns the ON DUPLICATE KEY UPDATE list assigns (empty without one).
pub fn duplicate_update_columns(stmt: &[u8]) -> Result<Vec<String>, SqlParseError> {
    Ok(duplicate_update_assignments(stmt)?
        .into_iter()
        .map(|(c, _)| c)
        .collect())
}

/// As [`duplicate_update_columns`], each with whether its value is `VALUES(column)` of the same
/// column (the value the row would have inserted).
pub fn duplicate_update_assignments(stmt: &[u8]) -> Result<Vec<(String, bool)>, SqlParseError> {
    let text = sanitize(stmt);
    let Statement::Insert(ins) = parse_one(&text)? else {
        return Ok(Vec::new());
    };
    let Some(OnInsert::DuplicateKeyUpdate(assignments)) = &ins.on else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for a in assignments {
        let names = match &a.target {
            AssignmentTarget::ColumnName(n) => vec![n],
            AssignmentTarget::Tuple(ns) => ns.iter().collect(),
        };
        // `VALUES(col)` / `VALUE(col)` as sqlparser prints it, compared without quotes or case.
        let plain = |s: String| s.replace(['`', '"', ' '], "").to_ascii_uppercase();
        let value = plain(a.value.to_string());
        for n in names {
            if let Some(last) = n.0.last() {
                let column = unquote_ident(last.to_string().as_bytes());
                let own = plain(column.clone());
                let keeps = value == format!("VALUES({own})") || value == format!("VALUE({own})");
                out.push((column, keeps));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_assigned_columns() {
        let cols = duplicate_update_columns(
            b"INSERT INTO t (id, v) VALUES (1, 2) ON DUPLICATE KEY UPDATE `Id` = id + 1, t.v = VALUES(v)",
        )
        .unwrap();
        assert_eq!(cols, ["Id", "v"]);
        let kept = duplicate_update_assignments(
            b"INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE a = VALUES(`a`), \
              `b` = values(b), c = VALUES(a), d = VALUES(d) + 1, e = VALUE(e)",
        )
        .unwrap();
        assert_eq!(
            kept,
            [
                ("a".to_string(), true),
                ("b".to_string(), true),
                ("c".to_string(), false),
                ("d".to_string(), false),
                ("e".to_string(), true),
            ]
        );
        assert!(duplicate_update_columns(b"INSERT INTO t VALUES (1)")
            .unwrap()
            .is_empty());
    }
}
