//! An in-memory client for idgate's own SELECTs: the relay and merge writers write one text
//! result set into it as they would to a client, and it keeps the column definitions and rows,
//! up to a row count and a byte budget. Past either it keeps reading (the shards' answers are
//! read to their end, so the connections stay in step) but stores nothing more.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

use crate::wire::packets;

/// Largest payload of one wire packet; longer payloads continue in the next.
const MAX_CHUNK: usize = 0xff_ffff;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Columns(u64),
    ColumnsEof,
    Rows,
    Done,
}

/// Why the capture stopped storing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    Rows,
    Bytes,
}

pub struct Capture {
    max_rows: u64,
    max_bytes: u64,
    /// Rows past this many are dropped without an overflow (EXISTS needs one).
    enough: u64,
    pending: Vec<u8>,
    /// A payload of several wire chunks, until its last chunk.
    long: Vec<u8>,
    phase: Phase,
    bytes: u64,
    pub columns: Vec<Vec<u8>>,
    pub rows: Vec<Vec<u8>>,
    pub error: Option<Vec<u8>>,
    pub overflow: Option<Overflow>,
    /// The answer was an OK packet, not rows.
    pub no_rows: bool,
}

impl Capture {
    pub fn new(max_rows: u64, max_bytes: u64, enough: Option<u64>) -> Capture {
        Capture {
            max_rows,
            max_bytes,
            enough: enough.unwrap_or(u64::MAX),
            pending: Vec::new(),
            long: Vec::new(),
            phase: Phase::Start,
            bytes: 0,
            columns: Vec::new(),
            rows: Vec::new(),
            error: None,
            overflow: None,
            no_rows: false,
        }
    }

    /// Whether a whole result set (or an error) arrived.
    pub fn complete(&self) -> bool {
        self.phase == Phase::Done
    }

    fn feed(&mut self, data: &[u8]) {
        self.pending.extend_from_slice(data);
        let mut at = 0;
        while self.pending.len() - at >= 4 {
            let h = &self.pending[at..at + 4];
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            if self.pending.len() - at - 4 < len {
                break;
            }
            let chunk = at + 4..at + 4 + len;
            at = chunk.end;
            if len == MAX_CHUNK || !self.long.is_empty() {
                if self.keeps_more(self.long.len() + len) {
                    self.long.extend_from_slice(&self.pending[chunk]);
                } else {
                    self.overflow = Some(Overflow::Bytes);
                }
                if len == MAX_CHUNK {
                    continue;
                }
                let payload = std::mem::take(&mut self.long);
                self.packet(&payload);
            } else {
                let payload = self.pending[chunk].to_vec();
                self.packet(&payload);
            }
        }
        self.pending.drain(..at);
    }

    /// Whether a packet of `len` bytes would still fit the byte budget.
    fn keeps_more(&self, len: usize) -> bool {
        self.overflow.is_none() && self.bytes + len as u64 <= self.max_bytes
    }

    fn store(&mut self, p: &[u8], row: bool) {
        if self.overflow.is_some() {
            return;
        }
        if row && self.rows.len() as u64 >= self.enough {
            return;
        }
        if row && self.rows.len() as u64 >= self.max_rows {
            self.overflow = Some(Overflow::Rows);
            return;
        }
        if !self.keeps_more(p.len()) {
            self.overflow = Some(Overflow::Bytes);
            return;
        }
        self.bytes += p.len() as u64;
        if row {
            self.rows.push(p.to_vec());
        } else {
            self.columns.push(p.to_vec());
        }
    }

    fn packet(&mut self, p: &[u8]) {
        if self.phase != Phase::Done && packets::is_err(p) {
            self.error = Some(p.to_vec());
            self.phase = Phase::Done;
            return;
        }
        match self.phase {
            Phase::Start => {
                if p.first() == Some(&packets::OK_HEADER) {
                    self.no_rows = true;
                    self.phase = Phase::Done;
                    return;
                }
                let mut rest = p;
                self.phase = match packets::get_lenenc_int(&mut rest) {
                    Some(0) | None => Phase::Done,
                    Some(n) => Phase::Columns(n),
                };
            }
            Phase::Columns(n) => {
                self.store(p, false);
                self.phase = if n > 1 {
                    Phase::Columns(n - 1)
                } else {
                    Phase::ColumnsEof
                };
            }
            Phase::ColumnsEof => self.phase = Phase::Rows,
            Phase::Rows if packets::is_eof(p) => self.phase = Phase::Done,
            Phase::Rows => self.store(p, true),
            Phase::Done => {}
        }
    }
}

impl AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().feed(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::merge::parse_text_row;

    fn frame(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        out.push(seq);
        out.extend_from_slice(payload);
        out
    }

    fn result_set(rows: usize) -> Vec<u8> {
        let mut s = frame(1, &[1]);
        s.extend(frame(
            2,
            b"\x03def\x00\x00\x00\x01c\x00\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00",
        ));
        s.extend(frame(3, &[0xfe, 0, 0, 2, 0]));
        for i in 0..rows {
            s.extend(frame(4, &[1, b'0' + (i % 10) as u8]));
        }
        s.extend(frame(5, &[0xfb]));
        s.extend(frame(6, &[0xfe, 0, 0, 2, 0]));
        s
    }

    #[test]
    fn keeps_columns_and_rows_fed_in_pieces() {
        let mut c = Capture::new(100, 1 << 20, None);
        for piece in result_set(3).chunks(5) {
            c.feed(piece);
        }
        assert!(c.complete());
        assert_eq!(c.columns.len(), 1);
        assert_eq!(c.rows.len(), 4);
        assert_eq!(parse_text_row(&c.rows[3]).unwrap(), vec![None]);
        assert_eq!(
            parse_text_row(&c.rows[0]).unwrap(),
            vec![Some(b"0".to_vec())]
        );
    }

    #[test]
    fn stops_storing_past_the_caps_but_reads_to_the_end() {
        let mut c = Capture::new(2, 1 << 20, None);
        c.feed(&result_set(5));
        assert!(c.complete());
        assert_eq!(c.overflow, Some(Overflow::Rows));
        assert_eq!(c.rows.len(), 2);
        let mut c = Capture::new(100, 40, None);
        c.feed(&result_set(50));
        assert!(c.complete());
        assert_eq!(c.overflow, Some(Overflow::Bytes));
        let mut c = Capture::new(2, 1 << 20, Some(1));
        c.feed(&result_set(5));
        assert_eq!((c.overflow, c.rows.len()), (None, 1));
    }

    #[test]
    fn an_error_is_the_answer() {
        let mut c = Capture::new(2, 1 << 20, None);
        let mut s = frame(1, &[1]);
        s.extend(frame(2, b"\xff\x1e\x04#42S22Unknown column"));
        c.feed(&s);
        assert!(c.complete());
        assert!(c.error.is_some());
    }
}
