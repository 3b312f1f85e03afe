//! `INSERT … SELECT` into a table idgate fills ids for or places, once the SELECT's whole
//! answer is read (as MariaDB reads its source before it writes): each row gets its id where
//! AUTO_INCREMENT would give one, goes to its shard, and is written in multi-row INSERTs of
//! bounded size, all-or-nothing (`bulk_write`); the answer is the OK MariaDB gives.

use std::sync::Arc;

use mysql_common::constants::ColumnType;

use super::bulk_write::{self, BulkOk, Outcome, Share};
use super::insert_source::{Source, SourceColumn};
use super::upsert_rows;
use crate::config::tables::ExplicitIds;
use crate::exec::metadata::TableMeta;
use crate::exec::WriteCursor;
use crate::idgen::{Generator, NewIds};
use crate::route::row_shards::{rows_by_shard, RowShardError};
use crate::route::{Placement, ShardValue, TableRule};
use crate::sql::{self, InsertAnalysis};
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// Most rows, and about the most bytes, one INSERT a backend gets carries.
const BATCH_ROWS: usize = 1000;
const BATCH_BYTES: usize = 1 << 20;

/// The savepoint that makes the statement all-or-nothing inside the client's transaction.
const SAVEPOINT: &str = "idgate_insert_select";

/// How the write ended.
#[derive(Debug)]
pub enum Written {
    /// The OK for the client, and the first id idgate generated (LAST_INSERT_ID's new value).
    Done {
        ok: BulkOk,
        first_generated: Option<u64>,
    },
    /// A backend refused a batch (its ERR packet, for the client as it is); nothing was kept.
    Failed(Vec<u8>),
    /// idgate's own error for the client.
    Refused(SqlError),
}

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

pub fn failed(msg: String) -> SqlError {
    SqlError::new(errors::ER_UNKNOWN_ERROR, b"HY000", msg)
}

/// Where one row's id comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowId {
    /// The row's own value (its column, or none when idgate does not fill ids).
    Own,
    Number(u64),
    /// A UUID as the literal the id column takes.
    Text(Vec<u8>),
}

/// The table the rows go to, and how a source row maps onto its columns.
pub struct Target {
    pub schema: String,
    pub meta: Arc<TableMeta>,
    /// The columns the SELECT's values fill, in order.
    pub columns: Vec<String>,
    pub generator: Option<Arc<Generator>>,
    /// Index of the id column among `columns` (`None`: idgate adds it in front).
    pub id_pos: Option<usize>,
    /// An explicit 0 is stored as 0 (the session's sql_mode has NO_AUTO_VALUE_ON_ZERO), not
    /// replaced by a generated id.
    pub zero_is_value: bool,
}

impl Target {
    fn position(&self, column: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(column))
    }
}

/// Shapes whose outcome idgate could not make what MariaDB's would be.
pub fn refuse_shape(a: &InsertAnalysis) -> Result<(), SqlError> {
    let table = &a.table.name;
    if a.on_duplicate_update {
        return Err(unsupported(format!(
            "INSERT ... SELECT ... ON DUPLICATE KEY UPDATE into `{table}` is not supported: its \
             UPDATE may name the SELECT's columns, which the shards never see; use INSERT IGNORE \
             ... SELECT and UPDATE the existing rows separately"
        )));
    }
    if a.returning {
        return Err(unsupported(format!(
            "INSERT ... SELECT ... RETURNING into `{table}` is not supported; SELECT the rows \
             after the INSERT by their ids"
        )));
    }
    Ok(())
}

/// The value a row gives a sharding or bias column: integers by value, anything else by its
/// text, as the same literal in a VALUES row would.
fn shard_value(v: Option<&[u8]>, col: &SourceColumn) -> Option<ShardValue> {
    let v = v?;
    if col.is_integer() {
        if let Some(i) = std::str::from_utf8(v)
            .ok()
            .and_then(|t| t.parse::<i128>().ok())
        {
            return Some(ShardValue::Int(i));
        }
    }
    Some(ShardValue::Str(v.to_vec()))
}

/// `0` as AUTO_INCREMENT reads it (a number or a string converting to 0).
fn means_zero(v: &[u8]) -> bool {
    std::str::from_utf8(v)
        .ok()
        .and_then(|t| t.trim().parse::<f64>().ok())
        == Some(0.0)
}

/// Each row's id: its own value, or a generated one where AUTO_INCREMENT would generate
/// (no id column, NULL, or 0 unless NO_AUTO_VALUE_ON_ZERO).
pub async fn source_ids(
    rule: &TableRule,
    target: &Target,
    source: &Source,
) -> Result<Vec<RowId>, SqlError> {
    let n = source.rows.len();
    let Some(g) = &target.generator else {
        return Ok(vec![RowId::Own; n]);
    };
    let mut slots = Vec::new();
    for k in 0..n {
        let given = match target.id_pos {
            Some(p) => source.value(k, p),
            None => None,
        };
        let generate = match given {
            None => true,
            Some(v) => !target.zero_is_value && means_zero(v),
        };
        if generate {
            slots.push(k);
        } else if rule.explicit_ids == ExplicitIds::Reject {
            return Err(failed(format!(
                "Explicit value for `{}`.`{}` in row {} of the SELECT rejected (explicit_ids: \
                 reject): leave the column out of the INSERT or select NULL and idgate \
                 generates it",
                rule.name,
                rule.id_column,
                k + 1
            )));
        }
    }
    let mut ids = vec![RowId::Own; n];
    let gen_err = |e: crate::idgen::IdGenError| failed(format!("idgate: {e}"));
    let binary = crate::route::insert_ids::id_column_is_binary(rule, &target.meta);
    for chunk in slots.chunks(BATCH_ROWS) {
        let bias = match g.takes_bias() {
            true => chunk_bias(rule, target, source, chunk)?,
            false => Vec::new(),
        };
        match g.next_ids(chunk.len(), &bias).await.map_err(gen_err)? {
            NewIds::Uuids(out) => {
                for (&k, u) in chunk.iter().zip(&out) {
                    ids[k] = RowId::Text(crate::route::insert_ids::uuid_literal(u, binary));
                }
            }
            new => {
                for (n, &k) in chunk.iter().enumerate() {
                    if let Some(id) = new.number(n) {
                        ids[k] = RowId::Number(id);
                    }
                }
            }
        }
    }
    Ok(ids)
}

/// The bias each row of `chunk` gives a biased generator: its value of the bias column.
fn chunk_bias(
    rule: &TableRule,
    target: &Target,
    source: &Source,
    chunk: &[usize],
) -> Result<Vec<u64>, SqlError> {
    let column = rule.bias_column.as_deref().unwrap_or("");
    let pos = target.position(column);
    chunk
        .iter()
        .map(|&k| {
            let b = pos
                .and_then(|p| source.value(k, p))
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|t| t.trim().parse::<i128>().ok());
            b.map(|b| b as u64).ok_or_else(|| {
                failed(format!(
                    "Row {} of the SELECT needs an integer for `{column}` of `{}`: the id's low \
                     bits copy it",
                    k + 1,
                    rule.name
                ))
            })
        })
        .collect()
}

/// The backends the rows go to, each with its rows in source order.
pub fn shard_rows(
    rule: &TableRule,
    target: &Target,
    source: &Source,
    ids: &[RowId],
) -> Result<Vec<Share>, SqlError> {
    let all = || (0..source.rows.len()).collect::<Vec<_>>();
    let share = |backend: &String, items| Share {
        backend: backend.clone(),
        items,
    };
    let (columns, algorithm, shards) = match &rule.placement {
        Placement::Single { backend } => return Ok(vec![share(backend, all())]),
        Placement::Broadcast { backends } => {
            return Ok(backends.iter().map(|b| share(b, all())).collect())
        }
        Placement::Sharded {
            columns,
            algorithm,
            shards,
        } => (columns, algorithm, shards),
    };
    let value = |k: usize, c: &str| match &ids[k] {
        RowId::Number(n) if c.eq_ignore_ascii_case(&rule.id_column) => {
            Some(ShardValue::Int(i128::from(*n)))
        }
        RowId::Text(t) if c.eq_ignore_ascii_case(&rule.id_column) => {
            Some(ShardValue::Str(t.clone()))
        }
        _ => target
            .position(c)
            .and_then(|p| shard_value(source.value(k, p), &source.columns[p])),
    };
    let rows = source.rows.len();
    let by_shard = rows_by_shard(columns, algorithm, shards.len(), rows, value).map_err(|e| {
        failed(match e {
            RowShardError::NoValue { row, column } => format!(
                "Row {} of the SELECT gives no value for the sharding column `{column}` of \
                 `{}`; idgate needs it to choose the shard",
                row + 1,
                rule.name
            ),
            RowShardError::Algorithm(m) => m,
        })
    })?;
    Ok(shards
        .iter()
        .zip(by_shard)
        .filter(|(_, rows)| !rows.is_empty())
        .map(|(b, rows)| share(b, rows))
        .collect())
}

/// Writes the rows in bounded multi-row INSERTs, all-or-nothing, and gives the OK MariaDB
/// would give for the whole statement.
pub async fn write_rows<C: WriteCursor>(
    cursor: &mut C,
    a: &InsertAnalysis,
    rule: &TableRule,
    target: &Target,
    (source, ids): (&Source, &[RowId]),
    shares: &[Share],
) -> Result<Written, C::End> {
    let first_generated = ids.iter().find_map(|r| match r {
        RowId::Number(n) => Some(*n),
        _ => None,
    });
    let records = source.rows.len() as u64;
    let mut tally = Tally::default();
    let head = statement_head(a, rule, target);
    let broadcast = matches!(rule.placement, Placement::Broadcast { .. });
    let written = bulk_write::write_batches(
        cursor,
        shares,
        |_, rows| render_batch(&head, target, source, ids, rows),
        SAVEPOINT,
        "INSERT ... SELECT",
    )
    .await?;
    let oks = match written {
        Outcome::Written(oks) => oks,
        Outcome::Failed(e) => return Ok(Written::Failed(e)),
        Outcome::Refused(e) => return Ok(Written::Refused(e)),
    };
    // A broadcast table's rows are counted once, as its first backend wrote them.
    for b in oks.iter().filter(|b| !(broadcast && b.share > 0)) {
        tally.add(&b.ok, b.items, a);
    }
    // IGNORE may leave the first row out: MariaDB reports the first row it inserted.
    let first_generated = match first_generated {
        Some(_) if a.ignore => {
            let table = (rule, a.table.name.as_str());
            first_ignored_in(cursor, table, target, (shares, ids), &oks).await?
        }
        first => first,
    };
    // MariaDB reports the first generated id; with only explicit ids, the last row's.
    let insert_id = match first_generated {
        Some(id) => id,
        None if tally.affected > 0 && target.generator.is_some() => target
            .id_pos
            .and_then(|p| {
                (0..source.rows.len()).rev().find_map(|k| {
                    let v = source.value(k, p)?;
                    std::str::from_utf8(v).ok()?.parse::<u64>().ok()
                })
            })
            .unwrap_or(0),
        None => tally.insert_id,
    };
    let warnings = tally.warnings.min(u64::from(u16::MAX)) as u16;
    let text = format!(
        "Records: {records}  Duplicates: {}  Warnings: {}",
        tally.duplicates, tally.warnings
    );
    let ok = BulkOk {
        affected: tally.affected,
        insert_id,
        warnings,
        info: text.into_bytes(),
    };
    Ok(Written::Done {
        ok,
        first_generated,
    })
}

/// The first generated id an INSERT IGNORE … SELECT inserted, found from each batch's counts
/// or read back (`upsert_rows`). A read-back that fails is logged and reports none.
async fn first_ignored_in<C: WriteCursor>(
    cursor: &mut C,
    (rule, table): (&TableRule, &str),
    target: &Target,
    (shares, ids): (&[Share], &[RowId]),
    oks: &[bulk_write::BatchOk],
) -> Result<Option<u64>, C::End> {
    let broadcast = matches!(rule.placement, Placement::Broadcast { .. });
    let mut taken = vec![0usize; shares.len()];
    let mut candidates = Vec::new();
    for b in oks {
        let (Some(share), Some(start)) = (shares.get(b.share), taken.get_mut(b.share)) else {
            continue;
        };
        let end = (*start + b.items as usize).min(share.items.len());
        let rows = &share.items[*start..end];
        *start = end;
        if broadcast && b.share > 0 {
            continue;
        }
        candidates.push(upsert_rows::Candidates {
            backend: &share.backend,
            inserted: upsert_rows::judge(upsert_rows::SKIPPING, (rows.len(), None, false), &b.ok),
            rows: rows
                .iter()
                .filter_map(|&r| match ids.get(r) {
                    Some(RowId::Number(n)) => Some((r, *n)),
                    _ => None,
                })
                .collect(),
        });
    }
    // Batches come back a round at a time: put them in row order.
    candidates.sort_by_key(|c| c.rows.first().map_or(usize::MAX, |(r, _)| *r));
    let table = upsert_rows::IdTable {
        schema: &target.schema,
        table,
        column: &rule.id_column,
    };
    Ok(
        match upsert_rows::first_inserted(cursor, &table, &candidates).await? {
            Ok(first) => first,
            Err(e) => {
                tracing::warn!(error = %e.message, "could not learn which rows an INSERT IGNORE … SELECT inserted");
                None
            }
        },
    )
}

/// What the backends' OKs add up to.
#[derive(Default)]
struct Tally {
    affected: u64,
    duplicates: u64,
    warnings: u64,
    /// The first insert id a backend reported (a table idgate only places).
    insert_id: u64,
}

impl Tally {
    fn add(&mut self, ok: &[u8], rows: u64, a: &InsertAnalysis) {
        let Some(o) = packets::parse_ok(ok) else {
            return;
        };
        self.affected += o.affected_rows;
        self.warnings += u64::from(o.warnings);
        if self.insert_id == 0 {
            self.insert_id = o.last_insert_id;
        }
        // A one-row INSERT's OK carries no info text: its duplicates follow from the count.
        let info = String::from_utf8_lossy(packets::ok_info(ok)).into_owned();
        let from_info = info
            .split("  ")
            .find_map(|f| f.strip_prefix("Duplicates: ")?.parse::<u64>().ok());
        self.duplicates += match from_info {
            Some(d) => d,
            None if a.ignore => rows.saturating_sub(o.affected_rows),
            None if a.replace => o.affected_rows.saturating_sub(rows),
            None => 0,
        };
    }
}

/// `INSERT [IGNORE] INTO schema.table (columns) VALUES ` as every batch starts.
fn statement_head(a: &InsertAnalysis, rule: &TableRule, target: &Target) -> Vec<u8> {
    let add_id = target.generator.is_some() && target.id_pos.is_none();
    let id = add_id.then_some(rule.id_column.as_str());
    let columns = id
        .into_iter()
        .chain(target.columns.iter().map(String::as_str));
    insert_head(a, &target.schema, columns)
}

/// `INSERT [IGNORE] INTO schema.table (columns) VALUES ` (or `REPLACE`), as `a` writes.
fn insert_head<'c>(
    a: &InsertAnalysis,
    schema: &str,
    columns: impl Iterator<Item = &'c str>,
) -> Vec<u8> {
    let mut s = if a.replace {
        b"REPLACE ".to_vec()
    } else if a.ignore {
        b"INSERT IGNORE ".to_vec()
    } else {
        b"INSERT ".to_vec()
    };
    s.extend_from_slice(b"INTO ");
    sql::push_name(&mut s, schema.as_bytes());
    s.push(b'.');
    sql::push_name(&mut s, a.table.name.as_bytes());
    s.extend_from_slice(b" (");
    for (k, c) in columns.enumerate() {
        if k > 0 {
            s.push(b',');
        }
        sql::push_name(&mut s, c.as_bytes());
    }
    s.extend_from_slice(b") VALUES ");
    s
}

/// The SELECT's rows as one `INSERT … VALUES` of the same kind into the same columns, each
/// value a literal that reads back as itself: for a table whose unique keys idgate checks row by
/// row (`unique: global`), which runs it as it runs such an INSERT.
pub fn values_statement(a: &InsertAnalysis, target: &Target, source: &Source) -> Vec<u8> {
    let columns = target.columns.iter().map(String::as_str);
    let mut s = insert_head(a, &target.schema, columns);
    for k in 0..source.rows.len() {
        if k > 0 {
            s.push(b',');
        }
        s.push(b'(');
        for p in 0..target.columns.len() {
            if p > 0 {
                s.push(b',');
            }
            source.push_literal(&mut s, k, p);
        }
        s.push(b')');
    }
    s
}

/// One INSERT with the first rows of `rows` (at most `BATCH_ROWS`, and no more rows once it
/// passed `BATCH_BYTES`); returns it and how many rows it carries.
fn render_batch(
    head: &[u8],
    target: &Target,
    source: &Source,
    ids: &[RowId],
    rows: &[usize],
) -> (Vec<u8>, usize) {
    let mut s = head.to_vec();
    let mut taken = 0;
    for &k in rows.iter().take(BATCH_ROWS) {
        if taken > 0 {
            if s.len() >= BATCH_BYTES {
                break;
            }
            s.push(b',');
        }
        s.push(b'(');
        let id_literal = |out: &mut Vec<u8>| match &ids[k] {
            RowId::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
            RowId::Text(t) => out.extend_from_slice(t),
            RowId::Own => out.extend_from_slice(b"NULL"),
        };
        let add_id = target.generator.is_some() && target.id_pos.is_none();
        if add_id {
            id_literal(&mut s);
        }
        for p in 0..target.columns.len() {
            if p > 0 || add_id {
                s.push(b',');
            }
            if Some(p) == target.id_pos && !matches!(ids[k], RowId::Own) {
                id_literal(&mut s);
            } else {
                source.push_literal(&mut s, k, p);
            }
        }
        s.push(b')');
        taken += 1;
    }
    (s, taken)
}

/// Appends `bytes` as hex digits.
pub fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 15)]);
    }
}

/// Whether a source column holds integers (sharding values compare as numbers).
impl SourceColumn {
    fn is_integer(&self) -> bool {
        use ColumnType::*;
        matches!(
            self.ty,
            MYSQL_TYPE_TINY
                | MYSQL_TYPE_SHORT
                | MYSQL_TYPE_LONG
                | MYSQL_TYPE_LONGLONG
                | MYSQL_TYPE_INT24
                | MYSQL_TYPE_YEAR
        )
    }
}
