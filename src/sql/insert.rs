//! Analysis of an INSERT / REPLACE: the table, the column list, each row's values and the byte
//! offsets the rewrite splices at. One sqlparser parse validates the statement and gives the
//! structure; exact byte extents come from its token spans plus short byte scans.

use std::ops::Range;

use sqlparser::ast::{Insert, OnInsert, SetExpr, Spanned, Statement, TableObject};

use super::error::SqlParseError;
use super::lex::{skip_quoted, split_qualified, word_end};
use super::literal::{value_kind, ValueKind};
use super::parse::{parse_one, sanitize, LineIndex};
use super::scan::{list_items, marks, split_assignment, Stop};

/// A table name as written, identifiers unquoted, case preserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    pub schema: Option<String>,
    pub name: String,
}

/// A column named in the column list or a SET assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Unquoted name (the last part of a qualified `t.c`).
    pub name: String,
    /// The name's bytes in the statement.
    pub span: Range<usize>,
}

/// One value of a row or assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// The value's exact bytes (no surrounding whitespace or comments).
    pub span: Range<usize>,
    pub kind: ValueKind,
}

/// One `( … )` row of VALUES.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// From `(` (or the `ROW` keyword) to `)` inclusive.
    pub span: Range<usize>,
    pub values: Vec<Value>,
}

/// `col = value` in `INSERT … SET`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub column: Column,
    pub value: Value,
}

/// What is inserted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertBody {
    Values {
        rows: Vec<Row>,
    },
    Set {
        assignments: Vec<Assignment>,
    },
    /// `INSERT … SELECT` / `TABLE` / a parenthesised query: `query` is the query's bytes (up to
    /// the end of the statement, trailing whitespace and `;` left out).
    Select {
        query: Range<usize>,
    },
}

/// The result of [`analyze_insert`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertAnalysis {
    pub table: TableRef,
    pub replace: bool,
    pub ignore: bool,
    pub on_duplicate_update: bool,
    pub returning: bool,
    /// The row alias of `VALUES (…) AS new[(cols)]`.
    pub row_alias: Option<String>,
    /// The explicit column list; `Some(vec![])` for `()`.
    pub columns: Option<Vec<Column>>,
    pub body: InsertBody,
    /// Byte offset of each `?` in the statement, in order (the count is `placeholders.len()`).
    pub placeholders: Vec<usize>,
    /// Just after the column list's `(`.
    pub column_list_insert_at: Option<usize>,
    /// Start of the first `col = value` of a SET body.
    pub set_list_start: Option<usize>,
    /// Start of the first VALUES row.
    pub rows_start: Option<usize>,
    /// Where what follows the rows / SET list starts (`AS alias`, `ON DUPLICATE KEY UPDATE …`,
    /// `RETURNING …`, a trailing `;`); the statement length for a SELECT body.
    pub suffix_start: usize,
}

impl InsertAnalysis {
    /// Number of `?` placeholders in the statement.
    pub fn placeholder_count(&self) -> usize {
        self.placeholders.len()
    }

    /// Index of `name` (ASCII case-insensitive, as MySQL compares column names) in the column
    /// list or, for a SET body, among the assignments.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        let eq = |c: &Column| c.name.eq_ignore_ascii_case(name);
        match (&self.body, &self.columns) {
            (InsertBody::Set { assignments }, _) => assignments.iter().position(|a| eq(&a.column)),
            (_, Some(cols)) => cols.iter().position(eq),
            _ => None,
        }
    }
}

fn unsupported(what: &str) -> SqlParseError {
    SqlParseError::Unsupported(what.to_string())
}

fn internal(what: &str) -> SqlParseError {
    SqlParseError::Internal(what.to_string())
}

/// Analyses an INSERT or REPLACE statement (MySQL / MariaDB forms). `stmt` is the client's
/// bytes, which need not be UTF-8. The common `INSERT … VALUES` shapes are read by a scanner
/// (see `insert_fast`); everything else, errors included, by sqlparser.
pub fn analyze_insert(stmt: &[u8]) -> Result<InsertAnalysis, SqlParseError> {
    match super::insert_fast::analyze_insert_fast(stmt) {
        Some(a) => Ok(a),
        None => analyze_insert_parsed(stmt),
    }
}

/// [`analyze_insert`] through sqlparser alone, whatever the statement's shape (the benchmarks
/// and differential tests compare the scanner with it).
pub fn analyze_insert_parsed(stmt: &[u8]) -> Result<InsertAnalysis, SqlParseError> {
    let text = sanitize(stmt);
    let ins = match parse_one(&text)? {
        Statement::Insert(ins) => ins,
        _ => {
            return Err(unsupported(
                "only INSERT and REPLACE statements are analysed here",
            ))
        }
    };
    check_supported(&ins)?;
    let m = marks(stmt);
    if m.executable_comment {
        return Err(unsupported(
            "idgate cannot rewrite an INSERT that contains /*! … */ executable comments; send it without them",
        ));
    }
    let idx = LineIndex::new(&text);
    let TableObject::TableName(name) = &ins.table else {
        return Err(unsupported(
            "INSERT INTO TABLE FUNCTION is not supported by idgate",
        ));
    };
    let table_span = idx
        .range(name.span())
        .ok_or_else(|| internal("no position for the table name"))?;
    let table_end = table_end(stmt, table_span.clone());
    let table = table_ref(&stmt[table_span.start..table_end])?;

    let ph_index = |at: usize| m.placeholders.binary_search(&at).ok();
    let value = |r: Range<usize>| Value {
        kind: value_kind(&stmt[r.clone()], ph_index(r.start)),
        span: r,
    };

    // The column list, if any, opens right after the table name.
    let after_table = skip_plain(stmt, table_end);
    let mut columns = None;
    let mut column_list_insert_at = None;
    let mut query_start = after_table;
    if stmt.get(after_table) == Some(&b'(') {
        let (items, close) = list_items(stmt, after_table + 1, Stop::CloseParen)
            .ok_or_else(|| internal("unbalanced column list"))?;
        // `INSERT INTO t (SELECT …)` is a parenthesised query, not a column list.
        if items.len() == ins.columns.len() {
            let cols = items
                .into_iter()
                .map(|r| column(stmt, r))
                .collect::<Result<Vec<_>, _>>()?;
            columns = Some(cols);
            column_list_insert_at = Some(after_table + 1);
            query_start = skip_plain(stmt, close + 1);
        } else if !ins.columns.is_empty() {
            return Err(internal("column list does not match the parse"));
        }
    }

    let mut set_list_start = None;
    let mut rows_start = None;
    let suffix_start;
    let body = match &ins.source {
        Some(q) => match (&*q.body, plain_query(q)) {
            (SetExpr::Values(v), true) => {
                let rows = values_rows(stmt, &idx, v, columns.as_deref(), &value)?;
                rows_start = rows.first().map(|r| r.span.start);
                suffix_start = rows
                    .last()
                    .map(|r| r.span.end)
                    .ok_or_else(|| internal("VALUES without rows"))?;
                InsertBody::Values { rows }
            }
            _ => {
                suffix_start = stmt.len();
                let mut end = stmt.len();
                while end > query_start
                    && (stmt[end - 1].is_ascii_whitespace() || stmt[end - 1] == b';')
                {
                    end -= 1;
                }
                InsertBody::Select {
                    query: query_start..end,
                }
            }
        },
        None if !ins.assignments.is_empty() => {
            let (assignments, start, end) =
                set_assignments(stmt, table_end, ins.assignments.len(), &value)?;
            set_list_start = Some(start);
            suffix_start = end;
            InsertBody::Set { assignments }
        }
        None => {
            return Err(unsupported(
                "this INSERT form is not supported by idgate; use VALUES or SET",
            ))
        }
    };

    Ok(InsertAnalysis {
        table,
        replace: ins.replace_into,
        ignore: ins.ignore,
        on_duplicate_update: matches!(ins.on, Some(OnInsert::DuplicateKeyUpdate(_))),
        returning: ins.returning.is_some(),
        row_alias: ins
            .insert_alias
            .as_ref()
            .and_then(|a| split_qualified(a.row_alias.to_string().as_bytes()).pop()),
        columns,
        body,
        placeholders: m.placeholders,
        column_list_insert_at,
        set_list_start,
        rows_start,
        suffix_start,
    })
}

/// The VALUES rows at their exact bytes, checked against the parse and the column count.
fn values_rows(
    stmt: &[u8],
    idx: &LineIndex<'_>,
    v: &sqlparser::ast::Values,
    columns: Option<&[Column]>,
    value: &dyn Fn(Range<usize>) -> Value,
) -> Result<Vec<Row>, SqlParseError> {
    let mut rows: Vec<Row> = Vec::with_capacity(v.rows.len());
    for (k, r) in v.rows.iter().enumerate() {
        let open = idx.offset(r.opening_token.0.span.start);
        let close = idx.offset(r.closing_token.0.span.start);
        let (Some(open), Some(close)) = (open, close) else {
            return Err(internal("no position for a VALUES row"));
        };
        if stmt.get(open) != Some(&b'(') || stmt.get(close) != Some(&b')') {
            return Err(internal("VALUES row position"));
        }
        let (items, end) = list_items(stmt, open + 1, Stop::CloseParen)
            .ok_or_else(|| internal("unbalanced VALUES row"))?;
        if end != close || items.len() != r.content.len() {
            return Err(internal("VALUES row does not match the parse"));
        }
        let start = if v.explicit_row {
            row_keyword(stmt, open)?
        } else {
            open
        };
        let values: Vec<Value> = items.into_iter().map(value).collect();
        // MySQL checks every row against the column list, or against the first row.
        let expected = columns.map_or_else(
            || rows.first().map_or(values.len(), |r| r.values.len()),
            <[Column]>::len,
        );
        if values.len() != expected {
            return Err(SqlParseError::ColumnCount { row: k + 1 });
        }
        rows.push(Row {
            span: start..close + 1,
            values,
        });
    }
    Ok(rows)
}

/// The `col = value` list after `SET`, its start and where it ends.
fn set_assignments(
    stmt: &[u8],
    table_end: usize,
    expected: usize,
    value: &dyn Fn(Range<usize>) -> Value,
) -> Result<(Vec<Assignment>, usize, usize), SqlParseError> {
    let set_kw = skip_plain(stmt, table_end);
    let kw_end = word_end(stmt, set_kw);
    if !stmt[set_kw..kw_end].eq_ignore_ascii_case(b"SET") {
        return Err(internal("SET keyword position"));
    }
    let start = skip_plain(stmt, kw_end);
    let (items, end) =
        list_items(stmt, start, Stop::Clause).ok_or_else(|| internal("unbalanced SET list"))?;
    if items.len() != expected {
        return Err(internal("SET list does not match the parse"));
    }
    let mut assignments = Vec::with_capacity(items.len());
    for it in items {
        let (name, v) = split_assignment(stmt, it).ok_or_else(|| internal("SET assignment"))?;
        assignments.push(Assignment {
            column: column(stmt, name)?,
            value: value(v),
        });
    }
    Ok((assignments, start, end))
}

/// Rejects parts of sqlparser's INSERT that other dialects have and MySQL does not.
fn check_supported(ins: &Insert) -> Result<(), SqlParseError> {
    if ins.or.is_some()
        || ins.table_alias.is_some()
        || ins.partitioned.is_some()
        || !ins.after_columns.is_empty()
        || ins.has_table_keyword
        || ins.overwrite
        || ins.output.is_some()
        || ins.settings.is_some()
        || ins.format_clause.is_some()
        || ins.multi_table_insert_type.is_some()
    {
        return Err(unsupported(
            "this INSERT syntax is not MySQL's; idgate supports INSERT/REPLACE … VALUES, SET and SELECT",
        ));
    }
    if matches!(ins.on, Some(OnInsert::OnConflict(_))) {
        return Err(unsupported(
            "ON CONFLICT is not MySQL syntax; use ON DUPLICATE KEY UPDATE",
        ));
    }
    Ok(())
}

/// A query that is only `VALUES …` (no WITH, ORDER BY, LIMIT…).
fn plain_query(q: &sqlparser::ast::Query) -> bool {
    q.with.is_none()
        && q.order_by.is_none()
        && q.limit_clause.is_none()
        && q.fetch.is_none()
        && q.locks.is_empty()
        && q.for_clause.is_none()
        && q.settings.is_none()
        && q.format_clause.is_none()
}

/// The table name's span may stop before a closing quote; extend it over one.
fn table_end(s: &[u8], span: Range<usize>) -> usize {
    // Walk the name lexically from its start: parts separated by dots.
    let mut i = span.start;
    loop {
        i = match s.get(i) {
            Some(b'`' | b'"') => skip_quoted(s, i),
            Some(_) => word_end(s, i),
            None => return i,
        };
        let j = skip_plain(s, i);
        if s.get(j) == Some(&b'.') {
            i = skip_plain(s, j + 1);
        } else {
            return i.max(span.end.min(s.len()));
        }
    }
}

fn table_ref(name: &[u8]) -> Result<TableRef, SqlParseError> {
    let mut parts = split_qualified(name);
    let table = parts.pop().filter(|n| !n.is_empty());
    match (parts.pop(), table, parts.is_empty()) {
        (schema, Some(name), true) => Ok(TableRef { schema, name }),
        _ => Err(unsupported(
            "the table name must be `table` or `schema`.`table`",
        )),
    }
}

fn column(s: &[u8], r: Range<usize>) -> Result<Column, SqlParseError> {
    let name = split_qualified(&s[r.clone()])
        .pop()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| internal("empty column name"))?;
    Ok(Column { name, span: r })
}

/// Start of the `ROW` keyword before the `(` at `open` (`VALUES ROW(1), ROW(2)`).
fn row_keyword(s: &[u8], open: usize) -> Result<usize, SqlParseError> {
    let mut i = open;
    while i > 0 && s[i - 1].is_ascii_whitespace() {
        i -= 1;
    }
    if i >= 3 && s[i - 3..i].eq_ignore_ascii_case(b"ROW") {
        Ok(i - 3)
    } else {
        Err(unsupported(
            "put ROW right before the ( of each VALUES ROW(…) row",
        ))
    }
}

/// First byte at or after `i` that is not whitespace or a comment.
fn skip_plain(s: &[u8], mut i: usize) -> usize {
    while i < s.len() {
        if s[i].is_ascii_whitespace() {
            i += 1;
        } else if let Some((_, end)) = super::lex::comment_at(s, i) {
            i = end;
        } else {
            break;
        }
    }
    i
}
