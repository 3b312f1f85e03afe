//! Joins no single backend can evaluate (sharded tables not placed alike, a sharded table with
//! one on the default backend), run in the gateway: the driving table's rows are fetched with
//! its own conditions, each further table's rows in batches of the distinct key values of a
//! table fetched before it (`route::JoinShape::fetch_order`), and the client's statement then
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
use super::query::Step;
use super::{End, Session};
use crate::exec::relay::Client;
use crate::exec::{BackendError, StatementScope};
use crate::route::join_steps::{join_steps, Steps, BATCH};
use crate::route::{self, Plan};
use crate::route::{JoinShape, JoinSide};
use crate::sql::{self, StatementKind};
use crate::wire::errors::SqlError;
use crate::wire::packets;
use stream::{relay_batch, BatchEnd, Streamed};

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
                    let select = crate::route::side_select(stmt, side, None);
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
                        let cond = crate::route::batch_condition(side, column, batch);
                        let select = crate::route::side_select(stmt, side, Some(&cond));
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
        Ok(crate::route::bind_tables(stmt, shape, tables))
    }

    /// Fetches every table's rows and gives `stmt` with each table replaced by a literal table
    /// of them. `Ok(Err(_))`: the statement's answer is this error.
    pub(super) async fn bind_join(
        &mut self,
        stmt: &[u8],
        shape: &JoinShape,
        scope: StatementScope,
    ) -> Result<Result<Vec<u8>, SqlError>, End> {
        let steps = self.with_plan_context(|ctx| join_steps(shape, ctx));
        let d = steps.driver();
        let mut used = 0u64;
        let driver_sql = crate::route::side_select(stmt, &shape.sides[d], None);
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
        let steps = self.with_plan_context(|ctx| join_steps(shape, ctx));
        let d = steps.driver();
        let mut driver_bytes = 0u64;
        let driver_sql = crate::route::side_select(stmt, &shape.sides[d], None);
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
        match self.with_plan_context(|ctx| route::join_plan(text, &refusal, ctx)) {
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
}
