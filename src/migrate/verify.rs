//! `IDGATE MIGRATE VERIFY`: the source and the new placement compared while writes go on, by
//! primary-key range: each source's keys are walked in chunks, and for each chunk the rows that
//! move off the source are counted and checksummed there (BIT_XOR of each row's CRC32) and
//! compared with the rows of that range the new backends received from it.
//!
//! Each chunk is compared at one point of the source's binlog: the source's rows are read in a
//! consistent snapshot, and the new backends' rows while the source's catch-up holds exactly at
//! the snapshot's position (`binlog::hold`): paused first, so it cannot be past the snapshot,
//! then let on to it. Both sides are then the same rows if the move is right, whatever the
//! writes, so a chunk that differs there is answered at once and one that agrees agreed.
//! Comparing the two sides at different moments and re-checking what differed (what this did
//! before) cannot tell a row in flight from a wrong one: under steady writes to the whole key
//! range it kept answering ranges that were right, and it could pass a wrong range by luck.

use std::time::Duration;

use super::binlog::gtid::Position;
use super::binlog::hold::Hold;
use super::columns::{quote_ident, TableShape};
use super::copy::open_snapshot;
use super::fence::moved_condition;
use super::job::{Running, Spec};
use super::source::rows;
use crate::exec::BackendConn;
use crate::route::TableRule;

/// Keys per compared chunk.
const CHUNK: usize = 1_000;
/// Tries to compare one chunk at one point (the catch-up may go on before the new backends
/// are read: a held catch-up gives up after a while, and a broken stream starts again).
const ATTEMPTS: usize = 3;
/// Longest wait for another VERIFY's hold of the catch-up to end.
const TURN_WAIT: Duration = Duration::from_secs(30);
/// Longest wait for the catch-up to stop between two transactions, or to reach the snapshot.
const HOLD_WAIT: Duration = Duration::from_secs(30);
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

/// A chunk: `(after, last]` in key order, the first chunk from the smallest key and the last
/// one (`last: None`) on past the largest, so that every key either side may hold is in one.
#[derive(Clone)]
struct Chunk {
    after: Option<Vec<Vec<u8>>>,
    last: Option<Vec<Vec<u8>>>,
    /// The first and last keys the source held in it when its keys were walked (shown).
    first_seen: Vec<Vec<u8>>,
    last_seen: Vec<Vec<u8>>,
}

/// The two sides' (rows, checksum) of one chunk.
type Sums = ((u64, u64), (u64, u64));

/// The connections and conditions one source's chunks are compared with.
struct Sides<'a> {
    spec: &'a Spec,
    src: BackendConn,
    dst: Vec<BackendConn>,
    /// Rows that leave the source (on it), and rows the old placement put on it (elsewhere).
    leaving: String,
    from_here: String,
    hold: &'a Hold,
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
        let (_, progress) = running
            .streams
            .iter()
            .find(|(s, _)| s == source)
            .ok_or_else(|| format!("no catch-up from `{source}` runs here"))?;
        let mut sides = Sides {
            spec,
            src: connect(spec, source).await?,
            dst: Vec::new(),
            leaving,
            from_here,
            hold: &progress.hold,
        };
        let targets = spec.target.backends().iter().filter(|b| *b != source);
        let mut compared = Ok(());
        for t in targets {
            match connect(spec, t).await {
                Ok(c) => sides.dst.push(c),
                Err(e) => {
                    compared = Err(e);
                    break;
                }
            }
        }
        if compared.is_ok() {
            compared = sides.compare_all(source, &mut out).await;
        }
        sides.src.close().await;
        for d in sides.dst {
            d.close().await;
        }
        compared?;
    }
    Ok(out)
}

impl Sides<'_> {
    /// Compares every chunk of `source`; adds those that differ to `out`.
    async fn compare_all(&mut self, source: &str, out: &mut Vec<Difference>) -> Result<(), String> {
        for c in chunks(&mut self.src, self.spec).await? {
            let ((a, x), (b, y)) = self.at_one_point(source, &c).await?;
            if (a, x) != (b, y) {
                out.push(Difference {
                    source: source.to_string(),
                    first_key: key_text(&c.first_seen),
                    last_key: key_text(&c.last_seen),
                    source_rows: a,
                    target_rows: b,
                });
            }
        }
        Ok(())
    }

    /// Both sides of `c` at one point of `source`'s binlog.
    async fn at_one_point(&mut self, source: &str, c: &Chunk) -> Result<Sums, String> {
        let range = range_condition(&self.spec.shape, c);
        let mut last_error = String::new();
        for _ in 0..ATTEMPTS {
            let mut holder = self.hold.take(TURN_WAIT).await?;
            // Paused before the snapshot, the catch-up cannot be past it.
            holder.pause(HOLD_WAIT).await?;
            let snapshot = open_snapshot(&mut self.src).await?;
            let leaving = format!("{range} AND ({})", self.leaving);
            let a = checksum(&mut self.src, self.spec, &leaving).await;
            super::writer::exec(&mut self.src, "COMMIT").await?;
            let a = a?;
            holder
                .hold_at(&Position::parse(&snapshot)?, HOLD_WAIT)
                .await?;
            let mut b = (0u64, 0u64);
            let from_here = format!("{range} AND ({})", self.from_here);
            for d in self.dst.iter_mut() {
                let (n, x) = checksum(d, self.spec, &from_here).await?;
                b = (b.0 + n, b.1 ^ x);
            }
            if holder.still_held() {
                return Ok((a, b));
            }
            last_error = format!(
                "the catch-up from `{source}` went on while the new backends were read at                  {snapshot}"
            );
        }
        Err(format!(
            "VERIFY could not compare the range from {} at one point of `{source}`'s binlog              in {ATTEMPTS} tries: {last_error}",
            key_text(&c.first_seen)
        ))
    }
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

/// The source's keys in chunks of `CHUNK`, read from the primary key only; the last chunk
/// (the only one when the source has no row) goes on past the largest key.
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
        let key = |r: Option<&Vec<Option<Vec<u8>>>>| {
            r.map(|r| {
                r.iter()
                    .map(|v| v.clone().unwrap_or_default())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
        };
        let (first_seen, last_seen) = (key(keys.first()), key(keys.last()));
        let full = keys.len() == CHUNK;
        out.push(Chunk {
            after: after.clone(),
            last: full.then(|| last_seen.clone()),
            first_seen,
            last_seen: last_seen.clone(),
        });
        if !full {
            break;
        }
        after = Some(last_seen);
    }
    Ok(out)
}

/// `(after, last]` in key order, either end open when the chunk has none.
fn range_condition(shape: &TableShape, c: &Chunk) -> String {
    let lower = c.after.as_ref().map(|a| format!("({})", shape.pk_after(a)));
    let upper = c
        .last
        .as_ref()
        .map(|l| format!("NOT ({})", shape.pk_after(l)));
    match (lower, upper) {
        (Some(l), Some(u)) => format!("{l} AND {u}"),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => "TRUE".into(),
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
