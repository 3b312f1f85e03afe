//! Which rows an INSERT IGNORE, ON DUPLICATE KEY UPDATE, INSERT IGNORE … SELECT or LOAD DATA
//! IGNORE with generated ids inserted. MariaDB makes the first AUTO_INCREMENT id it actually
//! inserted LAST_INSERT_ID() (and an INSERT's insert id); idgate wrote its ids as literals, so
//! no backend can say. Each part's counts tell when it inserted every row or none; otherwise its
//! backend is asked which of the part's ids exist, in row order, a bounded list at a time. The
//! ids are fresh from the generator: a row holding one was inserted by this statement.

use crate::exec::collect::Collected;
use crate::exec::cursor::WriteCursor;
use crate::route::insert::UpsertRows;
use crate::route::quote_ident;
use crate::wire::errors::SqlError;
use crate::wire::packets;

/// Ids asked about in one read-back.
const IDS_PER_QUESTION: usize = 1_000;

/// One part of an INSERT: its backend, the statement's row indices it carried (ascending),
/// and the OK it answered.
pub struct PartOk<'a> {
    pub backend: &'a str,
    pub rows: &'a [usize],
    pub ok: &'a [u8],
}

/// What one backend wrote of the statement: what its counts say, and its rows with generated
/// ids as (row, id), in row order (a prefix of them, when the rest cannot be first).
pub struct Candidates<'a> {
    pub backend: &'a str,
    pub inserted: Inserted,
    pub rows: Vec<(usize, u64)>,
}

/// Where to ask: the table's schema, name and id column.
pub struct IdTable<'a> {
    pub schema: &'a str,
    pub table: &'a str,
    pub column: &'a str,
}

/// How a statement counts its rows: ON DUPLICATE KEY UPDATE (`updates`), IGNORE (with an
/// update, its `Duplicates` are the rows not inserted or updated), CLIENT_FOUND_ROWS.
#[derive(Debug, Clone, Copy)]
pub struct Counting {
    pub updates: bool,
    pub ignore: bool,
    pub found_rows: bool,
}

/// A statement that only skips rows (INSERT IGNORE … SELECT, LOAD DATA): its affected rows are
/// the rows it inserted.
pub const SKIPPING: Counting = Counting {
    updates: false,
    ignore: true,
    found_rows: false,
};

/// What a part's counts say about its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    All,
    None,
    /// Some rows may have gone in: the backend is asked.
    Unknown,
}

/// What a part of `rows` rows that answered `ok` inserted (`one_id`: a one-row part's generated
/// id; `names_matched`: it was sent so its insert id names a row it matched,
/// `UpsertRows::names_matched`). IGNORE counts inserted rows only. ON DUPLICATE KEY UPDATE counts 1 per inserted row, 2
/// per updated row and 0 per row it matched and left as it was (1 with CLIENT_FOUND_ROWS,
/// `found_rows`); its info's `Duplicates` counts the updated rows (and, with CLIENT_FOUND_ROWS,
/// the unchanged ones).
pub fn judge(
    counting: Counting,
    (rows, one_id, names_matched): (usize, Option<u64>, bool),
    ok: &[u8],
) -> Inserted {
    let Counting {
        updates,
        ignore,
        found_rows,
    } = counting;
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
        let reports_new_row = one_id.is_some_and(|id| id == o.last_insert_id)
            || (names_matched && o.last_insert_id == 0);
        return match (affected, found_rows) {
            (1, false) => Inserted::All,
            (1, true) if reports_new_row => Inserted::All,
            (1, true) if names_matched => Inserted::None,
            (2, _) => Inserted::None,
            _ => Inserted::Unknown,
        };
    }
    match info_count(packets::ok_info(ok), "Duplicates") {
        Some(0) if affected == rows => Inserted::All,
        Some(d) if !found_rows && !ignore && affected == 2 * d => Inserted::None,
        _ => Inserted::Unknown,
    }
}

/// The `name: N` of an OK's info text (`Duplicates`, `Skipped`).
pub fn info_count(info: &[u8], name: &str) -> Option<u64> {
    let text = std::str::from_utf8(info).ok()?;
    let (_, rest) = text.split_once(&format!("{name}: "))?;
    let digits = rest.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

/// The candidates of an INSERT's parts.
pub fn insert_candidates<'a>(
    u: &UpsertRows,
    found_rows: bool,
    parts: &[PartOk<'a>],
) -> Vec<Candidates<'a>> {
    parts
        .iter()
        .map(|p| {
            let one_id = match p.rows {
                [r] => u.generated.get(*r).copied().flatten(),
                _ => None,
            };
            let judged = judge(
                Counting {
                    updates: u.updates,
                    ignore: u.ignore,
                    found_rows,
                },
                (p.rows.len(), one_id, u.names_matched),
                p.ok,
            );
            Candidates {
                backend: p.backend,
                // An id found in the table may be one the update gave an old row.
                inserted: match judged {
                    Inserted::Unknown if u.id_may_change => Inserted::None,
                    judged => judged,
                },
                rows: p
                    .rows
                    .iter()
                    .filter_map(|&r| Some((r, u.generated.get(r).copied().flatten()?)))
                    .collect(),
            }
        })
        .collect()
}

/// The candidates of an INSERT IGNORE … RETURNING's parts: each returned the rows it inserted
/// (`returned` of them).
pub fn returning_candidates<'a>(
    u: &UpsertRows,
    parts: &[(&'a str, &[usize], usize)],
) -> Vec<Candidates<'a>> {
    parts
        .iter()
        .map(|&(backend, rows, returned)| Candidates {
            backend,
            inserted: match returned {
                0 => Inserted::None,
                n if n == rows.len() => Inserted::All,
                _ => Inserted::Unknown,
            },
            rows: rows
                .iter()
                .filter_map(|&r| Some((r, u.generated.get(r).copied().flatten()?)))
                .collect(),
        })
        .collect()
}

/// The first generated id the statement inserted, in its row order (`None`: none went in).
/// `Ok(Err(_))`: a backend could not say (its error).
pub async fn first_inserted<C: WriteCursor>(
    c: &mut C,
    t: &IdTable<'_>,
    parts: &[Candidates<'_>],
) -> Result<Result<Option<u64>, SqlError>, C::End> {
    let mut first: Option<(usize, u64)> = None;
    for p in parts {
        // Only rows before the first found so far can change the answer.
        let rows: Vec<(usize, u64)> = p
            .rows
            .iter()
            .copied()
            .filter(|&(r, _)| first.is_none_or(|(f, _)| r < f))
            .collect();
        let found = match p.inserted {
            Inserted::None => None,
            Inserted::All => rows.first().copied(),
            Inserted::Unknown => match existing(c, t, p.backend, &rows).await? {
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

/// The first of `rows` (row, id), in row order, whose id exists in the table on `backend`.
async fn existing<C: WriteCursor>(
    c: &mut C,
    t: &IdTable<'_>,
    backend: &str,
    rows: &[(usize, u64)],
) -> Result<Result<Option<(usize, u64)>, SqlError>, C::End> {
    if rows.is_empty() {
        return Ok(Ok(None));
    }
    let column = quote_ident(t.column);
    for chunk in rows.chunks(IDS_PER_QUESTION) {
        let list: Vec<String> = chunk.iter().map(|(_, id)| id.to_string()).collect();
        let sql = format!(
            "SELECT {column} FROM {}.{} WHERE {column} IN ({})",
            quote_ident(t.schema),
            quote_ident(t.table),
            list.join(",")
        );
        let answer = match c.read_back(backend, sql.as_bytes()).await? {
            Ok(answer) => answer,
            Err(e) => return Ok(Err(e)),
        };
        let present: std::collections::HashSet<u64> = match answer {
            Collected::Rows { rows, .. } => rows
                .iter()
                .filter_map(|row| packets::get_lenenc_str(&mut row.as_slice()))
                .filter_map(|v| std::str::from_utf8(v).ok()?.parse().ok())
                .collect(),
            Collected::Err(p) => {
                let (code, state, msg) = packets::parse_err(&p);
                let msg = String::from_utf8_lossy(msg).into_owned();
                return Ok(Err(SqlError::new(code, &state, msg)));
            }
            Collected::Ok(_) => Default::default(),
        };
        if let Some(found) = chunk.iter().find(|(_, id)| present.contains(id)) {
            return Ok(Ok(Some(*found)));
        }
    }
    Ok(Ok(None))
}
