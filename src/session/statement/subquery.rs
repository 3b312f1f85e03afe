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

use super::StatementExec;
use crate::exec::primitives::merged_answer;
use crate::exec::primitives::subquery_bind::{self, unsupported};
use crate::route::{Plan, Route};
use crate::session::query::Step;
use crate::session::End;
use crate::sql::Subquery;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs the inner queries, then the outer statement with their rows bound in.
    pub(super) async fn run_subqueries(
        &mut self,
        stmt: &[u8],
        subs: &[Subquery],
        more: bool,
    ) -> Step {
        let limits = crate::exec::primitives::GatewayLimits::from(&*self.session.live.config);
        let bound = match subquery_bind::bind_subqueries(self, stmt, subs, limits).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                self.session.writer.send_error(&e);
                return Step::Failed;
            }
            Err(end) => return Step::End(end),
        };
        let plan = match self.session.plan(&bound) {
            Plan::Subqueries(_) => Plan::Refuse(unsupported(
                "a subquery over sharded tables idgate could not bind".into(),
            )),
            p => p,
        };
        let packet = crate::wire::command::query_packet(&bound);
        self.session
            .run_plan(&bound, plan, &packet, more, self.obs)
            .await
    }

    /// An execution of a prepared SELECT with subqueries over sharded tables, its parameters
    /// bound into `text`: the inner queries run first, then the outer statement runs as text on
    /// the shards it reaches and its rows go to the client in the binary protocol (through the
    /// merge, which writes them so; a plain concatenation merges shard after shard).
    pub(super) async fn execute_with_subqueries(
        &mut self,
        text: &[u8],
        subs: &[Subquery],
    ) -> Result<bool, End> {
        let limits = crate::exec::primitives::GatewayLimits::from(&*self.session.live.config);
        let bound = match subquery_bind::bind_subqueries(self, text, subs, limits).await? {
            Ok(b) => b,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        let backends = match self.session.route_dml(&bound, false) {
            Ok(Some(Route::Merge(bs, m))) => {
                return merged_answer::run(self, &bs, &m, false, true).await;
            }
            Ok(Some(Route::One(b))) => vec![b],
            Ok(Some(Route::Concat(bs))) => bs,
            Ok(None) => vec![self.session.proxy.default_pool.name.clone()],
            // ByKey: never here, internal reads take the general route.
            Ok(Some(Route::Write { .. } | Route::Everywhere(_) | Route::ByKey(_))) => {
                self.session.writer.send_error(&unsupported(
                    "a prepared statement with subqueries over sharded tables must be a SELECT"
                        .into(),
                ));
                return Ok(false);
            }
            Err(e) => {
                // Computing on aggregates across shards, its subqueries bound: lifted over a
                // derived table of them, as the text protocol's plan does.
                if let Some(lifted) = crate::route::lift(&bound, &e).map(String::into_bytes) {
                    if let Some(Plan::Subqueries(subs)) = self
                        .session
                        .with_plan_context(|ctx| crate::route::subquery_plan(&lifted, ctx))
                    {
                        return Box::pin(self.execute_with_subqueries(&lifted, &subs)).await;
                    }
                }
                // A join of tables not placed alike, its subqueries bound: run in the gateway.
                return self.execute_join_or_refuse(&bound, e).await;
            }
        };
        merged_answer::run_binary(self, &backends, bound).await
    }
}
