//! The hidden items a grouped shard statement selects must be valid under ONLY_FULL_GROUP_BY,
//! as the client's statement is: MariaDB then refuses (ERROR 1055) a select item outside the
//! aggregates that names a column the GROUP BY does not list as a column, unless the item is
//! itself one of the GROUP BY's expressions. The hidden items idgate adds beside a grouped
//! query's own (a key's collation weights, a GROUP_CONCAT piece, a group key not selected) are
//! each one value per shard group, so such an item is asked for as `MIN(item)`: valid in every
//! sql_mode, and the same value.

use sqlparser::ast::{Expr, Query, Visit, Visitor};

use super::parse_expr;
use crate::sql::aggregates::find_aggregate;

/// What the shard statement groups by: its GROUP BY expressions (a position or an alias naming
/// a select item stands for that item's expression), in the parser's rendering, and the names of
/// the columns among them.
pub(super) struct Groups {
    exprs: Vec<String>,
    columns: Vec<String>,
}

impl Groups {
    pub(super) fn new<'a>(texts: impl IntoIterator<Item = &'a [u8]>) -> Groups {
        let mut g = Groups {
            exprs: Vec::new(),
            columns: Vec::new(),
        };
        for t in texts {
            let Some(e) = std::str::from_utf8(t).ok().and_then(parse_expr) else {
                continue;
            };
            if let Some(name) = column_name(&e) {
                g.columns.push(name);
            }
            g.exprs.push(e.to_string());
        }
        g
    }

    /// `item` as the shard statement selects it: as written when it is valid under
    /// ONLY_FULL_GROUP_BY (an aggregate over its rows, one of the GROUP BY's expressions, or
    /// naming no column but the GROUP BY's), else as `MIN(item)`.
    pub(super) fn hidden_item(&self, item: &[u8]) -> Vec<u8> {
        let Some(e) = std::str::from_utf8(item).ok().and_then(parse_expr) else {
            return item.to_vec();
        };
        let shown = e.to_string();
        if find_aggregate(&e).is_some() || self.exprs.iter().any(|g| g.eq_ignore_ascii_case(&shown))
        {
            return item.to_vec();
        }
        let mut names = Names::default();
        let _ = e.visit(&mut names);
        let outside = names
            .columns
            .iter()
            .any(|c| !self.columns.iter().any(|g| g.eq_ignore_ascii_case(c)));
        if names.subquery || !outside {
            return item.to_vec();
        }
        let mut out = b"MIN(".to_vec();
        out.extend_from_slice(item);
        out.push(b')');
        out
    }
}

/// The column a bare or qualified column reference names (its last part).
fn column_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(id) if !id.value.starts_with('@') => Some(id.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.clone()),
        Expr::Nested(inner) => column_name(inner),
        _ => None,
    }
}

/// The columns an expression names; whether it has a subquery (left as written: its columns
/// may be its own or the outer query's).
#[derive(Default)]
struct Names {
    columns: Vec<String>,
    subquery: bool,
}

impl Visitor for Names {
    type Break = ();

    fn pre_visit_query(&mut self, _: &Query) -> std::ops::ControlFlow<()> {
        self.subquery = true;
        std::ops::ControlFlow::Break(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
        if let Some(name) = column_name(e).filter(|_| !matches!(e, Expr::Nested(_))) {
            self.columns.push(name);
        }
        std::ops::ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(groups: &[&str], item: &str) -> String {
        let g = Groups::new(groups.iter().map(|t| t.as_bytes()));
        String::from_utf8(g.hidden_item(item.as_bytes())).unwrap()
    }

    #[test]
    fn items_valid_under_only_full_group_by_stay_as_written() {
        // The columns it names are grouped by, or it is a GROUP BY expression itself.
        assert_eq!(hidden(&["v"], "WEIGHT_STRING(v)"), "WEIGHT_STRING(v)");
        assert_eq!(hidden(&["t.v", "i"], "CONCAT(v, i)"), "CONCAT(v, i)");
        assert_eq!(hidden(&["LOWER(v)"], "lower( v )"), "lower( v )");
        // Aggregates, and items naming no column.
        assert_eq!(
            hidden(&["i"], "WEIGHT_STRING(MAX(v))"),
            "WEIGHT_STRING(MAX(v))"
        );
        assert_eq!(
            hidden(&["i"], "CAST(VAR_POP(d) AS DOUBLE)"),
            "CAST(VAR_POP(d) AS DOUBLE)"
        );
        assert_eq!(
            hidden(&[], "@@group_concat_max_len"),
            "@@group_concat_max_len"
        );
        assert_eq!(hidden(&[], "COUNT(*)"), "COUNT(*)");
        assert_eq!(hidden(&["i"], "' ,'"), "' ,'");
    }

    #[test]
    fn other_items_are_asked_for_as_min() {
        // An expression grouped by (through an alias), its weights are not.
        assert_eq!(
            hidden(&["ASCII(v)"], "WEIGHT_STRING(ASCII(v))"),
            "MIN(WEIGHT_STRING(ASCII(v)))"
        );
        // GROUP_CONCAT's piece beside the pieces' bytes the shards group by.
        assert_eq!(
            hidden(&["CAST(name AS BINARY)"], "CONCAT(name)"),
            "MIN(CONCAT(name))"
        );
        // Without GROUP BY beside aggregates.
        assert_eq!(hidden(&[], "v"), "MIN(v)");
        assert_eq!(
            hidden(
                &["LOWER(v)"],
                "WEIGHT_STRING(CONCAT(LEFT(LOWER(v), 0), ' '))"
            ),
            "MIN(WEIGHT_STRING(CONCAT(LEFT(LOWER(v), 0), ' ')))"
        );
    }
}
