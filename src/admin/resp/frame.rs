//! Requests and replies of the Redis protocol, framed by the `redis-protocol` crate. Requests
//! are RESP arrays of bulk strings (what every client library sends) or inline commands (what
//! a person types into telnet). Every request is bounded before it is decoded: its size by
//! `max_frame_bytes`, its argument count by [`MAX_ARGS`].

use std::ops::Range;

use bytes::BytesMut;
use redis_protocol::resp2::decode::decode_range;
use redis_protocol::resp2::encode::extend_encode as encode2;
use redis_protocol::resp2::types::{OwnedFrame as Frame2, RangeFrame};
use redis_protocol::resp3::encode::complete::extend_encode as encode3;
use redis_protocol::resp3::types::{FrameMap, OwnedFrame as Frame3};

/// Most arguments one request may carry (the longest command here has six).
pub const MAX_ARGS: usize = 64;

/// A complete request: where its arguments are in the buffer, and the bytes it took from it.
/// Ranges rather than copies: a pipelined burst of requests is answered without allocating
/// per argument.
pub type Parsed = (Vec<Range<usize>>, usize);

/// A request that cannot be read; the connection is answered with the message and closed,
/// as Redis does with protocol errors.
#[derive(Debug, thiserror::Error)]
#[error("Protocol error: {0}")]
pub struct ProtocolError(pub String);

/// Parses one request from the front of `buf`: `Ok(None)` until it is complete, then the
/// arguments and the bytes it took. Empty inline lines yield an empty argument list.
pub fn parse(buf: &[u8], max_frame: usize) -> Result<Option<Parsed>, ProtocolError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    if first != b'*' {
        return parse_inline(buf, max_frame);
    }
    // Check the argument count before the decoder sees it, so a huge count allocates nothing.
    let Some(end) = buf.iter().take(24).position(|&b| b == b'\n') else {
        return if buf.len() >= 24 {
            Err(ProtocolError("invalid multibulk length".into()))
        } else {
            Ok(None)
        };
    };
    let count = match decimal(header_value(&buf[..end])) {
        Some(n) if n <= MAX_ARGS => n,
        _ => return Err(ProtocolError("invalid multibulk length".into())),
    };
    check_lengths(buf, end + 1, count, max_frame)?;
    match decode_range(buf) {
        Ok(None) if buf.len() > max_frame => Err(too_big(max_frame)),
        Ok(None) => Ok(None),
        Ok(Some((frame, used))) => Ok(Some((args_of(frame)?, used))),
        Err(e) => Err(ProtocolError(e.to_string())),
    }
}

/// The arguments of a parsed request, as slices of the buffer it was parsed from, put in
/// `out` (at most [`MAX_ARGS`], which `parse` never exceeds); returns how many.
pub fn args<'a>(buf: &'a [u8], ranges: &[Range<usize>], out: &mut [&'a [u8]]) -> usize {
    let mut n = 0;
    for (slot, r) in out.iter_mut().zip(ranges) {
        *slot = buf.get(r.clone()).unwrap_or_default();
        n += 1;
    }
    n
}

/// A header's decimal digits (a length or a count), read without a UTF-8 pass; `None` for
/// anything but digits, or a value past `usize`.
fn decimal(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0usize, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(usize::from(d - b'0')))
            .flatten()
    })
}

/// A header line's value between its type byte and `\r\n` (or a bare `\n`).
fn header_value(line: &[u8]) -> &[u8] {
    let v = &line[1..];
    v.strip_suffix(b"\r").unwrap_or(v)
}

/// Walks the bulk-string headers of an array request from `pos`, as far as they have arrived,
/// and refuses a declared length over `max_frame` (Redis's words for a length over its
/// `proto-max-bulk-len`) or a request whose declared lengths add up past it, before any byte of
/// that string is waited for. Anything else is left to the decoder.
fn check_lengths(
    buf: &[u8],
    mut pos: usize,
    count: usize,
    max_frame: usize,
) -> Result<(), ProtocolError> {
    for _ in 0..count {
        let Some(rest) = buf.get(pos..).filter(|r| r.first() == Some(&b'$')) else {
            return Ok(());
        };
        let Some(end) = rest.iter().take(24).position(|&b| b == b'\n') else {
            return if rest.len() >= 24 {
                Err(invalid_bulk())
            } else {
                Ok(())
            };
        };
        let len = decimal(header_value(&rest[..end]))
            .filter(|&n| n <= max_frame)
            .ok_or_else(invalid_bulk)?;
        pos += end + 1 + len + 2;
        if pos > max_frame {
            return Err(too_big(max_frame));
        }
    }
    Ok(())
}

fn invalid_bulk() -> ProtocolError {
    ProtocolError("invalid bulk length".into())
}

fn too_big(max: usize) -> ProtocolError {
    ProtocolError(format!(
        "request larger than {max} bytes (id_service.max_frame_bytes)"
    ))
}

fn args_of(frame: RangeFrame) -> Result<Vec<Range<usize>>, ProtocolError> {
    let RangeFrame::Array(items) = frame else {
        return Err(ProtocolError("expected an array of bulk strings".into()));
    };
    items
        .into_iter()
        .map(|f| match f {
            RangeFrame::BulkString((a, b)) | RangeFrame::SimpleString((a, b)) => Ok(a..b),
            _ => Err(ProtocolError("expected '$', got something else".into())),
        })
        .collect()
}

fn parse_inline(buf: &[u8], max_frame: usize) -> Result<Option<Parsed>, ProtocolError> {
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > max_frame {
            Err(ProtocolError("too big inline request".into()))
        } else {
            Ok(None)
        };
    };
    let line = &buf[..end];
    let base = line.as_ptr() as usize;
    let args: Vec<Range<usize>> = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let start = w.as_ptr() as usize - base;
            start..start + w.len()
        })
        .collect();
    if args.len() > MAX_ARGS {
        return Err(ProtocolError("too many arguments in inline request".into()));
    }
    Ok(Some((args, end + 1)))
}

/// A reply, encoded for the connection's protocol version.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Simple(&'static str),
    /// The whole error line, starting with its code (`ERR`, `NOAUTH`, …).
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    /// Key/value pairs: a map in RESP3, a flat array in RESP2.
    Map(Vec<(&'static str, Reply)>),
    Array(Vec<Reply>),
}

impl Reply {
    pub fn err(text: impl Into<String>) -> Reply {
        // An error line must not break the framing.
        let text: String = text.into();
        Reply::Error(text.replace(['\r', '\n'], " "))
    }

    /// Appends the reply to `out` in RESP2 (`proto` 2) or RESP3.
    pub fn encode(self, proto: u8, out: &mut BytesMut) -> Result<(), ProtocolError> {
        let r = if proto >= 3 {
            encode3(out, &self.into_resp3().into_bytes_frame(), false).map(|_| ())
        } else {
            encode2(out, &self.into_resp2().into_bytes_frame(), false).map(|_| ())
        };
        r.map_err(|e| ProtocolError(e.to_string()))
    }

    fn into_resp2(self) -> Frame2 {
        match self {
            Reply::Simple(s) => Frame2::SimpleString(s.as_bytes().to_vec()),
            Reply::Error(e) => Frame2::Error(e),
            Reply::Int(i) => Frame2::Integer(i),
            Reply::Bulk(b) => Frame2::BulkString(b),
            Reply::Nil => Frame2::Null,
            Reply::Map(pairs) => Frame2::Array(
                pairs
                    .into_iter()
                    .flat_map(|(k, v)| [Frame2::BulkString(k.as_bytes().to_vec()), v.into_resp2()])
                    .collect(),
            ),
            Reply::Array(items) => {
                Frame2::Array(items.into_iter().map(Reply::into_resp2).collect())
            }
        }
    }

    fn into_resp3(self) -> Frame3 {
        match self {
            Reply::Simple(s) => Frame3::SimpleString {
                data: s.as_bytes().to_vec(),
                attributes: None,
            },
            Reply::Error(e) => Frame3::SimpleError {
                data: e,
                attributes: None,
            },
            Reply::Int(i) => Frame3::Number {
                data: i,
                attributes: None,
            },
            Reply::Bulk(b) => Frame3::BlobString {
                data: b,
                attributes: None,
            },
            Reply::Nil => Frame3::Null,
            Reply::Map(pairs) => {
                let mut data = FrameMap::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let key = Frame3::BlobString {
                        data: k.as_bytes().to_vec(),
                        attributes: None,
                    };
                    data.insert(key, v.into_resp3());
                }
                Frame3::Map {
                    data,
                    attributes: None,
                }
            }
            Reply::Array(items) => Frame3::Array {
                data: items.into_iter().map(Reply::into_resp3).collect(),
                attributes: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arguments of the first request in `buf`, and the bytes it took.
    fn words(buf: &[u8]) -> (Vec<&[u8]>, usize) {
        let (ranges, used) = parse(buf, 1024).unwrap().unwrap();
        let mut out = [&[][..]; MAX_ARGS];
        let n = args(buf, &ranges, &mut out);
        (out[..n].to_vec(), used)
    }

    #[test]
    fn parses_arrays_inline_and_partial_requests() {
        let req = b"*2\r\n$4\r\nINCR\r\n$3\r\nseq\r\n*1\r\n$4\r\nPING\r\n";
        let (args, used) = words(req);
        assert_eq!(args, vec![&b"INCR"[..], b"seq"]);
        let (args, _) = words(&req[used..]);
        assert_eq!(args, vec![&b"PING"[..]]);
        assert!(parse(&req[..10], 1024).unwrap().is_none());
        let (args, used) = words(b"incrby  seq 5\r\nrest");
        assert_eq!(args, vec![&b"incrby"[..], b"seq", b"5"]);
        assert_eq!(used, 15);
        assert!(words(b"*0\r\n").0.is_empty());
    }

    #[test]
    fn header_numbers_are_digits_only() {
        assert_eq!(decimal(b"123"), Some(123));
        assert_eq!(decimal(b""), None);
        assert_eq!(decimal(b"+1"), None);
        assert_eq!(decimal(b"1 "), None);
        assert_eq!(decimal(b"99999999999999999999999"), None);
    }

    #[test]
    fn refuses_oversized_requests_before_decoding() {
        assert!(parse(b"*99999999999\r\n", 1024).is_err());
        assert!(parse(b"*-5\r\n", 1024).is_err());
        let big = format!("*1\r\n${}\r\n{}", 5000, "x".repeat(2000));
        assert!(parse(big.as_bytes(), 1024).is_err());
        assert!(parse(big.as_bytes(), 1 << 20).unwrap().is_none());
        // A declared length is judged from its header alone, before its bytes come.
        let said = |r: Result<Option<Parsed>, ProtocolError>| r.unwrap_err().0;
        assert_eq!(
            said(parse(b"*2\r\n$4\r\nINCR\r\n$1025\r\n", 1024)),
            "invalid bulk length"
        );
        assert_eq!(
            said(parse(b"*1\r\n$999999999999999999999\r\n", 1024)),
            "invalid bulk length"
        );
        assert_eq!(said(parse(b"*1\r\n$-1\r\n", 1024)), "invalid bulk length");
        assert_eq!(
            said(parse(b"*1\r\n$123456789012345678901234", 1024)),
            "invalid bulk length"
        );
        assert!(parse(b"*2\r\n$4\r\nINCR\r\n$1000\r\n", 1024)
            .unwrap()
            .is_none());
        assert!(parse(b"*1\r\n$10", 1024).unwrap().is_none());
        // Each within the cap, together over it.
        let two = format!("*2\r\n$600\r\n{}\r\n$600\r\n", "x".repeat(600));
        let e = said(parse(two.as_bytes(), 1024));
        assert!(e.starts_with("request larger than 1024 bytes"), "{e}");
        assert!(parse(&[b'a'; 2000], 1024).is_err());
        assert!(parse(b"*1\r\n:5\r\n", 1024).is_err());
    }

    #[test]
    fn encodes_both_protocol_versions() {
        let mut out = BytesMut::new();
        Reply::Nil.encode(2, &mut out).unwrap();
        Reply::Nil.encode(3, &mut out).unwrap();
        Reply::Int(42).encode(3, &mut out).unwrap();
        Reply::err("ERR a\r\nb").encode(2, &mut out).unwrap();
        assert_eq!(&out[..], b"$-1\r\n_\r\n:42\r\n-ERR a  b\r\n");
        let mut out = BytesMut::new();
        Reply::Map(vec![("proto", Reply::Int(2))])
            .encode(2, &mut out)
            .unwrap();
        assert_eq!(&out[..], b"*2\r\n$5\r\nproto\r\n:2\r\n");
        let mut out = BytesMut::new();
        Reply::Map(vec![("proto", Reply::Int(3))])
            .encode(3, &mut out)
            .unwrap();
        assert_eq!(&out[..], b"%1\r\n$5\r\nproto\r\n:3\r\n");
    }
}
