//! INSERT into a configured table: ids generated as AUTO_INCREMENT would, the statement rewritten
//! (only the id column spliced in), each row sent to the shard that owns it, one answer back.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::metadata::TableMeta;
use crate::exec::primitives::generated_ids;
use crate::exec::relay::{Adjust, Reply};
use crate::exec::RelayCursor;
use crate::route::insert::{self, InsertPlan, RowId};
use crate::route::TableRule;
use crate::session::End;
use crate::sql::InsertAnalysis;
use crate::wire::errors::{self, SqlError};

/// The ids of an INSERT's rows, decided before it is placed.
pub(super) struct DecidedIds {
    /// The table's schema: the statement's, or the session's database.
    pub schema: String,
    pub meta: Arc<TableMeta>,
    pub ids: Vec<RowId>,
    pub first_generated: Option<u64>,
}

fn err(code: u16, state: &[u8; 5], msg: impl Into<String>) -> SqlError {
    SqlError::new(code, state, msg)
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    pub(super) async fn no_auto_value_on_zero(&mut self) -> Result<bool, SqlError> {
        if let Some(v) = self.session.no_auto_value_on_zero {
            return Ok(v);
        }
        let name = self.session.proxy.default_pool.name.clone();
        let i = self.session.lease_index(&name).await?;
        let rows = self
            .session
            .leases
            .get_mut(i)
            .query_rows("SELECT @@SESSION.sql_mode")
            .await
            .map_err(|e| err(errors::CR_SERVER_LOST, b"HY000", format!("idgate: {e}")))?;
        let mode = rows
            .first()
            .and_then(|r| r.first())
            .and_then(|v| v.as_deref())
            .unwrap_or_default();
        let on = String::from_utf8_lossy(mode)
            .to_ascii_uppercase()
            .contains("NO_AUTO_VALUE_ON_ZERO");
        self.session.no_auto_value_on_zero = Some(on);
        Ok(on)
    }

    /// The generator `rule` fills its ids from, if any.
    pub(super) fn generator_of(
        &self,
        rule: &TableRule,
    ) -> Result<Option<Arc<crate::idgen::Generator>>, SqlError> {
        let Some(g) = &rule.generator else {
            return Ok(None);
        };
        let found = self.session.proxy.idgen.get(g).cloned();
        found
            .map(Some)
            .map_err(|e| err(errors::ER_UNKNOWN_ERROR, b"HY000", e.to_string()))
    }

    pub(super) async fn table_meta(
        &mut self,
        rule: &TableRule,
        schema: &str,
        table: &str,
    ) -> Result<Arc<TableMeta>, SqlError> {
        let backend = rule.backends().first().map_or("", String::as_str);
        let i = self.session.lease_index(backend).await?;
        let proxy = self.session.proxy.clone();
        let meta = proxy
            .metadata
            .get_or_load(self.session.leases.get_mut(i), schema, table)
            .await
            .map_err(|e| err(errors::CR_SERVER_LOST, b"HY000", format!("idgate: {e}")))?;
        meta.ok_or_else(|| {
            err(
                1146,
                b"42S02",
                format!("Table '{schema}.{table}' doesn't exist"),
            )
        })
    }

    /// Decides ids and shards for an INSERT and renders what each backend runs: the I/O
    /// (metadata, sql_mode, the generator) here, the decisions in `route::insert`.
    pub(super) async fn plan_insert(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
    ) -> Result<InsertPlan, SqlError> {
        let r = self.decide_ids(stmt, a, rule).await?;
        let mut plan = insert::place_and_render(stmt, a, rule, &r.meta, &r.ids, r.first_generated)?;
        if let Some(u) = &mut plan.upsert {
            u.schema = r.schema;
        }
        // The default backend's LAST_INSERT_ID() is the session's: it must not move.
        let elsewhere = plan
            .parts
            .iter()
            .all(|(b, _, _)| *b != self.session.proxy.default_pool.name);
        if elsewhere {
            insert::name_matched_row(&mut plan, stmt, a, rule)?;
        }
        Ok(plan)
    }

    /// Each row's id as AUTO_INCREMENT would give it, generated ids drawn.
    pub(super) async fn decide_ids(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
    ) -> Result<DecidedIds, SqlError> {
        let table = &a.table.name;
        insert::check_statement(stmt, a, rule)?;
        let schema = match (&a.table.schema, &self.session.db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => return Err(err(1046, b"3D000", "No database selected")),
        };
        let meta = self.table_meta(rule, &schema, table).await?;
        let generator = self.generator_of(rule)?;
        if let Some(g) = &generator {
            insert::check_id_type(rule, g.kind(), &meta, table)?;
        }
        let wants = insert::wanted_ids(a, rule, &meta)?;
        // The generator is the id column's AUTO_INCREMENT, whatever the backend's column says:
        // 0 asks for an id unless the session's sql_mode has NO_AUTO_VALUE_ON_ZERO.
        let zero_is_value = wants.zero_seen() && self.no_auto_value_on_zero().await?;
        let mut ids = insert::row_ids(a, rule, &meta, &wants, zero_is_value)?;
        let first_generated = match &generator {
            Some(g) => generated_ids::fill(g, rule, a, &meta, &mut ids).await?,
            None => None,
        };
        Ok(DecidedIds {
            schema,
            meta,
            ids,
            first_generated,
        })
    }

    /// Runs a planned INSERT. `Ok(false)`: the client got an error.
    pub(super) async fn run_insert(&mut self, plan: InsertPlan, more: bool) -> Result<bool, End> {
        if let Some(u) = &plan.upsert {
            return self.run_upsert(&plan, u, more).await;
        }
        let adj = Adjust {
            insert_id: Some(plan.insert_id),
            insert_id_needs_rows: plan.first_generated.is_none(),
            more_results: more,
            ..Adjust::default()
        };
        let ok = if plan.parts.len() == 1 {
            let (backend, sql, _) = &plan.parts[0];
            let i = match self.joined(backend).await? {
                Ok(i) => i,
                Err(e) => {
                    self.session.writer.send_error(&e);
                    return Ok(false);
                }
            };
            if plan.first_generated.is_some()
                && plan.lid_backend.as_deref()
                    == Some(self.session.proxy.default_pool.name.as_str())
            {
                // This INSERT writes LAST_INSERT_ID(id) on the default backend itself: a value
                // still waiting to be carried there is superseded, and sending it first would
                // only cost the backend a statement. If the INSERT fails, the session's value
                // is put back below.
                self.session.lid_sync = None;
            }
            let packet = crate::wire::command::query_packet(sql);
            self.session
                .relay_on(i, &packet, Reply::Results, None, adj, self.scope, self.obs)
                .await?
        } else {
            let ran = self.run_on_shards(&plan, adj, ("INSERT", false));
            ran.await?.unwrap_or(true)
        };
        if let Some(id) = plan.first_generated {
            let on_default =
                plan.lid_backend.as_deref() == Some(self.session.proxy.default_pool.name.as_str());
            if ok {
                self.session.last_insert_id = Some(id);
                // The default backend holds the id already when the first row went there (in a
                // single- or a multi-shard INSERT); a value still waiting to be carried there is
                // older and must not overwrite it.
                self.session.lid_sync = (!on_default).then_some(id);
            } else if on_default {
                // The failed statement may have set LAST_INSERT_ID(id) on the backend; MySQL
                // leaves it undefined after an error, idgate puts the session's value back.
                self.session.lid_sync = self.session.last_insert_id;
            }
        }
        Ok(ok)
    }
}
