//! The catch-up of one source backend: its binlog read from a saved position, the moved table's
//! row changes collected per event group and applied at the group's end (an event always wins
//! over a copied row), the position saved with every applied batch so a restarted idgate goes
//! on from there. Changes to other tables only move the position.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use mysql_async::binlog::events::{Event, EventData, QueryEvent, RowsEventData};
use mysql_async::binlog::EventType;
use mysql_async::BinlogStream;
use tokio::sync::watch;

use super::gtid::{Gtid, Position, GTID_EVENT};
use super::values;
use crate::migrate::progress::StreamProgress;
use crate::migrate::store::Store;
use crate::migrate::writer::{Change, Writer};

/// Row changes kept before a batch is applied.
const BATCH_CHANGES: usize = 2_000;
/// Longest a finished group waits to be applied.
const BATCH_DELAY: Duration = Duration::from_millis(50);
/// How often the position is saved while only other tables change.
const SAVE_IDLE_EVERY: Duration = Duration::from_secs(10);
/// Most bytes of row images kept for XA transactions of the source that are open or prepared
/// and not yet committed (they can be applied only at XA COMMIT): the source decides how
/// large they grow, so past this the job fails with what to do rather than grow without end.
pub const XA_HELD_BYTES: usize = 256 << 20;
/// A stream that sends nothing (not even a heartbeat) this long is taken as broken.
const SILENCE: Duration = Duration::from_secs(10);

/// Why following stopped.
#[derive(Debug)]
pub enum Stop {
    /// Asked to stop; the position is saved.
    Asked,
    /// Worth a retry from the saved position (a lost connection, a backend error).
    Retry(String),
    /// Retrying cannot help: the table changed shape, a DDL touched it.
    Fatal(String),
}

/// One source's catch-up.
pub struct Follower<'a> {
    pub key: &'a str,
    pub source: &'a str,
    pub store: &'a Store,
    pub progress: &'a Arc<StreamProgress>,
    /// Applied through here (saved in the store).
    pub applied: Position,
    /// The source's time of the last group applied.
    pub last_group_time: u32,
    /// XA transactions prepared on the source and not yet resolved.
    prepared: Vec<Prepared>,
    /// When the position was last saved.
    saved_at: Instant,
    /// A stream back to the old placement after a switch (saved apart from the forward ones).
    pub reverse: bool,
}

impl<'a> Follower<'a> {
    /// Where a new stream must start: before the oldest XA transaction still waiting, else
    /// after the last group applied.
    pub fn resume_position(&self) -> Position {
        self.prepared
            .first()
            .map_or_else(|| self.applied.clone(), |p| p.before.clone())
    }

    pub fn new(
        key: &'a str,
        source: &'a str,
        store: &'a Store,
        progress: &'a Arc<StreamProgress>,
        applied: Position,
    ) -> Follower<'a> {
        Follower {
            key,
            source,
            store,
            progress,
            applied,
            last_group_time: 0,
            prepared: Vec::new(),
            saved_at: Instant::now(),
            reverse: false,
        }
    }
}

/// The group being read: its GTID and the moved table's changes in it.
#[derive(Default)]
struct Group {
    gtid: Option<Gtid>,
    changes: Vec<Change>,
    timestamp: u32,
    /// The XA transaction the group runs (`XA START`), if any.
    xa: Option<String>,
    /// Bytes of `changes[..counted]`, counted while the group is an XA transaction's.
    bytes: usize,
    counted: usize,
}

/// About the memory one change holds.
fn change_bytes(c: &Change) -> usize {
    let (Change::Upsert(row) | Change::Delete(row)) = c;
    row.iter()
        .map(|v| v.as_ref().map_or(0, Vec::len) + 8)
        .sum::<usize>()
        + 32
}

/// How a group ended.
enum End {
    Open,
    /// Committed: apply its changes.
    Commit,
    /// An XA PREPARE: its changes wait for XA COMMIT or XA ROLLBACK.
    Prepared,
    /// `XA COMMIT xid` or `XA ROLLBACK xid` of a transaction prepared earlier.
    Resolve {
        xid: String,
        commit: bool,
    },
}

/// MariaDB's XA_PREPARE_LOG_EVENT, which ends the group of an `XA PREPARE`.
const XA_PREPARE_EVENT: u8 = 38;

/// A prepared XA transaction's changes, and the position before its group (the position saved
/// while it waits, so a restart reads it again).
struct Prepared {
    xid: String,
    before: Position,
    changes: Vec<Change>,
    bytes: usize,
}

impl Follower<'_> {
    /// Reads `stream` until told to stop or the stream fails, applying through `writer`.
    pub async fn run(
        &mut self,
        stream: &mut BinlogStream,
        writer: &mut Writer,
        stop: &mut watch::Receiver<bool>,
    ) -> Stop {
        let mut group = Group::default();
        // The stream starts before the oldest transaction still prepared (`resume_position`),
        // so every one of them is read again.
        self.prepared.clear();
        // Finished groups not applied yet, and the position after them.
        let mut batch: Vec<Change> = Vec::new();
        let mut batch_pos: Option<Position> = None;
        let mut batch_since: Option<Instant> = None;
        let progress = self.progress;
        let hold = &progress.hold;
        let mut asked = hold.asked();
        loop {
            if group.gtid.is_none() {
                // Between two groups: VERIFY may hold the catch-up here, everything read
                // applied first (`hold`).
                let at = batch_pos.clone().unwrap_or_else(|| self.applied.clone());
                if let Some(w) = hold.wanted(&at) {
                    if let Err(e) = self.flush(writer, &mut batch, &mut batch_pos).await {
                        return Stop::Retry(e);
                    }
                    batch_since = None;
                    if hold.wait(&w, &self.applied, stop).await {
                        return Stop::Asked;
                    }
                    continue;
                }
            }
            let flush_at = batch_since.map(|t| t + BATCH_DELAY);
            let next = tokio::select! {
                _ = stop.changed() => {
                    if let Err(e) = self.flush(writer, &mut batch, &mut batch_pos).await {
                        return Stop::Retry(e);
                    }
                    return Stop::Asked;
                }
                // Looked at above, before the next event.
                _ = asked.changed() => continue,
                _ = sleep_until(flush_at) => None,
                n = tokio::time::timeout(SILENCE, stream.next()) => Some(n),
            };
            let event = match next {
                None => {
                    if let Err(e) = self.flush(writer, &mut batch, &mut batch_pos).await {
                        return Stop::Retry(e);
                    }
                    batch_since = None;
                    continue;
                }
                Some(Err(_)) => {
                    return Stop::Retry(format!(
                        "the binlog of `{}` sent nothing for {} s",
                        self.source,
                        SILENCE.as_secs()
                    ))
                }
                Some(Ok(None)) => {
                    return Stop::Retry(format!("`{}` ended the binlog stream", self.source))
                }
                Some(Ok(Some(Err(e)))) => {
                    return Stop::Retry(format!("reading the binlog of `{}`: {e}", self.source))
                }
                Some(Ok(Some(Ok(e)))) => e,
            };
            if !super::checksum_ok(&event) {
                return Stop::Retry(format!(
                    "an event of `{}`'s binlog failed its CRC32 check",
                    self.source
                ));
            }
            let end = match self.read(stream, &event, writer, &mut group) {
                Ok(end) => end,
                Err(e) => return Stop::Fatal(e),
            };
            if group.xa.is_some() {
                group.bytes += group.changes[group.counted..]
                    .iter()
                    .map(change_bytes)
                    .sum::<usize>();
                group.counted = group.changes.len();
                let held = group.bytes + self.prepared.iter().map(|p| p.bytes).sum::<usize>();
                if held > XA_HELD_BYTES {
                    return Stop::Fatal(self.xa_too_large(writer));
                }
            }
            if matches!(end, End::Open)
                && group.xa.is_none()
                && group.changes.len() >= BATCH_CHANGES
            {
                // A large transaction is applied in parts (the binlog holds committed groups
                // only); the position moves at its end, so a restart replays it whole.
                let part = std::mem::take(&mut group.changes);
                let applied = batch.drain(..).chain(part).collect::<Vec<_>>();
                if let Err(e) = writer.apply(self.source, &applied).await {
                    return Stop::Retry(e);
                }
                self.progress
                    .events_applied
                    .fetch_add(applied.len() as i64, Ordering::Relaxed);
            }
            if !matches!(end, End::Open) {
                let g = std::mem::take(&mut group);
                let pos = batch_pos.get_or_insert_with(|| self.applied.clone());
                let before = pos.clone();
                if let Some(gtid) = g.gtid {
                    pos.advance(&gtid);
                    self.last_group_time = g.timestamp;
                }
                match end {
                    End::Prepared => self.prepared.push(Prepared {
                        xid: g.xa.unwrap_or_default(),
                        before,
                        changes: g.changes,
                        bytes: g.bytes,
                    }),
                    End::Resolve { xid, commit } => {
                        if let Some(i) = self.prepared.iter().position(|p| p.xid == xid) {
                            let p = self.prepared.remove(i);
                            if commit {
                                batch.extend(p.changes);
                            }
                        }
                    }
                    _ => batch.extend(g.changes),
                }
                batch_since.get_or_insert_with(Instant::now);
                if batch.len() >= BATCH_CHANGES {
                    if let Err(e) = self.flush(writer, &mut batch, &mut batch_pos).await {
                        return Stop::Retry(e);
                    }
                    batch_since = None;
                }
            }
        }
    }

    /// Why following stops when the source's uncommitted XA transactions grow past the cap.
    fn xa_too_large(&self, writer: &Writer) -> String {
        format!(
            "XA transactions on `{}` that are open or prepared and not yet committed changed \
             more than {} MiB of `{}.{}`'s rows; idgate holds those changes in memory until \
             XA COMMIT. Commit or roll them back on `{}` (XA RECOVER lists them), then \
             cancel this move and start it again",
            self.source,
            XA_HELD_BYTES >> 20,
            writer.schema,
            writer.table,
            self.source
        )
    }

    /// Takes one event into `group`; says whether and how it ends the group.
    fn read(
        &self,
        stream: &BinlogStream,
        event: &Event,
        writer: &Writer,
        group: &mut Group,
    ) -> Result<End, String> {
        let header = event.header();
        let kind = header.event_type_raw();
        let in_group = |end: End| if group.gtid.is_some() { end } else { End::Open };
        if kind == GTID_EVENT {
            let g = Gtid::read(header.server_id(), event.data())
                .ok_or("a GTID event too short to read")?;
            *group = Group {
                gtid: Some(g),
                timestamp: header.timestamp(),
                xa: super::gtid::xa_xid(event.data()),
                ..Group::default()
            };
            return Ok(End::Open);
        }
        if kind == EventType::XID_EVENT as u8 {
            return Ok(in_group(End::Commit));
        }
        if kind == XA_PREPARE_EVENT {
            return Ok(in_group(End::Prepared));
        }
        if kind == EventType::QUERY_EVENT as u8 {
            let q: QueryEvent<'_> = event
                .read_event()
                .map_err(|e| format!("a query event idgate cannot read: {e}"))?;
            let text = q.query();
            let word = text.trim().to_ascii_uppercase();
            if word == "BEGIN" || word.starts_with("XA END") {
                return Ok(End::Open);
            }
            if word == "COMMIT" || word == "ROLLBACK" {
                return Ok(in_group(End::Commit));
            }
            if let Some(xid) = word.strip_prefix("XA START") {
                group.xa = Some(xid.trim().to_string());
                return Ok(End::Open);
            }
            for (verb, commit) in [("XA COMMIT", true), ("XA ROLLBACK", false)] {
                if let Some(rest) = word.strip_prefix(verb) {
                    let rest = rest.trim();
                    if rest.ends_with("ONE PHASE") {
                        // Prepared and committed in this one group.
                        return Ok(in_group(End::Commit));
                    }
                    return Ok(in_group(End::Resolve {
                        xid: rest.to_string(),
                        commit,
                    }));
                }
            }
            // idgate's own fence and view (SWITCH) change no row.
            let own = (word.contains("IDGATE_FENCE_") && word.contains("TRIGGER"))
                || word.contains(&crate::migrate::hide::MARK.to_ascii_uppercase());
            if !own && self.names_table(&q.schema(), &text, writer) {
                return Err(format!(
                    "`{}`.`{}` was changed by `{}` on `{}` while it is being moved; cancel the \
                     move (IDGATE MIGRATE CANCEL) and start it again",
                    writer.schema,
                    writer.table,
                    text.chars().take(200).collect::<String>(),
                    self.source
                ));
            }
            return Ok(if group.gtid.is_some_and(|g| g.standalone) {
                End::Commit
            } else {
                End::Open
            });
        }
        let data = match event.read_data() {
            Ok(Some(EventData::RowsEvent(r))) => r,
            Ok(_) => return Ok(End::Open),
            Err(e) => return Err(format!("a binlog event idgate cannot read: {e}")),
        };
        let Some(tme) = stream.get_tme(data.table_id()) else {
            return Err("a row event without its table map".into());
        };
        if tme.database_name() != writer.schema.as_str()
            || tme.table_name() != writer.table.as_str()
        {
            return Ok(End::Open);
        }
        if matches!(data, RowsEventData::PartialUpdateRowsEvent(_)) {
            return Err("a partial row image: binlog_row_image must be FULL".into());
        }
        for r in data.rows(tme) {
            let (before, after) = r.map_err(|e| format!("a row image idgate cannot read: {e}"))?;
            let before = before.map(|b| values::row(&writer.shape, b)).transpose()?;
            let after = after.map(|a| values::row(&writer.shape, a)).transpose()?;
            match (before, after) {
                (None, Some(a)) => group.changes.push(Change::Upsert(a)),
                (Some(b), None) => group.changes.push(Change::Delete(b)),
                (Some(b), Some(a)) => {
                    let moved = writer.shape.pk_of(&b) != writer.shape.pk_of(&a)
                        || writer.places(&b)? != writer.places(&a)?;
                    if moved {
                        group.changes.push(Change::Delete(b));
                    }
                    group.changes.push(Change::Upsert(a));
                }
                (None, None) => {}
            }
        }
        Ok(End::Open)
    }

    /// Whether a statement in the binlog may change the moved table's definition or rows
    /// outside row events (DDL, or a statement logged as text).
    fn names_table(&self, schema: &str, text: &str, writer: &Writer) -> bool {
        let lower = text.to_ascii_lowercase();
        let table = writer.table.to_ascii_lowercase();
        let mentions = lower.match_indices(&table).any(|(i, _)| {
            let before = lower.as_bytes().get(i.wrapping_sub(1)).copied();
            let after = lower.as_bytes().get(i + table.len()).copied();
            let edge = |c: Option<u8>| {
                c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'$'))
            };
            edge(before) && edge(after)
        });
        mentions
            && (schema.eq_ignore_ascii_case(&writer.schema)
                || lower.contains(&writer.schema.to_ascii_lowercase()))
    }

    /// Applies the finished groups and saves the position after them.
    async fn flush(
        &mut self,
        writer: &mut Writer,
        batch: &mut Vec<Change>,
        batch_pos: &mut Option<Position>,
    ) -> Result<(), String> {
        let Some(pos) = batch_pos.take() else {
            return Ok(());
        };
        if batch.is_empty() && self.saved_at.elapsed() < SAVE_IDLE_EVERY {
            // Only other tables' groups: the position moves in memory, and is saved now and
            // then (saving writes to the store, which may be on this very source).
            self.progress.set_applied(&pos);
            self.applied = pos;
            return Ok(());
        }
        if let Err(e) = writer.apply(self.source, batch).await.map(drop) {
            *batch_pos = Some(pos);
            return Err(e);
        }
        let n = batch.len() as i64;
        let applied = self.progress.events_applied.fetch_add(n, Ordering::Relaxed) + n;
        batch.clear();
        // While an XA transaction waits for its COMMIT, a restart must read its PREPARE again.
        let saved = self
            .prepared
            .first()
            .map_or_else(|| pos.to_string(), |p| p.before.to_string());
        if self.reverse {
            self.store
                .save_reverse_position(self.key, self.source, &saved, applied)
                .await?;
        } else {
            self.store
                .save_position(self.key, self.source, &saved, applied)
                .await?;
        }
        self.progress.set_applied(&pos);
        self.progress
            .last_group_time
            .store(self.last_group_time, Ordering::Relaxed);
        self.progress.set_error(None);
        self.saved_at = Instant::now();
        self.applied = pos;
        Ok(())
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}
