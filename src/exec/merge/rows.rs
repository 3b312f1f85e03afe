//! Reading the shards' answers row by row and writing the merged answer: the client sees the
//! column count, definitions and rows of its own select items only, never idgate's hidden ones.

use mysql_common::constants::StatusFlags;
use tokio::io::AsyncWrite;

use crate::exec::backend::{BackendConn, BackendError};
use crate::exec::relay::Client;
use crate::wire::packets;

/// A text row's values (`None` for NULL).
pub type Values = Vec<Option<Vec<u8>>>;

pub fn parse_text_row(p: &[u8]) -> Option<Values> {
    let mut rest = p;
    let mut out = Vec::new();
    while !rest.is_empty() {
        if rest[0] == 0xfb {
            out.push(None);
            rest = &rest[1..];
            continue;
        }
        let len = packets::get_lenenc_int(&mut rest)? as usize;
        out.push(Some(rest.get(..len)?.to_vec()));
        rest = &rest[len..];
    }
    Some(out)
}

pub fn encode_row(values: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        match v {
            Some(v) => packets::put_lenenc_str(&mut out, v),
            None => out.push(0xfb),
        }
    }
    out
}

/// How a shard's answer began.
pub enum Start {
    /// Column definitions and the EOF after them.
    Columns(Vec<Vec<u8>>, Vec<u8>),
    /// An error (or an OK where rows were expected): the packet to give the client.
    Failed(Vec<u8>),
}

pub async fn read_header(be: &mut BackendConn) -> Result<Start, BackendError> {
    be.read().await?;
    if packets::is_err(&be.packet) {
        return Ok(Start::Failed(be.packet.clone()));
    }
    if be.packet.first() == Some(&packets::OK_HEADER) {
        return Ok(Start::Failed(crate::exec::scatter::no_rows_over_shards()));
    }
    let mut p = &be.packet[..];
    let n = packets::get_lenenc_int(&mut p)
        .ok_or_else(|| BackendError::Protocol("column count".into()))?;
    let mut defs = Vec::with_capacity((n as usize).min(4096)); // n comes from the backend
    for _ in 0..n {
        be.read().await?;
        defs.push(be.packet.clone());
    }
    be.read().await?;
    Ok(Start::Columns(defs, be.packet.clone()))
}

/// What ends the shards' answers: their warnings added up, the first error, and whether a
/// shard reported a scan without (a good) index, which one server would report too.
#[derive(Default)]
pub struct Ends {
    pub warnings: u16,
    pub failed: Option<Vec<u8>>,
    pub index_flags: u16,
    /// Row packets read from the shards.
    pub rows: u64,
}

impl Ends {
    /// The status for the merged answer's end: the session's, plus the shards' index flags.
    pub fn status(&self, session: u16) -> u16 {
        session | self.index_flags
    }
}

/// The next row packet of a shard, or `None` at its end.
pub async fn next_row(
    be: &mut BackendConn,
    ends: &mut Ends,
) -> Result<Option<Vec<u8>>, BackendError> {
    be.read().await?;
    if packets::is_eof(&be.packet) {
        let (warnings, status) = packets::parse_eof(&be.packet);
        ends.warnings = ends.warnings.saturating_add(warnings);
        ends.index_flags |= status.bits()
            & (StatusFlags::SERVER_STATUS_NO_GOOD_INDEX_USED
                | StatusFlags::SERVER_STATUS_NO_INDEX_USED)
                .bits();
        return Ok(None);
    }
    if packets::is_err(&be.packet) {
        ends.failed.get_or_insert_with(|| be.packet.clone());
        return Ok(None);
    }
    ends.rows += 1;
    Ok(Some(be.packet.clone()))
}

impl Ends {
    /// Adds what ended another part of the answer.
    fn absorb(&mut self, other: Ends) {
        self.warnings = self.warnings.saturating_add(other.warnings);
        if self.failed.is_none() {
            self.failed = other.failed;
        }
        self.index_flags |= other.index_flags;
        self.rows += other.rows;
    }
}

/// What a shard's answer brought next.
pub enum Event {
    /// Its column definitions and the EOF after them (an error instead went to `Ends`).
    Columns(Vec<Vec<u8>>, Vec<u8>),
    Row(Vec<u8>),
}

/// Reads every shard's answer (header, then rows) and hands each part to `take` in the order
/// they arrive, not shard after shard, so no shard waits on a full socket while idgate waits on
/// another (a slow one, or one held by a lock). A shard's rows come after its header. A shard
/// answering with an error instead of columns ends there (its error goes to `ends.failed`);
/// every other is read to its end, whatever `take` does.
pub async fn each_event(
    shards: &mut [&mut BackendConn],
    ends: &mut Ends,
    take: impl FnMut(Event),
) -> Result<(), BackendError> {
    // One reading loop per shard, polled together by this task (never in parallel: the lock
    // is only for the future to be Send); `take` is only held between awaits.
    let take = std::sync::Mutex::new(take);
    let take = &take;
    let give = |event| match take.lock() {
        Ok(mut f) => f(event),
        Err(poisoned) => (poisoned.into_inner())(event),
    };
    let give = &give;
    let parts = futures_util::future::join_all(shards.iter_mut().map(|be| async move {
        let mut ends = Ends::default();
        match read_header(be).await? {
            Start::Columns(defs, eof) => give(Event::Columns(defs, eof)),
            Start::Failed(e) => {
                ends.failed = Some(e);
                return Ok(ends);
            }
        }
        while let Some(row) = next_row(be, &mut ends).await? {
            give(Event::Row(row));
        }
        Ok::<_, BackendError>(ends)
    }))
    .await;
    for part in parts {
        ends.absorb(part?);
    }
    Ok(())
}

/// Reads the rest of a shard's rows, keeping the connection in step.
pub async fn drain(be: &mut BackendConn, ends: &mut Ends) -> Result<(), BackendError> {
    while next_row(be, ends).await?.is_some() {}
    Ok(())
}

/// Writes the column count and the first `visible` definitions (and EOF for old clients).
pub fn write_header<W: AsyncWrite + Unpin>(
    client: &mut Client<'_, W>,
    defs: &[Vec<u8>],
    eof: &[u8],
    visible: usize,
) {
    let start = client.writer.begin();
    packets::put_lenenc_int(client.writer.payload(), visible as u64);
    client.writer.end(start);
    for d in &defs[..visible] {
        client.writer.write(d);
    }
    if !client.deprecate_eof {
        client.writer.write(eof);
    }
}

/// Writes the terminator (EOF or OK) after the rows.
pub fn write_end<W: AsyncWrite + Unpin>(client: &mut Client<'_, W>, warnings: u16, status: u16) {
    let start = client.writer.begin();
    packets::terminator(
        client.writer.payload(),
        client.deprecate_eof,
        warnings,
        StatusFlags::from_bits_retain(status),
    );
    client.writer.end(start);
}
