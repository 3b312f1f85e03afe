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

use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::primitives::join_stream::{self, Streaming};
use crate::exec::primitives::{join_bind, merged_answer};
use crate::route::JoinShape;
use crate::route::{self, Plan};
use crate::session::query::Step;
use crate::session::End;
use crate::sql::StatementKind;
use crate::wire::errors::SqlError;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// A row-wise join a batch of driving rows at a time (`exec::primitives::join_stream`).
    async fn stream_join(
        &mut self,
        stmt: &[u8],
        shape: &JoinShape,
        binary: bool,
        more: bool,
    ) -> Result<bool, End> {
        let default = self.session.proxy.default_pool.name.clone();
        let how = Streaming {
            binary,
            more,
            default: &default,
            limits: crate::exec::primitives::GatewayLimits::from(&*self.session.live.config),
        };
        join_stream::run(self, stmt, shape, how).await
    }

    /// Runs a join in the gateway (see the module's notes).
    pub(super) async fn run_join(&mut self, stmt: &[u8], shape: &JoinShape, more: bool) -> Step {
        if shape.row_wise {
            return match self.stream_join(stmt, shape, false, more).await {
                Ok(true) => Step::Ok,
                Ok(false) => Step::Failed,
                Err(end) => Step::End(end),
            };
        }
        let limits = crate::exec::primitives::GatewayLimits::from(&*self.session.live.config);
        let bound = match join_bind::bind_join(self, stmt, shape, limits).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                self.session.writer.send_error(&e);
                return Step::Failed;
            }
            Err(end) => return Step::End(end),
        };
        // No placed table is left (subqueries over them were bound before): the default
        // backend runs it as written.
        let plan = Plan::Forward(StatementKind::Select);
        let packet = crate::wire::command::query_packet(&bound);
        self.session
            .run_plan(&bound, plan, &packet, more, self.obs)
            .await
    }

    /// An execution of a prepared join, its parameters bound into `text`: run in the gateway
    /// like the text query, the final statement's rows written in the binary protocol.
    pub(super) async fn execute_join(
        &mut self,
        text: &[u8],
        shape: &JoinShape,
    ) -> Result<bool, End> {
        if shape.row_wise {
            return self.stream_join(text, shape, true, false).await;
        }
        let limits = crate::exec::primitives::GatewayLimits::from(&*self.session.live.config);
        let bound = match join_bind::bind_join(self, text, shape, limits).await? {
            Ok(b) => b,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        let default = self.session.proxy.default_pool.name.clone();
        merged_answer::run_binary(self, &[default], bound).await
    }

    /// An execution of a prepared SELECT (bound into `text`) the planner refused with
    /// `refusal`: run in the gateway when it is a join idgate can run there, else refused.
    pub(super) async fn execute_join_or_refuse(
        &mut self,
        text: &[u8],
        refusal: SqlError,
    ) -> Result<bool, End> {
        match self
            .session
            .with_plan_context(|ctx| route::join_plan(text, &refusal, ctx))
        {
            Some(Plan::Join(shape)) => self.execute_join(text, &shape).await,
            Some(Plan::Refuse(e)) => {
                self.session.writer.send_error(&e);
                Ok(false)
            }
            _ => {
                self.session.writer.send_error(&refusal);
                Ok(false)
            }
        }
    }
}
