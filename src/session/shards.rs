//! A write that spans several backends: sent to all of them at once, made all-or-nothing when
//! the client is in autocommit mode, and answered with one merged OK (or RETURNING result set).

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session};
use crate::exec::collect::{merge_info, Collected};
use crate::exec::relay::Adjust;
use crate::exec::StatementScope;
use crate::route::InsertPlan;
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Runs an INSERT split over several backends. `Ok(false)`: the client got an error.
    pub(super) async fn run_on_shards(
        &mut self,
        plan: &InsertPlan,
        adj: Adjust,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let mut targets = Vec::with_capacity(plan.parts.len());
        for (backend, sql, _) in &plan.parts {
            match self.lease_index(backend).await {
                Ok(i) => targets.push((i, sql.clone())),
                Err(e) => {
                    self.writer.send_error(&e);
                    return Ok(false);
                }
            }
        }
        let in_txn = self.in_transaction();
        // Autocommit: idgate wraps the parts in one transaction per backend and commits only if
        // every part succeeded. In a client transaction each backend joins it on first write.
        if in_txn {
            for (i, _) in &targets {
                self.join_transaction(*i, scope).await?;
            }
        }
        // XA mode: each part is an XA branch, committed with two-phase commit.
        let xa_auto = !in_txn && self.xa_mode();
        let begin: Vec<Option<Vec<u8>>> = if xa_auto {
            let idx: Vec<usize> = targets.iter().map(|(i, _)| *i).collect();
            let proxy = self.proxy.clone();
            self.leases
                .xa_autocommit_branches(&idx, proxy.xa.as_deref())
        } else {
            vec![(!in_txn).then(|| b"START TRANSACTION".to_vec()); targets.len()]
        };
        let results = match self.leases.send_all(&targets, &begin).await {
            Ok(r) => r,
            Err(e) => return Err(self.backend_lost(e)),
        };
        if xa_auto {
            let failed = results.iter().find_map(|r| match r {
                Collected::Err(e) => Some(e.clone()),
                _ => None,
            });
            let outcome = self.finish_participants(failed.is_none()).await;
            if let Some(e) = failed {
                self.writer.write(&e);
                return Ok(false);
            }
            if let Some(e) = outcome {
                self.writer.send_error(&e);
                return Ok(false);
            }
            self.answer_merged(plan, &results, adj);
            return Ok(true);
        }
        let leases: Vec<usize> = targets.iter().map(|(i, _)| *i).collect();
        if let Some(first_err) = results.iter().find_map(|r| match r {
            Collected::Err(e) => Some(e.clone()),
            _ => None,
        }) {
            if !in_txn {
                if let Err(e) = self.leases.finish_all(&leases, false).await {
                    return Err(self.backend_lost(e));
                }
            }
            self.writer.write(&first_err);
            return Ok(false);
        }
        if !in_txn {
            let failed = match self.leases.finish_all(&leases, true).await {
                Ok(f) => f,
                Err(e) => return Err(self.backend_lost(e)),
            };
            if let Some((i, e)) = failed.first() {
                let (code, _, msg) = packets::parse_err(e);
                let backend = self.leases.held_mut()[*i].backend.clone();
                self.writer.send_error(&SqlError::new(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!(
                        "idgate: COMMIT failed on backend `{backend}` ({code}: {}) after the other shards committed; \
                         check the rows of this INSERT on `{backend}`",
                        String::from_utf8_lossy(msg)
                    ),
                ));
                return Ok(false);
            }
        }
        self.answer_merged(plan, &results, adj);
        Ok(true)
    }

    /// One answer for the client from the parts' answers.
    fn answer_merged(&mut self, plan: &InsertPlan, results: &[Collected], adj: Adjust) {
        // A write inside the client's transaction (BEGIN or autocommit=0) leaves it open, as
        // MariaDB reports; Connector/J skips ROLLBACK when the flag says no transaction.
        if self.in_transaction() {
            self.status |= StatusFlags::SERVER_STATUS_IN_TRANS.bits();
        }
        let status = StatusFlags::from_bits_retain(
            self.status
                | if adj.more_results {
                    StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits()
                } else {
                    0
                },
        );
        // A broadcast table answers as one table: the first backend's counts.
        let counted = if plan.broadcast {
            &results[..1]
        } else {
            results
        };
        if let Some(Collected::Rows { columns, .. }) = results.first() {
            self.answer_rows(plan, counted, columns, status);
            return;
        }
        let mut affected = 0;
        let mut warnings = 0u16;
        let mut infos = Vec::new();
        for r in counted {
            if let Collected::Ok(p) = r {
                if let Some(o) = packets::parse_ok(p) {
                    affected += o.affected_rows;
                    warnings = warnings.saturating_add(o.warnings);
                }
                infos.push(packets::ok_info(p));
            }
        }
        let info = merge_info(&infos);
        let insert_id = match adj.insert_id {
            Some(_) if adj.insert_id_needs_rows && affected == 0 => 0,
            id => id.unwrap_or(0),
        };
        let start = self.writer.begin();
        packets::ok(
            self.writer.payload(),
            packets::OK_HEADER,
            affected,
            insert_id,
            status,
            warnings,
            &info,
        );
        self.writer.end(start);
    }

    /// RETURNING rows of several backends, put back in the statement's row order.
    fn answer_rows(
        &mut self,
        plan: &InsertPlan,
        results: &[Collected],
        columns: &[Vec<u8>],
        status: StatusFlags,
    ) {
        let mut ordered: Vec<(usize, &Vec<u8>)> = Vec::new();
        let mut warnings = 0u16;
        for (part, r) in plan.parts.iter().zip(results) {
            if let Collected::Rows { rows, eof, .. } = r {
                warnings = warnings.saturating_add(packets::parse_eof(eof).0);
                // Each backend returns its rows in the order it got them; when a row is missing
                // (IGNORE), keep the backend's order after the others.
                if rows.len() == part.2.len() {
                    ordered.extend(part.2.iter().copied().zip(rows));
                } else {
                    ordered.extend(rows.iter().map(|row| (usize::MAX, row)));
                }
            }
        }
        ordered.sort_by_key(|(i, _)| *i);
        let rows: Vec<&[u8]> = ordered.into_iter().map(|(_, r)| r.as_slice()).collect();
        let deprecate_eof = self.deprecate_eof();
        self.writer
            .send_result_set(columns, rows, warnings, status, deprecate_eof);
    }
}
