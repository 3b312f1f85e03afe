//! A statement's plan, run: each kind of plan goes to the primitive or the session step
//! that runs it.

use mysql_common::constants::ColumnType;
use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::primitives::{ordered_write_check, table_list};
use crate::exec::relay::{Adjust, Reply};
use crate::route::explain;
use crate::route::statement::Plan;
use crate::session::query::Step;
use crate::sql::{self, StatementKind};
use crate::wire::errors::{self, SqlError};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs `plan`, decided for `stmt` (sent as `packet`).
    pub(in crate::session) async fn execute_plan(
        &mut self,
        stmt: &[u8],
        plan: Plan,
        packet: &[u8],
        more: bool,
    ) -> Step {
        match plan {
            Plan::KeyUpdate(boxed) => {
                let (parts, rule) = *boxed;
                Step::from(self.key_update(stmt, &parts, &rule, more).await)
            }
            Plan::Forward(kind) => {
                // The other backends of a transaction end first; the default one answers.
                if matches!(kind, StatementKind::Commit | StatementKind::Rollback) {
                    match self
                        .session
                        .end_transaction(kind == StatementKind::Commit)
                        .await
                    {
                        Ok(None) => {}
                        Ok(Some(e)) => {
                            // A part could not commit: roll back the default backend too.
                            if let Some(i) = self
                                .session
                                .leases
                                .position(&self.session.proxy.default_pool.name)
                            {
                                if let Err(err) =
                                    self.session.leases.get_mut(i).query_drop("ROLLBACK").await
                                {
                                    return Step::End(self.session.backend_lost(err));
                                }
                            }
                            self.session.writer.send_error(&e);
                            return Step::Failed;
                        }
                        Err(end) => return Step::End(end),
                    }
                }
                let adj = Adjust {
                    more_results: more,
                    ..Adjust::default()
                };
                match self
                    .session
                    .forward_with(packet, Reply::Results, None, adj, self.scope, self.obs)
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => return Step::Failed,
                    Err(end) => return Step::End(end),
                }
                if kind == StatementKind::Savepoint {
                    self.session.track_savepoint(stmt);
                }
                self.session.after_forward(stmt, kind);
                self.session.propagate_session_state().await;
                Step::Ok
            }
            Plan::Refuse(e) => {
                self.session.writer.send_error(&e);
                Step::Failed
            }
            Plan::Admin(a) => self.session.admin_statement(a, stmt, more, self.obs).await,
            Plan::NextValues {
                generator,
                count,
                column,
            } => self.next_values(&generator, count, &column, more).await,
            Plan::ExplainRoute(r) => {
                match self
                    .session
                    .with_statement_context(|ctx| explain::explain(&stmt[r], ctx))
                {
                    Ok(rows) => {
                        let status = self.session.status_with(more);
                        let deprecate_eof = self.session.hello.deprecate_eof();
                        let rows = rows.iter().map(|r| r.as_slice());
                        let names = explain::COLUMNS;
                        self.session
                            .writer
                            .send_text_table(&names, rows, status, deprecate_eof);
                        Step::Ok
                    }
                    Err(e) => {
                        self.session.writer.send_error(&e);
                        Step::Failed
                    }
                }
            }
            Plan::Subqueries(subs) => Box::pin(self.run_subqueries(stmt, &subs, more)).await,
            Plan::Join(shape) => Box::pin(self.run_join(stmt, &shape, more)).await,
            Plan::Lifted {
                sql,
                refusal,
                unique_id,
            } => {
                if let Some(u) = unique_id {
                    match ordered_write_check::is_unique_by_itself(self, &u).await {
                        Ok(Ok(true)) => {}
                        Ok(Ok(false)) => {
                            self.session.writer.send_error(&refusal);
                            return Step::Failed;
                        }
                        Ok(Err(e)) => {
                            self.session.writer.send_error(&e);
                            return Step::Failed;
                        }
                        Err(end) => return Step::End(end),
                    }
                }
                // The lifted statement reads a derived table over shards: its subquery runs
                // first. Anything else it turned out to be keeps the original refusal.
                match self.session.plan(sql.as_bytes()) {
                    Plan::Subqueries(subs) => {
                        Box::pin(self.run_subqueries(sql.as_bytes(), &subs, more)).await
                    }
                    _ => {
                        self.session.writer.send_error(&refusal);
                        Step::Failed
                    }
                }
            }
            Plan::Routed(route, _) => match self.run_routed(stmt, packet, route, more).await {
                Ok(true) => Step::Ok,
                Ok(false) => Step::Failed,
                Err(end) => Step::End(end),
            },
            Plan::Database { ddl, backends } => {
                self.run_database_ddl(packet, &ddl, &backends, more).await
            }
            Plan::ListTables { backends, names } => {
                let mut all = vec![self.session.proxy.default_pool.name.clone()];
                all.extend(backends);
                match table_list::run(self, packet, &all, &names, more).await {
                    Ok(true) => Step::Ok,
                    Ok(false) => Step::Failed,
                    Err(end) => Step::End(end),
                }
            }
            Plan::LoadData(boxed) => {
                let (ld, rule) = *boxed;
                // Boxed: a load's state is large and rare; every statement's future stays small.
                match Box::pin(self.load_data(ld, &rule, more)).await {
                    Ok(Ok(())) => Step::Ok,
                    Ok(Err(e)) => {
                        self.session.writer.send_error(&e);
                        Step::Failed
                    }
                    Err(end) => Step::End(end),
                }
            }
            Plan::Insert(boxed) => {
                let (a, rule) = *boxed;
                let global = match self
                    .session
                    .proxy
                    .unique
                    .keys_for_insert(self.session.db.as_deref(), &a)
                {
                    Ok(g) => g,
                    Err(e) => {
                        self.session.writer.send_error(&e);
                        return Step::Failed;
                    }
                };
                if matches!(a.body, sql::InsertBody::Select { .. }) {
                    let keys = global.as_deref();
                    let run = Box::pin(self.insert_select(stmt, &a, &rule, keys, more));
                    return Step::from(run.await);
                }
                if let Some(keys) = global {
                    let flags = (more, false, false);
                    let run = self.guarded_insert(stmt, &a, &rule, &keys, flags);
                    return Step::from(run.await);
                }
                let plan = match self.plan_insert(stmt, &a, &rule).await {
                    Ok(p) => p,
                    Err(e) => {
                        self.session.writer.send_error(&e);
                        return Step::Failed;
                    }
                };
                match self.run_insert(plan, more).await {
                    Ok(true) => Step::Ok,
                    Ok(false) => Step::Failed,
                    Err(end) => Step::End(end),
                }
            }
        }
    }

    /// `SELECT NEXTVAL(gen)` / `SELECT NEXT n VALUES FROM gen`: the first id of a contiguous block.
    async fn next_values(&mut self, generator: &str, count: u64, column: &str, more: bool) -> Step {
        let g = match self.session.proxy.idgen.get(generator) {
            Ok(g) => g.clone(),
            Err(_) => {
                self.session.writer.send_error(&SqlError::new(
                    1146,
                    b"42S02",
                    format!(
                        "Unknown sequence '{generator}': name a generator from idgate's config"
                    ),
                ));
                return Step::Failed;
            }
        };
        let first = match g.kind() {
            "segment" | "snowflake" => match g.next_block(count).await {
                Ok(b) => b.first,
                Err(e) => {
                    self.session.writer.send_error(&SqlError::new(
                        errors::ER_UNKNOWN_ERROR,
                        b"HY000",
                        format!("idgate: {e}"),
                    ));
                    return Step::Failed;
                }
            },
            kind => {
                self.session.writer.send_error(&SqlError::new(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!("Generator '{generator}' is {kind}: its ids depend on the row, so NEXTVAL cannot hand them out"),
                ));
                return Step::Failed;
            }
        };
        let status = self.session.status_with(more);
        let deprecate_eof = self.session.hello.deprecate_eof();
        let ty = (ColumnType::MYSQL_TYPE_LONGLONG, 20);
        self.session
            .writer
            .send_unsigned(column, first, ty, status, deprecate_eof);
        Step::Ok
    }
}
