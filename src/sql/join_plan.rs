//! A join of two tables that no single backend can evaluate (sharded tables not placed alike, or
//! a sharded table with one on the default backend), taken apart so idgate can run it in the
//! gateway: which table drives, the conditions that filter each table's rows before the join,
//! and the column pairs that tie the inner table's rows to the driving ones. The statement is
//! then evaluated on one backend with each table replaced by a literal table of its rows
//! ([`bind_tables`]); the conditions here only narrow what is fetched, the client's whole
//! statement still decides every row.

use std::ops::{ControlFlow, Range};

use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, JoinConstraint, JoinOperator, ObjectName, SetExpr,
    Spanned, Statement, TableFactor,
};

use super::insert::TableRef;
use super::lex::unquote_ident;
use super::parse::{parse_one, sanitize, LineIndex};

/// How the two tables are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
}

/// One table of the join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinSide {
    pub table: TableRef,
    /// The table's name as written in the statement (replaced by its literal table).
    pub name_at: Range<usize>,
    /// The name its columns are qualified with (its alias, else its name), as written.
    pub qualifier: String,
    pub aliased: bool,
    /// Conditions naming only this table that may filter its rows before the join, as SQL.
    pub filters: Vec<String>,
}

/// A two-table join idgate can run in the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinShape {
    /// The tables in FROM order.
    pub sides: [JoinSide; 2],
    pub kind: JoinKind,
    /// The side whose rows are fetched first (index into `sides`).
    pub driver: usize,
    /// `(driving column, inner column)` pairs the join condition equates (unqualified names).
    pub keys: Vec<(String, String)>,
}

impl JoinShape {
    pub fn inner(&self) -> usize {
        1 - self.driver
    }
}

/// Why a join cannot run in the gateway: told to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinRefusal(pub String);

fn table_ref(name: &ObjectName) -> TableRef {
    let mut parts: Vec<String> = name
        .0
        .iter()
        .map(|p| unquote_ident(p.to_string().as_bytes()))
        .collect();
    let table = parts.pop().unwrap_or_default();
    TableRef {
        schema: parts.into_iter().next(),
        name: table,
    }
}

/// The AND-ed parts of `e`.
fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(inner) => conjuncts(inner, out),
        _ => out.push(e),
    }
}

/// The one qualifier every column of `e` is qualified with (lower-cased); `None` when `e` names
/// an unqualified column, several tables, no column, or holds a subquery.
fn sole_qualifier(e: &Expr) -> Option<String> {
    let mut seen: Option<String> = None;
    let flow = visit_expressions(e, |x| {
        let q = match x {
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                parts[parts.len() - 2].value.to_lowercase()
            }
            Expr::Identifier(_)
            | Expr::Subquery(_)
            | Expr::Exists { .. }
            | Expr::InSubquery { .. }
            | Expr::CompoundIdentifier(_) => return ControlFlow::Break(()),
            _ => return ControlFlow::Continue(()),
        };
        match &seen {
            Some(s) if *s != q => ControlFlow::Break(()),
            _ => {
                seen = Some(q);
                ControlFlow::Continue(())
            }
        }
    });
    if flow.is_break() {
        return None;
    }
    seen
}

/// `(qualifier, column)` of a qualified column reference, qualifier lower-cased.
fn column(e: &Expr) -> Option<(String, String)> {
    match e {
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => Some((
            parts[parts.len() - 2].value.to_lowercase(),
            parts[parts.len() - 1].value.clone(),
        )),
        Expr::Nested(inner) => column(inner),
        _ => None,
    }
}

/// A table of FROM, or a refusal for anything else there.
fn side(f: &TableFactor, idx: &LineIndex<'_>) -> Result<JoinSide, JoinRefusal> {
    let TableFactor::Table { name, alias, .. } = f else {
        return Err(JoinRefusal(
            "a join of tables not sharded alike runs in idgate only between two tables (no \
             derived tables or table functions in its FROM)"
                .into(),
        ));
    };
    let name_at = idx
        .range(name.span())
        .ok_or_else(|| JoinRefusal("idgate could not place a table of the join".into()))?;
    let table = table_ref(name);
    let (qualifier, aliased) = match alias {
        Some(a) => (a.name.value.clone(), true),
        None => (table.name.clone(), false),
    };
    Ok(JoinSide {
        table,
        name_at,
        qualifier,
        aliased,
        filters: Vec::new(),
    })
}

/// The join in `stmt`, when it is a SELECT over exactly two tables joined INNER, LEFT or RIGHT
/// (or by a comma). `Ok(None)`: not such a join (another refusal applies); `Err`: a join
/// idgate cannot run in the gateway, with why.
pub fn analyze_join(stmt: &[u8]) -> Result<Option<JoinShape>, JoinRefusal> {
    let text = sanitize(stmt);
    let Ok(Statement::Query(q)) = parse_one(&text) else {
        return Ok(None);
    };
    if q.with.is_some() {
        return Ok(None);
    }
    let SetExpr::Select(s) = q.body.as_ref() else {
        return Ok(None);
    };
    let idx = LineIndex::new(&text);
    let count: usize = s.from.iter().map(|t| 1 + t.joins.len()).sum();
    if count < 2 {
        return Ok(None);
    }
    if count > 2 {
        return Err(JoinRefusal(format!(
            "a join of tables not sharded alike runs in idgate only between two tables; this one \
             has {count}: join the sharded tables placed alike on their sharding columns, or split \
             the query"
        )));
    }
    let (first, second, kind, on) = match s.from.as_slice() {
        [one] => {
            let j = &one.joins[0];
            let (kind, constraint) = match &j.join_operator {
                JoinOperator::Join(c)
                | JoinOperator::Inner(c)
                | JoinOperator::CrossJoin(c)
                | JoinOperator::StraightJoin(c) => (JoinKind::Inner, c),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
                JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinKind::Right, c),
                _ => {
                    return Err(JoinRefusal(
                        "idgate runs joins of tables not sharded alike only as INNER, LEFT or \
                         RIGHT joins"
                            .into(),
                    ))
                }
            };
            (&one.relation, &j.relation, kind, Some(constraint))
        }
        [a, b] => (&a.relation, &b.relation, JoinKind::Inner, None),
        _ => return Ok(None),
    };
    let mut sides = [side(first, &idx)?, side(second, &idx)?];
    if sides[0].qualifier.eq_ignore_ascii_case(&sides[1].qualifier) {
        return Ok(None);
    }
    let mut on_parts: Vec<&Expr> = Vec::new();
    let mut keys_from: Vec<&Expr> = Vec::new();
    let mut using: Vec<String> = Vec::new();
    match on {
        Some(JoinConstraint::On(e)) => conjuncts(e, &mut on_parts),
        Some(JoinConstraint::Using(cols)) => {
            using = cols
                .iter()
                .map(|c| unquote_ident(c.to_string().as_bytes()))
                .collect()
        }
        _ => {}
    }
    let mut where_parts: Vec<&Expr> = Vec::new();
    if let Some(w) = &s.selection {
        conjuncts(w, &mut where_parts);
    }
    keys_from.extend(on_parts.iter().copied());
    // The driver: the preserved side of an outer join; for an inner join the first table,
    // unless only the second has conditions of its own (fewer rows to fetch first).
    let names = [
        sides[0].qualifier.to_lowercase(),
        sides[1].qualifier.to_lowercase(),
    ];
    let owner = |e: &Expr| {
        let q = sole_qualifier(e)?;
        names.iter().position(|n| *n == q)
    };
    let driver = match kind {
        JoinKind::Left => 0,
        JoinKind::Right => 1,
        JoinKind::Inner => {
            keys_from.extend(where_parts.iter().copied());
            let own = |i: usize| {
                on_parts
                    .iter()
                    .chain(where_parts.iter())
                    .any(|e| owner(e) == Some(i))
            };
            if !own(0) && own(1) {
                1
            } else {
                0
            }
        }
    };
    for e in &where_parts {
        // WHERE filters the preserved side before an outer join; the other side's NULL rows
        // would be filtered after it, so those conditions stay in the final evaluation only.
        if let Some(i) = owner(e) {
            if kind == JoinKind::Inner || i == driver {
                sides[i].filters.push(e.to_string());
            }
        }
    }
    for e in &on_parts {
        // ON filters the inner side of an outer join; on the preserved side it only decides
        // matches.
        if let Some(i) = owner(e) {
            if kind == JoinKind::Inner || i != driver {
                sides[i].filters.push(e.to_string());
            }
        }
    }
    let dq = sides[driver].qualifier.to_lowercase();
    let iq = sides[1 - driver].qualifier.to_lowercase();
    let mut keys: Vec<(String, String)> = using.iter().map(|c| (c.clone(), c.clone())).collect();
    for e in keys_from {
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = e
        {
            if let (Some(l), Some(r)) = (column(left), column(right)) {
                if l.0 == dq && r.0 == iq {
                    keys.push((l.1, r.1));
                } else if l.0 == iq && r.0 == dq {
                    keys.push((r.1, l.1));
                }
            }
        }
    }
    Ok(Some(JoinShape {
        sides,
        kind,
        driver,
        keys,
    }))
}

/// A backquoted identifier.
pub fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The statement that fetches `side`'s rows: every column, its own filters, and `extra` (the
/// inner side's `IN` list of a batch) AND-ed in.
pub fn side_select(stmt: &[u8], side: &JoinSide, extra: Option<&str>) -> Vec<u8> {
    let mut out = b"SELECT * FROM ".to_vec();
    out.extend_from_slice(stmt.get(side.name_at.clone()).unwrap_or_default());
    out.extend_from_slice(b" AS ");
    out.extend_from_slice(quote_ident(&side.qualifier).as_bytes());
    let conds: Vec<&str> = extra
        .into_iter()
        .chain(side.filters.iter().map(String::as_str))
        .collect();
    for (i, c) in conds.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b" WHERE (" } else { b" AND (" });
        out.extend_from_slice(c.as_bytes());
        out.push(b')');
    }
    out
}

/// `<qualifier>.<column> IN (<values>)` for one batch of the driving rows' key values (each
/// already a literal); no values: FALSE (the inner side still gives its columns).
pub fn batch_condition(side: &JoinSide, column: &str, values: &[Vec<u8>]) -> String {
    if values.is_empty() {
        return "FALSE".into();
    }
    let mut out = format!(
        "{}.{} IN (",
        quote_ident(&side.qualifier),
        quote_ident(column)
    );
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&String::from_utf8_lossy(v));
    }
    out.push(')');
    out
}

/// `stmt` with each table of the join replaced by its literal table (`tables[i]` for
/// `shape.sides[i]`), keeping the name its columns are qualified with.
pub fn bind_tables(stmt: &[u8], shape: &JoinShape, tables: [Vec<u8>; 2]) -> Vec<u8> {
    let mut parts: Vec<(Range<usize>, Vec<u8>)> = shape
        .sides
        .iter()
        .zip(tables)
        .map(|(s, mut t)| {
            if !s.aliased {
                t.extend_from_slice(b" AS ");
                t.extend_from_slice(quote_ident(&s.qualifier).as_bytes());
            }
            (s.name_at.clone(), t)
        })
        .collect();
    parts.sort_by_key(|(r, _)| r.start);
    super::subquery::splice(stmt, &parts)
}
