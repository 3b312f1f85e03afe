//! Comparing values of one column the way MariaDB compares them: from the column definition a
//! shard sent, each value becomes a key part that orders as MariaDB orders (NULL first), with
//! strings ordered by the collation weights the shard computed (`WEIGHT_STRING`).

use std::cmp::Ordering;

use mysql_common::constants::{ColumnFlags, ColumnType};

use super::number::parse_scaled;
use crate::wire::packets;

/// What a column definition says about its values.
#[derive(Debug, Clone, Copy)]
pub struct ColumnInfo {
    pub ty: ColumnType,
    pub charset: u16,
    pub flags: ColumnFlags,
    pub decimals: u8,
}

/// The fixed fields of a column definition packet.
pub fn column_info(def: &[u8]) -> Option<ColumnInfo> {
    let f = packets::column_fixed_fields(def)?;
    Some(ColumnInfo {
        ty: ColumnType::try_from(f[6]).ok()?,
        charset: u16::from_le_bytes([f[0], f[1]]),
        flags: ColumnFlags::from_bits_truncate(u16::from_le_bytes([f[7], f[8]])),
        decimals: f[9],
    })
}

/// How values of a column compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Integers and decimals: exactly, by value.
    Exact,
    Float,
    /// DATE, DATETIME, TIMESTAMP: their text, one width per column, orders as the values.
    DateTime,
    /// TIME, which may be negative or exceed 99 hours.
    Time,
    /// Binary strings and BIT: byte by byte.
    Bytes,
    /// Strings with a collation: by weight; `pad`: trailing spaces do not count.
    Collated {
        pad: bool,
    },
}

/// The comparison for a column, or what makes it impossible.
pub fn kind_of(c: &ColumnInfo) -> Result<Kind, String> {
    use ColumnType::*;
    if c.flags.contains(ColumnFlags::ENUM_FLAG) || c.flags.contains(ColumnFlags::SET_FLAG) {
        return Err("an ENUM or SET column (ordered by its definition's member order)".into());
    }
    Ok(match c.ty {
        MYSQL_TYPE_TINY
        | MYSQL_TYPE_SHORT
        | MYSQL_TYPE_LONG
        | MYSQL_TYPE_INT24
        | MYSQL_TYPE_LONGLONG
        | MYSQL_TYPE_YEAR
        | MYSQL_TYPE_DECIMAL
        | MYSQL_TYPE_NEWDECIMAL => Kind::Exact,
        MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE => Kind::Float,
        MYSQL_TYPE_DATE
        | MYSQL_TYPE_NEWDATE
        | MYSQL_TYPE_DATETIME
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIMESTAMP
        | MYSQL_TYPE_TIMESTAMP2 => Kind::DateTime,
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => Kind::Time,
        MYSQL_TYPE_BIT | MYSQL_TYPE_NULL => Kind::Bytes,
        MYSQL_TYPE_VARCHAR
        | MYSQL_TYPE_VAR_STRING
        | MYSQL_TYPE_STRING
        | MYSQL_TYPE_TINY_BLOB
        | MYSQL_TYPE_MEDIUM_BLOB
        | MYSQL_TYPE_LONG_BLOB
        | MYSQL_TYPE_BLOB
        | MYSQL_TYPE_JSON => {
            match c.charset {
                63 => Kind::Bytes,
                // MariaDB numbers each NO PAD collation 1024 above its PAD SPACE sibling.
                0..=1023 => Kind::Collated { pad: true },
                1024..=2047 => Kind::Collated { pad: false },
                other => return Err(format!("a string column with collation id {other}")),
            }
        }
        other => return Err(format!("a {other:?} column")),
    })
}

/// One value as a sort/group key. Within a column every key has the same variant (or Null).
#[derive(Debug, Clone)]
pub enum KeyPart {
    Null,
    /// Sign, integer digits without leading zeros, fraction digits without trailing zeros.
    Num(bool, Vec<u8>, Vec<u8>),
    Float(f64),
    Bytes(Vec<u8>),
    /// Collation weights without trailing space weights, and the weight of one space.
    Padded(Vec<u8>, Vec<u8>),
    Micros(i128),
}

fn num_key(text: &[u8]) -> Option<KeyPart> {
    let (neg, digits) = match text.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, text),
    };
    let (int, frac) = match digits.iter().position(|b| *b == b'.') {
        Some(p) => (&digits[..p], &digits[p + 1..]),
        None => (digits, &digits[digits.len()..]),
    };
    if !int.iter().chain(frac).all(u8::is_ascii_digit) || int.is_empty() && frac.is_empty() {
        return None;
    }
    let int: Vec<u8> = int.iter().copied().skip_while(|b| *b == b'0').collect();
    let mut frac = frac.to_vec();
    while frac.last() == Some(&b'0') {
        frac.pop();
    }
    let zero = int.is_empty() && frac.is_empty();
    Some(KeyPart::Num(neg && !zero, int, frac))
}

/// `[-]h:mm:ss[.ffffff]` as microseconds.
fn time_micros(text: &[u8]) -> Option<i128> {
    let s = std::str::from_utf8(text).ok()?;
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (hms, frac) = s.split_once('.').unwrap_or((s, ""));
    let mut parts = hms.split(':');
    let h: i128 = parts.next()?.parse().ok()?;
    let m: i128 = parts.next()?.parse().ok()?;
    let sec: i128 = parts.next()?.parse().ok()?;
    let mut micros: i128 = 0;
    for i in 0..6 {
        let d = frac.as_bytes().get(i).copied().unwrap_or(b'0');
        if !d.is_ascii_digit() {
            return None;
        }
        micros = micros * 10 + i128::from(d - b'0');
    }
    let v = ((h * 60 + m) * 60 + sec) * 1_000_000 + micros;
    Some(if neg { -v } else { v })
}

fn strip_spaces(mut w: &[u8], space: &[u8]) -> Vec<u8> {
    if !space.is_empty() {
        while w.ends_with(space) {
            w = &w[..w.len() - space.len()];
        }
    }
    w.to_vec()
}

/// For a string: the WEIGHT_STRING of the value and of one space in its collation.
pub type Weights<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// The key of one value.
pub fn key_part(
    kind: Kind,
    value: Option<&[u8]>,
    weight: Option<Weights<'_>>,
) -> Result<KeyPart, String> {
    let Some(v) = value else {
        return Ok(KeyPart::Null);
    };
    let bad = || {
        format!(
            "a shard sent `{}` for a {kind:?} value",
            String::from_utf8_lossy(v)
        )
    };
    Ok(match kind {
        Kind::Exact => num_key(v).ok_or_else(bad)?,
        Kind::Float => {
            let f: f64 = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(bad)?;
            KeyPart::Float(if f == 0.0 { 0.0 } else { f })
        }
        Kind::DateTime | Kind::Bytes => KeyPart::Bytes(v.to_vec()),
        Kind::Time => KeyPart::Micros(time_micros(v).ok_or_else(bad)?),
        Kind::Collated { pad } => {
            let Some((Some(w), space)) = weight else {
                return Err("a string value without its collation weight".into());
            };
            let space = if pad { space.unwrap_or_default() } else { &[] };
            KeyPart::Padded(strip_spaces(w, space), space.to_vec())
        }
    })
}

fn rank(k: &KeyPart) -> u8 {
    match k {
        KeyPart::Null => 0,
        KeyPart::Num(..) => 1,
        KeyPart::Float(_) => 2,
        KeyPart::Bytes(_) => 3,
        KeyPart::Padded(..) => 4,
        KeyPart::Micros(_) => 5,
    }
}

fn num_cmp(a: (&bool, &Vec<u8>, &Vec<u8>), b: (&bool, &Vec<u8>, &Vec<u8>)) -> Ordering {
    let magnitude =
        a.1.len()
            .cmp(&b.1.len())
            .then_with(|| a.1.cmp(b.1))
            .then_with(|| a.2.cmp(b.2));
    match (a.0, b.0) {
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

/// Weights compared as if the shorter were padded with spaces.
fn padded_cmp(a: &[u8], b: &[u8], space: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let head = a[..n].cmp(&b[..n]);
    if head != Ordering::Equal || a.len() == b.len() {
        return head;
    }
    let (tail, flip) = if a.len() > b.len() {
        (&a[n..], false)
    } else {
        (&b[n..], true)
    };
    let padding: Vec<u8> = space.iter().copied().cycle().take(tail.len()).collect();
    let ord = tail.cmp(&padding[..]);
    if flip {
        ord.reverse()
    } else {
        ord
    }
}

/// What a heap block of `len` bytes costs: the allocator's header, rounded to its 16-byte
/// granules, 32 at least; nothing for an empty vector.
pub fn heap_block(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        (len + 16).div_ceil(16).max(2) * 16
    }
}

impl KeyPart {
    /// The heap bytes this key part holds beyond itself.
    pub fn heap_bytes(&self) -> usize {
        match self {
            KeyPart::Num(_, a, b) | KeyPart::Padded(a, b) => {
                heap_block(a.len()) + heap_block(b.len())
            }
            KeyPart::Bytes(b) => heap_block(b.len()),
            KeyPart::Null | KeyPart::Float(_) | KeyPart::Micros(_) => 0,
        }
    }

    /// The heap bytes a key of these parts holds: its vector and each part's own.
    pub fn key_bytes(parts: &[KeyPart]) -> usize {
        heap_block(std::mem::size_of_val(parts))
            + parts.iter().map(KeyPart::heap_bytes).sum::<usize>()
    }
}

impl Ord for KeyPart {
    fn cmp(&self, other: &Self) -> Ordering {
        use KeyPart::*;
        match (self, other) {
            (Num(a, b, c), Num(x, y, z)) => num_cmp((a, b, c), (x, y, z)),
            (Float(a), Float(b)) => a.total_cmp(b),
            (Bytes(a), Bytes(b)) => a.cmp(b),
            (Padded(a, s), Padded(b, _)) => padded_cmp(a, b, s),
            (Micros(a), Micros(b)) => a.cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl PartialOrd for KeyPart {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for KeyPart {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for KeyPart {}

/// An exact value's text as a scaled integer at `scale` (decimals of its column).
pub fn exact(text: &[u8], scale: u32) -> Result<i128, String> {
    parse_scaled(text, scale).ok_or_else(|| {
        format!(
            "the value {} exceeds the 38 digits idgate adds exactly",
            String::from_utf8_lossy(text)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(kind: Kind, v: &str) -> KeyPart {
        key_part(kind, Some(v.as_bytes()), None).unwrap()
    }

    #[test]
    fn held_memory_counts_heap_blocks_with_their_headers() {
        assert_eq!(heap_block(0), 0);
        assert_eq!(heap_block(1), 32);
        assert_eq!(heap_block(16), 32);
        assert_eq!(heap_block(17), 48);
        // 123.5: the digits on each side are blocks of their own, the part itself sits in the
        // key's vector.
        let key = [k(Kind::Exact, "123.5")];
        assert_eq!(
            KeyPart::key_bytes(&key),
            heap_block(std::mem::size_of::<KeyPart>()) + 32 + 32
        );
        assert_eq!(KeyPart::key_bytes(&[]), 0);
    }

    #[test]
    fn numbers_and_times_compare_by_value() {
        assert!(k(Kind::Exact, "-10.5") < k(Kind::Exact, "-2"));
        assert!(k(Kind::Exact, "9.99") < k(Kind::Exact, "10"));
        assert_eq!(k(Kind::Exact, "1.50"), k(Kind::Exact, "01.5"));
        assert_eq!(k(Kind::Exact, "-0.00"), k(Kind::Exact, "0"));
        assert!(KeyPart::Null < k(Kind::Exact, "-99"));
        assert!(k(Kind::Float, "-1e20") < k(Kind::Float, "3.5"));
        assert!(k(Kind::Time, "-100:00:00") < k(Kind::Time, "-01:00:00"));
        assert!(k(Kind::Time, "99:00:00") < k(Kind::Time, "100:00:00.5"));
    }

    #[test]
    fn pad_space_weights_ignore_trailing_spaces() {
        let w = |v: &[u8]| {
            key_part(
                Kind::Collated { pad: true },
                Some(b"x"),
                Some((Some(v), Some(b"\x00\x20"))),
            )
            .unwrap()
        };
        assert_eq!(w(b"\x00\x41\x00\x20\x00\x20"), w(b"\x00\x41"));
        assert!(
            w(b"\x00\x41\x00\x09") < w(b"\x00\x41"),
            "a tab sorts below the padding"
        );
        assert!(w(b"\x00\x41") < w(b"\x00\x41\x00\x42"));
    }
}
