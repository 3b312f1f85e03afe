//! SELECT, UPDATE, DELETE and DDL about sharded or broadcast tables: sent to the shards that own
//! the rows the WHERE pins down, or to all of them, and answered as one table would answer.
//! Shapes that would need a merge idgate does not do yet get a clear error, never a partial answer.

use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session};
use crate::exec::merge::NEEDS_WEIGHTS;
use crate::exec::relay::{Adjust, Client, Reply};
use crate::exec::scatter;
use crate::exec::{BackendError, StatementScope};
use crate::route::InsertPlan;
pub(super) use crate::route::Route;
use crate::route::{BoundMerge, PlanContext};
use crate::route::{KeyTypes, MergePlan};
use crate::sql;
use crate::wire::errors::SqlError;

/// One run of a merge: the plan, the statement each shard gets, the page, and where the plan
/// learns about its keys.
struct MergeRun<'a> {
    plan: &'a MergePlan,
    sql: &'a [u8],
    page: (u64, Option<u64>),
    learn: Option<&'a KeyTypes>,
}

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// What planning needs from this session, for `f`.
    pub(super) fn with_plan_context<T>(&self, f: impl FnOnce(&PlanContext) -> T) -> T {
        let db = self.db.as_deref().map(String::from_utf8_lossy);
        let tables = self.proxy.tables.load();
        let ctx = PlanContext {
            db: db.as_deref(),
            tables: &tables,
        };
        f(&ctx)
    }

    /// Routes a statement that names a configured table (planned once per statement shape).
    /// `Ok(None)`: forward it as it is.
    pub(super) fn route_dml(&self, stmt: &[u8]) -> Result<Option<Route>, SqlError> {
        let generation = self.proxy.plan_generation();
        self.with_plan_context(|ctx| self.proxy.plans.route(stmt, ctx, generation))
    }

    /// Runs a routed statement. `Ok(false)`: the client got an error.
    pub(super) async fn run_routed(
        &mut self,
        stmt: &[u8],
        packet: &[u8],
        route: Route,
        more: bool,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let adj = Adjust {
            more_results: more,
            ..Adjust::default()
        };
        match route {
            Route::One(backend) => self.run_one(&backend, packet, adj, scope).await,
            Route::Write {
                backends,
                broadcast,
            } => {
                let plan = InsertPlan {
                    parts: backends
                        .into_iter()
                        .map(|b| (b, stmt.to_vec(), Vec::new()))
                        .collect(),
                    broadcast,
                    insert_id: 0,
                    first_generated: None,
                    lid_backend: None,
                };
                self.run_on_shards(&plan, adj, scope).await
            }
            Route::Concat(backends) => self.run_concat(&backends, packet, adj, scope).await,
            Route::Everywhere(backends) => {
                let ok = self.run_everywhere(&backends, packet, adj, scope).await?;
                if ok && self.proxy.tables.load().has_global_unique() {
                    self.unique_after_ddl(stmt).await;
                }
                Ok(ok)
            }
            Route::Merge(backends, merge) => {
                self.run_merge(&backends, &merge, adj, false, scope).await
            }
        }
    }

    /// Sends `packet` to each backend (joining the client's transaction first), pipelined.
    /// `Ok(None)`: a connection could not be had and the client was told.
    pub(super) async fn send_to_all(
        &mut self,
        backends: &[String],
        packet: &[u8],
        scope: StatementScope,
    ) -> Result<Option<Vec<usize>>, End> {
        let mut idx = Vec::with_capacity(backends.len());
        for b in backends {
            match self.lease_index(b).await {
                Ok(i) => idx.push(i),
                Err(e) => {
                    self.writer.send_error(&e);
                    return Ok(None);
                }
            }
        }
        for &i in &idx {
            self.join_transaction(i, scope).await?;
            self.leases.get_mut(i).write_command(packet);
        }
        for &i in &idx {
            if let Err(e) = self.leases.get_mut(i).flush().await {
                return Err(self.backend_lost(e));
            }
        }
        Ok(Some(idx))
    }

    /// Relays the statement on one backend (joining the client's transaction first).
    async fn run_one(
        &mut self,
        backend: &str,
        packet: &[u8],
        adj: Adjust,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let i = match self.lease_index(backend).await {
            Ok(i) => i,
            Err(e) => {
                self.writer.send_error(&e);
                return Ok(false);
            }
        };
        self.join_transaction(i, scope).await?;
        self.relay_on(i, packet, Reply::Results, None, adj, scope)
            .await
    }

    async fn run_concat(
        &mut self,
        backends: &[String],
        packet: &[u8],
        adj: Adjust,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let Some(idx) = self.send_to_all(backends, packet, scope).await? else {
            return Ok(false);
        };
        let deprecate_eof = self.deprecate_eof();
        // Answer in the order the shards are configured.
        let mut conns = self.leases.conns(&idx);
        let mut client = Client {
            writer: &mut self.writer,
            deprecate_eof,
        };
        let add = if adj.more_results {
            mysql_common::constants::StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits()
        } else {
            0
        };
        match scatter::relay_concat(&mut conns, &mut client, add).await {
            Ok(r) => Ok(!r.error),
            Err(BackendError::ClientGone(_)) => Err(End::ClientGone),
            Err(e) => Err(self.backend_lost(e)),
        }
    }

    /// Sends the plan's statement to every shard and merges their answers (`binary`: for a
    /// prepared statement, rows in the binary protocol). A plan whose keys showed no string so
    /// far runs without collation weights; if a key is a string after all (the table changed),
    /// nothing has reached the client and the plan runs again with them.
    pub(super) async fn run_merge(
        &mut self,
        backends: &[String],
        merge: &BoundMerge,
        adj: Adjust,
        binary: bool,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let run = |plan, sql, learn| MergeRun {
            plan,
            sql,
            page: (merge.offset, merge.limit),
            learn,
        };
        if let Some((plan, sql)) = &merge.lean {
            match self
                .merge_once(backends, run(plan, sql, None), adj, binary, scope)
                .await?
            {
                Some(ok) => return Ok(ok),
                None => {
                    if let Some(t) = &merge.key_types {
                        t.saw(true);
                    }
                }
            }
        }
        let full = run(&merge.plan, &merge.shard_sql, merge.key_types.as_deref());
        match self.merge_once(backends, full, adj, binary, scope).await? {
            Some(ok) => Ok(ok),
            None => {
                self.writer.send_error(&unsupported(NEEDS_WEIGHTS.into()));
                Ok(false)
            }
        }
    }

    /// One run of a merge. `None`: a key needs collation weights the plan did not ask for
    /// (nothing was written to the client).
    async fn merge_once(
        &mut self,
        backends: &[String],
        run: MergeRun<'_>,
        adj: Adjust,
        binary: bool,
        scope: StatementScope,
    ) -> Result<Option<bool>, End> {
        let packet = crate::wire::command::query_packet(run.sql);
        let Some(idx) = self.send_to_all(backends, &packet, scope).await? else {
            return Ok(Some(false));
        };
        let status = self.status_with(adj.more_results).bits();
        let deprecate_eof = self.deprecate_eof();
        let mut conns = self.leases.conns(&idx);
        let mut client = Client {
            writer: &mut self.writer,
            deprecate_eof,
        };
        let memory_limit = self.live.config.merge_memory_limit;
        let merged = crate::exec::merge::relay_merged(
            &mut conns,
            &mut client,
            run.plan,
            run.page,
            status,
            binary,
            memory_limit,
            run.learn,
        )
        .await;
        match merged {
            Ok(Ok(r)) => {
                self.obs.merged(&self.proxy.metrics, r.rows);
                Ok(Some(!r.error))
            }
            Ok(Err(msg)) if msg == NEEDS_WEIGHTS => Ok(None),
            Ok(Err(msg)) => {
                self.writer.send_error(&unsupported(msg));
                Ok(Some(false))
            }
            Err(BackendError::ClientGone(_)) => Err(End::ClientGone),
            Err(e) => Err(self.backend_lost(e)),
        }
    }

    /// DDL on each backend in turn; the first backend's answer is the client's, a failure on any
    /// backend stops there and names it.
    async fn run_everywhere(
        &mut self,
        backends: &[String],
        packet: &[u8],
        adj: Adjust,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let (first, rest) = match backends.split_first() {
            Some(x) => x,
            None => return Ok(true),
        };
        for b in rest {
            let i = match self.lease_index(b).await {
                Ok(i) => i,
                Err(e) => {
                    self.writer.send_error(&e);
                    return Ok(false);
                }
            };
            let be = self.leases.get_mut(i);
            be.write_command(packet);
            if let Err(e) = be.flush().await {
                return Err(self.backend_lost(e));
            }
            match crate::exec::collect::collect(be).await {
                Ok(crate::exec::collect::Collected::Err(e)) => {
                    let (code, state, msg) = crate::wire::packets::parse_err(&e);
                    self.writer.send_error(&SqlError::new(
                        code,
                        &state,
                        format!("{} (on backend `{b}`)", String::from_utf8_lossy(msg)),
                    ));
                    return Ok(false);
                }
                Ok(_) => {}
                Err(e) => return Err(self.backend_lost(e)),
            }
        }
        self.proxy.metadata.clear();
        self.run_one(first, packet, adj, scope).await
    }
}
