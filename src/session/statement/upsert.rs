//! An INSERT IGNORE or ON DUPLICATE KEY UPDATE with generated ids (`InsertPlan::upsert`),
//! answered and LAST_INSERT_ID() moved as after one on AUTO_INCREMENT: the first generated id
//! the statement inserted; when none went in, the backend's own insert id (the value an update
//! gave LAST_INSERT_ID(expr), or the last row touched when the backend's column is
//! AUTO_INCREMENT), and LAST_INSERT_ID() unchanged unless the statement set it.

use mysql_common::constants::CapabilityFlags;
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::warn;

use super::StatementExec;
use crate::exec::collect::Collected;
use crate::exec::primitives::upsert_rows::{self, IdTable, PartOk};
use crate::exec::relay::{Adjust, Client, Reply};
use crate::exec::RelayCursor;
use crate::route::insert::UpsertRows;
use crate::route::InsertPlan;
use crate::session::End;
use crate::wire::packets;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs a planned upsert. `Ok(false)`: the client got an error.
    pub(super) async fn run_upsert(
        &mut self,
        plan: &InsertPlan,
        u: &UpsertRows,
        more: bool,
    ) -> Result<bool, End> {
        let Some(stmt) = plan.parts.first().map(|(_, sql, _)| sql.as_slice()) else {
            return Ok(true);
        };
        let answers = match plan.parts.as_slice() {
            // RETURNING's rows are collected too: how many came back says which went in.
            [(backend, sql, _)] if !u.returning => {
                let i = match self.joined(backend).await? {
                    Ok(i) => i,
                    Err(e) => {
                        self.session.writer.send_error(&e);
                        return Ok(false);
                    }
                };
                let adj = Adjust {
                    hold_ok: true,
                    ..Adjust::default()
                };
                let packet = crate::wire::command::query_packet(sql);
                let ran = self.session.relay_on(
                    i,
                    &packet,
                    Reply::Results,
                    None,
                    adj,
                    self.scope,
                    self.obs,
                );
                if !ran.await? {
                    self.after_failed_upsert(plan, stmt);
                    return Ok(false);
                }
                // The held OK: the backend's answer to the statement.
                vec![Collected::Ok(self.session.leases.get_mut(i).packet.clone())]
            }
            _ => match self.write_parts(plan, "INSERT").await? {
                Some(answers) => answers,
                None => {
                    self.after_failed_upsert(plan, stmt);
                    return Ok(false);
                }
            },
        };
        // A broadcast table's backends all hold the same rows: the first one tells.
        let told = if plan.broadcast { 1 } else { plan.parts.len() };
        let oks: Vec<PartOk<'_>> = plan
            .parts
            .iter()
            .take(told)
            .zip(&answers)
            .filter_map(|((backend, _, rows), answer)| match answer {
                Collected::Ok(ok) => Some(PartOk { backend, rows, ok }),
                _ => None,
            })
            .collect();
        let found_rows = self
            .session
            .hello
            .capabilities
            .contains(CapabilityFlags::CLIENT_FOUND_ROWS);
        let candidates = if u.returning {
            let returned: Vec<(&str, &[usize], usize)> = plan
                .parts
                .iter()
                .take(told)
                .zip(&answers)
                .map(|((backend, _, rows), answer)| match answer {
                    Collected::Rows { rows: got, .. } => {
                        (backend.as_str(), rows.as_slice(), got.len())
                    }
                    _ => (backend.as_str(), rows.as_slice(), usize::MAX),
                })
                .collect();
            upsert_rows::returning_candidates(u, &returned)
        } else {
            upsert_rows::insert_candidates(u, found_rows, &oks)
        };
        let table = IdTable {
            schema: &u.schema,
            table: &u.table,
            column: &u.id_column,
        };
        let first = match upsert_rows::first_inserted(self, &table, &candidates).await? {
            Ok(first) => first,
            Err(e) => {
                // The rows are written; only the insert id is in doubt. The backend's own is
                // reported rather than an error for a statement that took effect.
                warn!(error = %e.message, "could not learn which rows an upsert inserted");
                None
            }
        };
        let reported = backend_insert_id(&oks);
        // Sent naming the row it matched (`UpsertRows::names_matched`), and none inserted: one
        // server reports that row's id when the update changed it, else 0.
        let matched = u.names_matched && first.is_none();
        if let [Collected::Ok(ok)] = answers.as_slice() {
            let insert_id = match packets::parse_ok(ok) {
                Some(o) if matched => Some(if o.affected_rows == 2 {
                    o.last_insert_id
                } else {
                    0
                }),
                _ => first,
            };
            let mut client = Client {
                writer: &mut self.session.writer,
                deprecate_eof: self.session.hello.deprecate_eof(),
            };
            let adj = Adjust {
                insert_id,
                more_results: more,
                ..Adjust::default()
            };
            client.final_ok(ok, &adj);
        } else {
            let adj = Adjust {
                insert_id: Some(first.or(reported.map(|(id, _)| id)).unwrap_or(0)),
                more_results: more,
                ..Adjust::default()
            };
            self.answer_parts(plan, adj, &answers);
        }
        if !matched {
            // (The LAST_INSERT_ID(id) idgate added moved only a backend the client never asks.)
            self.after_upsert(stmt, first, reported);
        }
        Ok(true)
    }

    /// LAST_INSERT_ID() after an upsert: the first id it inserted; when it inserted none, the
    /// value its own update gave LAST_INSERT_ID(expr) (`reported` by a backend), else unchanged.
    fn after_upsert(&mut self, stmt: &[u8], first: Option<u64>, reported: Option<(u64, &str)>) {
        let s = &mut *self.session;
        if let Some(id) = first {
            // Written as a literal: no backend holds it as LAST_INSERT_ID() yet. Setting it
            // there first resets the default backend's ROW_COUNT(): asking for it is refused.
            s.last_insert_id = Some(id);
            s.lid_sync = Some(id);
            s.counts_elsewhere = true;
            return;
        }
        if let Some((asked, backend)) = reported {
            if crate::sql::mentions(stmt, b"LAST_INSERT_ID") {
                s.last_insert_id = Some(asked);
                s.lid_sync = (backend != s.proxy.default_pool.name).then_some(asked);
            }
        }
    }

    /// A failed upsert may have called LAST_INSERT_ID(expr) on the default backend; MySQL
    /// leaves the value undefined after an error, idgate puts the session's back.
    fn after_failed_upsert(&mut self, plan: &InsertPlan, stmt: &[u8]) {
        let s = &mut *self.session;
        let on_default = plan
            .parts
            .iter()
            .any(|(b, _, _)| *b == s.proxy.default_pool.name);
        if on_default && crate::sql::mentions(stmt, b"LAST_INSERT_ID") {
            s.lid_sync = s.last_insert_id;
            s.counts_elsewhere |= s.lid_sync.is_some();
        }
    }
}

/// The insert id a backend reported itself, from the part holding the statement's latest row
/// among those that reported one, with its backend.
fn backend_insert_id<'a>(parts: &[PartOk<'a>]) -> Option<(u64, &'a str)> {
    parts
        .iter()
        .filter_map(|p| {
            let id = packets::parse_ok(p.ok)?.last_insert_id;
            (id != 0).then(|| (p.rows.last().copied().unwrap_or(0), id, p.backend))
        })
        .max_by_key(|(row, _, _)| *row)
        .map(|(_, id, backend)| (id, backend))
}
