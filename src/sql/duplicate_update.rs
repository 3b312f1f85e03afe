//! The columns an `INSERT … ON DUPLICATE KEY UPDATE` assigns: on a sharded table, changing a
//! sharding column there would leave the row on the wrong shard.

use sqlparser::ast::{AssignmentTarget, OnInsert, Statement};

use super::error::SqlParseError;
use super::lex::unquote_ident;
use super::parse::{parse_one, sanitize};

/// Unquoted names of the columns the ON DUPLICATE KEY UPDATE list may change (empty without
/// one): every column it assigns except one set to its own value, `c = c` or
/// `c = LAST_INSERT_ID(c)` (the idiom that makes an existing row's id LAST_INSERT_ID()).
pub fn duplicate_update_changed_columns(stmt: &[u8]) -> Result<Vec<String>, SqlParseError> {
    Ok(assigned(stmt)?
        .into_iter()
        .filter(|(_, own, value)| *value != *own && *value != format!("LAST_INSERT_ID({own})"))
        .map(|(c, _, _)| c)
        .collect())
}

/// `stmt`, an INSERT ending with its ON DUPLICATE KEY UPDATE list, with `assignment` added at
/// the end of that list (before trailing comments and `;`).
pub fn with_duplicate_update_assignment(stmt: &[u8], assignment: &str) -> Vec<u8> {
    let end = super::lex::code_end(stmt);
    [&stmt[..end], b", ", assignment.as_bytes(), &stmt[end..]].concat()
}

/// Unquoted names of the columns the ON DUPLICATE KEY UPDATE list assigns, each with whether its
/// value is `VALUES(column)` of the same column (the value the row would have inserted).
pub fn duplicate_update_assignments(stmt: &[u8]) -> Result<Vec<(String, bool)>, SqlParseError> {
    Ok(assigned(stmt)?
        .into_iter()
        .map(|(c, own, value)| {
            let keeps = value == format!("VALUES({own})") || value == format!("VALUE({own})");
            (c, keeps)
        })
        .collect())
}

/// Each column assigned: its name, and its name and value as compared (without quotes, spaces
/// or case).
fn assigned(stmt: &[u8]) -> Result<Vec<(String, String, String)>, SqlParseError> {
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
                out.push((column, own, value.clone()));
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
        let cols = duplicate_update_changed_columns(
            b"INSERT INTO t (id, v) VALUES (1, 2) ON DUPLICATE KEY UPDATE `Id` = id + 1, t.v = VALUES(v), \
              w = w, `x` = last_insert_id(`X`), y = LAST_INSERT_ID(x), z = LAST_INSERT_ID(z) + 1",
        )
        .unwrap();
        assert_eq!(cols, ["Id", "v", "y", "z"]);
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
        let added = |s: &str| {
            String::from_utf8(with_duplicate_update_assignment(s.as_bytes(), "x = 1")).unwrap()
        };
        assert_eq!(
            added("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE v = ';' -- note\n ; "),
            "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE v = ';', x = 1 -- note\n ; "
        );
        assert_eq!(
            added("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE v = 2 /*!100000 , w = 3 */ # c"),
            "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE v = 2 /*!100000 , w = 3 */, x = 1 # c"
        );
        assert!(
            duplicate_update_changed_columns(b"INSERT INTO t VALUES (1)")
                .unwrap()
                .is_empty()
        );
    }
}
