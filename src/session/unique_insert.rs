//! INSERT into a table whose unique keys hold across shards through lookup tables
//! (`unique: global`). Row by row, in the statement's order and in one transaction with the
//! lookups: each key value is claimed in its lookup (which locks it until the end of the
//! transaction, so concurrent claims take turns); a value already there is checked on the shards
//! for a row that holds it (an entry whose row is gone is stale and taken over). A row whose key
//! is held goes to the shard holding it, which answers exactly as one server would: 1062 for a
//! plain INSERT, a warning for IGNORE, the update for ON DUPLICATE KEY UPDATE. REPLACE deletes
//! the holding rows and writes the row where it belongs. Any failure rolls the whole statement
//! back, lookups included.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use super::bulk_write::BulkOk;
use super::query::Step;
use super::unique_write::{affected, Failure, UniqueWrite};
use super::{End, Session};
use crate::exec::collect::Collected;
use crate::exec::StatementScope;
use crate::route::insert::{self, RowId};
use crate::route::TableRule;
use crate::sql::{self, InsertAnalysis, ER_NOT_SUPPORTED_YET};
use crate::unique::{lookup_table, row_values, GlobalKey};
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// What the rows did, for the one OK.
#[derive(Default)]
struct Tally {
    affected: u64,
    warnings: u16,
    duplicates: u64,
    /// The first generated id of a row that was written.
    first_written: Option<u64>,
    /// RETURNING: the written rows.
    returned: Option<Returned>,
}

/// RETURNING's column definitions, and each written row in statement order (packets as the
/// shards sent them).
type Returned = (Vec<Vec<u8>>, Vec<Vec<u8>>);

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The global keys of the table an INSERT writes, if it has any; an error when its lookups
    /// could not be made.
    pub(super) fn global_keys(
        &self,
        a: &InsertAnalysis,
    ) -> Result<Option<Arc<[GlobalKey]>>, SqlError> {
        if self.proxy.unique.is_empty() {
            return Ok(None);
        }
        let schema = match (&a.table.schema, &self.db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => return Ok(None),
        };
        if let Some(why) = self.proxy.unique.broken(&schema, &a.table.name) {
            return Err(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!(
                    "idgate: the unique key lookups of `{}` could not be made ({why}); restart \
                     idgate to make them before writing to it",
                    a.table.name
                ),
            ));
        }
        Ok(self.proxy.unique.keys_of(&schema, &a.table.name))
    }

    pub(super) async fn run_guarded_insert(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
        keys: &[GlobalKey],
        more: bool,
        scope: StatementScope,
    ) -> Step {
        match self
            .guarded_insert(stmt, a, rule, keys, (more, false), scope)
            .await
        {
            Ok(true) => Step::Ok,
            Ok(false) => Step::Failed,
            Err(end) => Step::End(end),
        }
    }

    /// `(more, always_info)`: more statements follow; the OK carries Records/Duplicates even
    /// for one row (INSERT … SELECT).
    pub(super) async fn guarded_insert(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
        keys: &[GlobalKey],
        (more, always_info): (bool, bool),
        scope: StatementScope,
    ) -> Result<bool, End> {
        if let Err(e) = refuse_shapes(stmt, a, keys) {
            self.writer.send_error(&e);
            return Ok(false);
        }
        let decided = match self.decide_ids(stmt, a, rule).await {
            Ok(d) => d,
            Err(e) => {
                self.writer.send_error(&e);
                return Ok(false);
            }
        };
        let rows = match insert::render_each_row(
            stmt,
            a,
            rule,
            &decided.meta,
            &decided.ids,
            decided.first_generated,
        ) {
            Ok(r) => r,
            Err(e) => {
                self.writer.send_error(&e);
                return Ok(false);
            }
        };
        let values = match row_values::row_keys(stmt, a, &decided.meta, keys, rows.len()) {
            Ok(v) => v,
            Err(e) => {
                self.writer.send_error(&e);
                return Ok(false);
            }
        };
        let backends = keys.iter().map(|k| k.backend.as_str());
        let Some(mut conns) = self.open_unique_write(backends, rule, scope).await? else {
            return Ok(false);
        };
        let outcome = self
            .guarded_rows(a, rule, keys, &rows, &values, &decided.ids, &mut conns)
            .await?;
        let Some(tally) = self.close_unique_write(conns, outcome, "INSERT").await? else {
            return Ok(false);
        };
        if let Some((columns, rows)) = &tally.returned {
            // RETURNING: the written rows, as one server returns them.
            if let Some(id) = tally.first_written {
                self.last_insert_id = Some(id);
                self.lid_sync = Some(id);
            }
            if self.in_transaction() {
                self.status |= mysql_common::constants::StatusFlags::SERVER_STATUS_IN_TRANS.bits();
            }
            let status = self.status_with(more);
            let deprecate_eof = self.deprecate_eof();
            self.writer.send_result_set(
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
            (Some(_), written) => written.unwrap_or(0),
            (None, _) => explicit_insert_id(&decided.ids),
        };
        let ok = BulkOk {
            affected: tally.affected,
            insert_id,
            warnings: tally.warnings,
            info,
        };
        self.answer_bulk(&ok, tally.first_written, more);
        Ok(true)
    }

    /// Claims each row's key values and writes the row where one server would have put it.
    #[allow(clippy::too_many_arguments)]
    async fn guarded_rows(
        &mut self,
        a: &InsertAnalysis,
        rule: &TableRule,
        keys: &[GlobalKey],
        rows: &[(String, Vec<u8>)],
        values: &row_values::RowKeys,
        ids: &[RowId],
        conns: &mut UniqueWrite,
    ) -> Result<Result<Tally, Failure>, End> {
        let mut t = Tally::default();
        for (r, (own, sql)) in rows.iter().enumerate() {
            // (key, shard holding a row with the row's value of that key)
            let mut held: Vec<(usize, String)> = Vec::new();
            for (ki, k) in keys.iter().enumerate() {
                let Some(vals) = values
                    .get(r)
                    .and_then(|v| v.get(ki))
                    .and_then(Option::as_ref)
                else {
                    continue;
                };
                let claimed = match self
                    .collect_one(
                        conns,
                        &k.backend,
                        lookup_table::claim_sql(k, vals).into_bytes(),
                    )
                    .await?
                {
                    Ok(c) => c,
                    Err(f) => return Ok(Err(f)),
                };
                match affected(&claimed) {
                    Err(f) => return Ok(Err(f)),
                    Ok(1) => continue, // a new value: no row holds it
                    Ok(_) => {}
                }
                for shard in rule.backends() {
                    match self
                        .collect_one(conns, shard, lookup_table::holder_sql(k, vals).into_bytes())
                        .await?
                    {
                        Err(f) => return Ok(Err(f)),
                        Ok(Collected::Err(p)) => return Ok(Err(Failure::Packet(p))),
                        Ok(Collected::Rows { rows, .. }) if !rows.is_empty() => {
                            held.push((ki, shard.clone()));
                            break;
                        }
                        _ => {}
                    }
                }
            }
            let mut deleted = 0;
            let target = if held.is_empty() {
                own.clone()
            } else if a.replace {
                for (ki, shard) in &held {
                    if shard == own {
                        continue; // the row's own REPLACE deletes it there
                    }
                    let vals = values[r][*ki].as_deref().unwrap_or_default();
                    let out = match self
                        .collect_one(
                            conns,
                            shard,
                            lookup_table::delete_holder_sql(&keys[*ki], vals).into_bytes(),
                        )
                        .await?
                    {
                        Ok(c) => c,
                        Err(f) => return Ok(Err(f)),
                    };
                    match affected(&out) {
                        Ok(n) => deleted += n,
                        Err(f) => return Ok(Err(f)),
                    }
                }
                own.clone()
            } else {
                // Plain, IGNORE or ON DUPLICATE KEY UPDATE: the shard holding the value answers.
                held[0].1.clone()
            };
            let out = match self.collect_one(conns, &target, sql.clone()).await? {
                Ok(c) => c,
                Err(f) => return Ok(Err(f)),
            };
            let (n, warnings) = match &out {
                Collected::Ok(p) => {
                    packets::parse_ok(p).map_or((0, 0), |o| (o.affected_rows, o.warnings))
                }
                Collected::Err(p) => return Ok(Err(Failure::Packet(p.clone()))),
                Collected::Rows { columns, rows, eof } => {
                    let r = t
                        .returned
                        .get_or_insert_with(|| (columns.clone(), Vec::new()));
                    r.1.extend(rows.iter().cloned());
                    (rows.len() as u64, packets::parse_eof(eof).0)
                }
            };
            let written = if a.replace {
                true
            } else if a.on_duplicate_update {
                n == 1
            } else {
                n >= 1
            };
            if written && target != *own && !a.on_duplicate_update {
                // The shard holding the value took the row as new: the lookup and the shards
                // disagree, and the row would sit on a shard that does not own it.
                return Ok(Err(Failure::Sql(SqlError::new(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!(
                        "idgate: the unique key lookup of `{}` names a row that shard `{target}` \
                         does not hold; the statement was rolled back",
                        rule.name
                    ),
                ))));
            }
            t.affected += n + deleted;
            t.warnings = t.warnings.saturating_add(warnings);
            t.duplicates += if a.replace {
                (n + deleted).saturating_sub(1)
            } else if a.on_duplicate_update {
                u64::from(n == 2)
            } else {
                u64::from(n == 0)
            };
            if written && t.first_written.is_none() {
                if let Some(RowId::Generated(id)) = ids.get(r) {
                    t.first_written = Some(*id);
                }
            }
        }
        Ok(Ok(t))
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
