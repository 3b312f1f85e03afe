//! A join of tables that no single backend can evaluate (sharded tables not placed alike, or a
//! sharded table with one on the default backend), taken apart so idgate can run it in the
//! gateway: which table drives, the conditions that filter each table's rows before the join,
//! and the column equalities by which each further table's rows are fetched from the values of
//! tables already fetched. The statement is then evaluated on one backend with each table
//! replaced by a literal table of its rows ([`bind_tables`]); the conditions here only narrow
//! what is fetched, the client's whole statement still decides every row.
//!
//! FROM is read as MariaDB does: comma-separated items crossed (inner), each a left-deep chain
//! `t0 J1 t1 J2 t2 …`. A condition may narrow a table's fetch only where dropping the rows it
//! rejects cannot change the answer: a WHERE condition on a table no outer join NULL-extends;
//! an ON condition on a table its join must match (either side of an inner join, the right of
//! a LEFT, the left of a RIGHT) and that no outer join inside that join NULL-extends. An
//! equality `u.c = t.d` fetches `t` by `u`'s values when every row the join gives with a row
//! of `t` satisfies it against the fetched `u` rows: in WHERE (it rejects NULLs), or in the ON
//! of a join that must match `t`.

use std::ops::{ControlFlow, Range};

use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, GroupByExpr, JoinConstraint, JoinOperator, ObjectName,
    Query, Select, SetExpr, Spanned, Statement, TableAlias, TableFactor,
};

use crate::sql::and_parts;
use crate::sql::insert::TableRef;
use crate::sql::lex::unquote_ident;
use crate::sql::parse::{parse_one, sanitize, LineIndex};

/// How a table is joined to the tables before it in its chain.
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
    /// An outer join may give this table's columns as NULL: it never drives.
    pub nullable: bool,
    /// Columns its filters equate to a literal (`t.c = 5`): a fetch they may pin to one shard.
    pub pinned: Vec<String>,
    /// A derived table (`(SELECT …) AS t`, `name_at` its parenthesized query, `table` its
    /// alias): its rows come from running that query, which names no placed table by then.
    pub derived: bool,
}

/// `from`'s column equals `to`'s in every row the join gives with a row of `to`: `to`'s rows
/// can be fetched by the values of `from`'s fetched rows (`to.to_column IN (…)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinKey {
    pub from: usize,
    pub from_column: String,
    pub to: usize,
    pub to_column: String,
}

/// A join idgate can run in the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinShape {
    /// The tables in FROM order.
    pub sides: Vec<JoinSide>,
    /// The side fetched first when nothing better is known (index into `sides`): one no outer
    /// join NULL-extends, preferring one equated to a literal, then one with any condition.
    pub driver: usize,
    /// Every usable key, in the order the statement states them.
    pub keys: Vec<JoinKey>,
    /// No GROUP BY, aggregates, DISTINCT, ORDER BY, LIMIT, HAVING, window functions or INTO:
    /// each row of the answer comes from one driving row alone, so the join can run a batch of
    /// driving rows at a time.
    pub row_wise: bool,
    /// Some sides are the tables of correlated subqueries (fetched by the outer rows' values,
    /// never driving).
    pub correlated: bool,
}

/// One fetch of a gateway join: `side`'s rows, by `key` (`None`: read whole — no table
/// fetched before ties it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchStep<'a> {
    pub side: usize,
    pub key: Option<&'a JoinKey>,
}

impl JoinShape {
    /// The sides that may drive (no outer join NULL-extends them).
    pub fn drivers(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.sides.len()).filter(|&i| !self.sides[i].nullable)
    }

    /// The order the tables are fetched in from `driver`: each further table tied by a key to
    /// one already fetched, `prefer`red keys first (one on the table's sharding column pins
    /// each batch to the shards owning it); a table nothing fetched ties is read whole.
    pub fn fetch_order(
        &self,
        driver: usize,
        prefer: &dyn Fn(&JoinKey) -> bool,
    ) -> Vec<FetchStep<'_>> {
        let mut done = vec![false; self.sides.len()];
        let mut out = Vec::with_capacity(self.sides.len());
        if let Some(d) = done.get_mut(driver) {
            *d = true;
            out.push(FetchStep {
                side: driver,
                key: None,
            });
        }
        while let Some(first_left) = done.iter().position(|d| !d) {
            let usable: Vec<&JoinKey> = self
                .keys
                .iter()
                .filter(|k| done[k.from] && !done[k.to])
                .collect();
            let step = match usable.iter().find(|k| prefer(k)).or(usable.first()) {
                Some(k) => FetchStep {
                    side: k.to,
                    key: Some(k),
                },
                None => FetchStep {
                    side: first_left,
                    key: None,
                },
            };
            done[step.side] = true;
            out.push(step);
        }
        out
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

/// The one qualifier every column of `e` is qualified with (lower-cased); `None` when `e` names
/// an unqualified column, several tables, no column, or holds a subquery.
pub(super) fn sole_qualifier(e: &Expr) -> Option<String> {
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

/// The column `e` equates to a literal (`t.c = 5`, `5 = t.c`).
fn pinned_column(e: &Expr) -> Option<String> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = e
    else {
        return None;
    };
    match (left.as_ref(), right.as_ref()) {
        (c, Expr::Value(_)) | (Expr::Value(_), c) => column(c).map(|(_, c)| c),
        _ => None,
    }
}

/// A table of FROM, or a refusal for anything else there.
pub(super) fn side(
    f: &TableFactor,
    idx: &LineIndex<'_>,
    derived: &[Range<usize>],
) -> Result<JoinSide, JoinRefusal> {
    if let TableFactor::Derived {
        lateral: false,
        alias: Some(alias),
        ..
    } = f
    {
        return derived_side(alias, idx, derived);
    }
    let TableFactor::Table { name, alias, .. } = f else {
        return Err(JoinRefusal(
            "a join of tables not sharded alike runs in idgate only over plain tables (no \
             derived tables, parenthesized joins or table functions in its FROM)"
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
        nullable: false,
        pinned: Vec::new(),
        derived: false,
    })
}

/// A derived table of FROM: its parenthesized query is the one of `derived` (the statement's
/// derived tables, in text order) that ends last before its alias.
fn derived_side(
    alias: &TableAlias,
    idx: &LineIndex<'_>,
    derived: &[Range<usize>],
) -> Result<JoinSide, JoinRefusal> {
    let refuse = || {
        JoinRefusal(
            "a join of tables not sharded alike runs in idgate over derived tables only when \
             each has an alias without a column list (`(SELECT …) AS t`) and is not LATERAL"
                .into(),
        )
    };
    if !alias.columns.is_empty() {
        return Err(refuse());
    }
    let at = idx.range(alias.name.span).ok_or_else(refuse)?.start;
    let name_at = derived
        .iter()
        .filter(|r| r.end <= at)
        .max_by_key(|r| r.end)
        .cloned()
        .ok_or_else(refuse)?;
    Ok(JoinSide {
        table: TableRef {
            schema: None,
            name: alias.name.value.clone(),
        },
        name_at,
        qualifier: alias.name.value.clone(),
        aliased: true,
        filters: Vec::new(),
        nullable: false,
        pinned: Vec::new(),
        derived: true,
    })
}

/// The parenthesized queries of the derived tables of `text`'s FROM, in text order.
pub(super) fn derived_ranges(text: &str) -> Vec<Range<usize>> {
    crate::sql::subquery::find_subqueries(text.as_bytes())
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.kind == crate::sql::subquery::SubqueryUse::Derived)
        .map(|s| s.replace)
        .collect()
}

/// Where a table sits in FROM: its comma-separated item, its place in that item's chain, and
/// how it is joined to the tables before it (`None` for the chain's first).
#[derive(Debug, Clone, Copy)]
struct Place {
    chain: usize,
    pos: usize,
    op: Option<JoinKind>,
}

/// The join's kind and condition, or a refusal for NATURAL, APPLY and the like.
fn operator(op: &JoinOperator) -> Result<(JoinKind, &JoinConstraint), JoinRefusal> {
    Ok(match op {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::CrossJoin(c)
        | JoinOperator::StraightJoin(c) => (JoinKind::Inner, c),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinKind::Right, c),
        _ => {
            return Err(JoinRefusal(
                "idgate runs joins of tables not sharded alike only as INNER, LEFT, RIGHT, CROSS \
                 or comma joins"
                    .into(),
            ))
        }
    })
    .and_then(|(k, c)| match c {
        JoinConstraint::Natural => Err(JoinRefusal(
            "idgate runs NATURAL joins of tables not sharded alike only with the columns named \
             (`USING (…)` or `ON …`)"
                .into(),
        )),
        _ => Ok((k, c)),
    })
}

/// The FROM's layout: which table sits where, and which joins NULL-extend which tables.
struct Layout {
    places: Vec<Place>,
}

impl Layout {
    /// Whether an outer join among the first `upto` joins of its chain (all: `usize::MAX`)
    /// NULL-extends table `i`: a LEFT join of it, or a RIGHT join after it.
    fn nulled(&self, i: usize, upto: usize) -> bool {
        let p = self.places[i];
        (p.op == Some(JoinKind::Left) && p.pos <= upto)
            || self.places.iter().any(|m| {
                m.chain == p.chain
                    && m.pos > p.pos
                    && m.pos <= upto
                    && m.op == Some(JoinKind::Right)
            })
    }

    /// For the join that brings in table `at`: when it must match a row of table `i` for the
    /// row to be in its answer (inner: both sides; LEFT: its right; RIGHT: its left), the last
    /// join of the chain inside that side (for `nulled`); else `None`.
    fn must_match(&self, at: usize, i: usize) -> Option<usize> {
        let (a, p) = (self.places[at], self.places[i]);
        if p.chain != a.chain || p.pos > a.pos {
            return None;
        }
        match a.op? {
            JoinKind::Inner => Some(a.pos),
            JoinKind::Left => (p.pos == a.pos).then(|| a.pos - 1),
            JoinKind::Right => (p.pos < a.pos).then(|| a.pos - 1),
        }
    }
}

/// Whether each row of `q`'s answer comes from one combination of rows alone (see
/// [`JoinShape::row_wise`]); aggregates anywhere in the select list count, subqueries too.
fn row_wise(q: &Query, s: &Select) -> bool {
    let grouped = match &s.group_by {
        GroupByExpr::All(_) => true,
        GroupByExpr::Expressions(e, m) => !e.is_empty() || !m.is_empty(),
    };
    if q.order_by.is_some()
        || q.limit_clause.is_some()
        || q.fetch.is_some()
        || s.distinct.is_some()
        || s.select_modifiers.is_some()
        || s.top.is_some()
        || s.into.is_some()
        || grouped
        || s.having.is_some()
        || s.qualify.is_some()
        || !s.named_window.is_empty()
    {
        return false;
    }
    let aggregate = visit_expressions(&s.projection, |e| match e {
        Expr::Function(f)
            if f.over.is_some()
                || f.name.0.last().is_some_and(|n| {
                    let n = n.to_string().to_lowercase();
                    crate::sql::aggregates::AGGREGATES.contains(&n.trim_matches('`'))
                }) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    aggregate.is_continue()
}

/// The join in `stmt`, when it is a SELECT over two or more tables joined INNER, LEFT, RIGHT,
/// CROSS or by commas. `Ok(None)`: not such a join (another refusal applies); `Err`: a join
/// idgate cannot run in the gateway, with why.
pub fn analyze_join(stmt: &[u8]) -> Result<Option<JoinShape>, JoinRefusal> {
    let text = sanitize(stmt);
    let Ok(Statement::Query(q)) = parse_one(&text) else {
        return Ok(None);
    };
    let idx = LineIndex::new(&text);
    from_shape(&q, &idx, &derived_ranges(&text), 2)
}

/// The shape of `q`'s FROM when it is a plain SELECT over at least `min_tables` plain tables
/// (see [`analyze_join`]).
pub(super) fn from_shape(
    q: &Query,
    idx: &LineIndex<'_>,
    derived: &[Range<usize>],
    min_tables: usize,
) -> Result<Option<JoinShape>, JoinRefusal> {
    if q.with.is_some() {
        return Ok(None);
    }
    let SetExpr::Select(s) = q.body.as_ref() else {
        return Ok(None);
    };
    let count: usize = s.from.iter().map(|t| 1 + t.joins.len()).sum();
    if count < min_tables {
        return Ok(None);
    }
    let mut sides = Vec::with_capacity(count);
    let mut places = Vec::with_capacity(count);
    // (the table a join brings in, its condition)
    let mut joins: Vec<(usize, &JoinConstraint)> = Vec::new();
    for (chain, twj) in s.from.iter().enumerate() {
        sides.push(side(&twj.relation, idx, derived)?);
        places.push(Place {
            chain,
            pos: 0,
            op: None,
        });
        for (k, j) in twj.joins.iter().enumerate() {
            let (kind, constraint) = operator(&j.join_operator)?;
            sides.push(side(&j.relation, idx, derived)?);
            places.push(Place {
                chain,
                pos: k + 1,
                op: Some(kind),
            });
            joins.push((sides.len() - 1, constraint));
        }
    }
    let names: Vec<String> = sides.iter().map(|s| s.qualifier.to_lowercase()).collect();
    if (1..names.len()).any(|i| names[..i].contains(&names[i])) {
        return Ok(None);
    }
    let layout = Layout { places };
    let owner = |e: &Expr| {
        let q = sole_qualifier(e)?;
        names.iter().position(|n| *n == q)
    };
    let side_of = |q: &str| names.iter().position(|n| n == q);
    for (i, s) in sides.iter_mut().enumerate() {
        s.nullable = layout.nulled(i, usize::MAX);
    }
    let mut keys: Vec<JoinKey> = Vec::new();
    let mut key = |from: usize, from_column: &str, to: usize, to_column: &str| {
        let k = JoinKey {
            from,
            from_column: from_column.to_string(),
            to,
            to_column: to_column.to_string(),
        };
        if from != to && !keys.contains(&k) {
            keys.push(k);
        }
    };
    // WHERE: filters a table no outer join NULL-extends; its equalities reject NULLs, so they
    // tie tables either way.
    let mut where_parts: Vec<&Expr> = Vec::new();
    if let Some(w) = &s.selection {
        and_parts(w, &mut where_parts);
    }
    for e in &where_parts {
        if let Some(i) = owner(e) {
            if !sides[i].nullable {
                narrow(&mut sides[i], e);
            }
        }
        if let Some((a, b)) = equated(e, &side_of) {
            key(a.0, &a.1, b.0, &b.1);
            key(b.0, &b.1, a.0, &a.1);
        }
    }
    // ON: filters and ties only the tables its join must match.
    for &(at, constraint) in &joins {
        match constraint {
            JoinConstraint::On(on) => {
                let mut parts = Vec::new();
                and_parts(on, &mut parts);
                for e in parts {
                    if let Some(i) = owner(e) {
                        if let Some(upto) = layout.must_match(at, i) {
                            if !layout.nulled(i, upto) {
                                narrow(&mut sides[i], e);
                            }
                        }
                    }
                    if let Some((a, b)) = equated(e, &side_of) {
                        if layout.must_match(at, b.0).is_some() {
                            key(a.0, &a.1, b.0, &b.1);
                        }
                        if layout.must_match(at, a.0).is_some() {
                            key(b.0, &b.1, a.0, &a.1);
                        }
                    }
                }
            }
            JoinConstraint::Using(cols) => {
                // `USING (c)` equates the new table's `c` with the one table before it, or,
                // in a chain of inner joins, with every table before it that has `c` (the
                // merged column equals each); else it ties nothing.
                let p = layout.places[at];
                let chain_inner = layout.places.iter().all(|m| {
                    m.chain != p.chain || m.pos > p.pos || m.op.is_none_or(|o| o == JoinKind::Inner)
                });
                let before: Vec<usize> = (0..sides.len())
                    .filter(|&u| {
                        let m = layout.places[u];
                        m.chain == p.chain && m.pos < p.pos && (p.pos == 1 || chain_inner)
                    })
                    .collect();
                for c in cols {
                    let c = unquote_ident(c.to_string().as_bytes());
                    for &u in &before {
                        if layout.must_match(at, at).is_some() {
                            key(u, &c, at, &c);
                        }
                        if layout.must_match(at, u).is_some() {
                            key(at, &c, u, &c);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // Most selective first: a column equated to a literal, then a derived table (its rows
    // are computed already: it ties the others by key), then any condition of its own, then
    // FROM order.
    let score = |s: &JoinSide| {
        (!s.pinned.is_empty()) as u8 * 4 + s.derived as u8 * 2 + (!s.filters.is_empty()) as u8
    };
    let driver = (0..sides.len())
        .filter(|&i| !sides[i].nullable)
        .fold(None, |best: Option<usize>, i| match best {
            Some(b) if score(&sides[b]) >= score(&sides[i]) => Some(b),
            _ => Some(i),
        })
        .unwrap_or(0);
    Ok(Some(JoinShape {
        sides,
        driver,
        keys,
        row_wise: row_wise(q, s),
        correlated: false,
    }))
}

/// Adds `e` to the conditions `side`'s fetch applies.
pub(super) fn narrow(side: &mut JoinSide, e: &Expr) {
    side.filters.push(e.to_string());
    side.pinned.extend(pinned_column(e));
}

/// `a.x = b.y` between two tables of the join: `((side, column), (side, column))`.
pub(super) fn equated(
    e: &Expr,
    side_of: &dyn Fn(&str) -> Option<usize>,
) -> Option<((usize, String), (usize, String))> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = e
    else {
        return None;
    };
    let (l, r) = (column(left)?, column(right)?);
    let (a, b) = (side_of(&l.0)?, side_of(&r.0)?);
    (a != b).then_some(((a, l.1), (b, r.1)))
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
pub fn bind_tables(stmt: &[u8], shape: &JoinShape, tables: Vec<Vec<u8>>) -> Vec<u8> {
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
    crate::sql::subquery::splice(stmt, &parts)
}
