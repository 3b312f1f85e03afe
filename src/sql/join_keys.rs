//! The tables of a statement's own FROM (not its subqueries), with the names their columns are
//! qualified by, and the column equalities its join conditions and WHERE state (`a.x = b.y`):
//! what routing needs to tell whether two sharded tables are joined on their sharding columns.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, JoinConstraint, JoinOperator, Query, SetExpr,
    TableFactor, TableWithJoins,
};

use super::insert::TableRef;

/// A table of the top-level FROM and the name its columns are qualified with (its alias, else
/// its name), lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopTable {
    pub qualifier: String,
    pub table: TableRef,
}

/// `(qualifier, column)`, lower-cased.
pub type QualifiedColumn = (String, String);

fn factor(
    f: &TableFactor,
    table_ref: &dyn Fn(&sqlparser::ast::ObjectName) -> TableRef,
) -> Option<TopTable> {
    let TableFactor::Table { name, alias, .. } = f else {
        return None;
    };
    let table = table_ref(name);
    let qualifier = match alias {
        Some(a) => a.name.value.to_lowercase(),
        None => table.name.to_lowercase(),
    };
    Some(TopTable { qualifier, table })
}

/// Every table of the top-level FROM and its joins (derived tables are left out).
pub(super) fn from_tables(
    from: &[TableWithJoins],
    table_ref: &dyn Fn(&sqlparser::ast::ObjectName) -> TableRef,
) -> Vec<TopTable> {
    let mut out = Vec::new();
    for twj in from {
        out.extend(factor(&twj.relation, table_ref));
        for j in &twj.joins {
            out.extend(factor(&j.relation, table_ref));
        }
    }
    out
}

fn qualified(e: &Expr) -> Option<QualifiedColumn> {
    match e {
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            let n = parts.len();
            Some((
                parts[n - 2].value.to_lowercase(),
                parts[n - 1].value.to_lowercase(),
            ))
        }
        Expr::Nested(inner) => qualified(inner),
        _ => None,
    }
}

/// The AND-ed parts of `e` (through parentheses).
pub fn and_parts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            and_parts(left, out);
            and_parts(right, out);
        }
        Expr::Nested(inner) => and_parts(inner, out),
        _ => out.push(e),
    }
}

/// The `a.x = b.y` conjuncts of `e`.
fn conjuncts(e: &Expr, out: &mut Vec<(QualifiedColumn, QualifiedColumn)>) {
    let mut parts = Vec::new();
    and_parts(e, &mut parts);
    for p in parts {
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = p
        {
            if let (Some(l), Some(r)) = (qualified(left), qualified(right)) {
                out.push((l, r));
            }
        }
    }
}

/// Column equalities from the joins' ON/USING and the WHERE.
pub(super) fn equalities(
    from: &[TableWithJoins],
    tables: &[TopTable],
    selection: Option<&Expr>,
) -> Vec<(QualifiedColumn, QualifiedColumn)> {
    let mut out = Vec::new();
    for twj in from {
        for (k, j) in twj.joins.iter().enumerate() {
            let constraint = match &j.join_operator {
                JoinOperator::Join(c)
                | JoinOperator::Inner(c)
                | JoinOperator::Left(c)
                | JoinOperator::LeftOuter(c)
                | JoinOperator::Right(c)
                | JoinOperator::RightOuter(c)
                | JoinOperator::StraightJoin(c) => c,
                _ => continue,
            };
            match constraint {
                JoinConstraint::On(e) => conjuncts(e, &mut out),
                // `a JOIN b USING (c)` with one table before: a.c = b.c.
                JoinConstraint::Using(cols) if k == 0 && from.len() == 1 && tables.len() >= 2 => {
                    for c in cols {
                        let col = c.to_string().trim_matches('`').to_lowercase();
                        out.push((
                            (tables[0].qualifier.clone(), col.clone()),
                            (tables[1].qualifier.clone(), col),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(w) = selection {
        conjuncts(w, &mut out);
    }
    out
}

/// The tables of one subquery's own FROM and the column equalities of its joins and WHERE:
/// a subquery correlated with the outer query states `inner.x = outer.y` there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubqueryTables {
    pub from: Vec<TopTable>,
    pub equal_columns: Vec<(QualifiedColumn, QualifiedColumn)>,
}

/// Every `EXISTS (SELECT …)`, `IN (SELECT …)` and scalar `(SELECT …)` of `outer`'s expressions,
/// nested ones included (derived tables are not expressions and are left out).
pub(super) fn subquery_tables(
    outer: &Query,
    table_ref: &dyn Fn(&sqlparser::ast::ObjectName) -> TableRef,
) -> Vec<SubqueryTables> {
    let mut out = Vec::new();
    let _ = visit_expressions(outer, |e| {
        let q = match e {
            Expr::Exists { subquery, .. } | Expr::InSubquery { subquery, .. } => subquery,
            Expr::Subquery(q) => q,
            _ => return ControlFlow::<()>::Continue(()),
        };
        if let SetExpr::Select(s) = q.body.as_ref() {
            let from = from_tables(&s.from, table_ref);
            let equal_columns = equalities(&s.from, &from, s.selection.as_ref());
            out.push(SubqueryTables {
                from,
                equal_columns,
            });
        }
        ControlFlow::Continue(())
    });
    out
}
