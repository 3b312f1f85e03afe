//! Which rows an INSERT IGNORE or ON DUPLICATE KEY UPDATE with generated ids inserted. MariaDB
//! reports the first AUTO_INCREMENT id it actually inserted (and makes it LAST_INSERT_ID());
//! idgate wrote its ids as literals, so no backend can say. Each part's counts tell when it
//! inserted every row or none; otherwise its backend is asked which of the part's ids exist.
//! The ids are fresh from the generator: a row holding one was inserted by this statement.

use crate::exec::{Cursor, FetchLimits};
use crate::route::insert::UpsertRows;
use crate::route::quote_ident;
use crate::wire::errors::SqlError;
use crate::wire::packets;

/// One part of the statement: its backend, the statement's row indices it carried (ascending),
/// and the OK it answered.
pub struct PartOk<'a> {
    pub backend: &'a str,
    pub rows: &'a [usize],
    pub ok: &'a [u8],
}

/// What a part's counts say about its rows.
#[derive(Debug, PartialEq, Eq)]
pub enum Inserted {
    All,
    None,
    /// Some rows may have gone in: the backend is asked.
    Unknown,
}

/// What a part of `rows` rows that answered `ok` inserted (`one_id`: a one-row part's generated
/// id). IGNORE counts inserted rows only. ON DUPLICATE KEY UPDATE counts 1 per inserted row, 2
/// per updated row and 0 per row it matched and left as it was (1 with CLIENT_FOUND_ROWS,
/// `found_rows`); its info's `Duplicates` counts the updated rows (and, with CLIENT_FOUND_ROWS,
/// the unchanged ones).
pub fn judge(
    updates: bool,
    found_rows: bool,
    (rows, one_id): (usize, Option<u64>),
    ok: &[u8],
) -> Inserted {
    let Some(o) = packets::parse_ok(ok) else {
        return Inserted::Unknown;
    };
    let (affected, rows) = (o.affected_rows, rows as u64);
    if affected == 0 {
        return Inserted::None;
    }
    if !updates {
        return if affected == rows {
            Inserted::All
        } else {
            Inserted::Unknown
        };
    }
    if rows == 1 {
        // A one-row statement's OK has no info: 1 is a new row, or (with CLIENT_FOUND_ROWS)
        // one left unchanged; 2 an updated one. A backend whose id column is AUTO_INCREMENT
        // reports a new row's id as its insert id, and 0 for a row left unchanged.
        let reports_new_row = one_id.is_some_and(|id| id == o.last_insert_id);
        return match (affected, found_rows) {
            (1, false) => Inserted::All,
            (1, true) if reports_new_row => Inserted::All,
            (2, _) => Inserted::None,
            _ => Inserted::Unknown,
        };
    }
    match duplicates(packets::ok_info(ok)) {
        Some(0) if affected == rows => Inserted::All,
        Some(d) if !found_rows && affected == 2 * d => Inserted::None,
        _ => Inserted::Unknown,
    }
}

/// The `Duplicates: N` of an INSERT's info text.
fn duplicates(info: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(info).ok()?;
    let (_, rest) = text.split_once("Duplicates: ")?;
    let digits = rest.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

/// The first generated id the statement inserted, in its row order (`None`: none went in).
/// `Ok(Err(_))`: a backend could not say (its error).
pub async fn first_inserted<C: Cursor>(
    c: &mut C,
    u: &UpsertRows,
    found_rows: bool,
    parts: &[PartOk<'_>],
) -> Result<Result<Option<u64>, SqlError>, C::End> {
    let mut first: Option<(usize, u64)> = None;
    for p in parts {
        // Only rows before the first found so far can change the answer.
        let candidates: Vec<(usize, u64)> = p
            .rows
            .iter()
            .filter(|&&r| first.is_none_or(|(f, _)| r < f))
            .filter_map(|&r| Some((r, u.generated.get(r).copied().flatten()?)))
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let one_id = match p.rows {
            [r] => u.generated.get(*r).copied().flatten(),
            _ => None,
        };
        let found = match judge(u.updates, found_rows, (p.rows.len(), one_id), p.ok) {
            Inserted::None => None,
            Inserted::All => candidates.iter().min().copied(),
            Inserted::Unknown => match existing(c, u, p.backend, &candidates).await? {
                Ok(found) => found,
                Err(e) => return Ok(Err(e)),
            },
        };
        if let Some(f) = found {
            first = Some(f);
        }
    }
    Ok(Ok(first.map(|(_, id)| id)))
}

/// The first of `candidates` (row, id) whose id exists in the table on `backend`.
async fn existing<C: Cursor>(
    c: &mut C,
    u: &UpsertRows,
    backend: &str,
    candidates: &[(usize, u64)],
) -> Result<Result<Option<(usize, u64)>, SqlError>, C::End> {
    let list: Vec<String> = candidates.iter().map(|(_, id)| id.to_string()).collect();
    let column = quote_ident(&u.id_column);
    let sql = format!(
        "SELECT {column} FROM {}.{} WHERE {column} IN ({})",
        quote_ident(&u.schema),
        quote_ident(&u.table),
        list.join(",")
    );
    let limits = FetchLimits {
        max_rows: candidates.len() as u64,
        max_bytes: 1 << 20,
        enough: None,
    };
    let fetched = match c.fetch_on(backend, sql.as_bytes(), limits).await? {
        Ok(f) => f,
        Err(e) => return Ok(Err(e)),
    };
    let present: std::collections::HashSet<u64> = fetched
        .rows
        .iter()
        .filter_map(|row| row.first()?.as_deref())
        .filter_map(|v| std::str::from_utf8(v).ok()?.parse().ok())
        .collect();
    Ok(Ok(candidates
        .iter()
        .filter(|(_, id)| present.contains(id))
        .min()
        .copied()))
}
