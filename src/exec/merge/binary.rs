//! Merged rows for a prepared statement: the text values the shards computed, written as the
//! binary-protocol row MariaDB would send for the same column types.

use mysql_common::constants::{ColumnFlags, ColumnType};

use super::value::ColumnInfo;
use crate::wire::packets;

fn int(text: &str) -> Option<i128> {
    text.parse().ok()
}

/// `YYYY-MM-DD[ hh:mm:ss[.ffffff]]` as MariaDB's binary date: 0, 4, 7 or 11 bytes after the length.
fn datetime(text: &str, out: &mut Vec<u8>) -> Option<()> {
    let (date, time) = text.split_once(' ').unwrap_or((text, "00:00:00"));
    let mut d = date.split('-');
    let (y, m, day): (u16, u8, u8) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.split(':');
    let (h, mi, s): (u8, u8, u8) = (
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
    );
    let micros: u32 = format!("{frac:0<6}").get(..6)?.parse().ok()?;
    let len = if micros != 0 {
        11
    } else if h != 0 || mi != 0 || s != 0 {
        7
    } else if y != 0 || m != 0 || day != 0 {
        4
    } else {
        0
    };
    out.push(len);
    if len >= 4 {
        out.extend_from_slice(&y.to_le_bytes());
        out.extend_from_slice(&[m, day]);
    }
    if len >= 7 {
        out.extend_from_slice(&[h, mi, s]);
    }
    if len == 11 {
        out.extend_from_slice(&micros.to_le_bytes());
    }
    Some(())
}

/// `[-]h:mm:ss[.ffffff]` as MariaDB's binary time: 0, 8 or 12 bytes after the length.
fn time(text: &str, out: &mut Vec<u8>) -> Option<()> {
    let (neg, t) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut p = hms.split(':');
    let (h, mi, s): (u32, u8, u8) = (
        p.next()?.parse().ok()?,
        p.next()?.parse().ok()?,
        p.next()?.parse().ok()?,
    );
    let micros: u32 = format!("{frac:0<6}").get(..6)?.parse().ok()?;
    let len = if micros != 0 {
        12
    } else if h != 0 || mi != 0 || s != 0 {
        8
    } else {
        0
    };
    out.push(len);
    if len >= 8 {
        out.push(u8::from(neg));
        out.extend_from_slice(&(h / 24).to_le_bytes());
        out.extend_from_slice(&[(h % 24) as u8, mi, s]);
    }
    if len == 12 {
        out.extend_from_slice(&micros.to_le_bytes());
    }
    Some(())
}

fn value(c: &ColumnInfo, v: &[u8], out: &mut Vec<u8>) -> Option<()> {
    use ColumnType::*;
    let text = || std::str::from_utf8(v).ok();
    let unsigned = c.flags.contains(ColumnFlags::UNSIGNED_FLAG);
    match c.ty {
        MYSQL_TYPE_TINY => out.push(if unsigned {
            u8::try_from(int(text()?)?).ok()?
        } else {
            i8::try_from(int(text()?)?).ok()? as u8
        }),
        MYSQL_TYPE_SHORT | MYSQL_TYPE_YEAR => {
            let n = int(text()?)?;
            let b = if unsigned {
                u16::try_from(n).ok()?.to_le_bytes()
            } else {
                i16::try_from(n).ok()?.to_le_bytes()
            };
            out.extend_from_slice(&b);
        }
        MYSQL_TYPE_LONG | MYSQL_TYPE_INT24 => {
            let n = int(text()?)?;
            let b = if unsigned {
                u32::try_from(n).ok()?.to_le_bytes()
            } else {
                i32::try_from(n).ok()?.to_le_bytes()
            };
            out.extend_from_slice(&b);
        }
        MYSQL_TYPE_LONGLONG => {
            let n = int(text()?)?;
            let b = if unsigned {
                u64::try_from(n).ok()?.to_le_bytes()
            } else {
                i64::try_from(n).ok()?.to_le_bytes()
            };
            out.extend_from_slice(&b);
        }
        MYSQL_TYPE_FLOAT => out.extend_from_slice(&text()?.parse::<f32>().ok()?.to_le_bytes()),
        MYSQL_TYPE_DOUBLE => out.extend_from_slice(&text()?.parse::<f64>().ok()?.to_le_bytes()),
        MYSQL_TYPE_DATE
        | MYSQL_TYPE_NEWDATE
        | MYSQL_TYPE_DATETIME
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIMESTAMP
        | MYSQL_TYPE_TIMESTAMP2 => datetime(text()?, out)?,
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => time(text()?, out)?,
        _ => packets::put_lenenc_str(out, v),
    }
    Some(())
}

/// The binary row of `values` (one per column of `infos`).
pub fn binary_row(values: &[Option<Vec<u8>>], infos: &[ColumnInfo]) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8];
    let bitmap_at = out.len();
    out.resize(bitmap_at + (values.len() + 2).div_ceil(8), 0);
    for (i, (v, c)) in values.iter().zip(infos).enumerate() {
        match v {
            None => {
                let bit = i + 2;
                out[bitmap_at + bit / 8] |= 1 << (bit % 8);
            }
            Some(v) => value(c, v, &mut out).ok_or_else(|| {
                format!(
                    "the value `{}` of a {:?} column in the binary protocol",
                    String::from_utf8_lossy(v),
                    c.ty
                )
            })?,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(ty: ColumnType) -> ColumnInfo {
        ColumnInfo {
            ty,
            charset: 63,
            flags: ColumnFlags::empty(),
            decimals: 0,
        }
    }

    #[test]
    fn rows_encode_as_mariadb_sends_them() {
        let cols = [
            info(ColumnType::MYSQL_TYPE_LONG),
            info(ColumnType::MYSQL_TYPE_DATETIME),
            info(ColumnType::MYSQL_TYPE_TIME),
        ];
        let row = binary_row(
            &[Some(b"-2".to_vec()), None, Some(b"-25:00:01.5".to_vec())],
            &cols,
        )
        .unwrap();
        assert_eq!(
            row,
            vec![
                0,
                0b0000_1000,
                0xfe,
                0xff,
                0xff,
                0xff,
                12,
                1,
                1,
                0,
                0,
                0,
                1,
                0,
                1,
                0x20,
                0xa1,
                0x07,
                0
            ]
        );
        let mut d = Vec::new();
        datetime("2024-01-02", &mut d).unwrap();
        assert_eq!(d, vec![4, 0xe8, 0x07, 1, 2]);
    }
}
