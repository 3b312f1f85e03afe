//! A SELECT over one sharded table whose items use window functions (`ROW_NUMBER() OVER (ORDER
//! BY id)`, `SUM(x) OVER (PARTITION BY g)`) is answered as one server would by giving MariaDB
//! every row the window sees: the table's rows that pass the WHERE become a derived table,
//! which idgate reads from the shards, and MariaDB runs the client's select list, ORDER BY and
//! LIMIT over it. Column references lose their table qualifier (the derived table is the only
//! table, and a name of its own keeps the outer statement from reading as one about the
//! sharded table):
//!
//! `SELECT t.id, ROW_NUMBER() OVER (ORDER BY t.id) AS rn FROM t WHERE x > 1 ORDER BY t.id LIMIT 5`
//! becomes `SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM (SELECT * FROM t WHERE x > 1)
//! AS idgate_rows ORDER BY id LIMIT 5`.
//!
//! The rows are bounded by `max_subquery_rows` like any subquery's. Only one table without GROUP
//! BY, HAVING, aggregates outside windows or a WINDOW clause: anything else stays refused.

use sqlparser::ast::{Expr, SelectItem, SetExpr, Statement, TableFactor, Visit, Visitor};

use super::aggregate_lift::{plain_layout, tail_start};
use crate::sql::aggregates::AGGREGATES;
use crate::sql::parse::parse_one;
use crate::sql::select_tokens::SelectText;

/// The lifted statement, or `None` when `stmt` is not a SELECT this applies to.
pub fn lift_windows(stmt: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(stmt).ok()?;
    let Statement::Query(q) = parse_one(text).ok()? else {
        return None;
    };
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    if q.with.is_some() || s.having.is_some() || !s.named_window.is_empty() {
        return None;
    }
    if !matches!(&s.group_by, sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
    {
        return None;
    }
    let [from] = s.from.as_slice() else {
        return None;
    };
    if !from.joins.is_empty() {
        return None;
    }
    let TableFactor::Table { name, alias, .. } = &from.relation else {
        return None;
    };
    let qualifier = match alias {
        Some(a) => a.name.value.clone(),
        None => name.0.last()?.as_ident()?.value.clone(),
    };
    let mut windows = Windows::default();
    for item in &s.projection {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let _ = e.visit(&mut windows);
            }
            // `*` stays the table's columns: the derived table has exactly those.
            _ => {}
        }
    }
    if windows.plain_aggregate || windows.subquery || windows.windows == 0 {
        return None;
    }
    let layout = plain_layout(text)?;
    let from_kw = layout.toks[layout.clause("FROM")?].at.start;
    let tail = tail_start(&layout);
    let inner = text[from_kw..tail].trim_end();
    let head = unqualified(text, &layout, 0..from_kw, &qualifier)?;
    let rest = unqualified(text, &layout, tail..layout.end, &qualifier)?;
    Some(
        format!(
            "{} FROM (SELECT * {inner}) AS {DERIVED} {}",
            head.trim_end(),
            rest.trim()
        )
        .trim_end()
        .to_string(),
    )
}

/// The derived table's name in the lifted statement.
const DERIVED: &str = "idgate_rows";

/// `range`'s text without the qualifier `q.` before column names (`q`.`c` becomes `c`); `None`
/// when a name is qualified by anything else (a schema, another table), which cannot resolve.
fn unqualified(
    text: &str,
    layout: &SelectText,
    range: std::ops::Range<usize>,
    q: &str,
) -> Option<String> {
    let toks = &layout.toks;
    let name = |i: usize| -> Option<String> {
        let t = toks.get(i)?;
        let s = &text[t.at.clone()];
        match s.as_bytes().first()? {
            b'`' | b'"' => Some(crate::sql::lex::unquote_ident(s.as_bytes())),
            b if b.is_ascii_alphabetic() || *b == b'_' => Some(s.to_string()),
            _ => None,
        }
    };
    let dot = |i: usize| toks.get(i).is_some_and(|t| &text[t.at.clone()] == ".");
    let mut out = String::new();
    let mut at = range.start;
    let mut i = layout.token_at(range.start);
    while i < toks.len() && toks[i].at.end <= range.end {
        if dot(i + 1) && name(i + 2).is_some() {
            let Some(n) = name(i) else {
                i += 1;
                continue;
            };
            if !n.eq_ignore_ascii_case(q) || dot(i + 3) {
                return None;
            }
            out.push_str(&text[at..toks[i].at.start]);
            at = toks[i + 2].at.start;
            i += 2;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[at..range.end]);
    Some(out)
}

/// What the select list computes: window calls, aggregates outside a window, subqueries.
#[derive(Default)]
struct Windows {
    windows: usize,
    plain_aggregate: bool,
    subquery: bool,
}

impl Visitor for Windows {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
        if let Expr::Function(f) = e {
            let name = f.name.to_string().to_ascii_lowercase();
            if f.over.is_some() {
                self.windows += 1;
            } else if AGGREGATES.contains(&name.as_str()) {
                self.plain_aggregate = true;
            }
        }
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, _: &sqlparser::ast::Query) -> std::ops::ControlFlow<()> {
        self.subquery = true;
        std::ops::ControlFlow::Break(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lift(sql: &str) -> Option<String> {
        lift_windows(sql.as_bytes())
    }

    #[test]
    fn lifts_window_functions_over_the_tables_rows() {
        assert_eq!(
            lift("SELECT `t`.`id`, ROW_NUMBER() OVER (ORDER BY `t`.`id`) AS `rn` FROM `t` WHERE `t`.`x` > 1 ORDER BY `t`.`id` LIMIT 5").as_deref(),
            Some("SELECT `id`, ROW_NUMBER() OVER (ORDER BY `id`) AS `rn` FROM (SELECT * FROM `t` WHERE `t`.`x` > 1) AS idgate_rows ORDER BY `id` LIMIT 5")
        );
        assert_eq!(
            lift("select U0.g, sum(U0.x) over (partition by U0.g) s from books U0").as_deref(),
            Some("select g, sum(x) over (partition by g) s FROM (SELECT * from books U0) AS idgate_rows")
        );
    }

    #[test]
    fn leaves_other_shapes() {
        assert_eq!(lift("SELECT id FROM t"), None);
        assert_eq!(
            lift("SELECT g, COUNT(*), RANK() OVER (ORDER BY g) FROM t GROUP BY g"),
            None
        );
        assert_eq!(lift("SELECT MAX(x), ROW_NUMBER() OVER () FROM t"), None);
        assert_eq!(
            lift("SELECT ROW_NUMBER() OVER () FROM t JOIN u ON t.a = u.a"),
            None
        );
        assert_eq!(
            lift("SELECT ROW_NUMBER() OVER w FROM t WINDOW w AS (ORDER BY a)"),
            None
        );
        assert_eq!(lift("SELECT (SELECT 1), ROW_NUMBER() OVER () FROM t"), None);
        // A name qualified by a schema or another table.
        assert_eq!(lift("SELECT db.t.id, ROW_NUMBER() OVER () FROM db.t"), None);
        assert_eq!(lift("SELECT u.id, ROW_NUMBER() OVER () FROM t"), None);
    }
}
