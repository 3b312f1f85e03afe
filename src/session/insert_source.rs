//! The rows of an `INSERT … SELECT`'s query, read into idgate: the SELECT is routed as it would
//! be alone and its answer (one backend's, several concatenated, or merged) is written into
//! memory instead of to the client, capped by `merge_memory_limit`. Each value can then be
//! written back as a literal that round-trips: numbers bare, dates and decimals as quoted text,
//! strings as hex in the character set they came in, binary values as hex.

use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use mysql_common::collations::{Collation, CollationId};
use mysql_common::constants::ColumnType;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session};
use crate::exec::relay::Client;
use crate::exec::{scatter, BackendError};
use crate::route::BoundMerge;
use crate::sql;
use crate::wire::command::query_packet;
use crate::wire::errors::{self, SqlError};
use crate::wire::framing::PacketWriter;
use crate::wire::packets;

/// Memory a value's position takes beside its bytes (counted against the limit).
const PER_VALUE: u64 = 16;
/// A NULL value's position.
const NULL: (usize, usize) = (usize::MAX, 0);
/// The binary character set: values that are bytes, not text.
const BINARY: u16 = 63;

/// The source needed more memory than `merge_memory_limit` allows.
fn too_large(limit: u64) -> SqlError {
    SqlError::new(
        errors::ER_OUTOFMEMORY,
        b"HY001",
        format!(
            "Out of memory: the rows of INSERT ... SELECT need more than idgate's \
             merge_memory_limit ({limit} bytes); copy them in smaller ranges (WHERE id BETWEEN \
             ...) or raise merge_memory_limit"
        ),
    )
}

fn malformed(what: &str) -> SqlError {
    SqlError::new(
        errors::CR_SERVER_LOST,
        b"HY000",
        format!("idgate: the SELECT's answer was malformed ({what})"),
    )
}

/// An `AsyncWrite` keeping what is written in memory, up to a limit; past it, it drops
/// everything and remembers that (the relays writing into it still read every backend's
/// answer to its end, so connections stay in step).
pub(super) struct Held {
    buf: Vec<u8>,
    limit: u64,
    over: bool,
}

impl Held {
    fn new(limit: u64) -> Held {
        Held {
            buf: Vec::new(),
            limit,
            over: false,
        }
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        if !me.over && (me.buf.len() + data.len()) as u64 <= me.limit {
            me.buf.extend_from_slice(data);
        } else {
            me.over = true;
            me.buf = Vec::new();
        }
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// What a column definition of the answer says about its values.
pub(super) struct SourceColumn {
    pub ty: ColumnType,
    pub charset: u16,
    /// The character set name text values are written with (`_utf8mb4 X'…'`).
    pub charset_name: Option<String>,
}

/// The SELECT's answer: every row's values, positions into one buffer.
pub(super) struct Source {
    buf: Vec<u8>,
    pub columns: Vec<SourceColumn>,
    /// Per row, the range of its values in `values`.
    pub rows: Vec<Range<usize>>,
    values: Vec<(usize, usize)>,
}

/// The fixed fields of a column definition: type and character set.
fn column(def: &[u8]) -> Option<SourceColumn> {
    let mut rest = def;
    for _ in 0..6 {
        let len = usize::try_from(packets::get_lenenc_int(&mut rest)?).ok()?;
        rest = rest.get(len..)?;
    }
    // 0x0c, charset (2), length (4), type (1), flags (2), decimals (1)
    let charset = u16::from_le_bytes([*rest.get(1)?, *rest.get(2)?]);
    let ty = ColumnType::try_from(*rest.get(7)?).ok()?;
    Some(SourceColumn {
        ty,
        charset,
        charset_name: None,
    })
}

/// Joins the framed packets in `buf` into their payloads, in place; returns each payload's range.
fn unframe(buf: &mut [u8]) -> Option<Vec<Range<usize>>> {
    let mut out = Vec::new();
    let (mut r, mut w) = (0usize, 0usize);
    let mut start = None;
    while r < buf.len() {
        let header = buf.get(r..r + 4)?;
        let len =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        r += 4;
        let end = r.checked_add(len).filter(|&e| e <= buf.len())?;
        let s = *start.get_or_insert(w);
        buf.copy_within(r..end, w);
        w += len;
        r = end;
        if len < 0xff_ffff {
            out.push(s..w);
            start = None;
        }
    }
    start.is_none().then_some(out)
}

impl Source {
    /// Reads the answer written into `held`. An error the backends sent is returned as it is.
    pub(super) fn parse(held: Held, limit: u64) -> Result<Source, SqlError> {
        if held.over {
            return Err(too_large(limit));
        }
        let mut buf = held.buf;
        let payloads = unframe(&mut buf).ok_or_else(|| malformed("framing"))?;
        let err_at = payloads
            .iter()
            .find(|p| packets::is_err(&buf[(*p).clone()]));
        if let Some(p) = err_at {
            let (code, state, msg) = packets::parse_err(&buf[p.clone()]);
            return Err(SqlError::new(
                code,
                &state,
                String::from_utf8_lossy(msg).into_owned(),
            ));
        }
        let mut it = payloads.into_iter();
        let first = it.next().ok_or_else(|| malformed("no answer"))?;
        if buf.get(first.start) == Some(&packets::OK_HEADER) {
            return Err(malformed("an OK instead of rows"));
        }
        let mut p = &buf[first];
        let n = packets::get_lenenc_int(&mut p).ok_or_else(|| malformed("column count"))?;
        let mut columns = Vec::new();
        for _ in 0..n {
            let def = it.next().ok_or_else(|| malformed("column definitions"))?;
            columns.push(column(&buf[def]).ok_or_else(|| malformed("a column definition"))?);
        }
        it.next(); // EOF after the column definitions
        let mut rows = Vec::new();
        let mut values = Vec::new();
        for row in it {
            let payload = &buf[row.clone()];
            if packets::is_eof(payload) {
                break;
            }
            let first_value = values.len();
            let mut rest = payload;
            for _ in 0..columns.len() {
                if rest.first() == Some(&0xfb) {
                    rest = &rest[1..];
                    values.push(NULL);
                    continue;
                }
                let v = packets::get_lenenc_str(&mut rest).ok_or_else(|| malformed("a row"))?;
                let end = row.start + (payload.len() - rest.len());
                values.push((end - v.len(), v.len()));
            }
            rows.push(first_value..values.len());
            if buf.len() as u64 + values.len() as u64 * PER_VALUE > limit {
                return Err(too_large(limit));
            }
        }
        Ok(Source {
            buf,
            columns,
            rows,
            values,
        })
    }

    /// Row `k`'s value of column `p` (`None`: NULL).
    pub(super) fn value(&self, k: usize, p: usize) -> Option<&[u8]> {
        let (at, len) = *self.values.get(self.rows.get(k)?.start + p)?;
        if (at, len) == NULL {
            return None;
        }
        self.buf.get(at..at + len)
    }

    /// Appends row `k`'s value of column `p` as a literal the backend reads back as the same
    /// value.
    pub(super) fn push_literal(&self, out: &mut Vec<u8>, k: usize, p: usize) {
        let Some(v) = self.value(k, p) else {
            out.extend_from_slice(b"NULL");
            return;
        };
        let col = &self.columns[p];
        use ColumnType::*;
        let number = |b: &u8| b.is_ascii_digit() || b"+-.eE".contains(b);
        let plain_text = |b: &u8| b.is_ascii_alphanumeric() || b" :.+-".contains(b);
        match col.ty {
            MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_LONG | MYSQL_TYPE_LONGLONG
            | MYSQL_TYPE_INT24 | MYSQL_TYPE_YEAR | MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE
                if !v.is_empty() && v.iter().all(number) =>
            {
                out.extend_from_slice(v);
            }
            MYSQL_TYPE_DECIMAL
            | MYSQL_TYPE_NEWDECIMAL
            | MYSQL_TYPE_DATE
            | MYSQL_TYPE_NEWDATE
            | MYSQL_TYPE_TIME
            | MYSQL_TYPE_TIME2
            | MYSQL_TYPE_DATETIME
            | MYSQL_TYPE_DATETIME2
            | MYSQL_TYPE_TIMESTAMP
            | MYSQL_TYPE_TIMESTAMP2
                if v.iter().all(plain_text) =>
            {
                out.push(b'\'');
                out.extend_from_slice(v);
                out.push(b'\'');
            }
            _ => {
                match &col.charset_name {
                    Some(cs) if col.charset != BINARY && col.ty != MYSQL_TYPE_BIT => {
                        out.push(b'_');
                        out.extend_from_slice(cs.as_bytes());
                    }
                    _ => out.extend_from_slice(b"_binary"),
                }
                out.extend_from_slice(b" X'");
                super::insert_select::push_hex(out, v);
                out.push(b'\'');
            }
        }
    }

    /// Columns whose values are written as text in their character set.
    fn text_columns(&mut self) -> impl Iterator<Item = &mut SourceColumn> {
        self.columns.iter_mut().filter(|c| {
            c.charset != BINARY
                && !matches!(
                    c.ty,
                    ColumnType::MYSQL_TYPE_BIT
                        | ColumnType::MYSQL_TYPE_NULL
                        | ColumnType::MYSQL_TYPE_TINY
                        | ColumnType::MYSQL_TYPE_SHORT
                        | ColumnType::MYSQL_TYPE_LONG
                        | ColumnType::MYSQL_TYPE_LONGLONG
                        | ColumnType::MYSQL_TYPE_INT24
                        | ColumnType::MYSQL_TYPE_FLOAT
                        | ColumnType::MYSQL_TYPE_DOUBLE
                )
        })
    }
}

/// A character set name as it may follow `_` in SQL.
fn charset_name(name: &str) -> Option<String> {
    (!name.is_empty()
        && name != "unknown"
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    .then(|| name.to_string())
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Sends `query` to `backends` and keeps their answers, concatenated. `None`: the client got
    /// an error.
    pub(super) async fn collect_rows(
        &mut self,
        backends: &[String],
        query: &[u8],
        limit: u64,
    ) -> Result<Option<Held>, End> {
        let Some(idx) = self.send_to_all(backends, &query_packet(query)).await? else {
            return Ok(None);
        };
        let mut writer = PacketWriter::new(Held::new(limit));
        let relayed = {
            let mut conns = self.leases.conns(&idx);
            let mut client = Client {
                writer: &mut writer,
                deprecate_eof: false,
            };
            scatter::relay_concat(&mut conns, &mut client, 0).await
        };
        if let Err(e) = relayed {
            return Err(self.backend_lost(e));
        }
        let _ = writer.flush().await; // into memory: cannot fail
        Ok(Some(std::mem::replace(writer.stream_mut(), Held::new(0))))
    }

    /// Sends a merged SELECT's statement to `backends` and keeps the merged answer. `None`: the
    /// client got an error.
    pub(super) async fn collect_merged(
        &mut self,
        backends: &[String],
        merge: &BoundMerge,
        limit: u64,
    ) -> Result<Option<Held>, End> {
        let packet = query_packet(&merge.shard_sql);
        let Some(idx) = self.send_to_all(backends, &packet).await? else {
            return Ok(None);
        };
        let mut writer = PacketWriter::new(Held::new(limit));
        let merged = {
            let mut conns = self.leases.conns(&idx);
            let mut client = Client {
                writer: &mut writer,
                deprecate_eof: false,
            };
            crate::exec::merge::relay_merged(
                &mut conns,
                &mut client,
                &merge.plan,
                (merge.offset, merge.limit),
                0,
                false,
                limit,
            )
            .await
        };
        match merged {
            Ok(Ok(r)) => self.note_merged_rows(r.rows),
            Ok(Err(msg)) => {
                self.send_error(&SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg));
                return Ok(None);
            }
            Err(BackendError::ClientGone(_)) => {
                self.send_error(&too_large(limit));
                return Ok(None);
            }
            Err(e) => return Err(self.backend_lost(e)),
        }
        let _ = writer.flush().await; // into memory: cannot fail
        Ok(Some(std::mem::replace(writer.stream_mut(), Held::new(0))))
    }

    /// Names the character set of every text column (from the collation id in its definition;
    /// ids idgate does not know are looked up on the default backend).
    pub(super) async fn resolve_charsets(&mut self, source: &mut Source) -> Result<(), SqlError> {
        let mut unknown = Vec::new();
        for c in source.text_columns() {
            // Ids below 248 mean the same on MariaDB and MySQL.
            if c.charset < 248 {
                c.charset_name =
                    charset_name(Collation::resolve(CollationId::from(c.charset)).charset());
            }
            if c.charset_name.is_none() && !unknown.contains(&c.charset) {
                unknown.push(c.charset);
            }
        }
        if unknown.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = unknown.iter().map(u16::to_string).collect();
        let ids = ids.join(",");
        let default = self.proxy.default_pool.name.clone();
        let i = self.lease_index(&default).await?;
        let mut found: Vec<(u16, String)> = Vec::new();
        for table in ["COLLATION_CHARACTER_SET_APPLICABILITY", "COLLATIONS"] {
            let q = format!(
                "SELECT ID, CHARACTER_SET_NAME FROM information_schema.{table} WHERE ID IN ({ids})"
            );
            // A server without an ID column there answers with an error: try the other table.
            if let Ok(rows) = self.leases.get_mut(i).query_rows(&q).await {
                for r in rows {
                    let id = r.first().and_then(|v| v.as_deref());
                    let name = r.get(1).and_then(|v| v.as_deref());
                    let id = id.and_then(|v| std::str::from_utf8(v).ok()?.parse::<u16>().ok());
                    let name = name.and_then(|v| charset_name(std::str::from_utf8(v).ok()?));
                    if let (Some(id), Some(name)) = (id, name) {
                        found.push((id, name));
                    }
                }
            }
            if self.leases.get_mut(i).broken {
                return Err(malformed("the default backend was lost"));
            }
        }
        for c in source.text_columns() {
            if c.charset_name.is_none() {
                c.charset_name = found.iter().find(|f| f.0 == c.charset).map(|f| f.1.clone());
            }
            if c.charset_name.is_none() {
                return Err(SqlError::new(
                    1273,
                    b"HY000",
                    format!(
                        "Unknown collation id {} in the SELECT's answer: idgate cannot write its \
                         values back; CAST the column to a known character set",
                        c.charset
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unframe_joins_split_packets_in_place() {
        let mut buf = vec![2, 0, 0, 0, b'a', b'b', 1, 0, 0, 1, b'c'];
        let r = unframe(&mut buf).unwrap();
        assert_eq!(r, vec![0..2, 2..3]);
        assert_eq!(&buf[..3], b"abc");
        // A 16 MiB chunk continues in the next packet.
        let mut big = vec![0xff, 0xff, 0xff, 0];
        big.extend(std::iter::repeat_n(b'x', 0xff_ffff));
        big.extend_from_slice(&[1, 0, 0, 1, b'y']);
        let r = unframe(&mut big).unwrap();
        assert_eq!(r, vec![0..0x100_0000]);
        assert_eq!(big[0xff_ffff], b'y');
        // Truncated input is refused, not read past.
        assert!(unframe(&mut [5, 0, 0, 0, b'a']).is_none());
    }

    #[test]
    fn held_drops_everything_past_its_limit() {
        let mut h = Held::new(4);
        let waker = futures_noop();
        let mut cx = Context::from_waker(&waker);
        let _ = Pin::new(&mut h).poll_write(&mut cx, b"abc");
        assert_eq!(h.buf, b"abc");
        let _ = Pin::new(&mut h).poll_write(&mut cx, b"de");
        assert!(h.over && h.buf.is_empty());
        let _ = Pin::new(&mut h).poll_write(&mut cx, b"f");
        assert!(h.buf.is_empty());
        assert!(matches!(
            Source::parse(h, 4).map(|_| ()),
            Err(e) if e.code == errors::ER_OUTOFMEMORY
        ));
    }

    fn futures_noop() -> std::task::Waker {
        std::task::Waker::noop().clone()
    }
}
