//! The columns an `INSERT … ON DUPLICATE KEY UPDATE` assigns: on a sharded table, changing a
//! sharding column there would leave the row on the wrong shard.

use sqlparser::ast::{AssignmentTarget, OnInsert, Statement};

use super::error::SqlParseError;
use super::lex::unquote_ident;
use super::parse::{parse_one, sanitize};

/// Unquoted names of the columns the ON DUPLICATE KEY UPDATE list assigns (empty without one).
pub fn duplicate_update_columns(stmt: &[u8]) -> Result<Vec<String>, SqlParseError> {
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
        for n in names {
            if let Some(last) = n.0.last() {
                out.push(unquote_ident(last.to_string().as_bytes()));
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
        assert!(duplicate_update_columns(b"INSERT INTO t VALUES (1)")
            .unwrap()
            .is_empty());
    }
}
