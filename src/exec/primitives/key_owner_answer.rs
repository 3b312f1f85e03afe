//! A SELECT, UPDATE or DELETE whose WHERE gives a whole unique key held through a lookup
//! (`unique: global`): the lookup names the shard holding the key's row, and that shard alone
//! runs the statement. The owner is a hint: an entry whose row is gone, moved or not yet visible
//! names a shard without the row, and then the statement runs where it would without the lookup
//! (every shard), so the answer is always the one every shard together gives. A key matches at
//! most one row, so a shard that has it has all of them.

use mysql_common::value::Value;

use crate::exec::primitives::prepared_select::{self, StatementIds};
use crate::exec::primitives::{concatenated_answer, merged_answer};
use crate::exec::{scatter, BackendError, RelayCursor};
use crate::route::plan::{ByKey, Route};
use crate::wire::errors::{SqlError, ER_UNKNOWN_ERROR};
use crate::wire::packets;

/// Answers `packet` (the client's SELECT) on the owner's shard, or by `k.otherwise`.
/// `Ok(false)`: the client got an error.
pub async fn run<C: RelayCursor>(
    c: &mut C,
    k: &ByKey,
    packet: &[u8],
    more: bool,
) -> Result<bool, C::End> {
    if let Some(owner) = owner(c, k).await? {
        let Some(idx) = c.send_to_all_or_tell(&[owner], packet).await? else {
            return Ok(false);
        };
        let relayed = {
            let (mut conns, mut client) = c.relay_parts(&idx);
            match conns.first_mut() {
                Some(be) => {
                    scatter::relay_if_rows(be, &mut client, scatter::more_results(more)).await
                }
                None => Ok(None),
            }
        };
        match relayed {
            Ok(Some(r)) => return Ok(!r.error),
            Ok(None) => {}
            Err(e) => return Err(c.failed(e)),
        }
    }
    match &k.otherwise {
        Route::Concat(bs) => concatenated_answer::run(c, bs, packet, more).await,
        Route::Merge(bs, m) => merged_answer::run(c, bs, m, more, false).await,
        other => {
            c.send_error(&cannot_fall_back(other));
            Ok(false)
        }
    }
}

/// The shard the lookup names, when it names one of the table's shards. A lookup backend that
/// cannot be reached, or refuses the read, names none: every shard answers instead. The read
/// joins the client's transaction: it sees the session's own claims, and a connection that read
/// outside a transaction could not join it later.
pub async fn owner<C: RelayCursor>(c: &mut C, k: &ByKey) -> Result<Option<String>, C::End> {
    let Ok(i) = c.joined(&k.lookup).await? else {
        return Ok(None);
    };
    let rows = match c.conn(i).query_rows(&k.owner_sql).await {
        Ok(rows) => rows,
        Err(BackendError::Server { .. }) => return Ok(None),
        Err(e) => {
            c.conn(i).broken = true;
            return Err(c.failed(e));
        }
    };
    let [row] = rows.as_slice() else {
        return Ok(None);
    };
    let Some(Some(name)) = row.first() else {
        return Ok(None);
    };
    Ok(k.shards
        .iter()
        .find(|s| s.as_bytes() == name.as_slice())
        .cloned())
}

/// The rows an UPDATE or DELETE matched, from its OK: an UPDATE's `Rows matched` (a row set
/// to the values it had is matched, not changed), else the affected rows.
pub fn matched(ok: &[u8]) -> u64 {
    let info = String::from_utf8_lossy(packets::ok_info(ok)).into_owned();
    let from_info = info
        .strip_prefix("Rows matched: ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok());
    from_info.unwrap_or_else(|| packets::parse_ok(ok).map_or(0, |o| o.affected_rows))
}

/// [`run`] for a prepared SELECT executed in the binary protocol (`ids`, `values`: the statement
/// and the client's parameters).
pub async fn run_prepared<C: RelayCursor>(
    c: &mut C,
    k: &ByKey,
    ids: &mut StatementIds<'_>,
    values: &[Value],
) -> Result<bool, C::End> {
    if let Some(owner) = owner(c, k).await? {
        if let Some(ok) = prepared_select::run_if_rows(c, &owner, ids, values).await? {
            return Ok(ok);
        }
    }
    match &k.otherwise {
        Route::Concat(bs) => prepared_select::run(c, bs, ids, values).await,
        // The parameters are bound into the text: the shards run it as a text query and the
        // merged rows are written in the binary protocol.
        Route::Merge(bs, m) => merged_answer::run(c, bs, m, false, true).await,
        other => {
            c.send_error(&cannot_fall_back(other));
            Ok(false)
        }
    }
}

fn cannot_fall_back(other: &Route) -> SqlError {
    SqlError::new(
        ER_UNKNOWN_ERROR,
        b"HY000",
        format!("idgate: a lookup's route cannot fall back to {other:?}"),
    )
}

#[cfg(test)]
mod tests {
    use mysql_common::constants::StatusFlags;

    use super::matched;
    use crate::wire::packets;

    fn ok(affected: u64, info: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        packets::ok(&mut p, 0, affected, 0, StatusFlags::empty(), 0, info);
        p
    }

    #[test]
    fn an_update_counts_the_rows_it_matched_not_those_it_changed() {
        // A row set to the values it had is matched and unchanged: it was found on this shard,
        // so the statement must not run on every other shard.
        let p = ok(0, b"Rows matched: 1  Changed: 0  Warnings: 0");
        assert_eq!(matched(&p), 1);
        let p = ok(2, b"Rows matched: 3  Changed: 2  Warnings: 0");
        assert_eq!(matched(&p), 3);
    }

    #[test]
    fn without_a_matched_count_the_affected_rows_count() {
        assert_eq!(matched(&ok(2, b"")), 2, "a DELETE's OK has no info");
        assert_eq!(matched(&ok(0, b"")), 0);
        assert_eq!(
            matched(&ok(4, b"Records: 4  Duplicates: 0  Warnings: 0")),
            4
        );
    }

    #[test]
    fn a_malformed_answer_matched_nothing() {
        // Nothing matched: the statement then runs on every shard, which is never wrong.
        assert_eq!(matched(&[0x00]), 0);
        assert_eq!(matched(&[]), 0);
        assert_eq!(matched(&ok(5, b"Rows matched: many")), 5);
    }
}
