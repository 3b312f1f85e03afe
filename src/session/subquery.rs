//! SELECTs, UPDATEs and DELETEs with subqueries or derived tables over sharded tables. Each
//! outer-level inner query naming a placed table runs first, through idgate's own routing
//! (`fetch`), and its rows are bound into the outer statement as literals (an IN list,
//! TRUE/FALSE, a value, a literal table, an ANY/ALL set); the outer statement is then planned
//! and run like any other (an UPDATE's bound `id IN (…)` pins the shards as a literal list
//! would). MariaDB too evaluates the subquery of an UPDATE or DELETE before it changes rows;
//! inside a client transaction the inner read uses the transaction's connections and so sees
//! its own writes. An inner query that
//! refers to the outer one (correlated) cannot run first: it runs per shard with the outer
//! statement when the planner finds its tables placed alike with the outer ones and
//! correlated on their sharding columns (`route/colocate.rs`); a SELECT whose correlated
//! subqueries are tied to it by column equalities runs in the gateway like a join
//! (`join.rs`, `route::analyze_correlated`); any other is refused.

use tokio::io::{AsyncRead, AsyncWrite};

use super::fetch::{FetchLimits, Fetched};
use super::query::Step;
use super::{End, Session};
use crate::exec::relay::Adjust;
use crate::exec::StatementScope;
use crate::route::{self, Plan, Route};
use crate::sql::{self, Subquery, SubqueryUse};
use crate::wire::errors::SqlError;

/// MariaDB's ER_BAD_FIELD_ERROR: what an inner query that names the outer query's columns
/// gets when it runs on its own.
const ER_BAD_FIELD_ERROR: u16 = 1054;

/// The qualifier of the unknown column in MariaDB's 1054 message (`Unknown column 'b.id' in
/// 'WHERE'`) when the statement outside the subquery at `inner` names it: the subquery is
/// correlated.
fn outer_qualifier(stmt: &[u8], inner: std::ops::Range<usize>, message: &str) -> Option<String> {
    let column = message.split('\'').nth(1)?;
    let (qualifier, _) = column.rsplit_once('.')?;
    let qualifier = qualifier.rsplit('.').next()?;
    sql::names_outside(stmt, inner, qualifier.as_bytes()).then(|| qualifier.to_string())
}

/// MariaDB's ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT.
const ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT: u16 = 1222;

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Runs the inner queries, then the outer statement with their rows bound in.
    pub(super) async fn run_subqueries(
        &mut self,
        stmt: &[u8],
        subs: &[Subquery],
        more: bool,
        scope: StatementScope,
    ) -> Step {
        let bound = match self.bind_subqueries(stmt, subs, scope).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                self.send_error(&e);
                return Step::Failed;
            }
            Err(end) => return Step::End(end),
        };
        let plan = match self.plan(&bound) {
            Plan::Subqueries(_) => Plan::Refuse(unsupported(
                "a subquery over sharded tables idgate could not bind".into(),
            )),
            p => p,
        };
        let packet = crate::wire::command::query_packet(&bound);
        self.run_plan(&bound, plan, &packet, more).await
    }

    /// An execution of a prepared SELECT with subqueries over sharded tables, its parameters
    /// bound into `text`: the inner queries run first, then the outer statement runs as text on
    /// the shards it reaches and its rows go to the client in the binary protocol (through the
    /// merge, which writes them so; a plain concatenation merges shard after shard).
    pub(super) async fn execute_with_subqueries(
        &mut self,
        text: &[u8],
        subs: &[Subquery],
        scope: StatementScope,
    ) -> Result<bool, End> {
        let bound = match self.bind_subqueries(text, subs, scope).await? {
            Ok(b) => b,
            Err(e) => {
                self.send_error(&e);
                return Ok(false);
            }
        };
        let backends = match self.route_dml(&bound) {
            Ok(Some(Route::Merge(bs, m))) => {
                return self
                    .run_merge(&bs, &m, Adjust::default(), true, scope)
                    .await;
            }
            Ok(Some(Route::One(b))) => vec![b],
            Ok(Some(Route::Concat(bs))) => bs,
            Ok(None) => vec![self.proxy.default_pool.name.clone()],
            Ok(Some(Route::Write { .. } | Route::Everywhere(_))) => {
                self.send_error(&unsupported(
                    "a prepared statement with subqueries over sharded tables must be a SELECT"
                        .into(),
                ));
                return Ok(false);
            }
            // A join of tables not placed alike, its subqueries bound: run in the gateway.
            Err(e) => return self.execute_join_or_refuse(&bound, e, scope).await,
        };
        self.run_binary(&backends, bound, scope).await
    }

    /// One inner query's rows; an IN list's `(SELECT …) UNION (SELECT …)` member by member
    /// (duplicates do not change what IN finds), within the same limits.
    async fn fetch_subquery(
        &mut self,
        inner: &[u8],
        kind: SubqueryUse,
        limits: FetchLimits,
        scope: StatementScope,
    ) -> Result<Result<Fetched, SqlError>, End> {
        let members = match kind {
            SubqueryUse::In => sql::union_members(inner),
            _ => None,
        };
        let Some(members) = members else {
            return self.fetch(inner, limits, scope).await;
        };
        let mut all: Option<Fetched> = None;
        for m in members {
            let Some(member) = inner.get(m) else {
                return Ok(Err(unsupported(
                    "a UNION member idgate could not place".into(),
                )));
            };
            let fetched = match self.fetch(member, limits, scope).await? {
                Ok(f) => f,
                Err(e) => return Ok(Err(e)),
            };
            match &mut all {
                None => all = Some(fetched),
                Some(a) if a.columns.len() != fetched.columns.len() => {
                    return Ok(Err(SqlError::new(
                        ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT,
                        b"21000",
                        "The used SELECT statements have a different number of columns",
                    )));
                }
                Some(a) => {
                    a.rows.extend(fetched.rows);
                    if a.rows.len() as u64 > limits.max_rows {
                        return Ok(Err(unsupported(format!(
                            "the subquery over sharded tables gives more than \
                             max_subquery_rows ({}) rows, which idgate runs first and binds \
                             into the outer statement; narrow it (WHERE, LIMIT) or raise \
                             max_subquery_rows",
                            limits.max_rows
                        ))));
                    }
                }
            }
        }
        Ok(Ok(all.unwrap_or(Fetched {
            columns: Vec::new(),
            rows: Vec::new(),
        })))
    }

    /// Runs each inner query and gives `stmt` with their rows bound in. `Ok(Err(_))`: the
    /// statement's answer is this error.
    pub(super) async fn bind_subqueries(
        &mut self,
        stmt: &[u8],
        subs: &[Subquery],
        scope: StatementScope,
    ) -> Result<Result<Vec<u8>, SqlError>, End> {
        let max_rows = self.live.config.max_subquery_rows;
        let max_bytes = self.live.config.merge_memory_limit;
        let mut parts = Vec::with_capacity(subs.len());
        for (i, s) in subs.iter().enumerate() {
            if self.with_plan_context(|ctx| route::correlated_later(stmt, subs, i, ctx)) {
                continue;
            }
            let Some(inner) = stmt.get(s.inner.clone()) else {
                return Ok(Err(unsupported("a subquery idgate could not place".into())));
            };
            if matches!(s.kind, SubqueryUse::In | SubqueryUse::Quantified)
                && sql::has_own_limit(inner)
            {
                return Ok(Err(SqlError::new(
                    sql::ER_NOT_SUPPORTED_YET,
                    b"42000",
                    "This version of MariaDB doesn't yet support 'LIMIT & IN/ALL/ANY/SOME subquery'",
                )));
            }
            // An inner query with subqueries of its own over sharded tables: those first. One
            // computing on aggregates across shards is lifted over a derived table of them
            // first (`route::lift`), which is then such a subquery of its own. A join of tables
            // not placed alike becomes the join of literal tables of their rows.
            let mut inner = inner.to_vec();
            if let Err(e) = self.route_dml(&inner) {
                if let Some(lifted) = route::lift(&inner, &e) {
                    inner = lifted.into_bytes();
                }
                if let Some(nested) =
                    self.with_plan_context(|ctx| route::placed_subqueries(&inner, ctx))
                {
                    match Box::pin(self.bind_subqueries(&inner, &nested, scope)).await? {
                        Ok(bound) => inner = bound,
                        Err(e) => return Ok(Err(e)),
                    }
                } else if let Some(Plan::Join(shape)) =
                    self.with_plan_context(|ctx| route::join_plan(&inner, &e, ctx))
                {
                    match Box::pin(self.bind_join(&inner, &shape, scope)).await? {
                        Ok(bound) => inner = bound,
                        Err(e) => return Ok(Err(e)),
                    }
                }
            }
            let limits = FetchLimits {
                max_rows,
                max_bytes,
                enough: (s.kind == SubqueryUse::Exists).then_some(1),
            };
            let mut fetched = match self.fetch_subquery(&inner, s.kind, limits, scope).await? {
                Ok(f) => f,
                Err(e) if e.code == ER_BAD_FIELD_ERROR => {
                    // A column of the outer query (correlated: not supported), or a typo.
                    let advice = "idgate runs a subquery over sharded tables first, on its own; \
                                  one that refers to the outer query (correlated) runs only \
                                  over one table, tied to the outer query by a column equality \
                                  AND-ed into its WHERE (`inner.book_id = outer.id`, not inside \
                                  OR), with no subquery of its own: rewrite it so, as a join, \
                                  or as an uncorrelated `IN (SELECT …)`";
                    if let Some(q) = outer_qualifier(stmt, s.inner.clone(), &e.message) {
                        return Ok(Err(unsupported(format!(
                            "this subquery refers to `{q}` of the outer query; {advice}"
                        ))));
                    }
                    return Ok(Err(SqlError::new(
                        e.code,
                        &e.state,
                        format!("{} ({advice})", e.message),
                    )));
                }
                Err(e) => return Ok(Err(e)),
            };
            let text = match s.kind {
                SubqueryUse::In => sql::render_in_list(&fetched.columns, &fetched.rows),
                SubqueryUse::Exists => sql::render_exists(!fetched.rows.is_empty()),
                SubqueryUse::Scalar => match sql::render_scalar(&fetched.columns, &fetched.rows) {
                    Ok(t) => t,
                    Err(e) => return Ok(Err(SqlError::new(e.code, e.state, e.message))),
                },
                SubqueryUse::Derived => {
                    match sql::render_derived(&fetched.columns, &fetched.rows) {
                        Ok(t) => t,
                        Err(e) => return Ok(Err(SqlError::new(e.code, e.state, e.message))),
                    }
                }
                SubqueryUse::Quantified => {
                    match sql::render_quantified(&fetched.columns, &mut fetched.rows) {
                        Ok(t) => t,
                        Err(e) => return Ok(Err(SqlError::new(e.code, e.state, e.message))),
                    }
                }
            };
            parts.push((s.replace.clone(), text));
        }
        Ok(Ok(sql::splice(stmt, &parts)))
    }
}
