//! The pure half of an INSERT into a configured table: which rows get an id as AUTO_INCREMENT
//! would give them one, the `explicit_ids` policy, and the checks made before any id is spent.
//! Placing rows on shards and rendering what each backend runs is in [`super::insert_place`].
//!
//! Nothing here does I/O: the session reads the table's metadata and `sql_mode`, asks the
//! generator for ids, and passes them in.

use crate::config::tables::ExplicitIds;
use crate::exec::metadata::TableMeta;
use crate::sql::{self, InsertAnalysis, InsertBody, Value, ValueKind};
use crate::wire::errors::{self, SqlError};

use super::{Placement, ShardValue, TableRule};

pub use super::insert_place::{name_matched_row, place_and_render, render_each_row};

/// Where one row's id comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowId {
    /// Generated: a numeric id, or the text of a UUID literal.
    Generated(u64),
    GeneratedText(Vec<u8>),
    /// The statement's own value, kept.
    Explicit(Option<i128>),
}

/// What the INSERT will send where.
#[derive(Debug)]
pub struct InsertPlan {
    /// (backend, rendered statement, the statement's row indices it carries).
    pub parts: Vec<(String, Vec<u8>, Vec<usize>)>,
    /// Every row on every backend: answer with one backend's counts, not the sum.
    pub broadcast: bool,
    /// The insert id the client is told, as MySQL reports it for AUTO_INCREMENT.
    pub insert_id: u64,
    /// The first generated numeric id, which becomes LAST_INSERT_ID().
    pub first_generated: Option<u64>,
    /// The backend whose part sets LAST_INSERT_ID() (it carries the first generated row).
    pub lid_backend: Option<String>,
    /// Rows with generated ids that IGNORE or ON DUPLICATE KEY UPDATE may leave out: the
    /// answer and LAST_INSERT_ID() follow the rows actually inserted (`UpsertRows`).
    pub upsert: Option<UpsertRows>,
    /// What kind of INSERT it is (`None`: the plan of an UPDATE or DELETE).
    pub kind: Option<InsertKind>,
}

/// How an INSERT treats a row that meets an existing key, which its info text counts as a
/// duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertKind {
    Plain,
    /// IGNORE: the row is left out.
    Ignore,
    /// REPLACE or ON DUPLICATE KEY UPDATE: the existing row is replaced or updated.
    Replace,
}

impl InsertKind {
    pub fn of(a: &crate::sql::InsertAnalysis) -> InsertKind {
        // IGNORE with ON DUPLICATE KEY UPDATE counts as duplicates the rows it neither inserted
        // nor updated, as IGNORE alone does.
        if a.replace || (a.on_duplicate_update && !a.ignore) {
            InsertKind::Replace
        } else if a.ignore {
            InsertKind::Ignore
        } else {
            InsertKind::Plain
        }
    }
}

/// An INSERT IGNORE or ON DUPLICATE KEY UPDATE whose generated ids are written as literals
/// (`LAST_INSERT_ID(id)` would move the session's value even for a row left out). MariaDB
/// reports the first AUTO_INCREMENT id it actually inserted, so idgate finds which rows went in
/// (`exec::primitives::upsert_rows`).
#[derive(Debug, Clone)]
pub struct UpsertRows {
    /// Rows may be updated (ON DUPLICATE KEY UPDATE), not only left out (IGNORE).
    pub updates: bool,
    /// IGNORE (also with ON DUPLICATE KEY UPDATE).
    pub ignore: bool,
    /// The update list may give an existing row another id (`id = VALUES(id)`): a generated id
    /// found in the table then does not prove its row was inserted.
    pub id_may_change: bool,
    /// RETURNING: each part answers the rows it inserted, not an OK.
    pub returning: bool,
    /// The table's schema (set once the session's database is known) and name, and its id
    /// column: where to ask which generated ids exist.
    pub schema: String,
    pub table: String,
    pub id_column: String,
    /// Each row's generated id, in the statement's row order (`None`: the row's own id).
    pub generated: Vec<Option<u64>>,
    /// A one-row ON DUPLICATE KEY UPDATE sent with `id = LAST_INSERT_ID(id)` added to its
    /// list: the backend's insert id names the row it matched, or is the new row's id (or 0).
    pub names_matched: bool,
}

/// What AUTO_INCREMENT would do with one row's id value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// No value, NULL or DEFAULT: a new id.
    Generate,
    /// 0 (or a string reading as 0): a new id unless sql_mode has NO_AUTO_VALUE_ON_ZERO.
    GenerateUnlessZeroIsValue,
    /// Any other value: the row keeps it.
    Keep,
}

/// [`Want`] per row of the statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wants {
    pub rows: Vec<Want>,
}

impl Wants {
    /// Whether the answer depends on sql_mode: only then must the session ask a backend for it.
    pub fn zero_seen(&self) -> bool {
        self.rows.contains(&Want::GenerateUnlessZeroIsValue)
    }

    /// Whether row `row` gets a new id, given sql_mode's NO_AUTO_VALUE_ON_ZERO.
    pub fn generates(&self, row: usize, zero_is_value: bool) -> bool {
        match self.rows.get(row) {
            Some(Want::Generate) => true,
            Some(Want::GenerateUnlessZeroIsValue) => !zero_is_value,
            _ => false,
        }
    }
}

pub(super) fn err(code: u16, state: &[u8; 5], msg: impl Into<String>) -> SqlError {
    SqlError::new(code, state, msg)
}

/// Refuses what idgate cannot plan before anything else is looked at: INSERT … SELECT (the
/// session runs those its own way), an ON DUPLICATE KEY UPDATE that would move a row, and
/// IGNORE/REPLACE/upserts whose keys would hold per shard only.
pub fn check_statement(stmt: &[u8], a: &InsertAnalysis, rule: &TableRule) -> Result<(), SqlError> {
    super::unique_keys::per_shard_key_write(a, rule)?;
    if matches!(a.body, InsertBody::Select { .. }) {
        return Err(err(
            sql::ER_NOT_SUPPORTED_YET,
            b"42000",
            format!(
                "INSERT ... SELECT into `{}` is not supported: idgate gives each row its id and shard, \
                 so it must see the rows; insert them with VALUES",
                a.table.name
            ),
        ));
    }
    if a.on_duplicate_update {
        refuse_moving_update(stmt, rule)?;
    }
    Ok(())
}

/// ON DUPLICATE KEY UPDATE that changes a sharding column (or the id of a sharded table) would
/// leave the row on a shard that no longer owns it.
fn refuse_moving_update(stmt: &[u8], rule: &TableRule) -> Result<(), SqlError> {
    let Placement::Sharded { columns, .. } = &rule.placement else {
        return Ok(());
    };
    let assigned = crate::sql::duplicate_update_changed_columns(stmt).map_err(SqlError::from)?;
    match assigned.iter().find(|c| {
        columns.iter().any(|s| s.eq_ignore_ascii_case(c)) || c.eq_ignore_ascii_case(&rule.id_column)
    }) {
        Some(c) => Err(err(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            format!(
                "ON DUPLICATE KEY UPDATE of `{c}` in sharded table `{}` would move the row to another shard; \
                 update the other columns only, or delete the row and insert it again",
                rule.name
            ),
        )),
        None => Ok(()),
    }
}

/// Checks that the id column can hold what a generator of `kind` makes.
pub fn check_id_type(
    rule: &TableRule,
    kind: &str,
    meta: &TableMeta,
    table: &str,
) -> Result<(), SqlError> {
    let Some(ty) = meta.column_type(&rule.id_column) else {
        return Err(err(
            1054,
            b"42S22",
            format!(
                "Unknown column '{}' in '{table}': idgate's config names it as the id column; fix tables.{table}.id_column",
                rule.id_column
            ),
        ));
    };
    let ok = match kind {
        "uuidv7" => ty.starts_with("binary(16)") || ty.contains("char("),
        "segment" => ty.contains("int"),
        _ => ty.starts_with("bigint"),
    };
    if ok {
        return Ok(());
    }
    Err(err(
        errors::ER_UNKNOWN_ERROR,
        b"HY000",
        format!(
            "Column '{}' of '{table}' is {ty}, too small for the {kind} generator's ids; \
             make it {}",
            rule.id_column,
            if kind == "uuidv7" {
                "BINARY(16) or CHAR(36)"
            } else {
                "BIGINT"
            }
        ),
    ))
}

/// The value `a` gives `column` in row `row`.
pub fn value_of<'a>(
    a: &'a InsertAnalysis,
    meta: &TableMeta,
    row: usize,
    column: &str,
) -> Option<&'a Value> {
    match &a.body {
        InsertBody::Values { rows } => {
            let idx = match &a.columns {
                Some(cols) => cols
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(column))?,
                None => meta.position(column)?,
            };
            rows.get(row)?.values.get(idx)
        }
        InsertBody::Set { assignments } => assignments
            .iter()
            .find(|x| x.column.name.eq_ignore_ascii_case(column))
            .map(|x| &x.value),
        InsertBody::Select { .. } => None,
    }
}

/// Index of the id column in the statement's column/SET list, or in the table when the statement
/// has no column list; `None` when the statement leaves it out.
pub(super) fn id_index(a: &InsertAnalysis, meta: &TableMeta, id_column: &str) -> Option<usize> {
    match (&a.body, &a.columns) {
        (InsertBody::Set { assignments }, _) => assignments
            .iter()
            .position(|x| x.column.name.eq_ignore_ascii_case(id_column)),
        (_, Some(cols)) => cols
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(id_column)),
        (_, None) => meta.position(id_column),
    }
}

pub(super) fn row_count(a: &InsertAnalysis) -> usize {
    match &a.body {
        InsertBody::Values { rows } => rows.len(),
        InsertBody::Set { .. } => 1,
        InsertBody::Select { .. } => 0,
    }
}

/// A literal the shard algorithms take.
pub fn shard_value(v: &Value) -> Option<ShardValue> {
    match &v.kind {
        ValueKind::Int(i) => Some(ShardValue::Int(*i)),
        ValueKind::Str(s) => Some(ShardValue::Str(s.clone())),
        _ => None,
    }
}

/// The id value of `row`, when the statement gives one.
fn id_value<'a>(
    a: &'a InsertAnalysis,
    rule: &TableRule,
    meta: &TableMeta,
    existing: Option<usize>,
    row: usize,
) -> Option<&'a Value> {
    existing.and_then(|_| value_of(a, meta, row, &rule.id_column))
}

/// Which rows get a generated id, as AUTO_INCREMENT decides (sql_mode aside: see
/// [`Wants::zero_seen`]).
pub fn wanted_ids(
    a: &InsertAnalysis,
    rule: &TableRule,
    meta: &TableMeta,
) -> Result<Wants, SqlError> {
    let existing = id_index(a, meta, &rule.id_column);
    let n = row_count(a);
    let mut rows = Vec::with_capacity(n);
    for row in 0..n {
        rows.push(
            match id_value(a, rule, meta, existing, row).map(|v| &v.kind) {
                None | Some(ValueKind::Null) | Some(ValueKind::Default) => Want::Generate,
                Some(k) if means_zero(k) => Want::GenerateUnlessZeroIsValue,
                Some(ValueKind::Placeholder(_)) => {
                    return Err(err(
                        sql::ER_PARSE_ERROR,
                        b"42000",
                        "a `?` placeholder outside a prepared statement",
                    ))
                }
                Some(_) => Want::Keep,
            },
        );
    }
    Ok(Wants { rows })
}

/// Each row's id before the generator runs: `Generated(0)` slots for the generator to fill, the
/// statement's own values elsewhere. Applies `explicit_ids: reject`. `zero_is_value`: sql_mode
/// has NO_AUTO_VALUE_ON_ZERO (only asked for when [`Wants::zero_seen`]).
pub fn row_ids(
    a: &InsertAnalysis,
    rule: &TableRule,
    meta: &TableMeta,
    wants: &Wants,
    zero_is_value: bool,
) -> Result<Vec<RowId>, SqlError> {
    let existing = id_index(a, meta, &rule.id_column);
    let generate = rule.generator.is_some();
    let mut ids = Vec::with_capacity(wants.rows.len());
    for row in 0..wants.rows.len() {
        if generate && wants.generates(row, zero_is_value) {
            ids.push(RowId::Generated(0));
            continue;
        }
        if generate && rule.explicit_ids == ExplicitIds::Reject {
            return Err(err(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!(
                    "Explicit value for `{}`.`{}` rejected (explicit_ids: reject): leave the column out or pass NULL and idgate generates it",
                    a.table.name, rule.id_column
                ),
            ));
        }
        ids.push(RowId::Explicit(
            match id_value(a, rule, meta, existing, row).map(|v| &v.kind) {
                Some(ValueKind::Int(i)) => Some(*i),
                _ => None,
            },
        ));
    }
    Ok(ids)
}

/// A value MySQL stores as 0 in an integer id column, which AUTO_INCREMENT replaces with a new
/// id: `0`, and strings such as '0' or ' 00' that convert to it.
fn means_zero(k: &ValueKind) -> bool {
    match k {
        ValueKind::Int(0) => true,
        ValueKind::Str(s) => {
            std::str::from_utf8(s)
                .ok()
                .and_then(|t| t.trim().parse::<i128>().ok())
                == Some(0)
        }
        _ => false,
    }
}
