//! A SELECT over shards whose items or ORDER BY compute on aggregates
//! (`COALESCE(AVG(age), 0) * 2`, `MAX(pages) + 1`, `LEAST(MAX(pages), 500)`) is answered as one
//! server would by lifting the expressions out: the aggregates (and the GROUP BY values they sit beside) become a
//! derived table, which idgate merges across the shards as any aggregate query, and the client's
//! expressions are evaluated by MariaDB over that table's rows:
//!
//! `SELECT g, MAX(p) + 1 AS m FROM t WHERE … GROUP BY g ORDER BY m` becomes
//! `SELECT idgate_g0 AS g, idgate_a0 + 1 AS m FROM (SELECT g AS idgate_g0, MAX(p) AS idgate_a0
//! FROM t WHERE … GROUP BY g) AS idgate_aggregates ORDER BY m`.
//!
//! COUNT, SUM, MIN, MAX, GROUP_CONCAT and the BIT_ aggregates are lifted as they are: their
//! merged values are exact. `AVG(x)` is lifted as `SUM(x) / NULLIF(COUNT(x), 0)`, the division
//! MariaDB's AVG does itself, so that an expression over it sees every digit MariaDB's would,
//! not the rounded average; the STD/VARIANCE family and the JSON aggregates leave the statement
//! refused.
//!
//! Text-level, from tokens, so everything the client wrote (literals, quoting, comments) stays as
//! written. An item that still names a column outside the aggregates and the GROUP BY values
//! (MariaDB allows it and picks any row's value) is not lifted: the statement stays refused.

use std::ops::Range;

use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement, Visit, Visitor};

use crate::sql::aggregates::AGGREGATES;

/// Aggregates lifted as they are: the merge computes each one's exact value across the shards,
/// and the outer expression reads that value. (The STD/VARIANCE family is not: its merged value
/// reaches the derived table rounded to its displayed decimals, and an expression over it would
/// show another last digit than one server's.)
const AS_THEY_ARE: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "group_concat",
    "bit_and",
    "bit_or",
    "bit_xor",
];
use crate::sql::parse::parse_one;
use crate::sql::select_tokens::{SelectText, Tok};

/// The derived table's name in the lifted statement.
const DERIVED: &str = "idgate_aggregates";

/// The lifted statement, or `None` when `stmt` is not a SELECT this applies to.
pub fn lift_aggregates(stmt: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(stmt).ok()?;
    let Statement::Query(q) = parse_one(text).ok()? else {
        return None;
    };
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    if q.with.is_some() || s.distinct.is_some() || s.projection.is_empty() {
        return None;
    }
    let layout = plain_layout(text)?;
    let pieces = layout.select_items()?;
    if pieces.len() != s.projection.len() {
        return None;
    }
    let mut lift = Lift {
        text,
        layout: &layout,
        groups: layout.by_items("GROUP").unwrap_or_default(),
        aggregates: Vec::new(),
    };
    // `GROUP BY 1` names a select item, which the inner statement no longer has.
    if lift.groups.iter().any(|g| is_ordinal(&text[g.clone()])) {
        return None;
    }
    // The outer select list: each item's expression rewritten, with its alias or, without
    // one, its text as written (MariaDB's name for the column).
    let mut aliases = Vec::new();
    // Each alias with its item's expression over the derived table.
    let mut expansions: Vec<(String, String)> = Vec::new();
    let mut outer = Vec::new();
    for (item, piece) in s.projection.iter().zip(pieces) {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(_) => (piece.clone(), None),
            SelectItem::ExprWithAlias { .. } => {
                let e = layout.strip_last(piece.clone(), true);
                (e.clone(), Some(text[e.end..piece.end].trim().to_string()))
            }
            _ => return None,
        };
        let rewritten = lift.rewrite(expr.clone())?;
        if !only_lifted_names(&rewritten, &[]) {
            return None;
        }
        match alias {
            Some(a) => {
                expansions.push((alias_name(&a), rewritten.clone()));
                aliases.push(alias_name(&a));
                outer.push(format!("{rewritten} {a}"));
            }
            None => {
                // MariaDB names a column reference by the column, any other item by its text.
                let name = match item {
                    SelectItem::UnnamedExpr(Expr::Identifier(id)) => id.value.clone(),
                    SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                        parts.last()?.value.clone()
                    }
                    _ => text[expr].to_string(),
                };
                outer.push(format!("{rewritten} AS `{}`", name.replace('`', "``")));
                aliases.push(name);
            }
        }
    }
    // HAVING moves out too, as a WHERE over the groups' rows: it may name the client's
    // aliases (`HAVING total > 10`), which the inner statement has not; each stands for its
    // item's expression there (a HAVING over the outer rows would name columns of no group,
    // which ONLY_FULL_GROUP_BY refuses).
    let having = match (layout.clause("HAVING"), layout.clause_range("HAVING")) {
        (Some(kw), Some(r)) => {
            let start = layout.toks.get(kw + 1)?.at.start;
            let end = text[..r.end].trim_end().len();
            let rewritten = lift.rewrite(start..end)?;
            let condition = expand_aliases(&rewritten, &expansions)?;
            if !only_lifted_names(&condition, &[]) {
                return None;
            }
            Some((r.start, condition))
        }
        _ => None,
    };
    let mut order = Vec::new();
    for piece in layout.by_items("ORDER").unwrap_or_default() {
        let last = layout.token_at(piece.end).saturating_sub(1);
        let sorted = ["ASC", "DESC"].iter().any(|w| {
            layout
                .toks
                .get(last)
                .is_some_and(|t| t.tok == Tok::Word(w.to_string()))
        });
        let e = if sorted {
            layout.strip_last(piece.clone(), false)
        } else {
            piece.clone()
        };
        let direction = text[e.end..piece.end].trim();
        let rewritten = lift.rewrite(e)?;
        if !is_ordinal(&rewritten) && !only_lifted_names(&rewritten, &aliases) {
            return None;
        }
        order.push(format!("{rewritten} {direction}").trim_end().to_string());
    }
    // Without aggregates only window functions over the groups need the lift: MariaDB runs
    // them after grouping, so over the merged groups they see what one server's see.
    if lift.aggregates.is_empty() && (lift.groups.is_empty() || !layout.has_top_word("OVER")) {
        return None;
    }
    // The inner statement: the GROUP BY values and the aggregates, over the client's own FROM
    // … GROUP BY.
    let from = layout.toks[layout.clause("FROM")?].at.start;
    let tail_end = having.as_ref().map_or(tail_start(&layout), |(at, _)| *at);
    let mut inner: Vec<String> = lift
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| format!("{} AS idgate_g{i}", &text[g.clone()]))
        .collect();
    inner.extend(
        lift.aggregates
            .iter()
            .enumerate()
            .map(|(i, a)| format!("{a} AS idgate_a{i}")),
    );
    let mut out = format!(
        "SELECT {} FROM (SELECT {} {}) AS {DERIVED}",
        outer.join(", "),
        inner.join(", "),
        text[from..tail_end].trim_end()
    );
    if let Some((_, h)) = &having {
        out.push_str(" WHERE ");
        out.push_str(h);
    }
    if !order.is_empty() {
        out.push_str(" ORDER BY ");
        out.push_str(&order.join(", "));
    }
    if let Some(r) = layout.clause_range("LIMIT") {
        out.push(' ');
        out.push_str(text[r.start..layout.end].trim_end());
    }
    Some(out)
}

/// The layout of a lone SELECT: `None` with a WINDOW clause, a set operation, INTO or a
/// locking clause, which a lift cannot carry over.
pub(super) fn plain_layout(text: &str) -> Option<SelectText> {
    let layout = SelectText::new(text)?;
    let words = [
        "WINDOW",
        "PROCEDURE",
        "INTO",
        "FOR",
        "LOCK",
        "UNION",
        "EXCEPT",
        "INTERSECT",
    ];
    (!words.iter().any(|w| layout.has_top_word(w))).then_some(layout)
}

/// Where the statement's ORDER BY or LIMIT starts (its end without them).
pub(super) fn tail_start(layout: &SelectText) -> usize {
    ["ORDER", "LIMIT"]
        .iter()
        .filter_map(|c| layout.clause_range(c).map(|r| r.start))
        .min()
        .unwrap_or(layout.end)
}

struct Lift<'a> {
    text: &'a str,
    layout: &'a SelectText,
    /// The GROUP BY items' text.
    groups: Vec<Range<usize>>,
    /// Each distinct aggregate call's text, in order of first use.
    aggregates: Vec<String>,
}

impl Lift<'_> {
    /// The derived table's column for the aggregate call `call` (its text), added if new.
    fn column(&mut self, call: &str) -> String {
        let body = normalized(call);
        let n = match self.aggregates.iter().position(|a| normalized(a) == body) {
            Some(n) => n,
            None => {
                self.aggregates.push(call.to_string());
                self.aggregates.len() - 1
            }
        };
        format!("{DERIVED}.idgate_a{n}")
    }

    /// `range`'s text with each aggregate call and each GROUP BY value in it replaced by the
    /// derived table's column; `None` for a window function or an aggregate not lifted.
    fn rewrite(&mut self, range: Range<usize>) -> Option<String> {
        let l = self.layout;
        let mut out = String::new();
        let mut at = range.start;
        let mut i = l.token_at(range.start);
        while i < l.toks.len() && l.toks[i].at.end <= range.end {
            let t = &l.toks[i];
            if let Some(call) = self.aggregate_call(i) {
                if let Some(next) = l.toks.get(l.token_at(call.end)) {
                    if next.tok == Tok::Word("OVER".into()) {
                        // A window function (`SUM(COUNT(*)) OVER ()`): it stays in the outer
                        // statement, over the groups; only what it reads is lifted.
                        i += 1;
                        continue;
                    }
                }
                out.push_str(&self.text[at..call.start]);
                let Tok::Word(name) = &t.tok else {
                    return None;
                };
                let name = name.to_ascii_lowercase();
                let whole = &self.text[call.clone()];
                if AS_THEY_ARE.contains(&name.as_str()) {
                    let col = self.column(whole);
                    out.push_str(&col);
                } else if name == "avg" {
                    let args = &whole[whole.find('(')?..];
                    let sum = self.column(&format!("SUM{args}"));
                    let count = self.column(&format!("COUNT{args}"));
                    out.push_str(&format!("({sum} / NULLIF({count}, 0))"));
                } else {
                    return None;
                }
                at = call.end;
                i = l.token_at(call.end);
                continue;
            }
            if let Some((g, end)) = self.group_at(i, range.end) {
                out.push_str(&self.text[at..t.at.start]);
                out.push_str(&format!("{DERIVED}.idgate_g{g}"));
                at = end;
                i = l.token_at(end);
                continue;
            }
            i += 1;
        }
        out.push_str(&self.text[at..range.end]);
        Some(out)
    }

    /// The byte range of an aggregate call starting at token `i` (`COUNT(…)`), if one does.
    fn aggregate_call(&self, i: usize) -> Option<Range<usize>> {
        let l = self.layout;
        let Tok::Word(w) = &l.toks.get(i)?.tok else {
            return None;
        };
        if !AGGREGATES.contains(&w.to_ascii_lowercase().as_str()) {
            return None;
        }
        let open = l.toks.get(i + 1)?;
        if open.tok != Tok::LParen || open.at.start != l.toks[i].at.end {
            return None;
        }
        let args = l.paren_group(open.at.start)?;
        Some(l.toks[i].at.start..args.end)
    }

    /// A GROUP BY value written at token `i` (within `limit`): its index and where it ends.
    fn group_at(&self, i: usize, limit: usize) -> Option<(usize, usize)> {
        let l = self.layout;
        for (g, range) in self.groups.iter().enumerate() {
            let want = normalized(&self.text[range.clone()]);
            let mut have = String::new();
            let mut j = i;
            while j < l.toks.len() && l.toks[j].at.end <= limit && have.len() < want.len() {
                have.push_str(&normalized(&self.text[l.toks[j].at.clone()]));
                j += 1;
                if have == want {
                    return Some((g, l.toks[j - 1].at.end));
                }
            }
        }
        None
    }
}

/// Text compared without spaces and case (identifiers and keywords are case-insensitive; a
/// quoted name differs from a bare one, which at worst leaves a statement refused).
fn normalized(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

fn is_ordinal(s: &str) -> bool {
    !s.trim().is_empty() && s.trim().bytes().all(|b| b.is_ascii_digit())
}

/// An alias as written (`AS x`, `` `x` ``, `'x'`), unquoted.
fn alias_name(written: &str) -> String {
    let a = written.trim();
    let a = a
        .strip_prefix("AS ")
        .or_else(|| a.strip_prefix("as "))
        .or_else(|| a.strip_prefix("As "))
        .or_else(|| a.strip_prefix("aS "))
        .unwrap_or(a)
        .trim();
    a.trim_matches(['`', '\'', '"']).to_string()
}

/// `text` (a condition over the derived table) with each bare name of an alias in `items`
/// replaced by that item's expression, parenthesized.
fn expand_aliases(text: &str, items: &[(String, String)]) -> Option<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::MySqlDialect {};
    let toks = Tokenizer::new(&dialect, text)
        .with_unescape(false)
        .tokenize_with_location()
        .ok()?;
    let solid: Vec<_> = toks
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .collect();
    let index = crate::sql::parse::LineIndex::new(text);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (i, t) in solid.iter().enumerate() {
        let Token::Word(w) = &t.token else {
            continue;
        };
        // A qualified name (`d.total`, `total.x`) or a call (`total(…)`) is not the alias.
        let after_dot = i > 0 && solid[i - 1].token == Token::Period;
        let next = solid.get(i + 1).map(|n| &n.token);
        if !matches!(w.quote_style, None | Some('`'))
            || after_dot
            || matches!(next, Some(Token::Period | Token::LParen))
        {
            continue;
        }
        let Some((_, expr)) = items.iter().find(|(a, _)| a.eq_ignore_ascii_case(&w.value)) else {
            continue;
        };
        let r = index.range(t.span)?;
        out.push_str(text.get(at..r.start)?);
        out.push('(');
        out.push_str(expr);
        out.push(')');
        at = r.end;
    }
    out.push_str(text.get(at..)?);
    Some(out)
}

/// Whether the expression `text` names no column but the derived table's (and `aliases`).
fn only_lifted_names(text: &str, aliases: &[String]) -> bool {
    let Some(e) = super::merge_rewrite::parse_expr(text) else {
        return false;
    };
    struct Names<'a> {
        aliases: &'a [String],
        foreign: bool,
    }
    impl Visitor for Names<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            let ok = match e {
                Expr::Identifier(id) => self
                    .aliases
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(&id.value)),
                Expr::CompoundIdentifier(parts) => {
                    parts.len() == 2
                        && parts[0].value == DERIVED
                        && parts[1].value.starts_with("idgate_")
                }
                _ => true,
            };
            if !ok {
                self.foreign = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_query(&mut self, _: &sqlparser::ast::Query) -> std::ops::ControlFlow<()> {
            // A subquery in the item: not lifted.
            self.foreign = true;
            std::ops::ControlFlow::Break(())
        }
    }
    let mut v = Names {
        aliases,
        foreign: false,
    };
    let _ = e.visit(&mut v);
    !v.foreign
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lift(sql: &str) -> Option<String> {
        lift_aggregates(sql.as_bytes())
    }

    #[test]
    fn lifts_expressions_over_aggregates() {
        assert_eq!(
            lift("SELECT (COALESCE(AVG(`a`.`age`), 0) * 2) AS `x` FROM `a` WHERE `a`.`id` > 3").as_deref(),
            Some("SELECT (COALESCE((idgate_aggregates.idgate_a0 / NULLIF(idgate_aggregates.idgate_a1, 0)), 0) * 2) AS `x` FROM (SELECT SUM(`a`.`age`) AS idgate_a0, COUNT(`a`.`age`) AS idgate_a1 FROM `a` WHERE `a`.`id` > 3) AS idgate_aggregates")
        );
        assert_eq!(
            lift("SELECT `b`.`genre`, MAX(`b`.`pages`) + 1 AS `m` FROM `b` GROUP BY `b`.`genre` ORDER BY `b`.`genre`").as_deref(),
            Some("SELECT idgate_aggregates.idgate_g0 AS `genre`, idgate_aggregates.idgate_a0 + 1 AS `m` FROM (SELECT `b`.`genre` AS idgate_g0, MAX(`b`.`pages`) AS idgate_a0 FROM `b` GROUP BY `b`.`genre`) AS idgate_aggregates ORDER BY idgate_aggregates.idgate_g0")
        );
        assert_eq!(
            lift("SELECT MAX(pages) + 1 FROM b").as_deref(),
            Some("SELECT idgate_aggregates.idgate_a0 + 1 AS `MAX(pages) + 1` FROM (SELECT MAX(pages) AS idgate_a0 FROM b) AS idgate_aggregates")
        );
        assert_eq!(
            lift("select genre, least(max(pages), 500) l from b group by genre order by genre desc, l limit 3").as_deref(),
            Some("SELECT idgate_aggregates.idgate_g0 AS `genre`, least(idgate_aggregates.idgate_a0, 500) l FROM (SELECT genre AS idgate_g0, max(pages) AS idgate_a0 from b group by genre) AS idgate_aggregates ORDER BY idgate_aggregates.idgate_g0 desc, l limit 3")
        );
        // The same aggregate twice is fetched once.
        assert_eq!(
            lift("SELECT SUM(x) / COUNT(*), SUM( x ) FROM t").as_deref(),
            Some("SELECT idgate_aggregates.idgate_a0 / idgate_aggregates.idgate_a1 AS `SUM(x) / COUNT(*)`, idgate_aggregates.idgate_a0 AS `SUM( x )` FROM (SELECT SUM(x) AS idgate_a0, COUNT(*) AS idgate_a1 FROM t) AS idgate_aggregates")
        );
    }

    #[test]
    fn having_goes_out_with_the_items_its_aliases_name() {
        assert_eq!(
            lift("SELECT k, SUM(v) * 2 AS total FROM t GROUP BY k HAVING total > 10").as_deref(),
            Some("SELECT idgate_aggregates.idgate_g0 AS `k`, idgate_aggregates.idgate_a0 * 2 AS total FROM (SELECT k AS idgate_g0, SUM(v) AS idgate_a0 FROM t GROUP BY k) AS idgate_aggregates WHERE (idgate_aggregates.idgate_a0 * 2) > 10")
        );
        // An aggregate only HAVING names is fetched too; a group value is the derived one.
        assert_eq!(
            lift("SELECT k, COUNT(*) + 0 AS n FROM t GROUP BY k HAVING `n` > 1 AND MIN(v) > 1 OR k = 3 ORDER BY k").as_deref(),
            Some("SELECT idgate_aggregates.idgate_g0 AS `k`, idgate_aggregates.idgate_a0 + 0 AS n FROM (SELECT k AS idgate_g0, COUNT(*) AS idgate_a0, MIN(v) AS idgate_a1 FROM t GROUP BY k) AS idgate_aggregates WHERE (idgate_aggregates.idgate_a0 + 0) > 1 AND idgate_aggregates.idgate_a1 > 1 OR idgate_aggregates.idgate_g0 = 3 ORDER BY idgate_aggregates.idgate_g0")
        );
        // A column neither grouped, aggregated nor an alias: not lifted.
        assert_eq!(
            lift("SELECT k, SUM(v) * 2 AS s FROM t GROUP BY k HAVING v > 1"),
            None
        );
    }

    #[test]
    fn leaves_what_it_cannot_lift() {
        // A column neither aggregated nor grouped.
        assert_eq!(lift("SELECT name, MAX(age) + 1 FROM a"), None);
        // Window functions, DISTINCT, UNION, subqueries in items, no aggregate at all.
        assert_eq!(
            lift("SELECT ROW_NUMBER() OVER (ORDER BY id) + 1 FROM a"),
            None
        );
        assert_eq!(lift("SELECT SUM(x) OVER () + 1 FROM a"), None);
        assert_eq!(lift("SELECT DISTINCT MAX(x) + 1 FROM a"), None);
        assert_eq!(lift("SELECT MAX(x) + 1 FROM a UNION SELECT 1"), None);
        assert_eq!(lift("SELECT MAX(x) + (SELECT 1) FROM a"), None);
        assert_eq!(lift("SELECT x + 1 FROM a"), None);
        // Aggregates whose merged value is not exact.
        assert_eq!(lift("SELECT STDDEV(x) * 2 FROM a"), None);
        assert_eq!(
            lift("SELECT i, LENGTH(GROUP_CONCAT(v)) FROM a GROUP BY i ORDER BY 2").as_deref(),
            Some("SELECT idgate_aggregates.idgate_g0 AS `i`, LENGTH(idgate_aggregates.idgate_a0) AS `LENGTH(GROUP_CONCAT(v))` FROM (SELECT i AS idgate_g0, GROUP_CONCAT(v) AS idgate_a0 FROM a GROUP BY i) AS idgate_aggregates ORDER BY 2")
        );
        assert_eq!(lift("SELECT JSON_ARRAYAGG(x) IS NULL FROM a"), None);
        assert_eq!(lift("INSERT INTO a VALUES (1)"), None);
    }
}
