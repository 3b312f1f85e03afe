//! The row an UPDATE of a `unique: global` key's column changes, within one all-or-nothing
//! write with the lookups (`unique_write`): read and locked on the shards, the key's new value
//! claimed in the lookup (a value some other row holds is MariaDB's 1062), the UPDATE run on the
//! shards, and the old value released.

use super::bulk_write::BulkOk;
use super::unique_write::{affected, Failure, UniqueWrite};
use crate::exec::collect::{merge_info, Collected};
use crate::exec::cursor::WriteCursor;
use crate::route::quote_ident;
use crate::route::TableRule;
use crate::sql::{UpdateParts, ValueKind, ER_NOT_SUPPORTED_YET};
use crate::unique::{lookup_table, GlobalKey, KeyColumn};
use crate::wire::errors::SqlError;
use crate::wire::packets;

/// Reads the row, claims its new key values, updates it, releases the old values.
#[allow(clippy::too_many_arguments)]
pub async fn update_row<C: WriteCursor>(
    c: &mut C,
    conns: &mut UniqueWrite<C::Txn>,
    stmt: &[u8],
    parts: &UpdateParts,
    rule: &TableRule,
    schema: &str,
    keys: &[&GlobalKey],
    read: &[KeyColumn],
    condition: Option<&[u8]>,
) -> Result<Result<BulkOk, Failure>, C::End> {
    let table = format!("{}.{}", quote_ident(schema), quote_ident(&rule.name));
    let cols: Vec<String> = read.iter().map(lookup_table::read_expr).collect();
    // The condition as the client wrote it, in its character set.
    let mut select = format!("SELECT {} FROM {table}", cols.join(", ")).into_bytes();
    if let Some(cond) = condition {
        select.extend_from_slice(b" WHERE ");
        select.extend_from_slice(cond);
    }
    select.extend_from_slice(b" LIMIT 2 FOR UPDATE");
    let mut matched: Vec<Vec<Option<Vec<u8>>>> = Vec::new();
    // The shard of the last row read: with one row, where its new values live.
    let mut home = "";
    for shard in rule.backends() {
        match conns.collect_one(c, shard, select.clone()).await? {
            Ok(Collected::Rows { rows, .. }) => {
                if !rows.is_empty() {
                    home = shard;
                }
                matched.extend(rows.iter().filter_map(|r| packets::text_row(r)))
            }
            Ok(Collected::Err(p)) => return Ok(Err(Failure::Packet(p))),
            Ok(Collected::Ok(_)) => {}
            Err(f) => return Ok(Err(f)),
        }
    }
    if matched.len() > 1 {
        // Several rows: a key set to NULL meets nothing (its old values go stale, which is
        // harmless); a key set whole to one value meets itself in the second row, MariaDB's
        // 1062; a key set in part would need each row's value, so it is refused.
        for k in keys {
            let mut entry = Vec::new();
            let mut nulled = false;
            for c in &k.columns {
                match parts
                    .assigned
                    .iter()
                    .find(|a| a.column.eq_ignore_ascii_case(&c.name))
                    .map(|a| &a.kind)
                {
                    Some(ValueKind::Null) => nulled = true,
                    Some(ValueKind::Str(b)) => entry.push(String::from_utf8_lossy(b).into_owned()),
                    Some(ValueKind::Int(i)) => entry.push(i.to_string()),
                    _ => entry.clear(),
                }
                if entry.is_empty() && !nulled {
                    break;
                }
            }
            if nulled {
                continue;
            }
            if entry.len() == k.columns.len() {
                return Ok(Err(Failure::Sql(SqlError::new(
                    1062,
                    b"23000",
                    format!("Duplicate entry '{}' for key '{}'", entry.join("-"), k.name),
                ))));
            }
            return Ok(Err(Failure::Sql(SqlError::new(
                ER_NOT_SUPPORTED_YET,
                b"42000",
                format!(
                    "idgate: this UPDATE changes part of unique key `{}` of `{}` (held across \
                     shards through a lookup, unique: global) in more than one row; change \
                     such a key one row at a time (WHERE on the primary key)",
                    k.name, rule.name
                ),
            ))));
        }
    }
    let mut released: Vec<(&GlobalKey, Vec<Vec<u8>>)> = Vec::new();
    if let (Some(row), 1) = (matched.first(), matched.len()) {
        let now = |name: &str| {
            read.iter()
                .position(|r| r.name.eq_ignore_ascii_case(name))
                .and_then(|i| row.get(i).cloned().flatten())
        };
        for k in keys {
            // The key's value after the UPDATE: the assigned literal, or what the row holds.
            let mut new: Option<Vec<Vec<u8>>> = Some(Vec::new());
            let mut entry: Vec<String> = Vec::new();
            let mut old: Option<Vec<Vec<u8>>> = Some(Vec::new());
            for c in &k.columns {
                let before = now(&c.name);
                match (&before, old.as_mut()) {
                    (Some(v), Some(o)) => o.push(lookup_table::literal_from_read(c, v)),
                    _ => old = None,
                }
                let a = parts
                    .assigned
                    .iter()
                    .find(|a| a.column.eq_ignore_ascii_case(&c.name));
                let (sql, shown) = match a.map(|a| (&a.kind, a)) {
                    Some((ValueKind::Null, _)) => (None, String::new()),
                    // The assigned literal as the client wrote it, in its character set.
                    Some((ValueKind::Str(b), a)) => (
                        stmt.get(a.at.clone()).map(<[u8]>::to_vec),
                        String::from_utf8_lossy(b).into_owned(),
                    ),
                    Some((ValueKind::Int(i), a)) => {
                        (stmt.get(a.at.clone()).map(<[u8]>::to_vec), i.to_string())
                    }
                    Some(_) => (None, String::new()),
                    None => (
                        before
                            .as_ref()
                            .map(|v| lookup_table::literal_from_read(c, v)),
                        before
                            .as_ref()
                            .map(|v| lookup_table::shown_from_read(c, v))
                            .unwrap_or_default(),
                    ),
                };
                match (sql, new.as_mut()) {
                    (Some(s), Some(n)) => n.push(s),
                    _ => new = None,
                }
                entry.push(shown);
            }
            let Some(new) = new else {
                // NULL never meets a unique key; the old value is free.
                if let Some(o) = old {
                    released.push((k, o));
                }
                continue;
            };
            let claimed = match conns
                .collect_one(c, &k.backend, lookup_table::claim_sql(k, &new, home))
                .await?
            {
                Ok(c) => c,
                Err(f) => return Ok(Err(f)),
            };
            match affected(&claimed) {
                Err(f) => return Ok(Err(f)),
                Ok(1) => {
                    if let Some(o) = old {
                        released.push((k, o));
                    }
                    continue;
                }
                Ok(_) => {}
            }
            // Claimed before: by this row (the value does not change), by a row gone since,
            // or by another row, which makes this a duplicate.
            if let Some(cond) = condition {
                for shard in rule.backends() {
                    let sql = lookup_table::other_holder_sql(k, &new, cond);
                    match conns.collect_one(c, shard, sql).await? {
                        Ok(Collected::Rows { rows, .. }) if !rows.is_empty() => {
                            return Ok(Err(Failure::Sql(SqlError::new(
                                1062,
                                b"23000",
                                format!(
                                    "Duplicate entry '{}' for key '{}'",
                                    entry.join("-"),
                                    k.name
                                ),
                            ))));
                        }
                        Ok(Collected::Err(p)) => return Ok(Err(Failure::Packet(p))),
                        Ok(_) => {}
                        Err(f) => return Ok(Err(f)),
                    }
                }
            }
            // No other row holds it: this one does, on its shard.
            let sql = lookup_table::own_sql(k, &new, home);
            match conns.collect_one(c, &k.backend, sql).await? {
                Ok(out) => {
                    if let Err(f) = affected(&out) {
                        return Ok(Err(f));
                    }
                }
                Err(f) => return Ok(Err(f)),
            }
        }
    }
    let mut ok = BulkOk {
        affected: 0,
        insert_id: 0,
        warnings: 0,
        info: Vec::new(),
    };
    let mut infos: Vec<Vec<u8>> = Vec::new();
    for shard in rule.backends() {
        match conns.collect_one(c, shard, stmt.to_vec()).await? {
            Ok(Collected::Ok(p)) => {
                if let Some(o) = packets::parse_ok(&p) {
                    ok.affected += o.affected_rows;
                    ok.warnings = ok.warnings.saturating_add(o.warnings);
                }
                infos.push(packets::ok_info(&p).to_vec());
            }
            Ok(Collected::Err(p)) => return Ok(Err(Failure::Packet(p))),
            Ok(Collected::Rows { .. }) => {}
            Err(f) => return Ok(Err(f)),
        }
    }
    let refs: Vec<&[u8]> = infos.iter().map(Vec::as_slice).collect();
    ok.info = merge_info(&refs);
    for (k, o) in released {
        let sql = lookup_table::release_sql(k, &o);
        match conns.collect_one(c, &k.backend, sql).await? {
            Ok(c) => {
                if let Err(f) = affected(&c) {
                    return Ok(Err(f));
                }
            }
            Err(f) => return Ok(Err(f)),
        }
    }
    Ok(Ok(ok))
}
