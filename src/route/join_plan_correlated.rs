//! A SELECT whose subqueries over configured tables refer to the outer query by column
//! equalities (`EXISTS (SELECT * FROM r WHERE r.book_id = b.id)`), taken apart so idgate can
//! run it in the gateway like a join ([`super::analyze_join`]): the outer tables are fetched as
//! a join's are, each subquery's table by the values of the outer column it is equated to
//! (`r.book_id IN (…)`), with the subquery's own conditions on it; the statement then runs on
//! one backend with every table replaced by a literal table of its rows. The inner literal
//! table holds every row any fetched outer row can correlate with (the equality admits no
//! other), so EXISTS, NOT EXISTS, IN and scalar subqueries evaluate exactly.
//!
//! Taken: subqueries of one plain table, at the statement's own level (none nested), each with
//! at least one `inner.c = outer.d` among the AND-ed parts of its WHERE. A subquery naming no
//! configured table stays as written (the default backend holds its table). Anything else is
//! left to the other paths (an uncorrelated subquery runs first; the rest is refused).

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions, Expr, Query, SetExpr, Statement, TableFactor};

use super::join_plan::{
    equated, from_shape, narrow, side, sole_qualifier, JoinKey, JoinRefusal, JoinShape,
};
use crate::sql::and_parts;
use crate::sql::insert::TableRef;
use crate::sql::parse::{parse_one, sanitize, LineIndex};

/// The subqueries anywhere in `q`'s expressions (nested ones too), copied.
fn subqueries(q: &Query) -> Vec<Query> {
    let mut out = Vec::new();
    let _ = visit_expressions(q, |e| {
        match e {
            Expr::Exists { subquery, .. } | Expr::InSubquery { subquery, .. } => {
                out.push(subquery.as_ref().clone())
            }
            Expr::Subquery(subquery) => out.push(subquery.as_ref().clone()),
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// The plain tables of `q`'s FROM, when it is a SELECT over plain tables only.
fn plain_tables(q: &Query) -> Option<Vec<TableRef>> {
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    let mut out = Vec::new();
    for twj in &s.from {
        for f in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
            let TableFactor::Table { name, .. } = f else {
                return None;
            };
            let mut parts: Vec<String> = name
                .0
                .iter()
                .map(|p| crate::sql::lex::unquote_ident(p.to_string().as_bytes()))
                .collect();
            let table = parts.pop()?;
            out.push(TableRef {
                schema: parts.into_iter().next(),
                name: table,
            });
        }
    }
    Some(out)
}

/// The SELECT in `stmt` with correlated subqueries over configured tables (`configured` tells
/// which) as a gateway join: the outer tables first, then one side per subquery, tied to the
/// outer side it is equated to. `Ok(None)`: not such a statement (other paths decide).
pub fn analyze_correlated(
    stmt: &[u8],
    configured: &dyn Fn(&TableRef) -> bool,
) -> Result<Option<JoinShape>, JoinRefusal> {
    let text = sanitize(stmt);
    let Ok(Statement::Query(q)) = parse_one(&text) else {
        return Ok(None);
    };
    let idx = LineIndex::new(&text);
    let Ok(Some(mut shape)) = from_shape(&q, &idx, &[], 1) else {
        return Ok(None);
    };
    let outer = shape.sides.len();
    let mut names: Vec<String> = shape
        .sides
        .iter()
        .map(|s| s.qualifier.to_lowercase())
        .collect();
    let subs = subqueries(&q);
    if subs
        .iter()
        .any(|sub| sub.with.is_some() || !subqueries(sub).is_empty())
    {
        return Ok(None);
    }
    let mut taken = 0;
    for sub in &subs {
        let Some(tables) = plain_tables(sub) else {
            return Ok(None);
        };
        if !tables.iter().any(configured) {
            continue;
        }
        let SetExpr::Select(s) = sub.body.as_ref() else {
            return Ok(None);
        };
        let [twj] = s.from.as_slice() else {
            return Ok(None);
        };
        if !twj.joins.is_empty() {
            return Ok(None);
        }
        let Ok(mut inner) = side(&twj.relation, &idx, &[]) else {
            return Ok(None);
        };
        let name = inner.qualifier.to_lowercase();
        if names.contains(&name) {
            // It hides an outer table's name: which one a column means is not plain.
            return Ok(None);
        }
        inner.nullable = true;
        let at = names.len();
        names.push(name.clone());
        let side_of = |q: &str| {
            (q == name)
                .then_some(at)
                .or_else(|| names[..outer].iter().position(|n| n == q))
        };
        let mut parts = Vec::new();
        if let Some(w) = &s.selection {
            and_parts(w, &mut parts);
        }
        let mut keys = Vec::new();
        for e in parts {
            if sole_qualifier(e).as_deref() == Some(name.as_str()) {
                narrow(&mut inner, e);
            }
            if let Some((a, b)) = equated(e, &side_of) {
                let ((o, oc), (i, ic)) = if a.0 == at { (b, a) } else { (a, b) };
                if i == at && o < outer {
                    let k = JoinKey {
                        from: o,
                        from_column: oc,
                        to: at,
                        to_column: ic,
                    };
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
            }
        }
        if keys.is_empty() {
            return Ok(None);
        }
        shape.sides.push(inner);
        shape.keys.extend(keys);
        taken += 1;
    }
    if taken == 0 {
        return Ok(None);
    }
    shape.correlated = true;
    Ok(Some(shape))
}
