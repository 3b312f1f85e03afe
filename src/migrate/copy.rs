//! The copy of one source backend's rows: a consistent snapshot, its exact binlog position, and
//! the rows in primary-key order in bounded chunks, each written to its new place before the
//! next is read. A restarted copy opens a new snapshot and goes on after the last key it
//! saved; the catch-up still starts from the first snapshot's position, and since every change
//! is applied whole and in order, replaying changes older than a copied row ends in the same
//! rows.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::columns::quote_ident;
use super::progress::StreamProgress;
use super::source::rows;
use super::store::Store;
use super::writer::{Change, Writer};
use crate::config::Backend;
use crate::exec::BackendConn;

/// Rows read per chunk (fewer when they are wide).
const CHUNK_ROWS: usize = 5_000;
/// Rows of the first chunk, before the rows' width is known.
const FIRST_CHUNK_ROWS: usize = 100;
/// Bytes of row data a chunk aims at.
const CHUNK_BYTES: usize = 16 << 20;
/// The copy pauses while the source runs more statements than this at once (gh-ost's
/// `max-load` rule), so the application's own statements keep their latency.
const MAX_THREADS_RUNNING: u64 = 25;
/// How long the longest pause lasts before the copy goes on anyway (it must end some day).
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// How often the copy's progress is logged.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// Longest wait for one chunk to be read.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// Opens a snapshot on `conn` and returns its binlog position as a MariaDB GTID position.
pub async fn open_snapshot(conn: &mut BackendConn) -> Result<String, String> {
    for s in [
        "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "SET time_zone = '+00:00', character_set_results = binary",
        "START TRANSACTION WITH CONSISTENT SNAPSHOT",
    ] {
        super::writer::exec(conn, s).await?;
    }
    let status = rows(conn, "SHOW STATUS LIKE 'binlog_snapshot_%'").await?;
    let get = |name: &str| {
        status
            .iter()
            .find(|r| {
                r.first()
                    .cloned()
                    .flatten()
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            })
            .and_then(|r| r.get(1).cloned().flatten())
    };
    let (Some(file), Some(pos)) = (get("binlog_snapshot_file"), get("binlog_snapshot_position"))
    else {
        return Err("the server shows no binlog_snapshot_file/position".into());
    };
    let pos: u64 = pos
        .parse()
        .map_err(|_| format!("binlog_snapshot_position `{pos}`"))?;
    let gtid = rows(
        conn,
        &format!(
            "SELECT BINLOG_GTID_POS({}, {pos})",
            crate::exec::metadata::quote_literal(&file)
        ),
    )
    .await?;
    gtid.into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .ok_or_else(|| format!("BINLOG_GTID_POS gave no position for {file}:{pos}"))
}

/// Where a copy is: the job and source it belongs to, and how far it got.
pub struct CopyTask<'a> {
    pub key: &'a str,
    pub source: &'a str,
    pub source_cfg: &'a Backend,
    pub store: &'a Store,
    /// After each chunk, rest this share (percent) of the time it took.
    pub rest_percent: u32,
    pub progress: &'a Arc<StreamProgress>,
    /// No snapshot was taken for this source before: this one's position is where the
    /// catch-up starts, saved before any row is copied.
    pub first: bool,
}

impl CopyTask<'_> {
    /// Copies every row after `after` (hex primary key values, comma-separated); returns the
    /// snapshot's position.
    pub async fn run(&self, writer: &mut Writer, after: Option<&str>) -> Result<String, String> {
        let mut conn = BackendConn::connect(
            self.source,
            self.source_cfg,
            Default::default(),
            READ_TIMEOUT,
        )
        .await
        .map_err(|e| e.to_string())?;
        let r = self.copy(&mut conn, writer, after).await;
        conn.close().await;
        r
    }

    async fn copy(
        &self,
        conn: &mut BackendConn,
        writer: &mut Writer,
        after: Option<&str>,
    ) -> Result<String, String> {
        let snapshot = open_snapshot(conn).await?;
        if self.first {
            self.store
                .save_start(self.key, self.source, &snapshot)
                .await?;
        }
        let shape = writer.shape.clone();
        let mut last: Option<Vec<Vec<u8>>> = match after {
            Some(s) if !s.is_empty() => Some(decode_key(s)?),
            _ => None,
        };
        let table = format!(
            "{}.{}",
            quote_ident(&writer.schema),
            quote_ident(&writer.table)
        );
        let mut saved_done = false;
        let mut logged = std::time::Instant::now();
        let select = |last: &Option<Vec<Vec<u8>>>, limit: usize| {
            let filter = last
                .as_ref()
                .map(|k| format!(" WHERE {}", shape.pk_after(k)))
                .unwrap_or_default();
            format!(
                "SELECT {} FROM {table}{filter} ORDER BY {} LIMIT {limit}",
                shape.column_list(),
                shape.pk_order()
            )
        };
        // The first chunk is short: how wide the rows are is known after it.
        let mut limit = FIRST_CHUNK_ROWS;
        let mut chunk = read_chunk(conn, self.source, &select(&last, limit)).await?;
        loop {
            let began = std::time::Instant::now();
            let n = chunk.len();
            let Some(tail) = chunk.last() else {
                break;
            };
            last = Some(shape.pk_of(tail));
            let full = n == limit;
            // Chunks of wide rows are made shorter, so two in memory stay near CHUNK_BYTES.
            let bytes: usize = chunk.iter().flatten().flatten().map(Vec::len).sum();
            limit = (CHUNK_BYTES * n / bytes.max(1)).clamp(10, CHUNK_ROWS);
            let changes: Vec<Change> = chunk.into_iter().map(Change::Upsert).collect();
            // This chunk is written while the next one is read.
            let next_sql = select(&last, limit);
            let (moved, next) = tokio::join!(writer.apply(self.source, &changes), async {
                match full {
                    true => Some(read_chunk(conn, self.source, &next_sql).await),
                    false => None,
                }
            });
            let moved = moved? as i64;
            tokio::time::sleep(rest_after(began.elapsed(), self.rest_percent)).await;
            throttle(conn, self.source).await;
            let copied = self
                .progress
                .rows_copied
                .fetch_add(moved, Ordering::Relaxed)
                + moved;
            let through = encode_key(last.as_deref().unwrap_or_default());
            if logged.elapsed() >= PROGRESS_EVERY {
                logged = std::time::Instant::now();
                tracing::info!(table = %self.key, source = %self.source, rows_copied = copied,
                    estimated = self.progress.rows_estimated.load(Ordering::Relaxed), "copying");
            }
            saved_done = !full;
            self.store
                .save_copy(self.key, self.source, &through, copied, saved_done)
                .await?;
            match next {
                Some(next) => chunk = next?,
                None => break,
            }
        }
        if !saved_done {
            // The last chunk was full, or there was nothing (left) to copy.
            let through = last.as_deref().map(encode_key);
            let through = through.as_deref().or(after).unwrap_or_default();
            let copied = self.progress.rows_copied.load(Ordering::Relaxed);
            self.store
                .save_copy(self.key, self.source, through, copied, true)
                .await?;
        }
        super::writer::exec(conn, "COMMIT").await?;
        Ok(snapshot)
    }
}

/// One chunk of rows, read with the read deadline.
async fn read_chunk(
    conn: &mut BackendConn,
    source: &str,
    sql: &str,
) -> Result<Vec<super::writer::Row>, String> {
    match tokio::time::timeout(READ_TIMEOUT, conn.query_rows(sql)).await {
        Ok(r) => r.map_err(|e| format!("reading from `{source}`: {e}")),
        Err(_) => Err(format!("reading from `{source}` timed out")),
    }
}

/// The rest after a chunk that took `took`: `percent` of it, at most `MAX_PAUSE`.
fn rest_after(took: Duration, percent: u32) -> Duration {
    (took * percent / 100).min(MAX_PAUSE)
}

/// Waits while the source is busy (`Threads_running` above the limit), a bounded time.
async fn throttle(conn: &mut BackendConn, source: &str) {
    let started = std::time::Instant::now();
    loop {
        let running = rows(conn, "SHOW GLOBAL STATUS LIKE 'Threads_running'")
            .await
            .ok()
            .and_then(|r| r.into_iter().next())
            .and_then(|r| r.get(1).cloned().flatten())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if running <= MAX_THREADS_RUNNING || started.elapsed() > MAX_PAUSE {
            return;
        }
        tracing::debug!(source = %source, threads_running = running, "copy paused: source busy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Primary key values as stored between runs: each in hex, comma-separated.
pub fn encode_key(values: &[Vec<u8>]) -> String {
    let parts: Vec<String> = values
        .iter()
        .map(|v| v.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    parts.join(",")
}

pub fn decode_key(s: &str) -> Result<Vec<Vec<u8>>, String> {
    s.split(',')
        .map(|h| {
            if h.len() % 2 != 0 {
                return Err(format!("saved key `{s}` is not hex"));
            }
            h.as_bytes()
                .chunks(2)
                .map(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|t| u8::from_str_radix(t, 16).ok())
                        .ok_or_else(|| format!("saved key `{s}` is not hex"))
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_rests_its_share_of_each_chunks_time_within_the_longest_pause() {
        let took = Duration::from_millis(200);
        assert_eq!(rest_after(took, 0), Duration::ZERO);
        assert_eq!(rest_after(took, 50), Duration::from_millis(100));
        assert_eq!(rest_after(took, 300), Duration::from_millis(600));
        assert_eq!(rest_after(Duration::from_secs(60), 100), MAX_PAUSE);
    }

    #[test]
    fn saved_keys_round_trip() {
        let k = vec![b"12".to_vec(), vec![0, 255], Vec::new()];
        let s = encode_key(&k);
        assert_eq!(s, "3132,00ff,");
        assert_eq!(decode_key(&s).unwrap(), k);
        assert!(decode_key("zz").is_err());
        assert!(decode_key("éé").is_err());
    }
}
