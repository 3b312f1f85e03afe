//! `IDGATE MIGRATE VERIFY`: the source and the new placement compared while writes go on, by
//! primary-key range: each source's keys are walked in chunks, and for each chunk the rows that
//! move off the source are counted and checksummed there (BIT_XOR of each row's CRC32) and
//! compared with the rows of that range the new backends received from it. A chunk that
//! differs is checked again after the catch-up has caught up (changes in flight differ for a
//! moment); what still differs is the answer.

use std::time::{Duration, Instant};

use super::columns::{quote_ident, TableShape};
use super::fence::moved_condition;
use super::job::{Running, Spec};
use super::source::rows;
use crate::exec::BackendConn;
use crate::route::TableRule;

/// Keys per compared chunk.
const CHUNK: usize = 1_000;
/// Rounds of re-checking differing chunks.
const ROUNDS: usize = 3;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One range that differs.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub source: String,
    pub first_key: String,
    pub last_key: String,
    pub source_rows: u64,
    pub target_rows: u64,
}

/// A chunk: its bounds (the last key of the chunk before it, its own last key).
#[derive(Clone)]
struct Chunk {
    after: Option<Vec<Vec<u8>>>,
    last: Vec<Vec<u8>>,
    first: Vec<Vec<u8>>,
}

/// Compares every source with the new placement; returns the ranges that differ.
pub async fn verify(
    spec: &Spec,
    from: &TableRule,
    running: &Running,
) -> Result<Vec<Difference>, String> {
    let mut out = Vec::new();
    for source in &spec.sources {
        // Rows that leave `source` (there) and rows the old placement put on `source` (on
        // the new backends): both are SQL conditions on the table's own columns.
        let leaving = moved_condition(&spec.target, source, &quote_ident(&spec.table))
            .ok_or("the new placement cannot be written as SQL")?;
        let from_here = moved_condition(from, source, &quote_ident(&spec.table))
            .map(|c| format!("NOT ({c})"))
            .ok_or_else(|| {
                format!(
                    "VERIFY cannot tell in SQL which rows came from `{source}` (a `hash` source)"
                )
            })?;
        let targets: Vec<String> = spec
            .target
            .backends()
            .iter()
            .filter(|b| *b != source)
            .cloned()
            .collect();
        let mut src = connect(spec, source).await?;
        let mut dst = Vec::new();
        for t in &targets {
            dst.push(connect(spec, t).await?);
        }
        let chunks = chunks(&mut src, spec).await?;
        let mut differing: Vec<(Chunk, u64, u64)> = Vec::new();
        for c in &chunks {
            let (a, b) = compare(spec, &mut src, &mut dst, c, &leaving, &from_here).await?;
            if a != b {
                differing.push((c.clone(), a.0, b.0));
            }
        }
        for _ in 0..ROUNDS {
            if differing.is_empty() {
                break;
            }
            caught_up(running, source).await;
            let mut still = Vec::new();
            for (c, _, _) in differing {
                let (a, b) = compare(spec, &mut src, &mut dst, &c, &leaving, &from_here).await?;
                if a != b {
                    still.push((c, a.0, b.0));
                }
            }
            differing = still;
        }
        src.close().await;
        for d in dst {
            d.close().await;
        }
        for (c, a, b) in differing {
            out.push(Difference {
                source: source.clone(),
                first_key: key_text(&c.first),
                last_key: key_text(&c.last),
                source_rows: a,
                target_rows: b,
            });
        }
    }
    Ok(out)
}

async fn connect(spec: &Spec, backend: &str) -> Result<BackendConn, String> {
    let cfg = spec
        .backends
        .get(backend)
        .ok_or_else(|| format!("backend `{backend}` is not configured"))?;
    let mut c = BackendConn::connect(backend, cfg, Default::default(), CONNECT_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    super::writer::exec(
        &mut c,
        "SET time_zone = '+00:00', character_set_results = binary",
    )
    .await?;
    Ok(c)
}

/// The source's keys in chunks of `CHUNK`, read from the primary key only.
async fn chunks(src: &mut BackendConn, spec: &Spec) -> Result<Vec<Chunk>, String> {
    let shape = &spec.shape;
    let table = format!("{}.{}", quote_ident(&spec.schema), quote_ident(&spec.table));
    let mut out = Vec::new();
    let mut after: Option<Vec<Vec<u8>>> = None;
    loop {
        let filter = after
            .as_ref()
            .map(|k| format!(" WHERE {}", shape.pk_after(k)))
            .unwrap_or_default();
        let sql = format!(
            "SELECT {} FROM {table}{filter} ORDER BY {} LIMIT {CHUNK}",
            shape.pk_order(),
            shape.pk_order()
        );
        let keys = read(src, &sql).await?;
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
            break;
        };
        let key = |r: &Vec<Option<Vec<u8>>>| {
            r.iter()
                .map(|v| v.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        let chunk = Chunk {
            after: after.clone(),
            first: key(first),
            last: key(last),
        };
        let n = keys.len();
        after = Some(chunk.last.clone());
        out.push(chunk);
        if n < CHUNK {
            break;
        }
    }
    Ok(out)
}

/// (rows, checksum) of the chunk's leaving rows on the source, and of the rows from that
/// source in that range on the new backends.
async fn compare(
    spec: &Spec,
    src: &mut BackendConn,
    dst: &mut [BackendConn],
    c: &Chunk,
    leaving: &str,
    from_here: &str,
) -> Result<((u64, u64), (u64, u64)), String> {
    let range = range_condition(&spec.shape, c);
    let a = checksum(src, spec, &format!("{range} AND ({leaving})")).await?;
    let mut b = (0u64, 0u64);
    for d in dst.iter_mut() {
        let (n, x) = checksum(d, spec, &format!("{range} AND ({from_here})")).await?;
        b = (b.0 + n, b.1 ^ x);
    }
    Ok((a, b))
}

/// `(after, last]` in key order.
fn range_condition(shape: &TableShape, c: &Chunk) -> String {
    let upper = format!("NOT ({})", shape.pk_after(&c.last));
    match &c.after {
        Some(a) => format!("({}) AND {upper}", shape.pk_after(a)),
        None => upper,
    }
}

async fn checksum(conn: &mut BackendConn, spec: &Spec, filter: &str) -> Result<(u64, u64), String> {
    let cols: Vec<String> = spec
        .shape
        .columns
        .iter()
        .map(|c| format!("IFNULL(HEX({}), '~')", quote_ident(&c.name)))
        .collect();
    let sql = format!(
        "SELECT COUNT(*), COALESCE(BIT_XOR(CRC32(CONCAT_WS('|', {}))), 0) FROM {}.{} WHERE {filter}",
        cols.join(", "),
        quote_ident(&spec.schema),
        quote_ident(&spec.table)
    );
    let r = rows(conn, &sql).await?;
    let row = r.into_iter().next().unwrap_or_default();
    let num = |i: usize| {
        row.get(i)
            .cloned()
            .flatten()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((num(0), num(1)))
}

async fn read(conn: &mut BackendConn, sql: &str) -> Result<Vec<Vec<Option<Vec<u8>>>>, String> {
    match tokio::time::timeout(Duration::from_secs(120), conn.query_rows(sql)).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err("reading keys timed out".into()),
    }
}

/// Waits (a while at most) until the catch-up from `source` has applied what it had.
async fn caught_up(running: &Running, source: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let Some((_, p)) = running.streams.iter().find(|(s, _)| s == source) else {
        return;
    };
    // Two lag measures after now.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    while p.lag_events.load(std::sync::atomic::Ordering::Relaxed) != 0 && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Key values for display: text when printable, else hex.
fn key_text(k: &[Vec<u8>]) -> String {
    let parts: Vec<String> = k
        .iter()
        .map(|v| match std::str::from_utf8(v) {
            Ok(s) if s.chars().all(|c| !c.is_control()) => s.to_string(),
            _ => format!("0x{}", super::copy::encode_key(std::slice::from_ref(v))),
        })
        .collect();
    parts.join(",")
}
