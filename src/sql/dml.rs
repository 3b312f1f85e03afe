//! What routing needs to know about a SELECT, UPDATE, DELETE or DDL statement: every table it
//! names, the table it is about, the sharding-key values its WHERE pins down, and whether merging
//! answers from several shards would take more than concatenation.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_relations, AssignmentTarget, BinaryOperator, Expr, FromTable, GroupByExpr, ObjectName,
    Query, Select, SelectItem, SetExpr, Spanned, Statement, TableFactor, TableWithJoins,
    UnaryOperator, Value as SqlValue, Visit, Visitor,
};

use super::aggregates::find_aggregate;
use super::error::SqlParseError;
use super::from_tree::{from_tree, FromTree};
use super::insert::TableRef;
use super::join_keys::{
    equalities, from_tables, subquery_tables, QualifiedColumn, SubqueryTables, TopTable,
};
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

/// Where a value the WHERE clause gives a column is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyTerm {
    /// A literal: its bytes in the statement, and whether a unary minus applies to it.
    Literal {
        at: std::ops::Range<usize>,
        negated: bool,
    },
    /// A `?` of a prepared statement (its 0-based index).
    Placeholder(usize),
}

impl KeyTerm {
    /// The value of literal `text` (negated or not) when it is an integer or a string.
    pub fn resolve_literal(text: &[u8], negated: bool) -> Option<KeyValue> {
        match (value_kind(text, None), negated) {
            (ValueKind::Int(i), false) => Some(KeyValue::Int(i)),
            (ValueKind::Int(i), true) => Some(KeyValue::Int(-i)),
            (ValueKind::Str(s), false) => Some(KeyValue::Str(s)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct DmlAnalysis {
    pub kind: DmlKind,
    /// Every table the statement names, subqueries and joins included.
    pub relations: Vec<TableRef>,
    /// The table the statement reads or changes (first FROM table, UPDATE/DELETE target).
    pub target: Option<TableRef>,
    /// Columns the top-level WHERE restricts to a finite set of values (`c = v`, `c IN (…)`,
    /// `c = v OR c = w`), each with where those values are written.
    pub keys: Vec<(String, Vec<KeyTerm>)>,
    /// Why answers from several shards cannot be merged (UPDATE/DELETE with ORDER BY or LIMIT,
    /// UNION).
    pub needs_merge: Option<&'static str>,
    /// A SELECT of aggregates (or with HAVING) without GROUP BY: it answers with one row even
    /// when no row matches.
    pub implicit_group: bool,
    /// Columns an UPDATE assigns.
    pub assigned: Vec<String>,
    /// The table (alias or name, lowercase) each of `assigned` is qualified by, if it is.
    pub assigned_qualifiers: Vec<Option<String>>,
    /// The tables of the statement's own FROM and joins (a SELECT's), or its target.
    pub from: Vec<TopTable>,
    /// A SELECT's own FROM as it is joined (outer joins and the sides they keep).
    pub from_tree: Option<FromTree>,
    /// Column equalities (`a.x = b.y`) of the joins and the WHERE.
    pub equal_columns: Vec<(QualifiedColumn, QualifiedColumn)>,
    /// A SELECT's subqueries in expressions (EXISTS, IN, scalar), each with its own tables and
    /// equalities: a correlated one may run per shard with the outer statement.
    pub subqueries: Vec<SubqueryTables>,
    /// The tables a recursive common table expression reads besides itself, each with the
    /// expression's name (lowercase).
    pub recursive_reads: Vec<(String, TableRef)>,
    /// An UPDATE of several tables (`UPDATE a JOIN b …`, `UPDATE a, b …`).
    pub multi_table: bool,
    /// Names of the common table expressions (`WITH name AS …`) anywhere in the statement,
    /// lowercase: a relation of that name without a schema may be one, not a table.
    pub ctes: Vec<String>,
    /// For a SELECT that needs more than concatenation (ORDER BY, LIMIT, GROUP BY, aggregates,
    /// DISTINCT, HAVING): the statement, kept so the merge is planned (by `route::merge_plan`)
    /// only when it reaches several shards.
    merge_of: Option<Box<Statement>>,
}

pub(crate) fn table_ref(name: &ObjectName) -> TableRef {
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

/// Whether any select item holds an aggregate or window function.
fn has_aggregate(items: &[SelectItem]) -> bool {
    items.iter().any(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
            find_aggregate(e).is_some()
        }
        _ => false,
    })
}

struct KeyScan<'a> {
    index: LineIndex<'a>,
    placeholders: &'a [usize],
}

impl KeyScan<'_> {
    /// The column `e` names: bare, or qualified (`qualifier\0column`: the table it is qualified
    /// by, which [`analyze_dml`] checks and strips).
    fn column(e: &Expr) -> Option<String> {
        match e {
            Expr::Identifier(i) => Some(i.value.clone()),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                // NUL separates them: no identifier holds one.
                [.., q, c] => Some(format!("{}\0{}", q.value, c.value)),
                [c] => Some(c.value.clone()),
                [] => None,
            },
            Expr::Nested(inner) => Self::column(inner),
            _ => None,
        }
    }

    /// The literal or `?` an expression is (through `-` and parentheses), whatever its type:
    /// whether it can pin a shard is decided when it is resolved, so a plan made for one
    /// statement holds for every statement of its shape.
    fn value(&self, e: &Expr) -> Option<KeyTerm> {
        match e {
            Expr::Value(v) => {
                let span = self.index.range(e.span())?;
                match &v.value {
                    SqlValue::Placeholder(_) => {
                        let at = self.placeholders.iter().position(|p| *p == span.start)?;
                        Some(KeyTerm::Placeholder(at))
                    }
                    _ => Some(KeyTerm::Literal {
                        at: span,
                        negated: false,
                    }),
                }
            }
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => match self.value(expr)? {
                KeyTerm::Literal { at, negated } => Some(KeyTerm::Literal {
                    at,
                    negated: !negated,
                }),
                KeyTerm::Placeholder(_) => None,
            },
            Expr::Nested(inner) => self.value(inner),
            _ => None,
        }
    }

    /// `c = v`, `c IN (v, …)` or an OR of those on one column.
    fn disjunction(&self, e: &Expr) -> Option<(String, Vec<KeyTerm>)> {
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
                // `t.id = 1 OR id = 2`: one column, if the bare name is t's (else MariaDB
                // finds it ambiguous); the qualified spelling is kept for the check.
                let bare = |c: &str| c.rsplit('\0').next().unwrap_or_default().to_string();
                let column = match (c1.contains('\0'), c2.contains('\0')) {
                    (true, true) | (false, false) if c1.eq_ignore_ascii_case(&c2) => c1,
                    (true, false) | (false, true) if bare(&c1).eq_ignore_ascii_case(&bare(&c2)) => {
                        if c1.contains('\0') {
                            c1
                        } else {
                            c2
                        }
                    }
                    _ => return None,
                };
                v1.extend(v2);
                Some((column, v1))
            }
            Expr::Nested(inner) => self.disjunction(inner),
            _ => None,
        }
    }

    /// The AND-ed conditions of a WHERE that pin a column down.
    fn conjunction(&self, e: &Expr, out: &mut Vec<(String, Vec<KeyTerm>)>) {
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

/// The names every `WITH` of `parsed` gives its common table expressions, lowercase.
fn cte_names(parsed: &Statement) -> Vec<String> {
    struct Ctes(Vec<String>);
    impl Visitor for Ctes {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                self.0.extend(
                    with.cte_tables
                        .iter()
                        .map(|c| c.alias.name.value.to_lowercase()),
                );
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = Ctes(Vec::new());
    let _ = parsed.visit(&mut v);
    v.0
}

/// The tables read by the common table expressions of `parsed` that name themselves (`WITH
/// RECURSIVE r AS (… UNION ALL SELECT … FROM t JOIN r …)`), with the name of the expression.
fn recursive_reads(parsed: &Statement) -> Vec<(String, TableRef)> {
    struct Recursive(Vec<(String, TableRef)>);
    impl Visitor for Recursive {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            let Some(with) = q.with.as_ref().filter(|w| w.recursive) else {
                return ControlFlow::Continue(());
            };
            for cte in &with.cte_tables {
                let name = cte.alias.name.value.to_lowercase();
                let mut read = Vec::new();
                let _ = visit_relations(&*cte.query, |n| {
                    read.push(table_ref(n));
                    ControlFlow::<()>::Continue(())
                });
                let itself =
                    |t: &TableRef| t.schema.is_none() && t.name.eq_ignore_ascii_case(&name);
                if read.iter().any(itself) {
                    self.0.extend(
                        read.into_iter()
                            .filter(|t| !itself(t))
                            .map(|t| (name.clone(), t)),
                    );
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = Recursive(Vec::new());
    let _ = parsed.visit(&mut v);
    v.0
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
        index: LineIndex::new(&text),
        placeholders: &placeholders,
    };
    let mut a = DmlAnalysis {
        kind: DmlKind::Ddl,
        relations,
        target: None,
        keys: Vec::new(),
        needs_merge: None,
        implicit_group: false,
        assigned: Vec::new(),
        assigned_qualifiers: Vec::new(),
        merge_of: None,
        from: Vec::new(),
        from_tree: None,
        equal_columns: Vec::new(),
        subqueries: Vec::new(),
        multi_table: false,
        recursive_reads: recursive_reads(&parsed),
        ctes: cte_names(&parsed),
    };
    let mut selection = None;
    let mut wants_merge = false;
    // How the statement names the table its key conditions must be about.
    let mut own: Option<String> = None;
    match &parsed {
        Statement::Query(q) => {
            a.kind = DmlKind::Select;
            a.subqueries = subquery_tables(q, &table_ref);
            match q.body.as_ref() {
                SetExpr::Select(s) => {
                    a.target = first_table(&s.from);
                    selection = s.selection.as_ref();
                    a.from = from_tables(&s.from, &table_ref);
                    a.from_tree = from_tree(&s.from, &table_ref);
                    a.equal_columns = equalities(&s.from, &a.from, selection);
                    let grouped =
                        !matches!(&s.group_by, GroupByExpr::Expressions(e, _) if e.is_empty());
                    a.implicit_group =
                        !grouped && (s.having.is_some() || has_aggregate(&s.projection));
                    let merged = q.order_by.is_some()
                        || q.limit_clause.is_some()
                        || grouped
                        || s.distinct.is_some()
                        || s.having.is_some()
                        || has_aggregate(&s.projection);
                    wants_merge = merged;
                }
                _ => a.needs_merge = Some("UNION or a nested query"),
            }
        }
        Statement::Update(u) => {
            a.kind = DmlKind::Update;
            if let TableFactor::Table { name, .. } = &u.table.relation {
                a.target = Some(table_ref(name));
            }
            selection = u.selection.as_ref();
            // Every table it joins (`UPDATE a JOIN b …`, `UPDATE a, b …`), as a SELECT's FROM:
            // whether it can run on each shard is decided as for a join.
            let tables = std::slice::from_ref(&u.table);
            a.from = from_tables(tables, &table_ref);
            a.from_tree = from_tree(tables, &table_ref);
            a.equal_columns = equalities(tables, &a.from, selection);
            a.multi_table = !u.table.joins.is_empty()
                || u.from.is_some()
                || !matches!(u.table.relation, TableFactor::Table { .. });
            let mut assign = |n: &ObjectName| {
                let parts: Vec<String> =
                    n.0.iter()
                        .map(|p| unquote_ident(p.to_string().as_bytes()))
                        .collect();
                a.assigned.push(table_ref(n).name);
                let qualifier = match parts.as_slice() {
                    [.., q, _] => Some(q.to_lowercase()),
                    _ => None,
                };
                a.assigned_qualifiers.push(qualifier);
            };
            for asg in &u.assignments {
                match &asg.target {
                    AssignmentTarget::ColumnName(n) => assign(n),
                    AssignmentTarget::Tuple(ns) => ns.iter().for_each(&mut assign),
                }
            }
            // ORDER BY alone only orders each shard's own rows, which is all it can change.
            if u.limit.is_some() {
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
            // `DELETE FROM t AS x WHERE x.id = …`: its conditions name it by its alias.
            if d.tables.is_empty() {
                own = from_tables(from, &table_ref)
                    .first()
                    .map(|t| t.qualifier.clone());
            }
            selection = d.selection.as_ref();
            if d.limit.is_some() {
                a.needs_merge = Some("ORDER BY/LIMIT");
            }
        }
        _ => {}
    }
    if let Some(w) = selection {
        scan.conjunction(w, &mut a.keys);
    }
    // A condition on another table's column (`c.id = 2` of a joined table) pins nothing of
    // the target's: only columns written bare or qualified by the target count.
    let own = own
        .or_else(|| a.from.first().map(|t| t.qualifier.clone()))
        .or_else(|| a.target.as_ref().map(|t| t.name.to_lowercase()));
    if let Some(own) = own {
        a.keys.retain(|(c, _)| match c.split_once('\0') {
            Some((q, _)) => q.eq_ignore_ascii_case(&own),
            None => true,
        });
        for (c, _) in &mut a.keys {
            if let Some((_, bare)) = c.split_once('\0') {
                *c = bare.to_string();
            }
        }
    }
    if a.kind != DmlKind::Select && a.from.is_empty() {
        a.from.extend(a.target.clone().map(|t| TopTable {
            qualifier: t.name.to_lowercase(),
            table: t,
        }));
    }
    if wants_merge {
        a.merge_of = Some(Box::new(parsed));
    }
    Ok(a)
}

impl DmlAnalysis {
    /// The key values of `stmt` (the statement analysed): a condition with a value that is
    /// neither an integer nor a string pins nothing and is left out.
    pub fn key_values(&self, stmt: &[u8]) -> Vec<(String, Vec<KeyValue>)> {
        self.keys
            .iter()
            .filter_map(|(c, terms)| {
                let values = terms
                    .iter()
                    .map(|t| match t {
                        KeyTerm::Literal { at, negated } => {
                            KeyTerm::resolve_literal(stmt.get(at.clone())?, *negated)
                        }
                        KeyTerm::Placeholder(i) => Some(KeyValue::Placeholder(*i)),
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some((c.clone(), values))
            })
            .collect()
    }

    /// The SELECT kept for planning a merge (`route::merge_plan`), with its query.
    pub fn merge_select(&self) -> Option<(&Query, &Select)> {
        let Statement::Query(q) = self.merge_of.as_deref()? else {
            return None;
        };
        let SetExpr::Select(s) = q.body.as_ref() else {
            return None;
        };
        Some((q, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_lookups_pin_their_keys() {
        let sql = b"SELECT * FROM orders WHERE id = 42 AND status = 'x' AND f = 1.5";
        let a = analyze_dml(sql).unwrap();
        assert_eq!(a.kind, DmlKind::Select);
        assert_eq!(a.target.clone().unwrap().name, "orders");
        assert_eq!(
            a.keys.len(),
            3,
            "every condition is kept with where its value is"
        );
        let keys = a.key_values(sql);
        assert_eq!(keys.len(), 2, "1.5 pins nothing");
        assert_eq!(keys[0], ("id".into(), vec![KeyValue::Int(42)]));
        assert_eq!(
            keys[1],
            ("status".into(), vec![KeyValue::Str(b"x".to_vec())])
        );
        assert!(a.needs_merge.is_none());
        let sql = b"SELECT c FROM s.t WHERE (t.id IN (1, -2) OR id = ?) ";
        let a = analyze_dml(sql).unwrap();
        assert_eq!(a.target.clone().unwrap().schema.as_deref(), Some("s"));
        assert_eq!(
            a.key_values(sql)[0],
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
    fn multi_table_updates_are_read_as_joins() {
        let sql = b"UPDATE a o, b ev SET o.x = ev.y WHERE o.id = ev.a_id AND o.id = 7";
        let a = analyze_dml(sql).unwrap();
        assert!(a.multi_table);
        assert_eq!(a.target.clone().unwrap().name, "a");
        let from: Vec<(String, String)> = a
            .from
            .iter()
            .map(|t| (t.qualifier.clone(), t.table.name.clone()))
            .collect();
        assert_eq!(from, [("o".into(), "a".into()), ("ev".into(), "b".into())]);
        assert_eq!(
            a.equal_columns[0],
            (("o".into(), "id".into()), ("ev".into(), "a_id".into()))
        );
        assert_eq!(a.key_values(sql), [("id".into(), vec![KeyValue::Int(7)])]);
        assert_eq!(a.assigned, ["x"]);
        assert_eq!(a.assigned_qualifiers, [Some("o".to_string())]);
        // Commas inside parentheses or after SET stay commas.
        let a = analyze_dml(
            b"UPDATE a USE INDEX (i, j), b, c SET a.x = 1, b.y = CONCAT(c.z, 'a,b') WHERE a.id = b.id",
        )
        .unwrap();
        let names: Vec<&str> = a.from.iter().map(|t| t.table.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(a.assigned, ["x", "y"]);
        let a = analyze_dml(b"UPDATE t SET a = 1, b = 2 WHERE id = 3").unwrap();
        assert!(!a.multi_table);
    }

    #[test]
    fn conditions_on_another_table_pin_nothing() {
        let sql = b"SELECT o.id FROM orders o JOIN countries c ON o.country = c.id WHERE c.id = 2";
        assert!(analyze_dml(sql).unwrap().key_values(sql).is_empty());
        let sql = b"SELECT * FROM orders o JOIN c ON o.k = c.k WHERE o.id = 2 AND id IN (3) OR 1";
        assert!(analyze_dml(sql).unwrap().key_values(sql).is_empty());
        let sql =
            b"SELECT * FROM orders o JOIN c ON o.k = c.k WHERE (o.id = 2 OR id = 3) AND c.id = 4";
        assert_eq!(
            analyze_dml(sql).unwrap().key_values(sql),
            [("id".into(), vec![KeyValue::Int(2), KeyValue::Int(3)])]
        );
        let sql = b"DELETE FROM orders AS x WHERE x.id = 5";
        assert_eq!(
            analyze_dml(sql).unwrap().key_values(sql),
            [("id".into(), vec![KeyValue::Int(5)])]
        );
        let sql = b"UPDATE orders o JOIN c ON o.k = c.k SET o.v = 1 WHERE c.id = 5";
        assert!(analyze_dml(sql).unwrap().key_values(sql).is_empty());
    }

    #[test]
    fn recursive_expressions_name_what_they_read() {
        let a = analyze_dml(
            b"WITH RECURSIVE r AS (SELECT id FROM t WHERE id = 1 UNION ALL SELECT t.id FROM t JOIN r ON t.parent = r.id), \
              n AS (SELECT id FROM u) SELECT * FROM r JOIN n USING (id)",
        )
        .unwrap();
        let reads: Vec<(&str, &str)> = a
            .recursive_reads
            .iter()
            .map(|(c, t)| (c.as_str(), t.name.as_str()))
            .collect();
        assert_eq!(reads, [("r", "t"), ("r", "t")]);
        // WITH RECURSIVE whose expressions do not name themselves: nothing recursive.
        let a = analyze_dml(b"WITH RECURSIVE n AS (SELECT id FROM u) SELECT * FROM n").unwrap();
        assert!(a.recursive_reads.is_empty());
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
