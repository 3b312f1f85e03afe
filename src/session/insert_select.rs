//! `INSERT … SELECT` into a table idgate fills ids for or places. The SELECT runs as any SELECT
//! through idgate (one shard, concatenated over shards, or merged) and its whole answer is read
//! into idgate first, as MariaDB reads its source before it writes; then each row gets its id
//! where AUTO_INCREMENT would give one and goes to its shard in multi-row INSERTs of bounded
//! size, all-or-nothing (`bulk_write`), answered with the OK MariaDB gives.

use std::sync::Arc;

use mysql_common::constants::ColumnType;
use tokio::io::{AsyncRead, AsyncWrite};

use super::bulk_write::BulkOk;
use super::dml::Route;
use super::fetch::FetchLimits;
use super::insert_source::{Source, SourceColumn};
use super::query::Step;
use super::{End, Session};
use crate::config::tables::ExplicitIds;
use crate::exec::metadata::TableMeta;
use crate::exec::primitives::bulk_write::{self, Outcome, Share};
use crate::exec::StatementScope;
use crate::idgen::Generator;
use crate::route::{Placement, ShardValue, TableRule};
use crate::sql::{self, InsertAnalysis, InsertBody, StatementKind};
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// Most rows, and about the most bytes, one INSERT a backend gets carries.
const BATCH_ROWS: usize = 1000;
const BATCH_BYTES: usize = 1 << 20;

/// The savepoint that makes the statement all-or-nothing inside the client's transaction.
const SAVEPOINT: &str = "idgate_insert_select";

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

fn failed(msg: String) -> SqlError {
    SqlError::new(errors::ER_UNKNOWN_ERROR, b"HY000", msg)
}

/// Where one row's id comes from.
#[derive(Clone)]
enum RowId {
    /// The row's own value (its column, or none when idgate does not fill ids).
    Own,
    Number(u64),
    /// A UUID as the literal the id column takes.
    Text(Vec<u8>),
}

/// The table the rows go to, and how a source row maps onto its columns.
struct Target {
    schema: String,
    meta: Arc<TableMeta>,
    /// The columns the SELECT's values fill, in order.
    columns: Vec<String>,
    generator: Option<Arc<Generator>>,
    /// Index of the id column among `columns` (`None`: idgate adds it in front).
    id_pos: Option<usize>,
    zero_is_value: bool,
}

impl Target {
    fn position(&self, column: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(column))
    }
}

/// Shapes whose outcome idgate could not make what MariaDB's would be.
fn refuse_shape(a: &InsertAnalysis) -> Result<(), SqlError> {
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

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Runs `INSERT … SELECT` (`a`'s body is a query) into `rule`'s table.
    pub(super) async fn run_insert_select(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
        more: bool,
        scope: StatementScope,
    ) -> Step {
        match Box::pin(self.insert_select(stmt, a, rule, more, scope)).await {
            Ok(true) => Step::Ok,
            Ok(false) => Step::Failed,
            Err(end) => Step::End(end),
        }
    }

    /// `Ok(false)`: the client got an error.
    async fn insert_select(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
        more: bool,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let InsertBody::Select { query } = &a.body else {
            return Ok(false);
        };
        let query = &stmt[query.clone()];
        let target = match refuse_shape(a) {
            Ok(()) => self.insert_target(a, rule).await,
            Err(e) => Err(e),
        };
        let target = match target {
            Ok(t) => t,
            Err(e) => {
                self.send_error(&e);
                return Ok(false);
            }
        };
        // Every source row is read before anything is written (the source may be the target).
        let Some(source) = self.read_source(query, scope).await? else {
            return Ok(false);
        };
        if source.columns.len() != target.columns.len() {
            self.send_error(&SqlError::new(
                1136,
                b"21S01",
                "Column count doesn't match value count at row 1",
            ));
            return Ok(false);
        }
        let planned = match self.source_ids(rule, &target, &source).await {
            Ok(ids) => self
                .shard_rows(rule, &target, &source, &ids)
                .map(|s| (ids, s)),
            Err(e) => Err(e),
        };
        let (ids, shards) = match planned {
            Ok(p) => p,
            Err(e) => {
                self.send_error(&e);
                return Ok(false);
            }
        };
        let first_generated = ids.iter().find_map(|r| match r {
            RowId::Number(n) => Some(*n),
            _ => None,
        });
        self.write_rows(
            a,
            rule,
            &target,
            &source,
            &ids,
            shards,
            first_generated,
            more,
            scope,
        )
        .await
    }

    /// The target table's columns, generator and id column.
    async fn insert_target(
        &mut self,
        a: &InsertAnalysis,
        rule: &TableRule,
    ) -> Result<Target, SqlError> {
        let schema = match (&a.table.schema, &self.db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => return Err(SqlError::new(1046, b"3D000", "No database selected")),
        };
        let meta = self.table_meta(rule, &schema, &a.table.name).await?;
        let columns: Vec<String> = match &a.columns {
            Some(cols) => cols.iter().map(|c| c.name.clone()).collect(),
            None => meta.columns.clone(),
        };
        let generator = match &rule.generator {
            Some(g) => Some(
                self.proxy
                    .idgen
                    .get(g)
                    .cloned()
                    .map_err(|e| failed(e.to_string()))?,
            ),
            None => None,
        };
        if let Some(g) = &generator {
            crate::route::insert::check_id_type(rule, g.kind(), &meta, &a.table.name)?;
        }
        let id_pos = columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(&rule.id_column));
        let zero_is_value = id_pos.is_some()
            && generator.is_some()
            && (!meta.is_auto_increment(&rule.id_column) || self.no_auto_value_on_zero().await?);
        Ok(Target {
            schema,
            meta,
            columns,
            generator,
            id_pos,
            zero_is_value,
        })
    }

    /// Each row's id: its own value, or a generated one where AUTO_INCREMENT would generate
    /// (no id column, NULL, or 0 unless NO_AUTO_VALUE_ON_ZERO).
    async fn source_ids(
        &mut self,
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
        for chunk in slots.chunks(BATCH_ROWS) {
            match g.kind() {
                "uuidv7" => {
                    let mut out = Vec::with_capacity(chunk.len());
                    g.next_uuids(chunk.len(), &mut out).map_err(gen_err)?;
                    let binary = target
                        .meta
                        .column_type(&rule.id_column)
                        .is_some_and(|t| t.starts_with("binary"));
                    for (&k, u) in chunk.iter().zip(out) {
                        let text = if binary {
                            let mut t = b"X'".to_vec();
                            push_hex(&mut t, u.as_bytes());
                            t.push(b'\'');
                            t
                        } else {
                            let mut t = b"'".to_vec();
                            t.extend_from_slice(&u.to_hyphenated());
                            t.push(b'\'');
                            t
                        };
                        ids[k] = RowId::Text(text);
                    }
                }
                "biased" => {
                    let column = rule.bias_column.as_deref().unwrap_or("");
                    let pos = target.position(column);
                    let mut bias = Vec::with_capacity(chunk.len());
                    for &k in chunk {
                        let b = pos
                            .and_then(|p| source.value(k, p))
                            .and_then(|v| std::str::from_utf8(v).ok())
                            .and_then(|t| t.trim().parse::<i128>().ok());
                        let Some(b) = b else {
                            return Err(failed(format!(
                                "Row {} of the SELECT needs an integer for `{column}` of `{}`: \
                                 the id's low bits copy it",
                                k + 1,
                                rule.name
                            )));
                        };
                        bias.push(b as u64);
                    }
                    let mut out = Vec::with_capacity(chunk.len());
                    g.next_biased(&bias, &mut out).await.map_err(gen_err)?;
                    for (&k, id) in chunk.iter().zip(out) {
                        ids[k] = RowId::Number(id);
                    }
                }
                _ => {
                    let count = chunk.len() as u64;
                    let block = match g.try_next_block(count) {
                        Some(b) => b,
                        None => g.next_block(count).await.map_err(gen_err)?,
                    };
                    for (&k, id) in chunk.iter().zip(block.iter()) {
                        ids[k] = RowId::Number(id);
                    }
                }
            }
        }
        Ok(ids)
    }

    /// The backends the rows go to, each with its rows in source order.
    fn shard_rows(
        &self,
        rule: &TableRule,
        target: &Target,
        source: &Source,
        ids: &[RowId],
    ) -> Result<Vec<(String, Vec<usize>)>, SqlError> {
        let all = || (0..source.rows.len()).collect::<Vec<_>>();
        let (columns, algorithm, shards) = match &rule.placement {
            Placement::Single { backend } => return Ok(vec![(backend.clone(), all())]),
            Placement::Broadcast { backends } => {
                return Ok(backends.iter().map(|b| (b.clone(), all())).collect())
            }
            Placement::Sharded {
                columns,
                algorithm,
                shards,
            } => (columns, algorithm, shards),
        };
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); shards.len()];
        for (k, id) in ids.iter().enumerate() {
            let mut value = None;
            let mut used = "";
            for c in columns {
                used = c;
                let generated = c.eq_ignore_ascii_case(&rule.id_column);
                value = match id {
                    RowId::Number(n) if generated => Some(ShardValue::Int(i128::from(*n))),
                    RowId::Text(t) if generated => Some(ShardValue::Str(t.clone())),
                    _ => target
                        .position(c)
                        .and_then(|p| shard_value(source.value(k, p), &source.columns[p])),
                };
                if value.is_some() {
                    break;
                }
            }
            let Some(value) = value else {
                return Err(failed(format!(
                    "Row {} of the SELECT gives no value for the sharding column `{used}` of \
                     `{}`; idgate needs it to choose the shard",
                    k + 1,
                    rule.name
                )));
            };
            let s = algorithm
                .shard_of(&value, shards.len(), used)
                .map_err(|e| failed(e.to_string()))?;
            by_shard[s].push(k);
        }
        Ok(shards
            .iter()
            .cloned()
            .zip(by_shard)
            .filter(|(_, rows)| !rows.is_empty())
            .collect())
    }

    /// Writes the rows in bounded multi-row INSERTs, all-or-nothing, and answers the client.
    #[allow(clippy::too_many_arguments)]
    async fn write_rows(
        &mut self,
        a: &InsertAnalysis,
        rule: &TableRule,
        target: &Target,
        source: &Source,
        ids: &[RowId],
        shards: Vec<(String, Vec<usize>)>,
        first_generated: Option<u64>,
        more: bool,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let records = source.rows.len() as u64;
        let mut tally = Tally::default();
        let head = statement_head(a, rule, target);
        let broadcast = matches!(rule.placement, Placement::Broadcast { .. });
        let shares: Vec<Share> = shards
            .into_iter()
            .map(|(backend, items)| Share { backend, items })
            .collect();
        let written = bulk_write::write_batches(
            &mut self.cursor(scope),
            &shares,
            |_, rows| render_batch(&head, target, source, ids, rows),
            SAVEPOINT,
            "INSERT ... SELECT",
        )
        .await?;
        match written {
            Outcome::Written(oks) => {
                // A broadcast table's rows are counted once, as its first backend wrote them.
                for b in oks.iter().filter(|b| !(broadcast && b.share > 0)) {
                    tally.add(&b.ok, b.items, a);
                }
            }
            Outcome::Failed(e) => {
                self.writer.write(&e);
                return Ok(false);
            }
            Outcome::Refused(e) => {
                self.send_error(&e);
                return Ok(false);
            }
        }
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
        self.answer_bulk(&ok, first_generated, more);
        Ok(true)
    }

    /// Reads the SELECT's whole answer, routed as the same SELECT alone would be. `None`: the
    /// client got an error (the connections stay in step).
    async fn read_source(
        &mut self,
        query: &[u8],
        scope: StatementScope,
    ) -> Result<Option<Source>, End> {
        let route = if self.proxy.tables.load().placed_mentioned_in(query) {
            if sql::classify(query) != StatementKind::Select {
                self.send_error(&unsupported(
                    "the query of INSERT ... SELECT into a placed table must be a plain SELECT \
                     when it reads sharded or broadcast tables; write it as SELECT ... FROM"
                        .into(),
                ));
                return Ok(None);
            }
            match self.route_dml(query) {
                Ok(r) => r,
                Err(e) => {
                    self.send_error(&e);
                    return Ok(None);
                }
            }
        } else {
            None
        };
        let route = match route {
            None => Route::One(self.proxy.default_pool.name.clone()),
            Some(r @ (Route::One(_) | Route::Concat(_) | Route::Merge(..))) => r,
            Some(Route::Write { .. } | Route::Everywhere(_)) => {
                self.send_error(&unsupported(
                    "the query of INSERT ... SELECT must be a SELECT".into(),
                ));
                return Ok(None);
            }
        };
        // Bytes are the only cap: merge_memory_limit, applied by the reader.
        let limits = FetchLimits {
            max_rows: u64::MAX,
            max_bytes: u64::MAX,
            enough: None,
        };
        let got = self.fetch_routed(query, route, limits, scope).await?;
        let source = match Source::from_fetch(got) {
            Ok(s) => s,
            Err(e) => {
                self.send_error(&e);
                return Ok(None);
            }
        };
        let mut source = source;
        if let Err(e) = self.resolve_charsets(&mut source).await {
            self.send_error(&e);
            return Ok(None);
        }
        Ok(Some(source))
    }
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
    let mut s = if a.replace {
        b"REPLACE ".to_vec()
    } else if a.ignore {
        b"INSERT IGNORE ".to_vec()
    } else {
        b"INSERT ".to_vec()
    };
    s.extend_from_slice(b"INTO ");
    sql::push_name(&mut s, target.schema.as_bytes());
    s.push(b'.');
    sql::push_name(&mut s, a.table.name.as_bytes());
    s.extend_from_slice(b" (");
    let add_id = target.generator.is_some() && target.id_pos.is_none();
    if add_id {
        sql::push_name(&mut s, rule.id_column.as_bytes());
    }
    for (k, c) in target.columns.iter().enumerate() {
        if k > 0 || add_id {
            s.push(b',');
        }
        sql::push_name(&mut s, c.as_bytes());
    }
    s.extend_from_slice(b") VALUES ");
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
pub(super) fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
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
