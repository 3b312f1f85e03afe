//! Joins no single backend can evaluate (sharded tables not placed alike, a sharded table with
//! one on the default backend), run in the gateway: the driving table's rows are fetched with
//! its own conditions, each further table's rows in batches of the distinct key values of a
//! table fetched before it (`sql::JoinShape::fetch_order`), and the client's statement then
//! runs on the default backend with each table replaced by a literal table of its fetched
//! rows. MariaDB evaluates the join, WHERE, grouping, ordering and LIMIT itself; the literal
//! tables hold every row that can take part in the join, so the answer is the one a single
//! server holding every row gives. Bounded: each table's rows by `max_subquery_rows`, all
//! tables' bytes together by `merge_memory_limit`.
//!
//! A row-wise join (no grouping, aggregates, DISTINCT, ORDER BY, LIMIT: each answer row comes
//! from one driving row) runs a batch of driving rows at a time instead: the further tables are
//! fetched for that batch's rows, the statement runs over that batch's literal tables and its
//! rows go to the client before the next batch, so the further tables are bounded per batch.
//! The driving table never is NULL-extended by an outer join, so each answer row has exactly
//! one driving row and each batch gives exactly its rows.

mod stream;

use std::collections::HashSet;

use tokio::io::{AsyncRead, AsyncWrite};

use super::fetch::{FetchLimits, Fetched};
use super::query::{Plan, Step};
use super::{End, Session};
use crate::exec::relay::Client;
use crate::exec::{BackendError, StatementScope};
use crate::route::colocate::{is_colocation_refusal, rule_for};
use crate::route::Placement;
use crate::sql::{self, JoinShape, JoinSide, StatementKind};
use crate::wire::errors::SqlError;
use crate::wire::packets;
use stream::{relay_batch, BatchEnd, Streamed};

/// Distinct key values per fetch of a further table, and driving rows per batch of a row-wise
/// join: an IN list a shard reads by index, short enough to keep each statement small.
const BATCH: usize = 500;

/// MariaDB's ER_OUT_OF_RESOURCES, as `fetch` gives past `merge_memory_limit`.
const ER_OUT_OF_RESOURCES: u16 = 1037;

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

/// Bytes of fetched rows, as counted against `merge_memory_limit`.
fn row_bytes(rows: &[sql::BoundRow]) -> u64 {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| v.as_ref().map_or(1, |v| v.len() + 1))
                .sum::<usize>() as u64
        })
        .sum()
}

/// One fetch of a gateway join, as the run follows it and `EXPLAIN ROUTE` shows it.
struct Fetch {
    side: usize,
    /// `(side fetched before, its column, this side's column)` the batches use; `None`: read
    /// whole.
    key: Option<(usize, String, String)>,
    /// The key is this side's sharding column: each batch goes to the shards owning it.
    pinned: bool,
}

/// The fetches of a gateway join; the first is the driving table's.
struct Steps {
    fetches: Vec<Fetch>,
}

impl Steps {
    fn driver(&self) -> usize {
        self.fetches.first().map_or(0, |f| f.side)
    }
}

/// The distinct non-NULL values of `column` in `f`'s rows as literals (NULL never equals
/// anything, so it finds no partner); `None` when `f` has no such column.
fn key_values(f: &Fetched, column: &str) -> Option<Vec<Vec<u8>>> {
    let at = f
        .columns
        .iter()
        .position(|c| String::from_utf8_lossy(&c.name).eq_ignore_ascii_case(column))?;
    let mut seen: HashSet<&[u8]> = HashSet::new();
    let mut values = Vec::new();
    for row in &f.rows {
        if let Some(Some(v)) = row.get(at) {
            if seen.insert(v.as_slice()) {
                let mut lit = Vec::new();
                sql::render_value(&f.columns[at], Some(v), &mut lit);
                values.push(lit);
            }
        }
    }
    Some(values)
}

/// `tables` as "`a`, `b` and `c`".
fn table_list(shape: &JoinShape) -> String {
    let names: Vec<String> = shape
        .sides
        .iter()
        .map(|s| format!("`{}`", s.table.name))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The sharding columns of a join side's table, when it is sharded.
    fn sharding_columns(&self, side: &JoinSide) -> Option<Vec<String>> {
        if side.derived {
            return None;
        }
        let rule = self.with_plan_context(|ctx| rule_for(ctx, &side.table))?;
        match &rule.placement {
            Placement::Sharded { columns, .. } => Some(columns.clone()),
            _ => None,
        }
    }

    fn is_sharding_column(&self, side: &JoinSide, column: &str) -> bool {
        self.sharding_columns(side)
            .is_some_and(|cs| cs.iter().any(|c| c.eq_ignore_ascii_case(column)))
    }

    /// The plan of a SELECT the planner refused because its tables are not placed alike, when
    /// idgate can run the join in the gateway.
    pub(super) fn join_plan(&self, stmt: &[u8], refusal: &SqlError) -> Option<Plan> {
        if let Some(plan) = self.correlated_plan(stmt) {
            return Some(plan);
        }
        if sql::classify(stmt) != StatementKind::Select || !is_colocation_refusal(refusal) {
            return None;
        }
        match sql::analyze_join(stmt) {
            // A derived table over placed tables runs first on the subquery path: here it
            // would be read through routing that cannot evaluate it.
            Ok(Some(shape))
                if shape.sides.iter().any(|s| {
                    s.derived
                        && stmt
                            .get(s.name_at.clone())
                            .is_none_or(|t| self.proxy.tables.placed_mentioned_in(t))
                }) =>
            {
                None
            }
            Ok(Some(shape)) => shape
                .sides
                .iter()
                .any(|s| self.sharding_columns(s).is_some())
                .then(|| Plan::Join(Box::new(shape))),
            Ok(None) => None,
            Err(why) => Some(Plan::Refuse(unsupported(why.0))),
        }
    }

    /// The plan of a SELECT the planner refused whose subqueries over configured tables are
    /// correlated with it by column equalities: run in the gateway like a join, each
    /// subquery's table fetched by the outer rows' values (`sql::analyze_correlated`).
    pub(super) fn correlated_plan(&self, stmt: &[u8]) -> Option<Plan> {
        if sql::classify(stmt) != StatementKind::Select {
            return None;
        }
        let configured =
            |t: &sql::TableRef| self.with_plan_context(|ctx| rule_for(ctx, t)).is_some();
        let shape = sql::analyze_correlated(stmt, &configured).ok()??;
        shape
            .sides
            .iter()
            .any(|s| self.sharding_columns(s).is_some())
            .then(|| Plan::Join(Box::new(shape)))
    }

    /// The driving table (one equated to a literal on its sharding column reads one shard;
    /// else the shape's choice) and the order the others are fetched in.
    fn steps(&self, shape: &JoinShape) -> Steps {
        let driver = shape
            .drivers()
            .find(|&i| {
                let s = &shape.sides[i];
                s.pinned.iter().any(|c| self.is_sharding_column(s, c))
            })
            .unwrap_or(shape.driver);
        let prefer = |k: &sql::JoinKey| self.is_sharding_column(&shape.sides[k.to], &k.to_column);
        let fetches = shape
            .fetch_order(driver, &prefer)
            .into_iter()
            .map(|st| Fetch {
                side: st.side,
                pinned: st.key.is_some_and(&prefer),
                key: st
                    .key
                    .map(|k| (k.from, k.from_column.clone(), k.to_column.clone())),
            })
            .collect();
        Steps { fetches }
    }

    /// A fetch's limit error told as the join's.
    fn join_limit_error(&self, e: SqlError, shape: &JoinShape, side: &JoinSide) -> SqlError {
        let what = if shape.correlated {
            format!(
                "the statement over {} (with correlated subqueries), which idgate evaluates \
                 itself because the tables are not placed alike,",
                table_list(shape)
            )
        } else {
            format!(
                "the join of {}, which idgate evaluates itself because the tables are not placed \
                 alike,",
                table_list(shape)
            )
        };
        if e.code == ER_OUT_OF_RESOURCES {
            return SqlError::new(
                ER_OUT_OF_RESOURCES,
                b"HY001",
                format!(
                    "Out of memory: {what} reads more than merge_memory_limit ({} bytes) of rows \
                     (at `{}`); narrow it with conditions on `{}`'s own columns or raise \
                     merge_memory_limit",
                    self.live.config.merge_memory_limit, side.table.name, side.qualifier
                ),
            );
        }
        if e.code == sql::ER_NOT_SUPPORTED_YET && e.message.contains("max_subquery_rows") {
            return unsupported(format!(
                "{what} reads more than max_subquery_rows ({}) rows of `{}`; narrow it with \
                 conditions on `{}`'s own columns or raise max_subquery_rows",
                self.live.config.max_subquery_rows, side.table.name, side.qualifier
            ));
        }
        e
    }

    /// Fetches one side's rows; `used` counts the bytes all sides hold.
    async fn fetch_side(
        &mut self,
        select: &[u8],
        shape: &JoinShape,
        side: usize,
        rows_so_far: u64,
        used: &mut u64,
        scope: StatementScope,
    ) -> Result<Result<Fetched, SqlError>, End> {
        let limits = FetchLimits {
            max_rows: self
                .live
                .config
                .max_subquery_rows
                .saturating_sub(rows_so_far),
            max_bytes: self.live.config.merge_memory_limit.saturating_sub(*used),
            enough: None,
        };
        Ok(match self.fetch(select, limits, scope).await? {
            Ok(f) => {
                *used += row_bytes(&f.rows);
                Ok(f)
            }
            Err(e) => Err(self.join_limit_error(e, shape, &shape.sides[side])),
        })
    }

    /// Fetches every table after the driving one (whose rows `got` holds), in `steps` order.
    async fn fetch_further(
        &mut self,
        stmt: &[u8],
        shape: &JoinShape,
        steps: &Steps,
        got: &mut [Option<Fetched>],
        used: &mut u64,
        scope: StatementScope,
    ) -> Result<Result<(), SqlError>, End> {
        for f in steps.fetches.iter().skip(1) {
            let side = &shape.sides[f.side];
            let by = f.key.as_ref().and_then(|(from, from_column, column)| {
                let values = key_values(got.get(*from)?.as_ref()?, from_column)?;
                Some((values, column))
            });
            let fetched = match by {
                None => {
                    let select = sql::side_select(stmt, side, None);
                    match self
                        .fetch_side(&select, shape, f.side, 0, used, scope)
                        .await?
                    {
                        Ok(f) => f,
                        Err(e) => return Ok(Err(e)),
                    }
                }
                Some((values, column)) => {
                    let batches: Vec<&[Vec<u8>]> = if values.is_empty() {
                        vec![&[]]
                    } else {
                        values.chunks(BATCH).collect()
                    };
                    let mut all: Option<Fetched> = None;
                    for batch in batches {
                        let cond = sql::batch_condition(side, column, batch);
                        let select = sql::side_select(stmt, side, Some(&cond));
                        let so_far = all.as_ref().map_or(0, |f| f.rows.len() as u64);
                        let part = match self
                            .fetch_side(&select, shape, f.side, so_far, used, scope)
                            .await?
                        {
                            Ok(f) => f,
                            Err(e) => return Ok(Err(e)),
                        };
                        match &mut all {
                            None => all = Some(part),
                            Some(a) => a.rows.extend(part.rows),
                        }
                    }
                    match all {
                        Some(f) => f,
                        None => {
                            return Ok(Err(unsupported("a join idgate could not fetch".into())))
                        }
                    }
                }
            };
            if let Some(slot) = got.get_mut(f.side) {
                *slot = Some(fetched);
            }
        }
        Ok(Ok(()))
    }

    /// `stmt` with each table replaced by a literal table of its fetched rows.
    fn bind_fetched(
        stmt: &[u8],
        shape: &JoinShape,
        got: Vec<Option<Fetched>>,
    ) -> Result<Vec<u8>, SqlError> {
        let mut tables = Vec::with_capacity(got.len());
        for f in got {
            let f = f.ok_or_else(|| unsupported("a join idgate could not fetch".into()))?;
            let text = sql::render_derived(&f.columns, &f.rows)
                .map_err(|e| SqlError::new(e.code, e.state, e.message))?;
            tables.push(text);
        }
        Ok(sql::bind_tables(stmt, shape, tables))
    }

    /// Fetches every table's rows and gives `stmt` with each table replaced by a literal table
    /// of them. `Ok(Err(_))`: the statement's answer is this error.
    async fn bind_join(
        &mut self,
        stmt: &[u8],
        shape: &JoinShape,
        scope: StatementScope,
    ) -> Result<Result<Vec<u8>, SqlError>, End> {
        let steps = self.steps(shape);
        let d = steps.driver();
        let mut used = 0u64;
        let driver_sql = sql::side_select(stmt, &shape.sides[d], None);
        let mut got: Vec<Option<Fetched>> = shape.sides.iter().map(|_| None).collect();
        match self
            .fetch_side(&driver_sql, shape, d, 0, &mut used, scope)
            .await?
        {
            Ok(f) => got[d] = Some(f),
            Err(e) => return Ok(Err(e)),
        }
        if let Err(e) = self
            .fetch_further(stmt, shape, &steps, &mut got, &mut used, scope)
            .await?
        {
            return Ok(Err(e));
        }
        Ok(Self::bind_fetched(stmt, shape, got))
    }

    /// Runs a join in the gateway (see the module's notes).
    pub(super) async fn run_join(
        &mut self,
        stmt: &[u8],
        shape: &JoinShape,
        more: bool,
        scope: StatementScope,
    ) -> Step {
        if shape.row_wise {
            return match self.stream_join(stmt, shape, false, more, scope).await {
                Ok(true) => Step::Ok,
                Ok(false) => Step::Failed,
                Err(end) => Step::End(end),
            };
        }
        let bound = match self.bind_join(stmt, shape, scope).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                self.send_error(&e);
                return Step::Failed;
            }
            Err(end) => return Step::End(end),
        };
        // No placed table is left (subqueries over them were bound before): the default
        // backend runs it as written.
        let plan = Plan::Forward(StatementKind::Select);
        let packet = crate::wire::command::query_packet(&bound);
        self.run_plan(&bound, plan, &packet, more).await
    }

    /// A row-wise join a batch of driving rows at a time (see the module's notes); `binary`:
    /// rows in the binary protocol (a prepared statement's). `Ok(false)`: it ended in an error
    /// the client was sent.
    async fn stream_join(
        &mut self,
        stmt: &[u8],
        shape: &JoinShape,
        binary: bool,
        more: bool,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let steps = self.steps(shape);
        let d = steps.driver();
        let mut driver_bytes = 0u64;
        let driver_sql = sql::side_select(stmt, &shape.sides[d], None);
        let driven = match self
            .fetch_side(&driver_sql, shape, d, 0, &mut driver_bytes, scope)
            .await?
        {
            Ok(f) => f,
            Err(e) => {
                self.send_error(&e);
                return Ok(false);
            }
        };
        let batches = driven.rows.len().div_ceil(BATCH).max(1);
        let columns = driven.columns;
        let mut rows = driven.rows.into_iter();
        let mut st = Streamed::default();
        let default = self.proxy.default_pool.name.clone();
        for _ in 0..batches {
            let batch: Vec<sql::BoundRow> = rows.by_ref().take(BATCH).collect();
            let mut got: Vec<Option<Fetched>> = shape.sides.iter().map(|_| None).collect();
            got[d] = Some(Fetched {
                columns: columns.clone(),
                rows: batch,
            });
            // The driving rows stay held; each batch's further rows count on top of them.
            let mut used = driver_bytes;
            let bound = match self
                .fetch_further(stmt, shape, &steps, &mut got, &mut used, scope)
                .await?
                .and_then(|()| Self::bind_fetched(stmt, shape, got))
            {
                Ok(b) => b,
                Err(e) => {
                    self.send_error(&e);
                    return Ok(false);
                }
            };
            let packet = crate::wire::command::query_packet(&bound);
            let Some(idx) = self
                .send_to_all(std::slice::from_ref(&default), &packet, scope)
                .await?
            else {
                return Ok(false);
            };
            let deprecate_eof = self.deprecate_eof();
            let mut conns = self.leases.conns(&idx);
            let Some(be) = conns.first_mut() else {
                return Ok(false);
            };
            let mut client = Client {
                writer: &mut self.writer,
                deprecate_eof,
            };
            let end = relay_batch(be, &mut client, &mut st, binary).await;
            if end.is_err() {
                be.broken = true;
            }
            drop(conns);
            match end {
                Ok(BatchEnd::Done) => {}
                Ok(BatchEnd::Failed(err)) => {
                    self.writer.write(&err);
                    return Ok(false);
                }
                Err(BackendError::ClientGone(_)) => return Err(End::ClientGone),
                Err(e) => return Err(self.backend_lost(e)),
            }
        }
        let status = self.status_with(more);
        let deprecate_eof = self.deprecate_eof();
        let start = self.writer.begin();
        packets::terminator(self.writer.payload(), deprecate_eof, st.warnings, status);
        self.writer.end(start);
        self.note_merged_rows(st.rows);
        Ok(true)
    }

    /// An execution of a prepared join, its parameters bound into `text`: run in the gateway
    /// like the text query, the final statement's rows written in the binary protocol.
    pub(super) async fn execute_join(
        &mut self,
        text: &[u8],
        shape: &JoinShape,
        scope: StatementScope,
    ) -> Result<bool, End> {
        if shape.row_wise {
            return self.stream_join(text, shape, true, false, scope).await;
        }
        let bound = match self.bind_join(text, shape, scope).await? {
            Ok(b) => b,
            Err(e) => {
                self.send_error(&e);
                return Ok(false);
            }
        };
        let default = self.proxy.default_pool.name.clone();
        self.run_binary(&[default], bound, scope).await
    }

    /// An execution of a prepared SELECT (bound into `text`) the planner refused with
    /// `refusal`: run in the gateway when it is a join idgate can run there, else refused.
    pub(super) async fn execute_join_or_refuse(
        &mut self,
        text: &[u8],
        refusal: SqlError,
        scope: StatementScope,
    ) -> Result<bool, End> {
        match self.join_plan(text, &refusal) {
            Some(Plan::Join(shape)) => self.execute_join(text, &shape, scope).await,
            Some(Plan::Refuse(e)) => {
                self.send_error(&e);
                Ok(false)
            }
            _ => {
                self.send_error(&refusal);
                Ok(false)
            }
        }
    }

    /// Where a statement would run, for `EXPLAIN ROUTE`.
    fn backends_of(&self, select: &[u8]) -> String {
        match self.route_dml(select) {
            Ok(None) => self.proxy.default_pool.name.clone(),
            Ok(Some(super::dml::Route::One(b))) => b,
            Ok(Some(super::dml::Route::Concat(bs) | super::dml::Route::Merge(bs, _))) => {
                bs.join(", ")
            }
            Ok(Some(_)) => "?".into(),
            Err(e) => format!("refused: {}", e.message),
        }
    }

    /// `EXPLAIN ROUTE` rows (backend, sql, merge) of a join idgate runs in the gateway: the
    /// driving fetch, each further table's fetch and the final evaluation.
    pub(super) fn explain_join(
        &self,
        stmt: &[u8],
        refusal: &SqlError,
    ) -> Option<Result<Vec<[String; 3]>, SqlError>> {
        let shape = match self.join_plan(stmt, refusal)? {
            Plan::Join(shape) => shape,
            Plan::Refuse(e) => return Some(Err(e)),
            _ => return None,
        };
        let steps = self.steps(&shape);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let per_batch = if shape.row_wise {
            format!(" for each batch of up to {BATCH} driving rows")
        } else {
            String::new()
        };
        let mut rows = Vec::with_capacity(steps.fetches.len() + 1);
        for (n, f) in steps.fetches.iter().enumerate() {
            let side = &shape.sides[f.side];
            let all = self.backends_of(&sql::side_select(stmt, side, None));
            let row = match &f.key {
                None if n == 0 => {
                    let kept = if shape.row_wise {
                        format!(
                            "kept in idgate (at most max_subquery_rows), run in batches of {BATCH}"
                        )
                    } else {
                        "kept in idgate (at most max_subquery_rows)".into()
                    };
                    [
                        all,
                        text(&sql::side_select(stmt, side, None)),
                        format!(
                            "join step 1: rows of `{}` (driving), {kept}",
                            side.qualifier
                        ),
                    ]
                }
                None => [
                    all,
                    text(&sql::side_select(stmt, side, None)),
                    format!(
                        "join step {}: rows of `{}`{per_batch} (no column equality with a table \
                         fetched before: read whole)",
                        n + 1,
                        side.qualifier
                    ),
                ],
                Some((from, from_column, column)) => {
                    let cond = sql::batch_condition(side, column, &[b"<value>".to_vec()]);
                    let cond = cond.replace("<value>", &format!("<up to {BATCH} values>"));
                    let backends = if f.pinned {
                        format!("the shards owning each batch's values (of {all})")
                    } else {
                        all
                    };
                    [
                        backends,
                        text(&sql::side_select(stmt, side, Some(&cond))),
                        format!(
                            "join step {}: rows of `{}`{per_batch} for batches of up to {BATCH} \
                             distinct `{}`.`{from_column}` values",
                            n + 1,
                            side.qualifier,
                            shape.sides[*from].qualifier
                        ),
                    ]
                }
            };
            rows.push(row);
        }
        let placeholders: Vec<Vec<u8>> = shape
            .sides
            .iter()
            .map(|s| format!("(<rows of `{}`>)", s.qualifier).into_bytes())
            .collect();
        let bound = sql::bind_tables(stmt, &shape, placeholders);
        let how = if shape.row_wise {
            "the statement over each batch's fetched rows as literal tables, its rows sent \
             batch by batch"
        } else {
            "the statement over the fetched rows as literal tables"
        };
        rows.push([
            self.proxy.default_pool.name.clone(),
            text(&bound),
            format!("join step {}: {how}", steps.fetches.len() + 1),
        ]);
        Some(Ok(rows))
    }
}
