//! The rows of an INSERT into a table whose unique keys hold across shards through lookup
//! tables (`unique: global`), written row by row in the statement's order within one
//! all-or-nothing write (`unique_write`): each key value is claimed in its lookup (which locks
//! it until the end of the transaction, so concurrent claims take turns); a value already there
//! is checked on the shards for a row that holds it (an entry whose row is gone is stale and
//! taken over). A row whose key is held goes to the shard holding it, which answers exactly as
//! one server would: 1062 for a plain INSERT, a warning for IGNORE, the update for ON DUPLICATE
//! KEY UPDATE. REPLACE deletes the holding rows and writes the row where it belongs. Each entry
//! names the shard holding its row, so `WHERE key = value` goes there.

use super::unique_write::{affected, Failure, UniqueWrite};
use crate::exec::collect::Collected;
use crate::exec::cursor::WriteCursor;
use crate::route::insert::RowId;
use crate::route::TableRule;
use crate::sql::InsertAnalysis;
use crate::unique::{lookup_table, row_values, GlobalKey};
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// What the rows did, for the one OK.
#[derive(Default)]
pub struct Tally {
    pub affected: u64,
    pub warnings: u16,
    pub duplicates: u64,
    /// The first generated id of a row that was written.
    pub first_written: Option<u64>,
    /// The last insert id a row's own answer reported (a value its update gave
    /// LAST_INSERT_ID(expr), or the row it touched where the id column is AUTO_INCREMENT): what
    /// one server reports when no generated id was written.
    pub reported: Option<u64>,
    /// RETURNING: the written rows.
    pub returned: Option<Returned>,
}

/// RETURNING's column definitions, and each written row in statement order (packets as the
/// shards sent them).
pub type Returned = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Claims each row's key values and writes the row where one server would have put it.
/// `found_rows`: the client counts rows an upsert matched and left unchanged (CLIENT_FOUND_ROWS).
#[allow(clippy::too_many_arguments)]
pub async fn write_rows<C: WriteCursor>(
    c: &mut C,
    conns: &mut UniqueWrite<C::Txn>,
    (a, found_rows): (&InsertAnalysis, bool),
    rule: &TableRule,
    keys: &[GlobalKey],
    rows: &[(String, Vec<u8>)],
    values: &row_values::RowKeys,
    ids: &[RowId],
) -> Result<Result<Tally, Failure>, C::End> {
    let mut t = Tally::default();
    for (r, (own, sql)) in rows.iter().enumerate() {
        // (key, shard holding a row with the row's value of that key)
        let mut held: Vec<(usize, String)> = Vec::new();
        // Keys whose value had an entry already: it names this row's shard once the row is in.
        let mut existing: Vec<usize> = Vec::new();
        for (ki, k) in keys.iter().enumerate() {
            let Some(vals) = values
                .get(r)
                .and_then(|v| v.get(ki))
                .and_then(Option::as_ref)
            else {
                continue;
            };
            let claimed = match conns
                .collect_one(c, &k.backend, lookup_table::claim_sql(k, vals, own))
                .await?
            {
                Ok(c) => c,
                Err(f) => return Ok(Err(f)),
            };
            match affected(&claimed) {
                Err(f) => return Ok(Err(f)),
                Ok(1) => continue, // a new value: no row holds it
                Ok(_) => existing.push(ki),
            }
            for shard in rule.backends() {
                match conns
                    .collect_one(c, shard, lookup_table::holder_sql(k, vals))
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
                let out = match conns
                    .collect_one(c, shard, lookup_table::delete_holder_sql(&keys[*ki], vals))
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
        let out = match conns.collect_one(c, &target, sql.clone()).await? {
            Ok(c) => c,
            Err(f) => return Ok(Err(f)),
        };
        let (n, warnings) = match &out {
            Collected::Ok(p) => {
                let o = packets::parse_ok(p);
                if let Some(id) = o.map(|o| o.last_insert_id).filter(|&id| id != 0) {
                    t.reported = Some(id);
                }
                o.map_or((0, 0), |o| (o.affected_rows, o.warnings))
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
        } else if a.on_duplicate_update && n == 1 && found_rows {
            // 1 is a new row, or one matched and left unchanged.
            match upsert_inserted(c, conns, &target, (keys, rule), ids.get(r), &out).await? {
                Ok(w) => w,
                Err(f) => return Ok(Err(f)),
            }
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
        if written && target == *own {
            for &ki in &existing {
                let vals = values[r][ki].as_deref().unwrap_or_default();
                let sql = lookup_table::own_sql(&keys[ki], vals, own);
                match conns.collect_one(c, &keys[ki].backend, sql).await? {
                    Ok(out) => {
                        if let Err(f) = affected(&out) {
                            return Ok(Err(f));
                        }
                    }
                    Err(f) => return Ok(Err(f)),
                }
            }
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

/// Whether a one-row upsert that counted 1 under CLIENT_FOUND_ROWS inserted its row: its
/// generated id is reported by a backend whose id column is AUTO_INCREMENT, else read back.
async fn upsert_inserted<C: WriteCursor>(
    c: &mut C,
    conns: &mut UniqueWrite<C::Txn>,
    target: &str,
    (keys, rule): (&[GlobalKey], &TableRule),
    id: Option<&RowId>,
    out: &Collected,
) -> Result<Result<bool, Failure>, C::End> {
    let (Some(RowId::Generated(id)), Some(k)) = (id, keys.first()) else {
        return Ok(Ok(true));
    };
    let reported = match out {
        Collected::Ok(p) => packets::parse_ok(p).map(|o| o.last_insert_id),
        _ => None,
    };
    if reported == Some(*id) {
        return Ok(Ok(true));
    }
    let column = crate::route::quote_ident(&rule.id_column);
    let sql = format!(
        "SELECT 1 FROM {}.{} WHERE {column} = {id}",
        crate::route::quote_ident(&k.schema),
        crate::route::quote_ident(&k.table)
    );
    Ok(
        match conns.collect_one(c, target, sql.into_bytes()).await? {
            Ok(Collected::Rows { rows, .. }) => Ok(!rows.is_empty()),
            Ok(Collected::Err(p)) => Err(Failure::Packet(p)),
            Ok(Collected::Ok(_)) => Ok(false),
            Err(f) => Err(f),
        },
    )
}
