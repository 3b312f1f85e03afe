//! Binlog row values brought to the form the copy reads rows in (`columns`): what the text
//! protocol would show with `character_set_results = binary` and `time_zone = '+00:00'`.
//! mysql_common decodes the images; what it cannot know is fixed here from the source's column
//! definitions: signedness (MariaDB logs no column metadata by default), TIMESTAMP as seconds,
//! ENUM as an index and SET as a bitmask.

use mysql_common::binlog::value::BinlogValue;
use mysql_common::value::Value;

use crate::migrate::columns::{Kind, TableShape};

/// One row image in the copy's form; an error names what could not be read.
pub fn row(
    shape: &TableShape,
    mut image: mysql_common::binlog::row::BinlogRow,
) -> Result<Vec<Option<Vec<u8>>>, String> {
    if image.len() != shape.columns.len() {
        return Err(format!(
            "the binlog has {} columns for the table and idgate read {} at the start: its \
             definition changed while it was being moved",
            image.len(),
            shape.columns.len()
        ));
    }
    let mut out = Vec::with_capacity(shape.columns.len());
    for (i, col) in shape.columns.iter().enumerate() {
        let v = image.take(i).ok_or_else(|| {
            format!(
                "the binlog row image lacks column `{}`: binlog_row_image must be FULL",
                col.name
            )
        })?;
        let v = match v {
            BinlogValue::Value(v) => v,
            _ => return Err(format!("column `{}`: a JSON binlog value", col.name)),
        };
        out.push(value(&col.kind, v).map_err(|e| format!("column `{}`: {e}", col.name))?);
    }
    Ok(out)
}

fn value(kind: &Kind, v: Value) -> Result<Option<Vec<u8>>, String> {
    let text = |s: String| Ok(Some(s.into_bytes()));
    match (kind, v) {
        (_, Value::NULL) => Ok(None),
        (Kind::Integer { bits, unsigned }, Value::Int(n)) => {
            let n = i128::from(n);
            if *unsigned && n < 0 {
                text((n + (1i128 << bits)).to_string())
            } else {
                text(n.to_string())
            }
        }
        (Kind::Timestamp, Value::Int(secs)) => text(utc(secs, 0)),
        (Kind::Timestamp, Value::Bytes(b)) => {
            let s = String::from_utf8_lossy(&b);
            let (secs, frac) = s.split_once('.').unwrap_or((&s, ""));
            let secs: i64 = secs.parse().map_err(|_| format!("timestamp `{s}`"))?;
            let micros: u32 = if frac.is_empty() {
                0
            } else {
                frac.parse().map_err(|_| format!("timestamp `{s}`"))?
            };
            text(utc(secs, micros))
        }
        (
            Kind::Members {
                set: false,
                members,
                ..
            },
            Value::Int(i),
        ) => Ok(Some(match i {
            0 => Vec::new(),
            i => members
                .get(usize::try_from(i - 1).map_err(|_| format!("enum index {i}"))?)
                .cloned()
                .ok_or_else(|| format!("enum index {i} beyond the column's members"))?,
        })),
        (
            Kind::Members {
                set: true, members, ..
            },
            Value::Bytes(mask),
        ) => {
            let mut names: Vec<&[u8]> = Vec::new();
            for (k, m) in members.iter().enumerate() {
                if mask
                    .get(k / 8)
                    .is_some_and(|byte| byte & (1 << (k % 8)) != 0)
                {
                    names.push(m);
                }
            }
            Ok(Some(names.join(&b","[..])))
        }
        (_, Value::Int(n)) => text(n.to_string()),
        (_, Value::UInt(n)) => text(n.to_string()),
        (_, Value::Float(f)) => text(f.to_string()),
        (_, Value::Double(f)) => text(f.to_string()),
        (_, Value::Bytes(b)) => Ok(Some(b)),
        (_, Value::Date(y, mo, d, h, mi, s, us)) => {
            let mut t = format!("{y:04}-{mo:02}-{d:02}");
            if (h, mi, s, us) != (0, 0, 0, 0) {
                t.push_str(&format!(" {h:02}:{mi:02}:{s:02}"));
            }
            if us != 0 {
                t.push_str(&format!(".{us:06}"));
            }
            text(t)
        }
        (_, Value::Time(neg, days, h, mi, s, us)) => {
            let hours = days * 24 + u32::from(h);
            let sign = if neg { "-" } else { "" };
            let mut t = format!("{sign}{hours:02}:{mi:02}:{s:02}");
            if us != 0 {
                t.push_str(&format!(".{us:06}"));
            }
            text(t)
        }
    }
}

/// Seconds since the epoch as a UTC `YYYY-MM-DD hh:mm:ss[.ffffff]`; 0 is MariaDB's zero
/// timestamp.
fn utc(secs: i64, micros: u32) -> String {
    if secs == 0 && micros == 0 {
        return "0000-00-00 00:00:00".into();
    }
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = crate::exec::result_set::civil_from_days(days);
    let mut t = format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    if micros != 0 {
        t.push_str(&format!(".{micros:06}"));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixes_what_the_binlog_cannot_say() {
        let u8k = Kind::Integer {
            bits: 8,
            unsigned: true,
        };
        assert_eq!(value(&u8k, Value::Int(-56)).unwrap(), Some(b"200".to_vec()));
        let u64k = Kind::Integer {
            bits: 64,
            unsigned: true,
        };
        assert_eq!(
            value(&u64k, Value::Int(-1)).unwrap(),
            Some(b"18446744073709551615".to_vec())
        );
        assert_eq!(
            value(&Kind::Timestamp, Value::Bytes(b"1700000000.5".to_vec())).unwrap(),
            Some(b"2023-11-14 22:13:20.000005".to_vec())
        );
        assert_eq!(
            value(&Kind::Timestamp, Value::Bytes(b"0".to_vec())).unwrap(),
            Some(b"0000-00-00 00:00:00".to_vec())
        );
        let members = |set| Kind::Members {
            set,
            members: vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()],
            charset: "utf8mb4".into(),
            collation: "utf8mb4_bin".into(),
        };
        assert_eq!(
            value(&members(false), Value::Int(2)).unwrap(),
            Some(b"b".to_vec())
        );
        assert!(value(&members(false), Value::Int(9)).is_err());
        assert_eq!(
            value(&members(true), Value::Bytes(vec![0b101])).unwrap(),
            Some(b"a,c".to_vec())
        );
        assert_eq!(
            value(&Kind::Plain, Value::Date(2024, 2, 29, 0, 0, 0, 0)).unwrap(),
            Some(b"2024-02-29".to_vec())
        );
        assert_eq!(
            value(&Kind::Plain, Value::Time(true, 1, 2, 3, 4, 0)).unwrap(),
            Some(b"-26:03:04".to_vec())
        );
        assert_eq!(value(&Kind::Bytes, Value::NULL).unwrap(), None);
    }

    #[test]
    fn utc_covers_leap_years_and_before_1970() {
        assert_eq!(utc(951_782_400, 0), "2000-02-29 00:00:00");
        assert_eq!(utc(-1, 0), "1969-12-31 23:59:59");
    }
}
