//! Which calls in an expression are aggregates or window functions: what makes a query
//! grouped, and what a statement over shards must merge or lift.

use sqlparser::ast::{Expr, Function};

/// Every aggregate MariaDB has: these make a query grouped.
pub(crate) const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "group_concat",
    "json_arrayagg",
    "json_objectagg",
    "std",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "bit_and",
    "bit_or",
    "bit_xor",
];

pub(crate) fn fn_name(f: &Function) -> String {
    f.name.to_string().to_ascii_lowercase()
}

/// Finds aggregate and window calls of the expression itself, not those of its subqueries
/// (a subquery's `COUNT(*)` is computed inside that subquery on each shard).
struct AggregateFinder {
    depth: usize,
    found: Option<(String, bool)>,
}

impl sqlparser::ast::Visitor for AggregateFinder {
    type Break = ();

    fn pre_visit_query(&mut self, _: &sqlparser::ast::Query) -> std::ops::ControlFlow<()> {
        self.depth += 1;
        std::ops::ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &sqlparser::ast::Query) -> std::ops::ControlFlow<()> {
        self.depth -= 1;
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, x: &Expr) -> std::ops::ControlFlow<()> {
        if let (0, Expr::Function(f)) = (self.depth, x) {
            let name = fn_name(f);
            if f.over.is_some() || AGGREGATES.contains(&name.as_str()) {
                self.found = Some((name.to_ascii_uppercase(), f.over.is_some()));
                return std::ops::ControlFlow::Break(());
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// The first aggregate or window function inside `e` (its name, and whether it is a window),
/// outside any subquery.
pub(crate) fn find_aggregate(e: &Expr) -> Option<(String, bool)> {
    use sqlparser::ast::Visit;
    let mut finder = AggregateFinder {
        depth: 0,
        found: None,
    };
    let _ = e.visit(&mut finder);
    finder.found
}
