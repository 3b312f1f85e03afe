//! Prepared statements idgate executes itself. The backend prepared each as written (so the
//! client got genuine metadata); each execution decodes the parameters and:
//! - INSERT into a generated table, UPDATE/DELETE on a placed table: binds them into the text and
//!   runs it through the same rewrite and routing as a text statement (the answer is an OK
//!   packet, the same in both protocols);
//! - SELECT on a placed table: routes by the bound values, then executes a prepared statement on
//!   each shard reached, so rows come back in the binary protocol;
//! - SELECT with subqueries over sharded tables: binds them into the text, runs the inner
//!   queries first as a text query would, and writes the outer statement's rows in the binary
//!   protocol (`subquery.rs`);
//! - SELECT joining tables not placed alike: binds them into the text, runs the join in the
//!   gateway as a text query would, and writes the final statement's rows in the binary
//!   protocol (`join.rs`).

use mysql_common::value::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use super::dml::Route;
use super::prepared::{Emulated, EmulatedKind};
use super::{End, Session};
use crate::exec::primitives::prepared_select::{self, StatementIds};
use crate::exec::primitives::{key_owner_answer, merged_answer};
use crate::exec::StatementScope;
use crate::route::plan::ByKey;
use crate::route::{self, Plan};
use crate::sql::{self, StatementKind};
use crate::wire::errors::SqlError;
use crate::wire::stmt_execute::{self, BoundState};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// A relayed statement is looked at again when tables were placed otherwise since its
    /// prepare (a table moved by IDGATE MIGRATE): when it now concerns a configured table,
    /// idgate runs it itself from now on, where the table is. True when it does.
    pub(super) fn follow_new_placements(&mut self, id: u32) -> bool {
        let now = self.proxy.tables_generation();
        let Some(st) = self.stmts.get_mut(id) else {
            return false;
        };
        if st.generation == now {
            return false;
        }
        st.generation = now;
        let Some(text) = st.relayed_text.clone() else {
            return false;
        };
        self.mark_emulated(id, &text);
        let emulated = self.stmts.get(id).is_some_and(|s| s.emulated.is_some());
        if emulated {
            self.stmts.drop_relayed_text(id);
        }
        emulated
    }

    /// Marks statement `id` for idgate to execute when it concerns a configured table.
    pub(super) fn mark_emulated(&mut self, id: u32, stmt: &[u8]) {
        let about_connections = match sql::admin_statement(stmt) {
            Some(sql::AdminStatement::ConnectionId { .. }) => Some(EmulatedKind::ConnectionId),
            Some(sql::AdminStatement::ProcessList { .. }) => Some(EmulatedKind::ProcessList),
            _ => None,
        };
        if let Some(kind) = about_connections {
            if let Some(st) = self.stmts.get_mut(id) {
                st.emulated = Some(Box::new(Emulated {
                    kind,
                    prepared_on: Default::default(),
                    sql: stmt.to_vec(),
                    insert: None,
                    placeholders: Vec::new(),
                    returning: false,
                    select: None,
                    bound: BoundState::default(),
                }));
            }
            return;
        }
        // A database lives on every backend: its DDL runs through idgate's plan too.
        let database = self.proxy.backend_names.len() > 1 && sql::database_ddl(stmt).is_some();
        if !database && !self.proxy.tables.load().mentioned_in(stmt) {
            return;
        }
        let mut insert = None;
        let mut select = None;
        let (kind, placeholders, returning) = match sql::classify(stmt) {
            StatementKind::Insert | StatementKind::Replace => {
                let Ok(a) = sql::analyze_insert(stmt) else {
                    return;
                };
                let schema = a.table.schema.clone().or_else(|| {
                    self.db
                        .as_ref()
                        .map(|d| String::from_utf8_lossy(d).into_owned())
                });
                // Subqueries in its values run first through idgate: each execution binds its
                // parameters into the text and plans it as a text statement.
                let subqueries_first = self
                    .with_plan_context(|ctx| route::insert_subqueries(stmt, &a, ctx))
                    .is_some();
                // A SELECT over placed tables must be read through idgate whatever the target.
                let reads_placed = matches!(&a.body, sql::InsertBody::Select { query }
                    if stmt.get(query.clone())
                        .is_some_and(|q| self.proxy.tables.load().placed_mentioned_in(q)));
                if !reads_placed
                    && !subqueries_first
                    && self
                        .proxy
                        .tables
                        .load()
                        .lookup(schema.as_deref(), &a.table.name)
                        .is_none()
                {
                    return;
                }
                if subqueries_first {
                    (EmulatedKind::Write, a.placeholders.clone(), false)
                } else {
                    let r = (EmulatedKind::Insert, a.placeholders.clone(), a.returning);
                    insert = Some(Box::new(a));
                    r
                }
            }
            k @ (StatementKind::Select | StatementKind::Update | StatementKind::Delete)
                if self.proxy.tables.load().placed_mentioned_in(stmt) =>
            {
                // Only statements that routing would not simply leave on the default backend.
                let generation = self.proxy.plan_generation();
                let planned =
                    self.with_plan_context(|ctx| self.proxy.plans.plan_for(stmt, ctx, generation));
                if let Ok((plan, literals)) = &planned {
                    if matches!(plan.bind(stmt, literals, false), Ok(None)) {
                        return;
                    }
                }
                let kind = if k == StatementKind::Select {
                    select = planned.ok().and_then(|(plan, literals)| {
                        route::prepared::PreparedSelect::new(plan, literals, generation)
                            .map(Box::new)
                    });
                    EmulatedKind::Select
                } else {
                    EmulatedKind::Write
                };
                (kind, sql::placeholder_offsets(stmt), false)
            }
            // DDL the plan sends to several backends.
            StatementKind::Ddl
                if database || self.proxy.tables.load().placed_mentioned_in(stmt) =>
            {
                (EmulatedKind::Write, sql::placeholder_offsets(stmt), false)
            }
            _ => return,
        };
        if let Some(st) = self.stmts.get_mut(id) {
            st.emulated = Some(Box::new(Emulated {
                kind,
                prepared_on: Default::default(),
                sql: stmt.to_vec(),
                insert,
                placeholders,
                returning,
                select,
                bound: BoundState::default(),
            }));
        }
    }

    pub(super) async fn execute_emulated(
        &mut self,
        id: u32,
        packet: &[u8],
        scope: StatementScope,
    ) -> Option<End> {
        let kind = self.stmts.get(id).and_then(|st| st.emulated.as_ref())?.kind;
        if matches!(kind, EmulatedKind::ConnectionId | EmulatedKind::ProcessList) {
            let sql = self
                .stmts
                .get(id)
                .and_then(|st| st.emulated.as_ref())?
                .sql
                .clone();
            self.answer_about_connections(&sql).await;
            return None;
        }
        let charset =
            mysql_common::collations::Collation::resolve((self.hello.collation as u16).into())
                .charset()
                .to_string();
        let charset = if charset.is_empty() {
            "utf8mb4".to_string()
        } else {
            charset
        };
        let decoded = {
            let e = self.stmts.get_mut(id).and_then(|st| st.emulated.as_mut())?;
            if e.returning {
                Err(SqlError::new(
                    sql::ER_NOT_SUPPORTED_YET,
                    b"42000",
                    "RETURNING in a server-side prepared INSERT into a table whose ids idgate generates \
                     is not supported; send it as a text query",
                ))
            } else {
                stmt_execute::decode_params(packet, e.placeholders.len(), &mut e.bound)
            }
        };
        let params = match decoded {
            Ok(p) => p,
            Err(e) => {
                self.writer.send_error(&e);
                return None;
            }
        };
        let values: Vec<Value> = params.iter().map(|p| p.value.clone()).collect();
        // A point SELECT: the shard comes from the bound values, no text is made.
        let pinned = {
            let e = self.stmts.get(id).and_then(|st| st.emulated.as_ref())?;
            e.select
                .as_deref()
                .and_then(|p| p.single_shard(&e.sql, &values, self.proxy.plan_generation()))
        };
        if let Some(backend) = pinned {
            self.obs
                .took_route(crate::admin::statement_metrics::StmtRoute::SingleShard);
            return self
                .execute_select_on(id, Ok(vec![backend]), &values, scope)
                .await;
        }
        let bound = {
            let e = self.stmts.get(id).and_then(|st| st.emulated.as_ref())?;
            let pairs: Vec<_> = params
                .iter()
                .map(|p| (p.value.clone(), p.column_type))
                .collect();
            match &e.insert {
                Some(a) => {
                    sql::bind_insert(&e.sql, a, &pairs, &charset).map(|(t, b)| (e.kind, t, Some(b)))
                }
                None => sql::bind_placeholders(&e.sql, &e.placeholders, &pairs, &charset)
                    .map(|t| (e.kind, t, None)),
            }
        };
        let (kind, text, bound) = match bound {
            Ok(d) => d,
            Err(e) => {
                self.writer.send_error(&e.into());
                return None;
            }
        };
        match (kind, bound) {
            (EmulatedKind::Insert, Some(a)) => self.run_bound_insert(&text, a, scope).await,
            (EmulatedKind::Insert | EmulatedKind::Write, _) => self.run_text_statement(&text).await,
            (EmulatedKind::Select, _) => {
                self.execute_routed_select(id, &text, (&values, &charset), scope)
                    .await
            }
            // Answered above, before any parameter.
            (EmulatedKind::ConnectionId | EmulatedKind::ProcessList, _) => None,
        }
    }

    /// A prepared `SELECT CONNECTION_ID()` or `SHOW PROCESSLIST`, answered in the binary
    /// protocol with idgate's ids, as the text statements are.
    async fn answer_about_connections(&mut self, sql: &[u8]) {
        let status = self.status_with(false);
        let deprecate_eof = self.hello.deprecate_eof();
        match sql::admin_statement(sql) {
            Some(sql::AdminStatement::ConnectionId { column }) => {
                let id = self.registered.id();
                self.writer
                    .send_unsigned_int_binary(&column, id, status, deprecate_eof);
            }
            Some(sql::AdminStatement::ProcessList { full }) => {
                let caller = crate::admin::processlist::Caller {
                    user: &self.hello.user,
                    session: self.registered.id(),
                    statement: sql,
                    collation: u16::from(self.hello.collation),
                };
                let rs = crate::admin::processlist::answer(&self.proxy, caller, full).await;
                match rs.binary_rows() {
                    Ok(rows) => self.writer.send_result_set(
                        &rs.columns,
                        rows.iter().map(Vec::as_slice),
                        0,
                        status,
                        deprecate_eof,
                    ),
                    Err(e) => self.writer.send_error(&SqlError::new(
                        crate::wire::errors::ER_UNKNOWN_ERROR,
                        b"HY000",
                        format!(
                            "idgate: cannot write the process list in the binary protocol: {e}"
                        ),
                    )),
                }
            }
            _ => {}
        }
    }

    /// Runs a prepared INSERT whose parameters were bound into `text` and its analysis `a`.
    async fn run_bound_insert(
        &mut self,
        text: &[u8],
        a: sql::InsertAnalysis,
        scope: StatementScope,
    ) -> Option<End> {
        self.obs
            .took_route(crate::admin::statement_metrics::StmtRoute::InsertIds);
        let schema = a.table.schema.clone().or_else(|| {
            self.db
                .as_ref()
                .map(|d| String::from_utf8_lossy(d).into_owned())
        });
        let Some(rule) = self
            .proxy
            .tables
            .load()
            .lookup(schema.as_deref(), &a.table.name)
            .cloned()
        else {
            // Not configured (or no longer, for this database): planned as text, which reads a
            // SELECT over placed tables through idgate.
            return self.run_text_statement(text).await;
        };
        let global = match self.proxy.unique.keys_for_insert(self.db.as_deref(), &a) {
            Ok(g) => g,
            Err(e) => {
                self.writer.send_error(&e);
                return None;
            }
        };
        if matches!(a.body, sql::InsertBody::Select { .. }) {
            let keys = global.as_deref();
            let run = Box::pin(self.insert_select(text, &a, &rule, keys, false, scope));
            return run.await.err();
        }
        if let Some(keys) = global {
            return self
                .guarded_insert(text, &a, &rule, &keys, (false, false, false), scope)
                .await
                .err();
        }
        let plan = match self.plan_insert(text, &a, &rule).await {
            Ok(p) => p,
            Err(e) => {
                self.writer.send_error(&e);
                return None;
            }
        };
        self.run_insert(plan, false, scope).await.err()
    }

    /// Executes a prepared SELECT on the shards its bound values route it to.
    async fn execute_routed_select(
        &mut self,
        id: u32,
        text: &[u8],
        (values, charset): (&[Value], &str),
        scope: StatementScope,
    ) -> Option<End> {
        let mut route = self.route_dml(text, true);
        if let Ok(Some(r @ (Route::Concat(_) | Route::Merge(..)))) = route {
            // Strings are bound as `_charset X'…'`, which the text route does not read as a
            // key's value: the prepared plan reads the bound values themselves.
            let generation = self.proxy.plan_generation();
            route = Ok(Some(
                match self.stmts.get(id).and_then(|st| st.emulated.as_ref()) {
                    Some(e) => match e.select.as_deref() {
                        Some(p) => p.by_key(&e.sql, values, charset, generation, r),
                        None => r,
                    },
                    None => r,
                },
            ));
        }
        if let Err(e) = &route {
            // Subqueries over sharded tables: run first, bound in, then the outer statement.
            if let Some(Plan::Subqueries(subs)) =
                self.with_plan_context(|ctx| route::subquery_plan(text, ctx))
            {
                return self.execute_with_subqueries(text, &subs, scope).await.err();
            }
            // Computing on aggregates across shards: lifted over a derived table of them.
            if let Some(lifted) = route::lift(text, e) {
                let lifted = lifted.into_bytes();
                if let Some(Plan::Subqueries(subs)) =
                    self.with_plan_context(|ctx| route::subquery_plan(&lifted, ctx))
                {
                    return self
                        .execute_with_subqueries(&lifted, &subs, scope)
                        .await
                        .err();
                }
            }
            // A join of tables not placed alike: run in the gateway.
            return self
                .execute_join_or_refuse(text, e.clone(), scope)
                .await
                .err();
        }
        if let Ok(Some(r)) = &route {
            self.obs.took_route(super::observe::dml_route(r));
        }
        let backends = match route {
            Ok(Some(Route::One(b))) => vec![b],
            Ok(Some(Route::Concat(bs)))
            | Ok(Some(Route::Write { backends: bs, .. }))
            | Ok(Some(Route::Everywhere(bs))) => bs,
            Ok(None) => vec![self.proxy.default_pool.name.clone()],
            Ok(Some(Route::Merge(bs, merge))) => {
                // The parameters are bound into the text: the shards run it as a text query
                // and the merged rows are written in the binary protocol.
                return merged_answer::run(&mut self.cursor(scope), &bs, &merge, false, true)
                    .await
                    .err();
            }
            Ok(Some(Route::ByKey(k))) => {
                return self.execute_select_on(id, Err(k), values, scope).await;
            }
            Err(e) => {
                self.writer.send_error(&e);
                return None;
            }
        };
        self.execute_select_on(id, Ok(backends), values, scope)
            .await
    }

    /// Executes prepared SELECT `id` on `backends` (preparing it there first), or on the shard
    /// a lookup names (`Err`), and relays the rows in the binary protocol.
    async fn execute_select_on(
        &mut self,
        id: u32,
        backends: Result<Vec<String>, Box<ByKey>>,
        values: &[Value],
        scope: StatementScope,
    ) -> Option<End> {
        let default = self.proxy.default_pool.name.clone();
        let st = self.stmts.get_mut(id)?;
        let backend_id = st.backend_id;
        // Lent to the execution and given back (no copy per execution).
        let (sql, mut prepared_on) = match st.emulated.as_mut() {
            Some(e) => (
                std::mem::take(&mut e.sql),
                std::mem::take(&mut e.prepared_on),
            ),
            None => Default::default(),
        };
        let mut ids = StatementIds {
            sql: &sql,
            default: (&default, backend_id),
            prepared_on: &mut prepared_on,
        };
        let c = &mut self.cursor(scope);
        let ran = match backends {
            Ok(bs) => prepared_select::run(c, &bs, &mut ids, values).await,
            Err(k) => key_owner_answer::run_prepared(c, &k, &mut ids, values).await,
        };
        if let Some(e) = self.stmts.get_mut(id).and_then(|st| st.emulated.as_mut()) {
            e.sql = sql;
            e.prepared_on = prepared_on;
        }
        ran.err()
    }
}
