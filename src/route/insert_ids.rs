//! Turning what a generator hands out into the row ids of an INSERT plan: which rows wait for
//! an id, the literal a UUID becomes for its column's type, and the bias values a biased
//! generator needs from each row. The session calls the generator in between; nothing here
//! does I/O.

use crate::exec::metadata::TableMeta;
use crate::idgen::uuidv7::Uuid7;
use crate::sql::InsertAnalysis;
use crate::wire::errors::{self, SqlError};

use super::insert::{err, shard_value, value_of, RowId};
use super::{ShardValue, TableRule};

/// The rows whose id the generator is to fill, in row order.
pub fn generated_slots(ids: &[RowId]) -> Vec<usize> {
    ids.iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, RowId::Generated(_)))
        .map(|(i, _)| i)
        .collect()
}

/// Puts numeric ids into `slots`, in order.
pub fn fill_numeric(ids: &mut [RowId], slots: &[usize], values: impl IntoIterator<Item = u64>) {
    for (&slot, id) in slots.iter().zip(values) {
        ids[slot] = RowId::Generated(id);
    }
}

/// Puts UUIDs into `slots` as literals of the id column's type: `x'…'` for a BINARY column (the
/// 16 bytes), a quoted hyphenated string otherwise (CHAR(36) and the like).
pub fn fill_uuids(ids: &mut [RowId], slots: &[usize], uuids: &[Uuid7], binary: bool) {
    for (&slot, u) in slots.iter().zip(uuids) {
        ids[slot] = RowId::GeneratedText(uuid_literal(u, binary));
    }
}

/// Whether the rule's id column is BINARY(n), so UUIDs go in as bytes.
pub fn id_column_is_binary(rule: &TableRule, meta: &TableMeta) -> bool {
    meta.column_type(&rule.id_column)
        .is_some_and(|t| t.starts_with("binary"))
}

/// A UUID as the literal the id column takes (see [`fill_uuids`]).
pub fn uuid_literal(u: &Uuid7, binary: bool) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = Vec::with_capacity(40);
    if binary {
        t.extend_from_slice(b"x'");
        for b in u.as_bytes() {
            t.push(HEX[(b >> 4) as usize]);
            t.push(HEX[(b & 15) as usize]);
        }
    } else {
        t.push(b'\'');
        t.extend_from_slice(&u.to_hyphenated());
    }
    t.push(b'\'');
    t
}

/// The bias column's value of each row in `slots`: the low bits of a biased id copy it, so each
/// row must give an integer literal (a string reading as one is taken as MariaDB would).
pub fn bias_values(
    a: &InsertAnalysis,
    rule: &TableRule,
    meta: &TableMeta,
    slots: &[usize],
) -> Result<Vec<u64>, SqlError> {
    let column = rule.bias_column.as_deref().unwrap_or_default();
    slots
        .iter()
        .map(|&row| {
            let v = value_of(a, meta, row, column).and_then(shard_value);
            let b = match v {
                Some(ShardValue::Int(i)) => Some(i as u64),
                Some(ShardValue::Str(s)) => std::str::from_utf8(&s)
                    .ok()
                    .and_then(|s| s.trim().parse::<i128>().ok())
                    .map(|i| i as u64),
                None => None,
            };
            b.ok_or_else(|| {
                err(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!(
                        "Row {} of the INSERT into `{}` needs an integer literal for `{column}`: \
                         the id's low bits copy it",
                        row + 1,
                        a.table.name
                    ),
                )
            })
        })
        .collect()
}
