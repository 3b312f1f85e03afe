//! Executions of the prepared statements idgate runs itself (`emulated.rs` marks which): each
//! decodes the parameters and runs the statement as that file says.

use mysql_common::value::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::primitives::prepared_select::{self, StatementIds};
use crate::exec::primitives::{key_owner_answer, merged_answer};
use crate::route::plan::ByKey;
use crate::route::{self, Plan, Route};
use crate::session::prepared::EmulatedKind;
use crate::session::End;
use crate::sql;
use crate::wire::errors::SqlError;
use crate::wire::stmt_execute::{self};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    pub(in crate::session) async fn execute_emulated(
        &mut self,
        id: u32,
        packet: &[u8],
    ) -> Option<End> {
        let kind = self
            .session
            .stmts
            .get(id)
            .and_then(|st| st.emulated.as_ref())?
            .kind;
        if matches!(kind, EmulatedKind::ConnectionId | EmulatedKind::ProcessList) {
            let sql = self
                .session
                .stmts
                .get(id)
                .and_then(|st| st.emulated.as_ref())?
                .sql
                .clone();
            self.answer_about_connections(&sql).await;
            return None;
        }
        let charset = mysql_common::collations::Collation::resolve(
            (self.session.hello.collation as u16).into(),
        )
        .charset()
        .to_string();
        let charset = if charset.is_empty() {
            "utf8mb4".to_string()
        } else {
            charset
        };
        let decoded = {
            let e = self
                .session
                .stmts
                .get_mut(id)
                .and_then(|st| st.emulated.as_mut())?;
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
                self.session.writer.send_error(&e);
                return None;
            }
        };
        let values: Vec<Value> = params.iter().map(|p| p.value.clone()).collect();
        // A point SELECT: the shard comes from the bound values, no text is made.
        let pinned = {
            let e = self
                .session
                .stmts
                .get(id)
                .and_then(|st| st.emulated.as_ref())?;
            e.select
                .as_deref()
                .and_then(|p| p.single_shard(&e.sql, &values, self.session.proxy.plan_generation()))
        };
        if let Some(backend) = pinned {
            self.obs
                .took_route(crate::metrics::statement_metrics::StmtRoute::SingleShard);
            return self.execute_select_on(id, Ok(vec![backend]), &values).await;
        }
        let bound = {
            let e = self
                .session
                .stmts
                .get(id)
                .and_then(|st| st.emulated.as_ref())?;
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
                self.session.writer.send_error(&e.into());
                return None;
            }
        };
        match (kind, bound) {
            (EmulatedKind::Insert, Some(a)) => self.run_bound_insert(&text, a).await,
            (EmulatedKind::Insert | EmulatedKind::Write, _) => {
                self.session.run_text_statement(&text, self.obs).await
            }
            (EmulatedKind::Select, _) => {
                self.execute_routed_select(id, &text, (&values, &charset))
                    .await
            }
            // Answered above, before any parameter.
            (EmulatedKind::ConnectionId | EmulatedKind::ProcessList, _) => None,
        }
    }

    /// A prepared `SELECT CONNECTION_ID()` or `SHOW PROCESSLIST`, answered in the binary
    /// protocol with idgate's ids, as the text statements are.
    async fn answer_about_connections(&mut self, sql: &[u8]) {
        let status = self.session.status_with(false);
        let deprecate_eof = self.session.hello.deprecate_eof();
        match sql::admin_statement(sql) {
            Some(sql::AdminStatement::ConnectionId { column }) => {
                let id = self.session.registered.id();
                self.session
                    .writer
                    .send_unsigned_int_binary(&column, id, status, deprecate_eof);
            }
            Some(sql::AdminStatement::ProcessList { full }) => {
                let caller = crate::admin::processlist::Caller {
                    user: &self.session.hello.user,
                    session: self.session.registered.id(),
                    statement: sql,
                    collation: u16::from(self.session.hello.collation),
                };
                let rs = crate::admin::processlist::answer(&self.session.proxy, caller, full).await;
                match rs.binary_rows() {
                    Ok(rows) => self.session.writer.send_result_set(
                        &rs.columns,
                        rows.iter().map(Vec::as_slice),
                        0,
                        status,
                        deprecate_eof,
                    ),
                    Err(e) => self.session.writer.send_error(&SqlError::new(
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
    async fn run_bound_insert(&mut self, text: &[u8], a: sql::InsertAnalysis) -> Option<End> {
        self.obs
            .took_route(crate::metrics::statement_metrics::StmtRoute::InsertIds);
        let schema = a.table.schema.clone().or_else(|| {
            self.session
                .db
                .as_ref()
                .map(|d| String::from_utf8_lossy(d).into_owned())
        });
        let Some(rule) = self
            .session
            .proxy
            .tables
            .load()
            .lookup(schema.as_deref(), &a.table.name)
            .cloned()
        else {
            // Not configured (or no longer, for this database): planned as text, which reads a
            // SELECT over placed tables through idgate.
            return self.session.run_text_statement(text, self.obs).await;
        };
        let global = match self
            .session
            .proxy
            .unique
            .keys_for_insert(self.session.db.as_deref(), &a)
        {
            Ok(g) => g,
            Err(e) => {
                self.session.writer.send_error(&e);
                return None;
            }
        };
        if matches!(a.body, sql::InsertBody::Select { .. }) {
            let keys = global.as_deref();
            let run = Box::pin(self.insert_select(text, &a, &rule, keys, false));
            return run.await.err();
        }
        if let Some(keys) = global {
            return self
                .guarded_insert(text, &a, &rule, &keys, (false, false, false))
                .await
                .err();
        }
        let plan = match self.plan_insert(text, &a, &rule).await {
            Ok(p) => p,
            Err(e) => {
                self.session.writer.send_error(&e);
                return None;
            }
        };
        self.run_insert(plan, false).await.err()
    }

    /// Executes a prepared SELECT on the shards its bound values route it to.
    async fn execute_routed_select(
        &mut self,
        id: u32,
        text: &[u8],
        (values, charset): (&[Value], &str),
    ) -> Option<End> {
        let mut route = self.session.route_dml(text, true);
        if let Ok(Some(r @ (Route::Concat(_) | Route::Merge(..)))) = route {
            // Strings are bound as `_charset X'…'`, which the text route does not read as a
            // key's value: the prepared plan reads the bound values themselves.
            let generation = self.session.proxy.plan_generation();
            route = Ok(Some(
                match self
                    .session
                    .stmts
                    .get(id)
                    .and_then(|st| st.emulated.as_ref())
                {
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
            if let Some(Plan::Subqueries(subs)) = self
                .session
                .with_plan_context(|ctx| route::subquery_plan(text, ctx))
            {
                return self.execute_with_subqueries(text, &subs).await.err();
            }
            // Computing on aggregates across shards: lifted over a derived table of them.
            if let Some(lifted) = route::lift(text, e) {
                let lifted = lifted.into_bytes();
                if let Some(Plan::Subqueries(subs)) = self
                    .session
                    .with_plan_context(|ctx| route::subquery_plan(&lifted, ctx))
                {
                    return self.execute_with_subqueries(&lifted, &subs).await.err();
                }
            }
            // A join of tables not placed alike: run in the gateway.
            return self.execute_join_or_refuse(text, e.clone()).await.err();
        }
        if let Ok(Some(r)) = &route {
            self.obs.took_route(crate::session::observe::dml_route(r));
        }
        let backends = match route {
            Ok(Some(Route::One(b))) => vec![b],
            Ok(Some(Route::Concat(bs)))
            | Ok(Some(Route::Write { backends: bs, .. }))
            | Ok(Some(Route::Everywhere(bs))) => bs,
            Ok(None) => vec![self.session.proxy.default_pool.name.clone()],
            Ok(Some(Route::Merge(bs, merge))) => {
                // The parameters are bound into the text: the shards run it as a text query
                // and the merged rows are written in the binary protocol.
                return merged_answer::run(self, &bs, &merge, false, true)
                    .await
                    .err();
            }
            Ok(Some(Route::ByKey(k))) => {
                return self.execute_select_on(id, Err(k), values).await;
            }
            Err(e) => {
                self.session.writer.send_error(&e);
                return None;
            }
        };
        self.execute_select_on(id, Ok(backends), values).await
    }

    /// Executes prepared SELECT `id` on `backends` (preparing it there first), or on the shard
    /// a lookup names (`Err`), and relays the rows in the binary protocol.
    async fn execute_select_on(
        &mut self,
        id: u32,
        backends: Result<Vec<String>, Box<ByKey>>,
        values: &[Value],
    ) -> Option<End> {
        let default = self.session.proxy.default_pool.name.clone();
        let st = self.session.stmts.get_mut(id)?;
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
        let ran = match backends {
            Ok(bs) => prepared_select::run(self, &bs, &mut ids, values).await,
            Err(k) => key_owner_answer::run_prepared(self, &k, &mut ids, values).await,
        };
        if let Some(e) = self
            .session
            .stmts
            .get_mut(id)
            .and_then(|st| st.emulated.as_mut())
        {
            e.sql = sql;
            e.prepared_on = prepared_on;
        }
        ran.err()
    }
}
