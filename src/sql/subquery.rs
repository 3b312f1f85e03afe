//! Where a statement's subqueries and derived tables lie, and what each one is for the outer
//! statement: an `IN (SELECT …)` list, an `EXISTS (SELECT …)` test, a scalar `(SELECT …)` or a
//! derived table `FROM (SELECT …) AS d`. idgate runs such an inner SELECT over sharded tables
//! first and puts its rows into the outer statement as literals (`subquery_bind`); this module
//! only finds the pieces, from tokens, so the outer statement keeps the client's own text.

use std::ops::Range;

use super::select_tokens::{SelectText, Tok};

/// How the outer statement uses a subquery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubqueryUse {
    /// `x IN (SELECT …)` / `x NOT IN (SELECT …)`: a value list.
    In,
    /// `EXISTS (SELECT …)` (`NOT` stays in the outer text): TRUE or FALSE.
    Exists,
    /// `(SELECT …)` as a value: at most one row.
    Scalar,
    /// `FROM (SELECT …) AS d`: a table.
    Derived,
    /// `WITH c AS (SELECT …)`: a table too, bound as a derived table is.
    Cte,
    /// `x = ANY (SELECT …)`, `ALL`, `SOME`: a set bound as a literal table.
    Quantified,
}

/// One subquery at the outer statement's level (subqueries nested in it are its own business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subquery {
    pub kind: SubqueryUse,
    /// The outer text the bound value replaces: `(SELECT …)`, or `EXISTS (SELECT …)`.
    pub replace: Range<usize>,
    /// The inner statement, without its parentheses.
    pub inner: Range<usize>,
}

/// Words that start the clauses in which a parenthesized SELECT is a table of the FROM list.
const FROM_LIST: &[&str] = &["FROM", "JOIN"];

/// Words after which a scan back for the clause a `,` belongs to stops.
const CLAUSE_WORDS: &[&str] = &[
    "SELECT", "FROM", "JOIN", "WHERE", "ON", "USING", "GROUP", "HAVING", "ORDER", "LIMIT", "SET",
    "VALUES", "BY", "WINDOW",
];

/// The outer-level subqueries of `stmt`, in text order; those of each member of the
/// statement's own UNION count as outer-level (a member, parenthesized or not, is not a
/// subquery). `None` when the text cannot be read (not UTF-8, unbalanced parentheses) or when
/// a parenthesized SELECT opens a group of tables or of UNION members, which idgate does not
/// take apart.
pub fn find_subqueries(stmt: &[u8]) -> Option<Vec<Subquery>> {
    let text = std::str::from_utf8(stmt).ok()?;
    let st = SelectText::new(text)?;
    let toks = &st.toks;
    let mut out: Vec<Subquery> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        // `x IN ((SELECT …) UNION (SELECT …))`: one IN list, the members' rows together.
        if let Some((inner, paren, close)) = in_union(&st, i) {
            out.push(Subquery {
                kind: SubqueryUse::In,
                replace: paren,
                inner,
            });
            i = close + 1;
            continue;
        }
        let starts_select = toks[i].tok == Tok::LParen
            && matches!(toks.get(i + 1).map(|t| &t.tok), Some(Tok::Word(w)) if w == "SELECT" || w == "WITH");
        if !starts_select {
            i += 1;
            continue;
        }
        let depth = toks[i].depth;
        let close =
            (i + 1..toks.len()).find(|&j| toks[j].tok == Tok::RParen && toks[j].depth == depth)?;
        let word_before = |k: usize| match toks.get(k).map(|t| &t.tok) {
            Some(Tok::Word(w)) => Some(w.as_str()),
            _ => None,
        };
        let prev = i.checked_sub(1);
        let prev_word = prev.and_then(word_before);
        let inner = toks[i + 1].at.start..toks[close - 1].at.end;
        let paren = toks[i].at.start..toks[close].at.end;
        let (kind, replace) = match prev_word {
            // A parenthesized member of the statement's own UNION (`(SELECT …) UNION (SELECT
            // …)`): its subqueries are the statement's, so the scan goes on inside it.
            None if prev.is_none() => {
                i += 1;
                continue;
            }
            // `SELECT DISTINCT (SELECT …)`, `SELECT ALL (SELECT …)`: a scalar item.
            Some("ALL" | "DISTINCT" | "DISTINCTROW")
                if i >= 2 && word_before(i - 2) == Some("SELECT") =>
            {
                (SubqueryUse::Scalar, paren)
            }
            Some("UNION" | "EXCEPT" | "INTERSECT" | "ALL" | "DISTINCT")
                if !matches!(prev_word, Some("ALL" | "DISTINCT"))
                    || is_set_operator(toks, i - 1) =>
            {
                i += 1;
                continue;
            }
            // `WITH c AS (SELECT …)`: a table. A recursive one names itself, so it cannot run
            // alone: idgate leaves such a statement whole.
            Some("AS") => match cte_body(toks, i) {
                Some(true) => return None,
                Some(false) => (SubqueryUse::Cte, paren),
                None => (SubqueryUse::Scalar, paren),
            },
            Some("IN") => (SubqueryUse::In, paren),
            Some("EXISTS") => {
                let at = toks[i - 1].at.start;
                (SubqueryUse::Exists, at..paren.end)
            }
            Some("ANY" | "SOME" | "ALL") => (SubqueryUse::Quantified, paren),
            Some(w) if FROM_LIST.contains(&w) || w.ends_with("_JOIN") => {
                (SubqueryUse::Derived, paren)
            }
            _ if toks[i - 1].tok == Tok::Comma && in_from_list(toks, i - 1) => {
                (SubqueryUse::Derived, paren)
            }
            _ if toks[i - 1].tok == Tok::LParen && is_table_group(toks, i - 1) => return None,
            _ => (SubqueryUse::Scalar, paren),
        };
        out.push(Subquery {
            kind,
            replace,
            inner,
        });
        i = close + 1;
    }
    Some(out)
}

/// At token `i`: the `(` of `IN ((SELECT …) UNION [ALL | DISTINCT] (SELECT …) …)`, each member
/// parenthesized: the members' text, the group's range and the token closing it.
fn in_union(st: &SelectText, i: usize) -> Option<(Range<usize>, Range<usize>, usize)> {
    let toks = &st.toks;
    if toks.get(i)?.tok != Tok::LParen || i == 0 || toks[i - 1].tok != Tok::Word("IN".into()) {
        return None;
    }
    let depth = toks[i].depth;
    let close =
        (i + 1..toks.len()).find(|&j| toks[j].tok == Tok::RParen && toks[j].depth == depth)?;
    let members = union_member_tokens(toks, i + 1, close)?;
    (members.len() > 1).then(|| {
        (
            toks[i + 1].at.start..toks[close - 1].at.end,
            toks[i].at.start..toks[close].at.end,
            close,
        )
    })
}

/// The members of `(SELECT …) UNION [ALL | DISTINCT] (SELECT …) …` in tokens `from..to`, as
/// (open, close) token indexes of each member's parentheses; `None` for any other shape.
fn union_member_tokens(
    toks: &[super::select_tokens::Lexeme],
    from: usize,
    to: usize,
) -> Option<Vec<(usize, usize)>> {
    let mut members = Vec::new();
    let mut k = from;
    loop {
        let open = toks.get(k).filter(|t| t.tok == Tok::LParen)?;
        if !matches!(toks.get(k + 1).map(|t| &t.tok), Some(Tok::Word(w)) if w == "SELECT") {
            return None;
        }
        let close =
            (k + 1..to).find(|&j| toks[j].tok == Tok::RParen && toks[j].depth == open.depth)?;
        members.push((k, close));
        k = close + 1;
        if k == to {
            return Some(members);
        }
        if toks[k].tok != Tok::Word("UNION".into()) {
            return None;
        }
        k += 1;
        if matches!(&toks.get(k)?.tok, Tok::Word(w) if w == "ALL" || w == "DISTINCT") {
            k += 1;
        }
    }
}

/// The members of an IN list's `(SELECT …) UNION (SELECT …)` text, each without its
/// parentheses; `None` when `inner` is not such a union.
pub fn union_members(inner: &[u8]) -> Option<Vec<Range<usize>>> {
    let text = std::str::from_utf8(inner).ok()?;
    let st = SelectText::new(text)?;
    let members = union_member_tokens(&st.toks, 0, st.toks.len())?;
    (members.len() > 1).then(|| {
        members
            .into_iter()
            .map(|(open, close)| st.toks[open + 1].at.start..st.toks[close - 1].at.end)
            .collect()
    })
}

/// Whether the `(` at `i`, after `AS`, opens the body of a common table expression (`WITH
/// [RECURSIVE] a AS (…), b (x, y) AS (…)`): `Some(recursive)`, else `None`.
fn cte_body(toks: &[super::select_tokens::Lexeme], i: usize) -> Option<bool> {
    let depth = toks[i].depth;
    for k in (0..i.checked_sub(1)?).rev() {
        let t = &toks[k];
        if t.depth > depth {
            continue;
        }
        if t.depth < depth {
            return None;
        }
        match &t.tok {
            Tok::Word(w) if w == "WITH" => return Some(false),
            Tok::Word(w) if w == "RECURSIVE" => {
                let with = k.checked_sub(1).map(|p| &toks[p].tok);
                return matches!(with, Some(Tok::Word(w)) if w == "WITH").then_some(true);
            }
            // A name, `AS`, a column list, the comma between two definitions.
            Tok::Word(w) if !super::select_tokens::is_clause_word(w) => {}
            Tok::Other | Tok::LParen | Tok::RParen | Tok::Comma => {}
            _ => return None,
        }
    }
    None
}

/// Whether the `ALL` at `k` follows UNION/EXCEPT/INTERSECT.
fn is_set_operator(toks: &[super::select_tokens::Lexeme], k: usize) -> bool {
    matches!(
        k.checked_sub(1).and_then(|p| toks.get(p)).map(|t| &t.tok),
        Some(Tok::Word(w)) if w == "UNION" || w == "EXCEPT" || w == "INTERSECT"
    )
}

/// Whether the `,` at `k` separates tables of a FROM list (the nearest clause word before it at
/// its depth is FROM or a JOIN).
fn in_from_list(toks: &[super::select_tokens::Lexeme], k: usize) -> bool {
    let depth = toks[k].depth;
    for t in toks[..k].iter().rev() {
        if t.depth < depth {
            return false;
        }
        if t.depth > depth {
            continue;
        }
        if let Tok::Word(w) = &t.tok {
            if CLAUSE_WORDS.contains(&w.as_str()) || w.ends_with("_JOIN") {
                return FROM_LIST.contains(&w.as_str()) || w.ends_with("_JOIN");
            }
        }
    }
    false
}

/// Whether the parenthesized subquery at `replace` in `stmt` is a whole ORDER BY or GROUP BY
/// item (`ORDER BY (SELECT …) DESC, id`). Its value bound there must not be written as a bare
/// integer: MariaDB reads `ORDER BY (20)` as the 20th select item.
pub fn is_sort_item(stmt: &[u8], replace: &Range<usize>) -> bool {
    let Some(st) = std::str::from_utf8(stmt).ok().and_then(SelectText::new) else {
        return false;
    };
    let toks = &st.toks;
    let Some(open) = toks.iter().position(|t| t.at.start == replace.start) else {
        return false;
    };
    let Some(close) = toks.iter().position(|t| t.at.end == replace.end) else {
        return false;
    };
    let word = |t: Option<&super::select_tokens::Lexeme>, of: &[&str]| matches!(t.map(|t| &t.tok), Some(Tok::Word(w)) if of.contains(&w.as_str()));
    let starts_item = match open.checked_sub(1).map(|p| &toks[p].tok) {
        Some(Tok::Word(w)) if w == "BY" => word(
            open.checked_sub(2).and_then(|p| toks.get(p)),
            &["ORDER", "GROUP"],
        ),
        Some(Tok::Comma) => in_clause(toks, open - 1, &["ORDER", "GROUP"]),
        _ => false,
    };
    const AFTER_ITEM: &[&str] = &[
        "ASC",
        "DESC",
        "LIMIT",
        "HAVING",
        "WINDOW",
        "WITH",
        "UNION",
        "EXCEPT",
        "INTERSECT",
        "FOR",
        "LOCK",
        "INTO",
        "PROCEDURE",
        "OFFSET",
        "FETCH",
        "ORDER",
    ];
    let ends_item = match toks.get(close + 1) {
        None => true,
        Some(t) => {
            matches!(t.tok, Tok::Comma | Tok::RParen | Tok::Semicolon) || word(Some(t), AFTER_ITEM)
        }
    };
    starts_item && ends_item
}

/// Whether the `,` at `k` separates items of a clause that starts with one of `clauses`.
fn in_clause(toks: &[super::select_tokens::Lexeme], k: usize, clauses: &[&str]) -> bool {
    let depth = toks[k].depth;
    for (i, t) in toks[..k].iter().enumerate().rev() {
        if t.depth < depth {
            return false;
        }
        if t.depth > depth {
            continue;
        }
        if let Tok::Word(w) = &t.tok {
            if w == "BY" {
                return i > 0
                    && matches!(&toks[i - 1].tok, Tok::Word(c) if clauses.contains(&c.as_str()));
            }
            if CLAUSE_WORDS.contains(&w.as_str()) {
                return false;
            }
        }
    }
    false
}

/// Whether the `(` at `k` opens a parenthesized FROM item (`FROM ((SELECT …) d JOIN …)`) or a
/// UNION member (`((SELECT …) UNION …)`): shapes idgate leaves alone.
fn is_table_group(toks: &[super::select_tokens::Lexeme], k: usize) -> bool {
    match k.checked_sub(1).map(|p| &toks[p].tok) {
        None => true,
        Some(Tok::Word(w)) => {
            FROM_LIST.contains(&w.as_str()) || w.ends_with("_JOIN") || w == "UNION"
        }
        Some(Tok::Comma) => in_from_list(toks, k - 1),
        Some(Tok::LParen) => is_table_group(toks, k - 1),
        _ => false,
    }
}

/// `stmt` with each range replaced by its text (ranges in order, not overlapping).
pub fn splice(stmt: &[u8], parts: &[(Range<usize>, Vec<u8>)]) -> Vec<u8> {
    let extra: usize = parts.iter().map(|(_, t)| t.len()).sum();
    let mut out = Vec::with_capacity(stmt.len() + extra);
    let mut at = 0;
    for (r, text) in parts {
        out.extend_from_slice(&stmt[at..r.start]);
        out.extend_from_slice(text);
        at = r.end;
    }
    out.extend_from_slice(&stmt[at..]);
    out
}

/// Whether an inner statement has a LIMIT of its own (not one of a subquery in it): MariaDB
/// refuses `IN`/`ANY`/`ALL` of such a subquery, and so must a bound copy of it.
pub fn has_own_limit(inner: &[u8]) -> bool {
    let Some(st) = std::str::from_utf8(inner).ok().and_then(SelectText::new) else {
        return false;
    };
    st.toks
        .iter()
        .any(|t| t.depth == 0 && t.tok == Tok::Word("LIMIT".into()))
}

/// Whether an UPDATE or DELETE changes (or reads at its own level) several tables: `UPDATE a
/// JOIN b …`, `UPDATE a, b …`, `DELETE a FROM a JOIN b …`, `DELETE FROM a USING a, b …`. Such
/// statements keep the planner's answer; only single-table ones get their subqueries bound.
/// Text idgate cannot read counts as multi-table.
pub fn is_multi_table_write(stmt: &[u8]) -> bool {
    let Some(st) = std::str::from_utf8(stmt).ok().and_then(SelectText::new) else {
        return true;
    };
    let mut top = st.toks.iter().filter(|t| t.depth == 0).map(|t| &t.tok);
    let joins = |t: &Tok| match t {
        Tok::Comma => true,
        Tok::Word(w) => w == "JOIN" || w == "STRAIGHT_JOIN" || w == "USING",
        _ => false,
    };
    let word = |t: Option<&Tok>| match t {
        Some(Tok::Word(w)) => Some(w.clone()),
        _ => None,
    };
    match word(top.next()).as_deref() {
        Some("UPDATE") => {
            let until_set = top.take_while(|t| **t != Tok::Word("SET".into()));
            until_set.into_iter().any(joins)
        }
        Some("DELETE") => {
            let mut next = word(top.next());
            while matches!(next.as_deref(), Some("LOW_PRIORITY" | "QUICK" | "IGNORE")) {
                next = word(top.next());
            }
            if next.as_deref() != Some("FROM") {
                return true;
            }
            let until_where = top.take_while(|t| **t != Tok::Word("WHERE".into()));
            until_where.into_iter().any(joins)
        }
        _ => true,
    }
}
