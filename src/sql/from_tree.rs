//! A SELECT's FROM as MariaDB joins it: comma-separated items crossed, each a left-deep chain of
//! joins, parenthesized joins nested. Routing reads which side of each outer join is kept whole
//! and which is NULL-extended: a shard can answer an outer join only for the rows it holds of
//! the kept side.

use std::ops::ControlFlow;

use sqlparser::ast::{visit_relations, JoinOperator, ObjectName, TableFactor, TableWithJoins};

use super::insert::TableRef;

/// Which side of a join may be NULL-extended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outer {
    /// `LEFT [OUTER] JOIN`: the right side.
    Left,
    /// `RIGHT [OUTER] JOIN`: the left side.
    Right,
    /// `FULL OUTER JOIN` (not MariaDB's, which refuses it): either side.
    Full,
}

/// One node of a FROM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromTree {
    /// A table, derived table or table function: the name its columns are qualified with, as
    /// written (empty when it has none), and every table it names, its subqueries' included.
    Leaf { name: String, tables: Vec<TableRef> },
    /// `left JOIN right`; `outer: None` for an inner, cross or comma join.
    Join {
        left: Box<FromTree>,
        right: Box<FromTree>,
        outer: Option<Outer>,
    },
}

/// The tree of `from`; `None` for a SELECT without FROM.
pub(super) fn from_tree(
    from: &[TableWithJoins],
    table_ref: &dyn Fn(&ObjectName) -> TableRef,
) -> Option<FromTree> {
    from.iter()
        .map(|twj| chain(twj, table_ref))
        .reduce(|left, right| FromTree::Join {
            left: Box::new(left),
            right: Box::new(right),
            outer: None,
        })
}

fn chain(twj: &TableWithJoins, table_ref: &dyn Fn(&ObjectName) -> TableRef) -> FromTree {
    let mut acc = factor(&twj.relation, table_ref);
    for j in &twj.joins {
        let outer = match &j.join_operator {
            JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => Some(Outer::Left),
            JoinOperator::Right(_) | JoinOperator::RightOuter(_) => Some(Outer::Right),
            JoinOperator::FullOuter(_) => Some(Outer::Full),
            _ => None,
        };
        acc = FromTree::Join {
            left: Box::new(acc),
            right: Box::new(factor(&j.relation, table_ref)),
            outer,
        };
    }
    acc
}

fn factor(f: &TableFactor, table_ref: &dyn Fn(&ObjectName) -> TableRef) -> FromTree {
    if let TableFactor::NestedJoin {
        table_with_joins, ..
    } = f
    {
        return chain(table_with_joins, table_ref);
    }
    let mut tables = Vec::new();
    let _ = visit_relations(f, |n| {
        tables.push(table_ref(n));
        ControlFlow::<()>::Continue(())
    });
    let name = match f {
        TableFactor::Table { name, alias, .. } => match alias {
            Some(a) => a.name.value.clone(),
            None => table_ref(name).name,
        },
        TableFactor::Derived { alias, .. } => alias
            .as_ref()
            .map(|a| a.name.value.clone())
            .unwrap_or_default(),
        _ => String::new(),
    };
    FromTree::Leaf { name, tables }
}

#[cfg(test)]
mod tests {
    use super::super::analyze_dml;
    use super::*;

    fn leaf(name: &str, tables: &[&str]) -> FromTree {
        FromTree::Leaf {
            name: name.into(),
            tables: tables
                .iter()
                .map(|t| TableRef {
                    schema: None,
                    name: (*t).into(),
                })
                .collect(),
        }
    }

    fn join(left: FromTree, right: FromTree, outer: Option<Outer>) -> FromTree {
        FromTree::Join {
            left: Box::new(left),
            right: Box::new(right),
            outer,
        }
    }

    #[test]
    fn chains_are_left_deep_and_commas_cross_whole_chains() {
        let a = analyze_dml(
            b"SELECT * FROM a, b RIGHT JOIN (SELECT x FROM c) AS d ON d.x = b.x \
              LEFT JOIN (e JOIN f ON f.k = e.k) ON e.k = b.k",
        )
        .unwrap();
        let want = join(
            leaf("a", &["a"]),
            join(
                join(leaf("b", &["b"]), leaf("d", &["c"]), Some(Outer::Right)),
                join(leaf("e", &["e"]), leaf("f", &["f"]), None),
                Some(Outer::Left),
            ),
            None,
        );
        assert_eq!(a.from_tree, Some(want));
    }

    #[test]
    fn a_select_without_from_has_no_tree() {
        let a = analyze_dml(b"SELECT 1").unwrap();
        assert_eq!(a.from_tree, None);
        let a = analyze_dml(b"SELECT t.v FROM (SELECT 'ABC' AS v) t").unwrap();
        assert_eq!(a.from_tree, Some(leaf("t", &[])));
    }
}
