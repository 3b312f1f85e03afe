//! The names a SELECT's columns keep when idgate binds subqueries into it. MariaDB names a
//! select item without an alias by its text as the client wrote it (cut at 255 bytes, as it
//! cuts an alias too): `1 IN (SELECT id FROM t)`, not the `1 IN (2,4,1)` the bound statement
//! reads. So each unaliased item whose text a bound value replaces gets that text as its
//! alias, and the client reads the column by the name one server gives it.

use std::ops::Range;

use sqlparser::ast::{SelectItem, SetExpr, Statement};

use super::lex::push_backticked;
use super::parse::{parse_one, sanitize};
use super::select_tokens::{SelectText, Tok, SELECT_OPTIONS};

/// Words that end a select list at the statement's own level.
const AFTER_ITEMS: &[&str] = &[
    "FROM",
    "INTO",
    "WHERE",
    "GROUP",
    "HAVING",
    "WINDOW",
    "ORDER",
    "LIMIT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "MINUS",
    "FOR",
    "LOCK",
    "PROCEDURE",
    "RETURNING",
];

/// Words before the first SELECT that mean the first member of a set operation is in
/// parentheses (its items are not at the statement's own level).
const SET_OPERATORS: &[&str] = &["UNION", "EXCEPT", "INTERSECT", "MINUS"];

/// The `AS` alias to insert (an empty range at the item's end, and ` AS `…``) for each item of
/// `stmt`'s select list (its first SELECT's, which names the columns) that has no alias and
/// whose text one of `replaced` (ranges of `stmt`, in order) overlaps. Nothing for a statement
/// idgate cannot read so (not a SELECT, a parenthesized first member).
pub fn bound_item_aliases(stmt: &[u8], replaced: &[Range<usize>]) -> Vec<(Range<usize>, Vec<u8>)> {
    let Some(items) = select_list(stmt) else {
        return Vec::new();
    };
    let overlaps = |p: &Range<usize>| replaced.iter().any(|r| r.start < p.end && p.start < r.end);
    let mut out = Vec::new();
    for (piece, unnamed) in items {
        if !unnamed || !overlaps(&piece) {
            continue;
        }
        let Some(text) = std::str::from_utf8(&stmt[piece.clone()]).ok() else {
            continue;
        };
        let mut alias = b" AS ".to_vec();
        push_backticked(&mut alias, text);
        out.push((piece.end..piece.end, alias));
    }
    out
}

/// The select items of `stmt`'s first SELECT (byte ranges) and whether each is an expression
/// without an alias.
fn select_list(stmt: &[u8]) -> Option<Vec<(Range<usize>, bool)>> {
    let text = sanitize(stmt);
    let Statement::Query(q) = parse_one(&text).ok()? else {
        return None;
    };
    let mut body = q.body.as_ref();
    let select = loop {
        match body {
            SetExpr::Select(s) => break s,
            SetExpr::SetOperation { left, .. } => body = left,
            _ => return None,
        }
    };
    let st = SelectText::new(&text)?;
    let word = |i: usize, ws: &[&str]| {
        let t = &st.toks[i];
        t.depth == 0 && matches!(&t.tok, Tok::Word(w) if ws.contains(&w.as_str()))
    };
    let first = (0..st.toks.len()).find(|&i| word(i, &["SELECT"]))?;
    if (0..first).any(|i| word(i, SET_OPERATORS)) {
        return None;
    }
    let mut start = first + 1;
    while start < st.toks.len()
        && (word(start, SELECT_OPTIONS) || word(start, &["SQL_CALC_FOUND_ROWS"]))
    {
        start += 1;
    }
    let end = (start..st.toks.len())
        .find(|&i| word(i, AFTER_ITEMS))
        .unwrap_or(st.toks.len());
    let pieces = st.pieces(start, end);
    if pieces.len() != select.projection.len() {
        return None;
    }
    Some(
        pieces
            .into_iter()
            .zip(&select.projection)
            .map(|(p, item)| (p, matches!(item, SelectItem::UnnamedExpr(_))))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::splice;

    /// `stmt` with `replaced` (each the first occurrence of its text) replaced by `0` and the
    /// aliases inserted.
    fn bound(stmt: &str, replaced: &[&str]) -> String {
        let mut parts: Vec<(Range<usize>, Vec<u8>)> = replaced
            .iter()
            .map(|r| {
                let at = stmt.find(r).unwrap();
                (at..at + r.len(), b"(0)".to_vec())
            })
            .collect();
        let ranges: Vec<Range<usize>> = parts.iter().map(|(r, _)| r.clone()).collect();
        parts.extend(bound_item_aliases(stmt.as_bytes(), &ranges));
        parts.sort_by_key(|(r, _)| (r.start, r.end));
        String::from_utf8(splice(stmt.as_bytes(), &parts)).unwrap()
    }

    #[test]
    fn unaliased_items_keep_their_written_text_as_name() {
        assert_eq!(
            bound(
                "SELECT 1 IN (SELECT id1 FROM t1)",
                &["(SELECT id1 FROM t1)"]
            ),
            "SELECT 1 IN (0) AS `1 IN (SELECT id1 FROM t1)`"
        );
        assert_eq!(
            bound(
                "select  EXISTS(SELECT * FROM t1) /* c */, (SELECT `a``b` FROM t1) x, \
                 MAX((SELECT MIN(id2) FROM t1)) FROM t2",
                &[
                    "EXISTS(SELECT * FROM t1)",
                    "(SELECT `a``b` FROM t1)",
                    "(SELECT MIN(id2) FROM t1)"
                ]
            ),
            "select  (0) AS `EXISTS(SELECT * FROM t1)` /* c */, (0) x, \
             MAX((0)) AS `MAX((SELECT MIN(id2) FROM t1))` FROM t2"
        );
    }

    #[test]
    fn only_the_first_select_list_names_columns() {
        assert_eq!(
            bound(
                "SELECT DISTINCT id, (SELECT 1 FROM t) AS a, (SELECT 2 FROM t) FROM u WHERE \
                 id IN (SELECT 3 FROM t) UNION SELECT 1, 2, (SELECT 4 FROM t)",
                &[
                    "(SELECT 1 FROM t)",
                    "(SELECT 2 FROM t)",
                    "(SELECT 3 FROM t)",
                    "(SELECT 4 FROM t)"
                ]
            ),
            "SELECT DISTINCT id, (0) AS a, (0) AS `(SELECT 2 FROM t)` FROM u WHERE \
             id IN (0) UNION SELECT 1, 2, (0)"
        );
        // A parenthesized first member, an UPDATE: left alone.
        assert!(bound_item_aliases(
            b"(SELECT (SELECT 1)) UNION SELECT 2",
            std::slice::from_ref(&(8..18))
        )
        .is_empty());
        assert!(bound_item_aliases(
            b"UPDATE t SET a = (SELECT 1)",
            std::slice::from_ref(&(17..27))
        )
        .is_empty());
    }

    #[test]
    fn a_select_without_from_and_a_cte_are_read_too() {
        assert_eq!(
            bound(
                "WITH c AS (SELECT 1 AS x) SELECT (SELECT MAX(id) FROM t) + 1 LIMIT 1",
                &["(SELECT MAX(id) FROM t)"]
            ),
            "WITH c AS (SELECT 1 AS x) SELECT (0) + 1 AS `(SELECT MAX(id) FROM t) + 1` LIMIT 1"
        );
    }
}
