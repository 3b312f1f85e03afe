//! COM_QUERY: statements about configured tables are rewritten and routed; sequence functions
//! are answered by idgate; everything else reaches the default backend as the client's bytes.

use tokio::io::{AsyncRead, AsyncWrite};

use super::observe::Observed;
use super::{End, Session};
use crate::exec::relay::Reply;
use crate::exec::StatementScope;
use crate::route::statement::{self, Caller, Plan, StatementContext};
use crate::route::{PlanContext, Route};
use crate::sql::{self, StatementKind};
use crate::wire::command::query_packet;
use crate::wire::errors::{self, SqlError};

/// SET statements a session keeps for connections it takes later; older ones beyond this are
/// dropped (a session that keeps setting new user variables would otherwise grow without bound).
const MAX_REPLAYED_SETS: usize = 256;

/// Statements at least this long are parsed off the event loop (see `plan_off_loop`).
const OFF_LOOP_PARSE_BYTES: usize = 64 << 10;

/// The outcome of one statement of a COM_QUERY.
pub(super) enum Step {
    Ok,
    /// The client got an error: later statements of a multi-statement query do not run.
    Failed,
    End(End),
}

impl From<Result<bool, End>> for Step {
    /// A statement's run: `Ok(false)` when the client got an error.
    fn from(r: Result<bool, End>) -> Step {
        match r {
            Ok(true) => Step::Ok,
            Ok(false) => Step::Failed,
            Err(end) => Step::End(end),
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// COM_QUERY; `scope` is the command's, for a packet relayed whole (each statement idgate
    /// runs itself gets its own).
    pub(super) async fn query(
        &mut self,
        packet: &[u8],
        scope: StatementScope,
        obs: &mut Observed,
    ) -> Option<End> {
        if self.proxy.migrations.holds.active() && !self.wait_for_switch(&packet[1..]).await {
            return None;
        }
        if self.answers_lost || self.carried_lid.is_none() {
            let sql = &packet[1..];
            let first = sql::split_statements(sql).into_iter().next();
            if let Some(e) = self.lost_answer_refusal(first.map_or(sql, |r| &sql[r])) {
                self.writer.send_error(&e);
                return None;
            }
        }
        if self.proxy.sessions_move {
            self.note_connection_state(&packet[1..]);
        }
        if self.proxy.tables.load().is_empty()
            && self.proxy.idgen.is_empty()
            // Replica reads, and moving to a new primary or another pooled connection, need
            // every SET noted (`after_forward`), which the plan path does.
            && !self.proxy.sessions_move
            && sql::explain_route_target(&packet[1..]).is_none()
            && !self.may_refuse_local_load(&packet[1..])
            && sql::admin_statement(&packet[1..]).is_none()
        {
            return self.forward(packet, Reply::Results, scope, obs).await.err();
        }
        let sql = &packet[1..];
        let ranges = sql::split_statements(sql);
        if ranges.len() > 1 && !self.multi_statements {
            // A client without CLIENT_MULTI_STATEMENTS gets exactly what MariaDB answers: the
            // packet goes whole to the default backend, whose connection has multi-statements off
            // as the client does (`SessionSetup::prepare`). MariaDB refuses it with its own 1064 and runs
            // none of it, or runs it as the one statement it is (a compound `BEGIN … END`).
            return self.forward(packet, Reply::Results, scope, obs).await.err();
        }
        if ranges.len() <= 1 {
            let stmt = ranges.first().map_or(sql, |r| &sql[r.clone()]);
            let plan = self.plan_off_loop(stmt).await;
            return match self.run_step(stmt, plan, packet, false, obs).await {
                Step::End(e) => Some(e),
                _ => None,
            };
        }
        let mut plans: Vec<Plan> = Vec::with_capacity(ranges.len());
        for r in &ranges {
            plans.push(self.plan_off_loop(&sql[r.clone()]).await);
        }
        // Transaction statements are idgate's in XA mode, and whenever another backend joined
        // the client's transaction: such a batch runs one by one.
        let joined = self.leases.any_joined();
        let txn_control = (self.proxy.xa.is_some() || joined)
            && plans.iter().any(|p| {
                matches!(
                    p,
                    Plan::Forward(
                        StatementKind::Begin
                            | StatementKind::Commit
                            | StatementKind::Rollback
                            | StatementKind::Savepoint
                            | StatementKind::Ddl
                            | StatementKind::Set
                    )
                )
            });
        if !txn_control && plans.iter().all(|p| matches!(p, Plan::Forward(_))) {
            // Nothing for idgate to do: the backend runs the whole batch.
            let ok = match self.forward(packet, Reply::Results, scope, obs).await {
                Ok(ok) => ok,
                Err(end) => return Some(end),
            };
            if ok {
                for (r, plan) in ranges.iter().zip(&plans) {
                    if let Plan::Forward(kind) = plan {
                        self.after_forward(&sql[r.clone()], *kind);
                    }
                }
                self.propagate_session_state().await;
            }
            return None;
        }
        let last = ranges.len() - 1;
        for (i, (r, plan)) in ranges.iter().zip(plans).enumerate() {
            let stmt = &sql[r.clone()];
            let own = query_packet(stmt);
            match self.run_step(stmt, plan, &own, i < last, obs).await {
                Step::Ok => {}
                Step::Failed => return None,
                Step::End(e) => return Some(e),
            }
        }
        None
    }

    /// Runs a statement text idgate made from a prepared statement and its parameters.
    pub(super) async fn run_text_statement(
        &mut self,
        stmt: &[u8],
        obs: &mut Observed,
    ) -> Option<End> {
        let packet = query_packet(stmt);
        let plan = self.plan(stmt);
        match self.run_step(stmt, plan, &packet, false, obs).await {
            Step::End(e) => Some(e),
            _ => None,
        }
    }

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
    /// `Ok(None)`: forward it as it is. `by_key`: the client's own SELECT, which a lookup may
    /// send to one shard ([`Route::ByKey`]).
    pub(super) fn route_dml(&self, stmt: &[u8], by_key: bool) -> Result<Option<Route>, SqlError> {
        let generation = self.proxy.plan_generation();
        self.with_plan_context(|ctx| self.proxy.plans.route(stmt, ctx, generation, by_key))
    }

    /// What planning a statement needs from this session, for `f`.
    pub(super) fn with_statement_context<T>(&self, f: impl FnOnce(&StatementContext) -> T) -> T {
        let db = self.db.as_deref().map(String::from_utf8_lossy);
        // The generation before the tables: a plan is never cached under a newer generation
        // than the tables it was made from.
        let generation = self.proxy.plan_generation();
        let tables = self.proxy.tables.load();
        let ctx = StatementContext {
            tables: PlanContext {
                db: db.as_deref(),
                tables: &tables,
            },
            plans: &self.proxy.plans,
            generation,
            default_backend: &self.proxy.default_pool.name,
            backends: &self.proxy.backend_names,
            generators: !self.proxy.idgen.is_empty(),
            local_files: self.hello.local_files(),
            caller: self.live.user(&self.hello.user).map(|user| Caller {
                user,
                host: &self.peer_host,
            }),
        };
        f(&ctx)
    }

    /// Decides what to do with one statement (`route::statement::plan`).
    pub(super) fn plan(&self, stmt: &[u8]) -> Plan {
        self.with_statement_context(|ctx| statement::plan(stmt, ctx))
    }

    /// [`plan`](Self::plan), except that a large statement about configured tables is planned
    /// on the blocking pool: a parse of megabytes must not stall the other sessions this event
    /// loop serves.
    async fn plan_off_loop(&mut self, stmt: &[u8]) -> Plan {
        if stmt.len() < OFF_LOOP_PARSE_BYTES
            || sql::admin_statement(stmt).is_some()
            || !self.proxy.tables.load().mentioned_in(stmt)
        {
            return self.plan(stmt);
        }
        let proxy = self.proxy.clone();
        let owned = stmt.to_vec();
        let db = self.db.clone();
        let user = self.live.user(&self.hello.user).cloned();
        let host = self.peer_host.clone();
        let local_files = self.hello.local_files();
        let generation = proxy.plan_generation();
        let planned = tokio::task::spawn_blocking(move || {
            let db = db.as_deref().map(String::from_utf8_lossy);
            let tables = proxy.tables.load();
            let ctx = StatementContext {
                tables: PlanContext {
                    db: db.as_deref(),
                    tables: &tables,
                },
                plans: &proxy.plans,
                generation,
                default_backend: &proxy.default_pool.name,
                backends: &proxy.backend_names,
                generators: !proxy.idgen.is_empty(),
                local_files,
                caller: user.as_ref().map(|user| Caller { user, host: &host }),
            };
            statement::plan(&owned, &ctx)
        })
        .await;
        planned.unwrap_or_else(|e| {
            Plan::Refuse(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate: planning the statement failed ({e})"),
            ))
        })
    }

    /// Carries a USE or SET that ran on the default backend over to the session's other
    /// connections, so every shard sees the same session state.
    pub(super) async fn propagate_session_state(&mut self) {
        if std::mem::take(&mut self.pending_follow_db) {
            self.follow_db().await;
        }
        let sets = std::mem::take(&mut self.pending_sets);
        if sets.is_empty() {
            return;
        }
        for h in self.leases.held_mut().iter_mut().filter(|h| !h.default) {
            for stmt in &sets {
                if let Err(e) = h.lease.query_drop_bytes(stmt).await {
                    tracing::warn!(backend = %h.backend, error = %e, "could not carry a SET over");
                    h.lease.broken = true;
                }
            }
        }
    }

    /// Bookkeeping after a statement ran on the default backend.
    pub(super) fn after_forward(&mut self, stmt: &[u8], kind: StatementKind) {
        match kind {
            StatementKind::Set => {
                self.idle.note_set(stmt);
                if sql::mentions_sql_mode(stmt) {
                    self.no_auto_value_on_zero = None;
                }
                // Replayed on connections to other backends the session takes later. A repeated
                // SET moves to the end (later SETs win); the list stays bounded.
                if self.proxy.pools.len() > 1 || self.proxy.sessions_move {
                    let reach = sql::set_reach(stmt);
                    match reach {
                        // Ran once where it ran; done.
                        sql::SetReach::Statement | sql::SetReach::Global => return,
                        // The connections the session holds now start their next
                        // transaction with it; one taken later would keep it too long.
                        sql::SetReach::NextTransaction => {
                            self.pinned.get_or_insert("SET");
                            self.pending_sets.push(stmt.to_vec());
                            return;
                        }
                        sql::SetReach::Unknown => {
                            self.pinned.get_or_insert("SET");
                        }
                        sql::SetReach::Session => {}
                    }
                    self.replay.retain(|s| s.as_slice() != stmt);
                    if self.replay.len() >= MAX_REPLAYED_SETS {
                        self.replay.remove(0);
                        // What the dropped SET set is no longer carried to a new primary.
                        self.pinned.get_or_insert("SET");
                    }
                    self.replay.push(stmt.to_vec());
                    self.pending_sets.push(stmt.to_vec());
                }
            }
            StatementKind::Use => {
                if let Some(db) = sql::use_target(stmt) {
                    self.db = Some(db);
                    self.db_listed = false;
                    self.pending_follow_db = true;
                }
            }
            StatementKind::Ddl if self.proxy.tables.load().mentioned_in(stmt) => {
                // Column order may have changed: read it again on next use.
                self.proxy.metadata.clear();
            }
            _ => {}
        }
    }

    pub(super) async fn run_plan(
        &mut self,
        stmt: &[u8],
        plan: Plan,
        packet: &[u8],
        more: bool,
        obs: &mut Observed,
    ) -> Step {
        // idgate's own statements touch no backend and no transaction.
        let plan = match plan {
            Plan::Admin(a) => return self.admin_statement(a, stmt, more, obs).await,
            p => p,
        };
        // A relayed statement is judged where it is relayed (`forward_with`); a read of
        // sharded tables may go to the shards' replicas.
        let replica = match &plan {
            Plan::Forward(_) => false,
            Plan::Routed(_, StatementKind::Select) if self.reads_on_replicas(stmt) => true,
            _ => {
                self.note_primary_statement(stmt);
                false
            }
        };
        let default = &self.proxy.default_pool.name;
        let counts_elsewhere = match &plan {
            Plan::Forward(_) | Plan::Refuse(_) => false,
            Plan::Routed(crate::route::Route::One(b), _) => b != default,
            Plan::Insert(boxed) => !matches!(
                &boxed.1.placement,
                crate::route::Placement::Single { backend } if backend == default
            ),
            _ => true,
        };
        let plan = match plan {
            Plan::Forward(StatementKind::Select)
                if self.counts_elsewhere && sql::asks_row_counts(stmt) =>
            {
                Plan::Refuse(SqlError::new(
                    sql::ER_NOT_SUPPORTED_YET,
                    b"42000",
                    "FOUND_ROWS() and ROW_COUNT() after a statement idgate ran on shards are not \
                     tracked; use the row count that statement returned",
                ))
            }
            p => p,
        };
        if !matches!(plan, Plan::Refuse(_)) {
            self.counts_elsewhere = counts_elsewhere;
        }
        let kind = plan.kind().unwrap_or_else(|| sql::classify(stmt));
        let scope = self.statement_scope(stmt, kind);
        if self.proxy.xa.is_some() {
            if let Some(step) = self.xa_step(stmt, kind, more).await {
                return step;
            }
        }
        if kind == StatementKind::Savepoint && self.in_transaction() {
            if let Err(step) = self.savepoint_elsewhere(stmt).await {
                return step;
            }
        }
        let mut cursor = self.cursor(scope, obs);
        cursor.replica = replica;
        cursor.execute_plan(stmt, plan, packet, more).await
    }
}
