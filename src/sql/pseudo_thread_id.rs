//! `@@pseudo_thread_id` in a client's SELECT: on MariaDB it is the connection id until the
//! session sets it, so through idgate it reads the session's idgate id (the one `CONNECTION_ID()`
//! answers and `KILL` takes), not the id of whichever backend connection runs the SELECT.

use std::ops::Range;

use super::words::{pseudo_thread_ids, Token, Tokens};

/// `stmt` (a SELECT) with the session's id, `id`, in place of each `@@[SESSION.|LOCAL.]
/// pseudo_thread_id` it reads while that is still `thread`, the id of the backend connection
/// that runs it (the client did not set it; MariaDB's CONNECTION_ID() follows a SET, so it
/// cannot tell), described as MariaDB describes the variable (BIGINT UNSIGNED, 21 wide,
/// nullable), which the `IF` of the variable and `CAST(id AS UNSIGNED)` is. A select item of
/// the statement without an alias keeps its name: the item as written.
pub fn with_session_pseudo_thread_id(stmt: &[u8], id: u32, thread: u32) -> Vec<u8> {
    let spans = pseudo_thread_ids(stmt);
    let unnamed = unnamed_items(stmt);
    let value =
        format!("IF(@@pseudo_thread_id = {thread}, CAST({id} AS UNSIGNED), @@pseudo_thread_id)");
    let mut out = Vec::with_capacity(stmt.len() + 96);
    let mut at = 0;
    // Each unnamed item that holds a span is named after its own text once its spans are in.
    let mut open: Option<&Range<usize>> = None;
    for r in &spans {
        if let Some(item) = open.filter(|i| r.start >= i.end) {
            out.extend_from_slice(&stmt[at..item.end]);
            name_after(&mut out, &stmt[item.clone()]);
            at = item.end;
            open = None;
        }
        if open.is_none() {
            open = unnamed
                .iter()
                .find(|i| i.start <= r.start && r.end <= i.end);
        }
        out.extend_from_slice(&stmt[at..r.start]);
        out.extend_from_slice(value.as_bytes());
        at = r.end;
    }
    if let Some(item) = open {
        out.extend_from_slice(&stmt[at..item.end]);
        name_after(&mut out, &stmt[item.clone()]);
        at = item.end;
    }
    out.extend_from_slice(&stmt[at..]);
    out
}

/// ` AS `text``, with any backtick of the text doubled.
fn name_after(out: &mut Vec<u8>, text: &[u8]) {
    out.extend_from_slice(b" AS `");
    for &b in text {
        if b == b'`' {
            out.push(b'`');
        }
        out.push(b);
    }
    out.push(b'`');
}

/// The byte ranges of the top-level select items of `stmt` that have no alias.
fn unnamed_items(stmt: &[u8]) -> Vec<Range<usize>> {
    let tokens: Vec<(Range<usize>, Token)> = Tokens::new(stmt).collect();
    let mut out = Vec::new();
    let mut i = match tokens.first() {
        Some((_, t)) if t.is_word("SELECT") => 1,
        _ => return out,
    };
    while tokens.get(i).is_some_and(|(_, t)| {
        [
            "ALL",
            "DISTINCT",
            "DISTINCTROW",
            "HIGH_PRIORITY",
            "STRAIGHT_JOIN",
            "SQL_CALC_FOUND_ROWS",
        ]
        .iter()
        .any(|w| t.is_word(w))
            || t.is_word("SQL_NO_CACHE")
            || t.is_word("SQL_CACHE")
    }) {
        i += 1;
    }
    let mut item: Vec<&(Range<usize>, Token)> = Vec::new();
    let mut depth = 0usize;
    let ends_list = |t: &Token| {
        [
            "FROM", "INTO", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "UNION", "FOR", "WINDOW",
        ]
        .iter()
        .any(|w| t.is_word(w))
            || *t == Token::Punct(b';')
    };
    while let Some(tok) = tokens.get(i) {
        let t = &tok.1;
        if depth == 0 && (ends_list(t) || *t == Token::Punct(b',')) {
            push_unnamed(&item, &mut out);
            item.clear();
            if *t != Token::Punct(b',') {
                return out;
            }
        } else {
            match t {
                Token::Punct(b'(') => depth += 1,
                Token::Punct(b')') => depth = depth.saturating_sub(1),
                _ => {}
            }
            item.push(tok);
        }
        i += 1;
    }
    push_unnamed(&item, &mut out);
    out
}

/// Adds `item`'s range to `out` unless it is named: `expr [AS] alias`.
fn push_unnamed(item: &[&(Range<usize>, Token)], out: &mut Vec<Range<usize>>) {
    let (Some(first), Some(last)) = (item.first(), item.last()) else {
        return;
    };
    let mut depth = 0usize;
    for (_, t) in item {
        match t {
            Token::Punct(b'(') => depth += 1,
            Token::Punct(b')') => depth = depth.saturating_sub(1),
            t if depth == 0 && t.is_word("AS") => return,
            _ => {}
        }
    }
    // A bare alias: a name right after a complete operand.
    if item.len() >= 2 {
        let before = &item[item.len() - 2].1;
        let alias = matches!(last.1, Token::Word(_) | Token::Ident(_) | Token::Str(_))
            && !last.1.is_word("END")
            && matches!(
                before,
                Token::Word(_) | Token::Ident(_) | Token::Str(_) | Token::Punct(b')')
            )
            && !before.is_word("NOT")
            && !before.is_word("AND")
            && !before.is_word("OR");
        if alias {
            return;
        }
    }
    out.push(first.0.start..last.0.end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_select_reads_the_session_id_as_pseudo_thread_id() {
        let w = |s: &str| {
            String::from_utf8(with_session_pseudo_thread_id(s.as_bytes(), 7, 90)).unwrap()
        };
        let v = "IF(@@pseudo_thread_id = 90, CAST(7 AS UNSIGNED), @@pseudo_thread_id)";
        assert_eq!(
            w("SELECT @@pseudo_thread_id"),
            format!("SELECT {v} AS `@@pseudo_thread_id`")
        );
        assert_eq!(
            w("select @@SESSION.Pseudo_Thread_Id, 1 from t"),
            format!("select {v} AS `@@SESSION.Pseudo_Thread_Id`, 1 from t")
        );
        assert_eq!(
            w("SELECT @@pseudo_thread_id + 1 AS x"),
            format!("SELECT {v} + 1 AS x")
        );
        assert_eq!(w("SELECT @@pseudo_thread_id x"), format!("SELECT {v} x"));
        assert_eq!(
            w("SELECT @@pseudo_thread_id + `a``b`, 2"),
            format!("SELECT {v} + `a``b` AS `@@pseudo_thread_id + ``a````b```, 2")
        );
        assert_eq!(
            w("SELECT a FROM t WHERE b = @@pseudo_thread_id"),
            format!("SELECT a FROM t WHERE b = {v}")
        );
        assert_eq!(
            w("SELECT @@pseudo_thread_id - @@pseudo_thread_id;"),
            format!("SELECT {v} - {v} AS `@@pseudo_thread_id - @@pseudo_thread_id`;")
        );
        assert_eq!(
            w("SELECT '@@pseudo_thread_id', @@pseudo_thread_ids"),
            "SELECT '@@pseudo_thread_id', @@pseudo_thread_ids"
        );
    }
}
