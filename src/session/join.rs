//! Joins no single backend can evaluate (sharded tables not placed alike, a sharded table with
//! one on the default backend), run in the gateway: the driving table's rows are fetched with
//! its own conditions, the inner table's rows in batches of the driving rows' distinct key
//! values, and the client's statement then runs on the default backend with each table replaced
//! by a literal table of its fetched rows. MariaDB evaluates the join, WHERE, grouping, ordering
//! and LIMIT itself; the literal tables hold every row that can take part in the join, so the
//! answer is the one a single server holding every row gives. Bounded: each table's rows by
//! `max_subquery_rows`, both tables' bytes together by `merge_memory_limit`.

use std::collections::HashSet;

use tokio::io::{AsyncRead, AsyncWrite};

use super::fetch::{FetchLimits, Fetched};
use super::query::{Plan, Step};
use super::{End, Session};
use crate::route::colocate::{is_colocation_refusal, rule_for};
use crate::route::Placement;
use crate::sql::{self, JoinShape, JoinSide, StatementKind};
use crate::wire::errors::SqlError;

/// Distinct driving key values per inner fetch: an IN list a shard reads by index, short enough
/// to keep each statement small.
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

/// The pieces of one gateway join that `EXPLAIN ROUTE` shows and the run follows.
struct Steps {
    driver_sql: Vec<u8>,
    /// `(driving column, inner column)` the batches use; `None`: the inner table is read whole.
    key: Option<(String, String)>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The sharding columns of a join side's table, when it is sharded.
    fn sharding_columns(&self, side: &JoinSide) -> Option<Vec<String>> {
        let rule = self.with_plan_context(|ctx| rule_for(ctx, &side.table))?;
        match &rule.placement {
            Placement::Sharded { columns, .. } => Some(columns.clone()),
            _ => None,
        }
    }

    /// The plan of a SELECT the planner refused because its tables are not placed alike, when
    /// idgate can run the join in the gateway.
    pub(super) fn join_plan(&self, stmt: &[u8], refusal: &SqlError) -> Option<Plan> {
        if sql::classify(stmt) != StatementKind::Select || !is_colocation_refusal(refusal) {
            return None;
        }
        match sql::analyze_join(stmt) {
            Ok(Some(shape)) => shape
                .sides
                .iter()
                .any(|s| self.sharding_columns(s).is_some())
                .then(|| Plan::Join(Box::new(shape))),
            Ok(None) => None,
            Err(why) => Some(Plan::Refuse(unsupported(why.0))),
        }
    }

    fn steps(&self, stmt: &[u8], shape: &JoinShape) -> Steps {
        let inner = &shape.sides[shape.inner()];
        // A key on the inner table's sharding column pins each batch to the shards owning it.
        let sharding = self.sharding_columns(inner).unwrap_or_default();
        let key = shape
            .keys
            .iter()
            .find(|(_, i)| sharding.iter().any(|c| c.eq_ignore_ascii_case(i)))
            .or(shape.keys.first())
            .cloned();
        Steps {
            driver_sql: sql::side_select(stmt, &shape.sides[shape.driver], None),
            key,
        }
    }

    /// A fetch's limit error told as the join's.
    fn join_limit_error(&self, e: SqlError, shape: &JoinShape, side: &JoinSide) -> SqlError {
        let what = format!(
            "the join of `{}` with `{}`, which idgate evaluates itself because the tables are \
             not placed alike,",
            shape.sides[0].table.name, shape.sides[1].table.name
        );
        if e.code == ER_OUT_OF_RESOURCES {
            return SqlError::new(
                ER_OUT_OF_RESOURCES,
                b"HY001",
                format!(
                    "Out of memory: {what} reads more than merge_memory_limit ({} bytes) of rows; \
                     narrow it with conditions on `{}`'s own columns or raise merge_memory_limit",
                    self.live.config.merge_memory_limit, side.qualifier
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

    /// Fetches one side's rows; `used` counts the bytes both sides hold.
    async fn fetch_side(
        &mut self,
        select: &[u8],
        shape: &JoinShape,
        side: usize,
        rows_so_far: u64,
        used: &mut u64,
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
        Ok(match self.fetch(select, limits).await? {
            Ok(f) => {
                *used += row_bytes(&f.rows);
                Ok(f)
            }
            Err(e) => Err(self.join_limit_error(e, shape, &shape.sides[side])),
        })
    }

    /// Both sides' rows, in `shape.sides` order.
    async fn fetch_join(
        &mut self,
        stmt: &[u8],
        shape: &JoinShape,
    ) -> Result<Result<[Fetched; 2], SqlError>, End> {
        let steps = self.steps(stmt, shape);
        let (d, n) = (shape.driver, shape.inner());
        let mut used = 0u64;
        let driven = match self
            .fetch_side(&steps.driver_sql, shape, d, 0, &mut used)
            .await?
        {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        let inner = &shape.sides[n];
        let key = steps.key.as_ref().and_then(|(dc, ic)| {
            let at = driven
                .columns
                .iter()
                .position(|c| String::from_utf8_lossy(&c.name).eq_ignore_ascii_case(dc))?;
            Some((at, ic))
        });
        let fetched = match key {
            None => {
                let select = sql::side_select(stmt, inner, None);
                match self.fetch_side(&select, shape, n, 0, &mut used).await? {
                    Ok(f) => f,
                    Err(e) => return Ok(Err(e)),
                }
            }
            Some((at, column)) => {
                // Distinct non-NULL keys: NULL never equals anything, so it finds no partner.
                let mut seen: HashSet<&[u8]> = HashSet::new();
                let mut values: Vec<Vec<u8>> = Vec::new();
                for row in &driven.rows {
                    if let Some(Some(v)) = row.get(at) {
                        if seen.insert(v.as_slice()) {
                            let mut lit = Vec::new();
                            sql::render_value(&driven.columns[at], Some(v), &mut lit);
                            values.push(lit);
                        }
                    }
                }
                let mut all: Option<Fetched> = None;
                let batches: Vec<&[Vec<u8>]> = if values.is_empty() {
                    vec![&[]]
                } else {
                    values.chunks(BATCH).collect()
                };
                for batch in batches {
                    let cond = sql::batch_condition(inner, column, batch);
                    let select = sql::side_select(stmt, inner, Some(&cond));
                    let so_far = all.as_ref().map_or(0, |f| f.rows.len() as u64);
                    let f = match self
                        .fetch_side(&select, shape, n, so_far, &mut used)
                        .await?
                    {
                        Ok(f) => f,
                        Err(e) => return Ok(Err(e)),
                    };
                    match &mut all {
                        None => all = Some(f),
                        Some(a) => a.rows.extend(f.rows),
                    }
                }
                match all {
                    Some(f) => f,
                    None => return Ok(Err(unsupported("a join idgate could not fetch".into()))),
                }
            }
        };
        Ok(Ok(if d == 0 {
            [driven, fetched]
        } else {
            [fetched, driven]
        }))
    }

    /// Fetches both tables' rows and gives `stmt` with each table replaced by a literal table
    /// of them. `Ok(Err(_))`: the statement's answer is this error.
    async fn bind_join(
        &mut self,
        stmt: &[u8],
        shape: &JoinShape,
    ) -> Result<Result<Vec<u8>, SqlError>, End> {
        let fetched = match self.fetch_join(stmt, shape).await? {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        let mut tables: [Vec<u8>; 2] = Default::default();
        for (t, f) in tables.iter_mut().zip(&fetched) {
            match sql::render_derived(&f.columns, &f.rows) {
                Ok(text) => *t = text,
                Err(e) => return Ok(Err(SqlError::new(e.code, e.state, e.message))),
            }
        }
        drop(fetched);
        Ok(Ok(sql::bind_tables(stmt, shape, tables)))
    }

    /// Runs a join in the gateway (see the module's notes).
    pub(super) async fn run_join(&mut self, stmt: &[u8], shape: &JoinShape, more: bool) -> Step {
        let bound = match self.bind_join(stmt, shape).await {
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

    /// An execution of a prepared join, its parameters bound into `text`: run in the gateway
    /// like the text query, the final statement's rows written in the binary protocol.
    pub(super) async fn execute_join(
        &mut self,
        text: &[u8],
        shape: &JoinShape,
    ) -> Result<bool, End> {
        let bound = match self.bind_join(text, shape).await? {
            Ok(b) => b,
            Err(e) => {
                self.send_error(&e);
                return Ok(false);
            }
        };
        let default = self.proxy.default_pool.name.clone();
        self.run_binary(&[default], bound).await
    }

    /// An execution of a prepared SELECT (bound into `text`) the planner refused with
    /// `refusal`: run in the gateway when it is a join idgate can run there, else refused.
    pub(super) async fn execute_join_or_refuse(
        &mut self,
        text: &[u8],
        refusal: SqlError,
    ) -> Result<bool, End> {
        match self.join_plan(text, &refusal) {
            Some(Plan::Join(shape)) => self.execute_join(text, &shape).await,
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
    /// driving fetch, the inner batched fetch and the final evaluation.
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
        let steps = self.steps(stmt, &shape);
        let (driver, inner) = (&shape.sides[shape.driver], &shape.sides[shape.inner()]);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let mut rows = vec![[
            self.backends_of(&steps.driver_sql),
            text(&steps.driver_sql),
            format!(
                "join step 1: rows of `{}` (driving), kept in idgate (at most max_subquery_rows)",
                driver.qualifier
            ),
        ]];
        let all = self.backends_of(&sql::side_select(stmt, inner, None));
        match &steps.key {
            Some((dc, ic)) => {
                let cond = sql::batch_condition(inner, ic, &[b"<value>".to_vec()]);
                let cond = cond.replace("<value>", &format!("<up to {BATCH} values>"));
                let pinned = self
                    .sharding_columns(inner)
                    .is_some_and(|cs| cs.iter().any(|c| c.eq_ignore_ascii_case(ic)));
                let backends = if pinned {
                    format!("the shards owning each batch's values (of {all})")
                } else {
                    all
                };
                rows.push([
                    backends,
                    text(&sql::side_select(stmt, inner, Some(&cond))),
                    format!(
                        "join step 2: rows of `{}` for batches of up to {BATCH} distinct `{}`.`{dc}` values",
                        inner.qualifier, driver.qualifier
                    ),
                ]);
            }
            None => rows.push([
                all,
                text(&sql::side_select(stmt, inner, None)),
                format!(
                    "join step 2: rows of `{}` (no column equality to batch on)",
                    inner.qualifier
                ),
            ]),
        }
        let placeholders = [0, 1].map(|i| format!("(<rows of `{}`>)", shape.sides[i].qualifier));
        let bound = sql::bind_tables(stmt, &shape, placeholders.map(String::into_bytes));
        rows.push([
            self.proxy.default_pool.name.clone(),
            text(&bound),
            "join step 3: the statement over the fetched rows as literal tables".into(),
        ]);
        Some(Ok(rows))
    }
}
