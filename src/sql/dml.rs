//! What routing needs to know about a SELECT, UPDATE, DELETE or DDL statement: every table it
//! names, the table it is about, the sharding-key values its WHERE pins down, and whether merging
//! answers from several shards would take more than concatenation.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_relations, AssignmentTarget, BinaryOperator, Expr, FromTable, GroupByExpr, ObjectName,
    SelectItem, SetExpr, Spanned, Statement, TableFactor, TableWithJoins, UnaryOperator,
    Value as SqlValue,
};

use super::error::SqlParseError;
use super::insert::TableRef;
use super::lex::unquote_ident;
use super::literal::{value_kind, ValueKind};
use super::parse::{parse_one, sanitize, LineIndex};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmlKind {
    Select,
    Update,
    Delete,
    Ddl,
}

/// A value the WHERE clause gives a column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyValue {
    Int(i128),
    Str(Vec<u8>),
    /// A `?` of a prepared statement (its 0-based index).
    Placeholder(usize),
}

#[derive(Debug, Clone)]
pub struct DmlAnalysis {
    pub kind: DmlKind,
    /// Every table the statement names, subqueries and joins included.
    pub relations: Vec<TableRef>,
    /// The table the statement reads or changes (first FROM table, UPDATE/DELETE target).
    pub target: Option<TableRef>,
    /// Columns the top-level WHERE restricts to a finite set of values (`c = v`, `c IN (…)`,
    /// `c = v OR c = w`), each with those values.
    pub keys: Vec<(String, Vec<KeyValue>)>,
    /// Why answers from several shards cannot simply be concatenated (ORDER BY, LIMIT, …).
    pub needs_merge: Option<&'static str>,
    /// Columns an UPDATE assigns.
    pub assigned: Vec<String>,
    /// For a SELECT whose every item is COUNT/SUM/MIN/MAX (no GROUP BY, DISTINCT, HAVING, ORDER BY
    /// or LIMIT): the function of each column, so per-shard answers can be combined.
    pub aggregates: Option<Vec<Aggregate>>,
    /// For a SELECT ordered by plain columns: each column and whether it is descending, so
    /// sorted per-shard answers can be merged.
    pub order: Option<Vec<(String, bool)>>,
    /// `LIMIT n` (no offset): every shard returns at most n rows, the merge keeps the first n.
    pub limit: Option<u64>,
}

/// `ORDER BY c1 [ASC|DESC], …` over plain column names.
fn plain_order(order: &sqlparser::ast::OrderBy) -> Option<Vec<(String, bool)>> {
    use sqlparser::ast::{OrderByKind, OrderBySort};
    let OrderByKind::Expressions(items) = &order.kind else {
        return None;
    };
    items
        .iter()
        .map(|o| {
            if o.with_fill.is_some() || o.options.nulls_first.is_some() {
                return None;
            }
            let desc = match &o.options.sort {
                None | Some(OrderBySort::Asc) => false,
                Some(OrderBySort::Desc) => true,
                Some(_) => return None,
            };
            Some((KeyScan::column(&o.expr)?, desc))
        })
        .collect()
}

/// `LIMIT n` with a literal n and no offset.
fn plain_limit(limit: &sqlparser::ast::LimitClause) -> Option<u64> {
    use sqlparser::ast::LimitClause;
    match limit {
        LimitClause::LimitOffset {
            limit: Some(Expr::Value(v)),
            offset: None,
            limit_by,
        } if limit_by.is_empty() => match &v.value {
            SqlValue::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// An aggregate whose per-shard results combine into the whole table's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Count,
    Sum,
    Min,
    Max,
}

/// The aggregate of each select item, if every item is a plain COUNT/SUM/MIN/MAX call.
fn simple_aggregates(items: &[SelectItem]) -> Option<Vec<Aggregate>> {
    use sqlparser::ast::{DuplicateTreatment, FunctionArguments};
    items
        .iter()
        .map(|item| {
            let expr = match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                _ => return None,
            };
            let Expr::Function(f) = expr else {
                return None;
            };
            if f.filter.is_some() || f.over.is_some() {
                return None;
            }
            if let FunctionArguments::List(list) = &f.args {
                if list.duplicate_treatment == Some(DuplicateTreatment::Distinct) {
                    return None;
                }
            }
            match f.name.to_string().to_ascii_lowercase().as_str() {
                "count" => Some(Aggregate::Count),
                "sum" => Some(Aggregate::Sum),
                "min" => Some(Aggregate::Min),
                "max" => Some(Aggregate::Max),
                _ => None,
            }
        })
        .collect()
}

fn table_ref(name: &ObjectName) -> TableRef {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| unquote_ident(p.to_string().as_bytes()))
        .collect();
    match parts.as_slice() {
        [schema, .., table] => TableRef {
            schema: Some(schema.clone()),
            name: table.clone(),
        },
        [table] => TableRef {
            schema: None,
            name: table.clone(),
        },
        [] => TableRef {
            schema: None,
            name: String::new(),
        },
    }
}

fn first_table(from: &[TableWithJoins]) -> Option<TableRef> {
    match &from.first()?.relation {
        TableFactor::Table { name, .. } => Some(table_ref(name)),
        _ => None,
    }
}

const AGGREGATES: &[&str] = &[
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
    "variance",
    "bit_and",
    "bit_or",
    "bit_xor",
];

fn has_window_function(stmt: &Statement) -> bool {
    sqlparser::ast::visit_expressions(stmt, |e| match e {
        Expr::Function(f) if f.over.is_some() => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// True when the statement calls FOUND_ROWS() or ROW_COUNT().
pub fn asks_row_counts(stmt: &[u8]) -> bool {
    mentions_word(stmt, b"FOUND_ROWS") || mentions_word(stmt, b"ROW_COUNT")
}

/// True when `word` (ASCII, any case) appears in `stmt` as a whole word.
fn mentions_word(stmt: &[u8], word: &[u8]) -> bool {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    stmt.windows(word.len()).enumerate().any(|(i, w)| {
        w.eq_ignore_ascii_case(word)
            && (i == 0 || !ident(stmt[i - 1]))
            && stmt.get(i + word.len()).is_none_or(|&b| !ident(b))
    })
}

fn has_aggregate(items: &[SelectItem]) -> bool {
    let mut found = false;
    for item in items {
        let expr = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        let _ = sqlparser::ast::visit_expressions(expr, |e| {
            if let Expr::Function(f) = e {
                let name = f.name.to_string().to_ascii_lowercase();
                if AGGREGATES.contains(&name.as_str()) {
                    found = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
    }
    found
}

struct KeyScan<'a> {
    stmt: &'a [u8],
    index: LineIndex<'a>,
    placeholders: &'a [usize],
}

impl KeyScan<'_> {
    fn column(e: &Expr) -> Option<String> {
        match e {
            Expr::Identifier(i) => Some(i.value.clone()),
            Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
            Expr::Nested(inner) => Self::column(inner),
            _ => None,
        }
    }

    fn value(&self, e: &Expr) -> Option<KeyValue> {
        match e {
            Expr::Value(v) => {
                let span = self.index.range(e.span())?;
                match &v.value {
                    SqlValue::Placeholder(_) => {
                        let at = self.placeholders.iter().position(|p| *p == span.start)?;
                        Some(KeyValue::Placeholder(at))
                    }
                    _ => match value_kind(self.stmt.get(span)?, None) {
                        ValueKind::Int(i) => Some(KeyValue::Int(i)),
                        ValueKind::Str(s) => Some(KeyValue::Str(s)),
                        _ => None,
                    },
                }
            }
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => match self.value(expr)? {
                KeyValue::Int(i) => Some(KeyValue::Int(-i)),
                _ => None,
            },
            Expr::Nested(inner) => self.value(inner),
            _ => None,
        }
    }

    /// `c = v`, `c IN (v, …)` or an OR of those on one column.
    fn disjunction(&self, e: &Expr) -> Option<(String, Vec<KeyValue>)> {
        match e {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => {
                if let (Some(c), Some(v)) = (Self::column(left), self.value(right)) {
                    return Some((c, vec![v]));
                }
                let (c, v) = (Self::column(right)?, self.value(left)?);
                Some((c, vec![v]))
            }
            Expr::InList {
                expr,
                list,
                negated: false,
            } => {
                let c = Self::column(expr)?;
                let values = list
                    .iter()
                    .map(|v| self.value(v))
                    .collect::<Option<Vec<_>>>()?;
                Some((c, values))
            }
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                right,
            } => {
                let (c1, mut v1) = self.disjunction(left)?;
                let (c2, v2) = self.disjunction(right)?;
                if !c1.eq_ignore_ascii_case(&c2) {
                    return None;
                }
                v1.extend(v2);
                Some((c1, v1))
            }
            Expr::Nested(inner) => self.disjunction(inner),
            _ => None,
        }
    }

    /// The AND-ed conditions of a WHERE that pin a column down.
    fn conjunction(&self, e: &Expr, out: &mut Vec<(String, Vec<KeyValue>)>) {
        match e {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                self.conjunction(left, out);
                self.conjunction(right, out);
            }
            Expr::Nested(inner) => self.conjunction(inner, out),
            other => {
                if let Some(k) = self.disjunction(other) {
                    out.push(k);
                }
            }
        }
    }
}

/// Byte offsets of each `?` outside quotes and comments.
pub fn placeholder_offsets(stmt: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < stmt.len() {
        if let Some((_, end)) = super::lex::comment_at(stmt, i) {
            i = end;
            continue;
        }
        match stmt[i] {
            b'\'' | b'"' | b'`' => i = super::lex::skip_quoted(stmt, i),
            b'?' => {
                out.push(i);
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// Analyses a SELECT, UPDATE, DELETE or DDL statement for routing.
pub fn analyze_dml(stmt: &[u8]) -> Result<DmlAnalysis, SqlParseError> {
    let text = sanitize(stmt);
    let parsed = parse_one(&text)?;
    let mut relations = Vec::new();
    let _ = visit_relations(&parsed, |name| {
        relations.push(table_ref(name));
        ControlFlow::<()>::Continue(())
    });
    let placeholders = placeholder_offsets(stmt);
    let scan = KeyScan {
        stmt,
        index: LineIndex::new(&text),
        placeholders: &placeholders,
    };
    let mut a = DmlAnalysis {
        kind: DmlKind::Ddl,
        relations,
        target: None,
        keys: Vec::new(),
        needs_merge: None,
        assigned: Vec::new(),
        aggregates: None,
        order: None,
        limit: None,
    };
    let mut selection = None;
    match &parsed {
        Statement::Query(q) => {
            a.kind = DmlKind::Select;
            if let Some(o) = &q.order_by {
                a.order = plain_order(o);
                if a.order.is_none() {
                    a.needs_merge = Some("ORDER BY");
                }
            }
            if let Some(l) = &q.limit_clause {
                a.limit = plain_limit(l);
                if a.limit.is_none() {
                    a.needs_merge = Some("LIMIT with an offset");
                }
            }
            match q.body.as_ref() {
                SetExpr::Select(s) => {
                    a.target = first_table(&s.from);
                    selection = s.selection.as_ref();
                    let grouped =
                        !matches!(&s.group_by, GroupByExpr::Expressions(e, _) if e.is_empty());
                    if a.needs_merge.is_none()
                        && !grouped
                        && s.distinct.is_none()
                        && s.having.is_none()
                    {
                        a.aggregates = simple_aggregates(&s.projection);
                    }
                    if a.needs_merge.is_none() {
                        a.needs_merge = if grouped {
                            Some("GROUP BY")
                        } else if has_aggregate(&s.projection) {
                            Some("aggregate functions")
                        } else if s.distinct.is_some() {
                            Some("DISTINCT")
                        } else if s.having.is_some() {
                            Some("HAVING")
                        } else {
                            None
                        };
                    }
                }
                _ => {
                    a.needs_merge = a.needs_merge.or(Some("UNION or a nested query"));
                    a.order = None;
                    a.limit = None;
                }
            }
        }
        Statement::Update(u) => {
            a.kind = DmlKind::Update;
            if let TableFactor::Table { name, .. } = &u.table.relation {
                a.target = Some(table_ref(name));
            }
            selection = u.selection.as_ref();
            for asg in &u.assignments {
                match &asg.target {
                    AssignmentTarget::ColumnName(n) => a.assigned.push(table_ref(n).name),
                    AssignmentTarget::Tuple(ns) => {
                        a.assigned.extend(ns.iter().map(|n| table_ref(n).name))
                    }
                }
            }
            if !u.order_by.is_empty() || u.limit.is_some() {
                a.needs_merge = Some("ORDER BY/LIMIT");
            }
        }
        Statement::Delete(d) => {
            a.kind = DmlKind::Delete;
            let from = match &d.from {
                FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
            };
            a.target = d
                .tables
                .first()
                .map(table_ref)
                .or_else(|| first_table(from));
            selection = d.selection.as_ref();
            if !d.order_by.is_empty() || d.limit.is_some() {
                a.needs_merge = Some("ORDER BY/LIMIT");
            }
        }
        _ => {}
    }
    if a.kind == DmlKind::Select {
        // Each shard would number, rank or total only its own rows; FOUND_ROWS() would count
        // one shard's.
        if has_window_function(&parsed) {
            a.needs_merge = Some("window functions");
            a.aggregates = None;
            a.order = None;
            a.limit = None;
        } else if mentions_word(stmt, b"SQL_CALC_FOUND_ROWS") {
            a.needs_merge = Some("SQL_CALC_FOUND_ROWS");
            a.order = None;
            a.limit = None;
        }
    }
    if let Some(w) = selection {
        scan.conjunction(w, &mut a.keys);
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_lookups_pin_their_keys() {
        let a = analyze_dml(b"SELECT * FROM orders WHERE id = 42 AND status = 'x'").unwrap();
        assert_eq!(a.kind, DmlKind::Select);
        assert_eq!(a.target.unwrap().name, "orders");
        assert_eq!(a.keys[0], ("id".into(), vec![KeyValue::Int(42)]));
        assert_eq!(
            a.keys[1],
            ("status".into(), vec![KeyValue::Str(b"x".to_vec())])
        );
        assert!(a.needs_merge.is_none());
        let a = analyze_dml(b"SELECT c FROM s.t WHERE (t.id IN (1, -2) OR id = ?) ").unwrap();
        assert_eq!(a.target.clone().unwrap().schema.as_deref(), Some("s"));
        assert_eq!(
            a.keys[0],
            (
                "id".into(),
                vec![
                    KeyValue::Int(1),
                    KeyValue::Int(-2),
                    KeyValue::Placeholder(0)
                ]
            )
        );
        let a = analyze_dml(b"SELECT * FROM t WHERE id = 1 OR name = 'x'").unwrap();
        assert!(a.keys.is_empty(), "an OR over two columns pins nothing");
    }

    #[test]
    fn merges_needed_are_named() {
        let a = analyze_dml(b"SELECT * FROM t WHERE x = 1 ORDER BY id DESC, k LIMIT 10").unwrap();
        assert_eq!(
            a.order,
            Some(vec![("id".to_string(), true), ("k".to_string(), false)])
        );
        assert_eq!((a.limit, a.needs_merge), (Some(10), None));
        for (sql, why) in [
            ("SELECT * FROM t ORDER BY id + 1", "ORDER BY"),
            ("SELECT * FROM t LIMIT 3 OFFSET 2", "LIMIT with an offset"),
            ("SELECT COUNT(*) FROM t", "aggregate functions"),
            (
                "SELECT id, ROW_NUMBER() OVER (ORDER BY id) FROM t",
                "window functions",
            ),
            (
                "SELECT SQL_CALC_FOUND_ROWS id FROM t LIMIT 1",
                "SQL_CALC_FOUND_ROWS",
            ),
            ("SELECT k, v FROM t GROUP BY k, v", "GROUP BY"),
            ("SELECT DISTINCT k FROM t", "DISTINCT"),
        ] {
            assert_eq!(
                analyze_dml(sql.as_bytes()).unwrap().needs_merge,
                Some(why),
                "{sql}"
            );
        }
    }

    #[test]
    fn updates_deletes_and_relations() {
        let a = analyze_dml(b"UPDATE orders SET item = 'x', user_id = 3 WHERE id = 7").unwrap();
        assert_eq!(
            (a.kind, a.assigned.clone()),
            (DmlKind::Update, vec!["item".to_string(), "user_id".into()])
        );
        let a = analyze_dml(b"DELETE FROM `orders` WHERE user_id IN (1, 2)").unwrap();
        assert_eq!(
            (a.kind, a.target.unwrap().name),
            (DmlKind::Delete, "orders".to_string())
        );
        let a =
            analyze_dml(b"SELECT * FROM a JOIN b ON a.x = b.x WHERE a.id IN (SELECT id FROM c)")
                .unwrap();
        let names: Vec<String> = a.relations.iter().map(|r| r.name.clone()).collect();
        assert_eq!(names, vec!["a", "b", "c"]);
        let a = analyze_dml(b"ALTER TABLE orders ADD COLUMN note TEXT").unwrap();
        assert_eq!(a.kind, DmlKind::Ddl);
        assert!(analyze_dml(b"SELECT FROM WHERE").is_err());
    }
}
