//! SELECT, UPDATE, DELETE and DDL about sharded or broadcast tables: sent to the shards that own
//! the rows the WHERE pins down, or to all of them, and answered as one table would answer.
//! `CREATE`/`DROP`/`ALTER DATABASE` on every backend (`exec::primitives::database_ddl`), and
//! what it changes in the session: the current database, the status flags.
//! Shapes that would need a merge idgate does not do yet get a clear error, never a partial answer.

use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::primitives::{
    concatenated_answer, database_ddl, ddl_everywhere, key_owner_answer, merged_answer,
};
use crate::exec::relay::{Adjust, Reply};
use crate::exec::RelayCursor;
use crate::route::InsertPlan;
use crate::route::Route;
use crate::session::query::Step;
use crate::session::End;
use crate::sql::{DatabaseDdl, DatabaseVerb};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs a routed statement. `Ok(false)`: the client got an error.
    pub(super) async fn run_routed(
        &mut self,
        stmt: &[u8],
        packet: &[u8],
        route: Route,
        more: bool,
    ) -> Result<bool, End> {
        let adj = Adjust {
            more_results: more,
            ..Adjust::default()
        };
        match route {
            Route::One(backend) => self.run_one(&backend, packet, adj).await,
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
                    upsert: None,
                    kind: None,
                };
                let ran = self.run_on_shards(&plan, adj, ("statement", false));
                Ok(ran.await?.unwrap_or(true))
            }
            Route::Concat(backends) => {
                concatenated_answer::run(self, &backends, packet, more).await
            }
            Route::Everywhere(backends) => {
                let ok = self.run_everywhere(&backends, packet, adj).await?;
                if ok && self.session.proxy.tables.load().has_global_unique() {
                    let p = &self.session.proxy;
                    let tables = p.tables.load_full();
                    let db = self.session.db.as_deref();
                    crate::unique::after_ddl::after_ddl(&p.config, &tables, &p.unique, db, stmt)
                        .await;
                }
                Ok(ok)
            }
            Route::Merge(backends, merge) => {
                merged_answer::run(self, &backends, &merge, more, false).await
            }
            Route::ByKey(k) => {
                let Route::Write { .. } = k.otherwise else {
                    return key_owner_answer::run(self, &k, packet, more).await;
                };
                // An UPDATE or DELETE: on the owner's shard when it holds the row, else on
                // every shard.
                if let Some(owner) = key_owner_answer::owner(self, &k).await? {
                    let plan = InsertPlan {
                        parts: vec![(owner, stmt.to_vec(), Vec::new())],
                        broadcast: false,
                        insert_id: 0,
                        first_generated: None,
                        lid_backend: None,
                        upsert: None,
                        kind: None,
                    };
                    let ran = self.run_on_shards(&plan, adj, ("statement", true));
                    if let Some(ok) = ran.await? {
                        return Ok(ok);
                    }
                }
                Box::pin(self.run_routed(stmt, packet, k.otherwise, more)).await
            }
        }
    }

    /// Relays the statement on one backend (joining the client's transaction first).
    async fn run_one(&mut self, backend: &str, packet: &[u8], adj: Adjust) -> Result<bool, End> {
        let i = match self.joined(backend).await? {
            Ok(i) => i,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        self.session
            .relay_on(i, packet, Reply::Results, None, adj, self.scope, self.obs)
            .await
    }

    /// DDL on each backend in turn; the first backend's answer is the client's, a failure on any
    /// backend stops there and names it.
    async fn run_everywhere(
        &mut self,
        backends: &[String],
        packet: &[u8],
        adj: Adjust,
    ) -> Result<bool, End> {
        let Some((first, rest)) = backends.split_first() else {
            return Ok(true);
        };
        if !ddl_everywhere::run_on(self, rest, packet).await? {
            return Ok(false);
        }
        self.session.proxy.metadata.clear();
        self.run_one(first, packet, adj).await
    }

    /// Runs the database statement on `backends` (the default one first).
    pub(super) async fn run_database_ddl(
        &mut self,
        packet: &[u8],
        ddl: &DatabaseDdl,
        backends: &[String],
        more: bool,
    ) -> Step {
        match database_ddl::run(self, packet, ddl, backends).await {
            Ok(Ok(ok)) => {
                if let Some(name) = ddl.name.as_deref() {
                    // As on MariaDB, dropping the current database leaves none selected.
                    if ddl.verb == DatabaseVerb::Drop && self.session.db.as_deref() == Some(name) {
                        self.session.db = None;
                        self.session.db_listed = false;
                    }
                }
                self.session.proxy.metadata.clear();
                if self.session.proxy.xa.is_none() && ok.status != 0 {
                    self.session.status = ok.status;
                }
                let status = self.session.status_with(more);
                let (affected, id, warnings) = (ok.affected_rows, ok.last_insert_id, ok.warnings);
                self.session
                    .writer
                    .send_ok_with(affected, id, status, warnings, b"");
                Step::Ok
            }
            Ok(Err(e)) => {
                self.session.writer.send_error(&e);
                Step::Failed
            }
            Err(end) => Step::End(end),
        }
    }
}
