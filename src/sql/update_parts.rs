//! A single-table UPDATE taken apart: its table, what it assigns (with each value's text and
//! kind) and its WHERE condition as the client wrote them, for an UPDATE idgate runs in steps
//! (a unique key held across shards through a lookup).

use std::ops::Range;

use sqlparser::ast::{AssignmentTarget, Spanned, Statement, TableFactor};

use super::lex::unquote_ident;
use super::literal::{value_kind, ValueKind};
use super::parse::{parse_one, sanitize, LineIndex};
use super::TableRef;

/// One `column = value` of the SET list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assigned {
    pub column: String,
    /// The value's bytes in the statement.
    pub at: Range<usize>,
    pub kind: ValueKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateParts {
    pub table: TableRef,
    pub assigned: Vec<Assigned>,
    /// The WHERE condition's bytes in the statement; `None` without one.
    pub condition: Option<Range<usize>>,
}

/// `None` unless `stmt` is an UPDATE of one table without joins, ORDER BY or LIMIT.
pub fn update_parts(stmt: &[u8]) -> Option<UpdateParts> {
    let text = sanitize(stmt);
    let Statement::Update(u) = parse_one(&text).ok()? else {
        return None;
    };
    if u.from.is_some() || !u.table.joins.is_empty() || !u.order_by.is_empty() || u.limit.is_some()
    {
        return None;
    }
    let TableFactor::Table { name, .. } = &u.table.relation else {
        return None;
    };
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| unquote_ident(p.to_string().as_bytes()))
        .collect();
    let table = match parts.as_slice() {
        [t] => TableRef {
            schema: None,
            name: t.clone(),
        },
        [s, t] => TableRef {
            schema: Some(s.clone()),
            name: t.clone(),
        },
        _ => return None,
    };
    let idx = LineIndex::new(&text);
    let mut assigned = Vec::with_capacity(u.assignments.len());
    for a in &u.assignments {
        let AssignmentTarget::ColumnName(n) = &a.target else {
            return None;
        };
        let column = unquote_ident(n.0.last()?.to_string().as_bytes());
        let at = idx.range(a.value.span())?;
        let v = stmt.get(at.clone())?;
        let kind = match value_kind(v, None) {
            ValueKind::Other => hex_string(v).map_or(ValueKind::Other, ValueKind::Str),
            k => k,
        };
        assigned.push(Assigned { column, at, kind });
    }
    // Without ORDER BY and LIMIT the condition runs to the end of the statement; its own span
    // can end short of a closing parenthesis.
    let condition = match &u.selection {
        Some(w) => {
            let start = idx.range(w.span())?.start;
            let mut end = stmt.len();
            while end > start && (stmt[end - 1].is_ascii_whitespace() || stmt[end - 1] == b';') {
                end -= 1;
            }
            Some(start..end)
        }
        None => None,
    };
    Some(UpdateParts {
        table,
        assigned,
        condition,
    })
}

/// `[_charset ]X'…'`, as idgate binds a prepared statement's string parameters: its bytes.
fn hex_string(v: &[u8]) -> Option<Vec<u8>> {
    let mut rest = v;
    if rest.first() == Some(&b'_') {
        let end = rest.iter().position(|b| b.is_ascii_whitespace())?;
        rest = rest[end..].trim_ascii_start();
    }
    let body = match rest {
        [b'X' | b'x', b'\'', body @ .., b'\''] => body,
        _ => return None,
    };
    if body.len() % 2 != 0 {
        return None;
    }
    body.chunks(2)
        .map(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_a_single_table_update_apart() {
        let sql =
            b"UPDATE app.users SET email = 'a@x', n = n + 1, `t` = NULL WHERE id = 7 AND k > 2";
        let p = update_parts(sql).unwrap();
        assert_eq!(p.table.schema.as_deref(), Some("app"));
        assert_eq!(p.table.name, "users");
        let text = |r: &Range<usize>| std::str::from_utf8(&sql[r.clone()]).unwrap().to_string();
        let got: Vec<(String, String, bool)> = p
            .assigned
            .iter()
            .map(|a| {
                (
                    a.column.clone(),
                    text(&a.at),
                    matches!(a.kind, ValueKind::Other),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("email".into(), "'a@x'".into(), false),
                ("n".into(), "n + 1".into(), true),
                ("t".into(), "NULL".into(), false),
            ]
        );
        assert_eq!(text(p.condition.as_ref().unwrap()), "id = 7 AND k > 2");
        assert_eq!(
            update_parts(b"UPDATE t SET a = 1 ORDER BY id LIMIT 1"),
            None
        );
        assert_eq!(
            update_parts(b"UPDATE t JOIN u ON t.id = u.id SET t.a = 1"),
            None
        );
        assert!(update_parts(b"UPDATE t SET a = 1")
            .unwrap()
            .condition
            .is_none());
    }
}
