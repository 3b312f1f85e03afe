//! INSERT into a table whose unique keys hold across shards through lookup tables
//! (`unique: global`). Row by row, in the statement's order and in one transaction with the
//! lookups: each key value is claimed in its lookup (which locks it until the end of the
//! transaction, so concurrent claims take turns); a value already there is checked on the shards
//! for a row that holds it (an entry whose row is gone is stale and taken over). A row whose key
//! is held goes to the shard holding it, which answers exactly as one server would: 1062 for a
//! plain INSERT, a warning for IGNORE, the update for ON DUPLICATE KEY UPDATE. REPLACE deletes
//! the holding rows and writes the row where it belongs. Any failure rolls the whole statement
//! back, lookups included.

use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::primitives::bulk_write::BulkOk;
use crate::exec::primitives::{key_expressions, unique_insert_rows, unique_write};
use crate::route::insert::{self, RowId};
use crate::route::TableRule;
use crate::session::End;
use crate::sql::{self, InsertAnalysis, ER_NOT_SUPPORTED_YET};
use crate::unique::{row_values, GlobalKey};
use crate::wire::errors::SqlError;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// `(more, always_info, evaluated)`: more statements follow; the OK carries
    /// Records/Duplicates even for one row (INSERT … SELECT); the key columns' expressions were
    /// evaluated into literals already.
    pub(super) async fn guarded_insert(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
        keys: &[GlobalKey],
        (more, always_info, evaluated): (bool, bool, bool),
    ) -> Result<bool, End> {
        if let Err(e) = refuse_shapes(stmt, a, keys) {
            self.session.writer.send_error(&e);
            return Ok(false);
        }
        if !evaluated {
            // Key values given as expressions: evaluated first, then the statement again with
            // their literals (a table whose columns cannot be read is refused below, as before).
            let schema = a.table.schema.clone().or_else(|| {
                let db = self.session.db.as_deref()?;
                Some(String::from_utf8_lossy(db).into_owned())
            });
            let meta = match schema {
                Some(s) => self.table_meta(rule, &s, &a.table.name).await.ok(),
                None => None,
            };
            let rows = match &a.body {
                sql::InsertBody::Values { rows } => rows.len(),
                _ => 1,
            };
            let spans = meta.map_or_else(Vec::new, |m| key_expressions::spans(a, &m, keys, rows));
            if let (false, Some(k)) = (spans.is_empty(), keys.first()) {
                let text =
                    match key_expressions::evaluate(self, &k.backend, stmt, a, &spans).await? {
                        Ok(text) => text,
                        Err(e) => {
                            self.session.writer.send_error(&e);
                            return Ok(false);
                        }
                    };
                let a = match sql::analyze_insert(&text) {
                    Ok(a) => a,
                    Err(e) => {
                        self.session.writer.send_error(&e.into());
                        return Ok(false);
                    }
                };
                let flags = (more, always_info, true);
                let run = Box::pin(self.guarded_insert(&text, &a, rule, keys, flags));
                return run.await;
            }
        }
        let decided = match self.decide_ids(stmt, a, rule).await {
            Ok(d) => d,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        let rows = match insert::render_each_row(stmt, a, rule, &decided.meta, &decided.ids) {
            Ok(r) => r,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        let values = match row_values::row_keys(stmt, a, &decided.meta, keys, rows.len(), evaluated)
        {
            Ok(v) => v,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        let backends = keys.iter().map(|k| k.backend.as_str());
        let mut conns = match unique_write::open(self, backends, rule.backends()).await? {
            Ok(w) => w,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        let ids = &decided.ids;
        let found_rows = self
            .session
            .hello
            .capabilities
            .contains(mysql_common::constants::CapabilityFlags::CLIENT_FOUND_ROWS);
        let outcome = unique_insert_rows::write_rows(
            self,
            &mut conns,
            (a, found_rows),
            rule,
            keys,
            &rows,
            &values,
            ids,
        )
        .await?;
        let tally = match conns.close(self, outcome, "INSERT").await? {
            Ok(t) => t,
            Err(f) => {
                f.send(&mut self.session.writer);
                return Ok(false);
            }
        };
        if let Some((columns, rows)) = &tally.returned {
            // RETURNING: the written rows, as one server returns them.
            if let Some(id) = tally.first_written {
                self.session.last_insert_id = Some(id);
                self.session.lid_sync = Some(id);
            }
            if self.session.in_transaction() {
                self.session.status |=
                    mysql_common::constants::StatusFlags::SERVER_STATUS_IN_TRANS.bits();
            }
            let status = self.session.status_with(more);
            let deprecate_eof = self.session.hello.deprecate_eof();
            self.session.writer.send_result_set(
                columns,
                rows.iter().map(Vec::as_slice),
                tally.warnings,
                status,
                deprecate_eof,
            );
            return Ok(true);
        }
        let info = if rows.len() > 1 || always_info {
            format!(
                "Records: {}  Duplicates: {}  Warnings: {}",
                rows.len(),
                tally.duplicates,
                tally.warnings
            )
            .into_bytes()
        } else {
            Vec::new()
        };
        let insert_id = match (decided.first_generated, tally.first_written) {
            (Some(_), Some(written)) => written,
            (Some(_), None) => tally.reported.unwrap_or(0),
            (None, _) => explicit_insert_id(&decided.ids),
        };
        let ok = BulkOk {
            affected: tally.affected,
            insert_id,
            warnings: tally.warnings,
            info,
        };
        self.answer_bulk(&ok, tally.first_written, more);
        if let (None, Some(asked)) = (tally.first_written, tally.reported) {
            // No new row: LAST_INSERT_ID() moves only to a value the statement gave it.
            if sql::mentions(stmt, b"LAST_INSERT_ID") {
                self.session.last_insert_id = Some(asked);
                self.session.lid_sync = Some(asked);
            }
        }
        Ok(true)
    }
}

/// With only explicit ids, MySQL reports the last row's positive value.
fn explicit_insert_id(ids: &[RowId]) -> u64 {
    ids.iter()
        .rev()
        .find_map(|r| match r {
            RowId::Explicit(Some(v)) if *v > 0 => Some(*v as u64),
            _ => None,
        })
        .unwrap_or(0)
}

/// Shapes whose effect on a global key idgate cannot know before the row is written.
fn refuse_shapes(stmt: &[u8], a: &InsertAnalysis, keys: &[GlobalKey]) -> Result<(), SqlError> {
    let refuse = |what: &str| {
        Err(SqlError::new(
            ER_NOT_SUPPORTED_YET,
            b"42000",
            format!(
                "idgate: {what} into `{}`, whose unique key `{}` is held across shards through a \
                 lookup (unique: global), is not supported yet",
                a.table.name,
                keys.first().map_or("", |k| k.name.as_str())
            ),
        ))
    };
    if a.on_duplicate_update {
        let assigned = sql::duplicate_update_assignments(stmt).map_err(SqlError::from)?;
        if !keeps_keys(&assigned, keys) {
            return refuse("ON DUPLICATE KEY UPDATE of a unique key's column");
        }
    }
    Ok(())
}

/// Whether ON DUPLICATE KEY UPDATE leaves every global key as the lookups know it: no key column
/// assigned, or (with one global key) every column of it assigned `VALUES(itself)`, the value
/// the row claimed, as ORMs' upserts write (`email = VALUES(email)`). A key only partly
/// assigned could end as a value nobody claimed.
fn keeps_keys(assigned: &[(String, bool)], keys: &[GlobalKey]) -> bool {
    let of_key =
        |k: &GlobalKey, c: &str| k.columns.iter().any(|kc| kc.name.eq_ignore_ascii_case(c));
    let touched: Vec<&GlobalKey> = keys
        .iter()
        .filter(|k| assigned.iter().any(|(c, _)| of_key(k, c)))
        .collect();
    match touched.as_slice() {
        [] => true,
        [k] if keys.len() == 1 => k.columns.iter().all(|kc| {
            let mine: Vec<bool> = assigned
                .iter()
                .filter(|(c, _)| c.eq_ignore_ascii_case(&kc.name))
                .map(|(_, keeps)| *keeps)
                .collect();
            !mine.is_empty() && mine.iter().all(|keeps| *keeps)
        }),
        _ => false,
    }
}
