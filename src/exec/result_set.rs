//! Result sets idgate composes itself (admin statements): column definitions with MariaDB's types
//! for text, unsigned integers and datetimes, and text-protocol rows. Owned here, below `admin`
//! and `migrate`, so that both answer statements without one importing the other.

use mysql_common::constants::{ColumnFlags, ColumnType};

use crate::wire::errors::SqlError;
use crate::wire::packets;

/// How an admin statement is answered.
#[derive(Debug)]
pub enum Answer {
    Rows(ResultSet),
    /// An OK packet with this info text.
    Ok(String),
    Err(SqlError),
}

/// utf8mb3_general_ci, as MariaDB's own SHOW statements answer.
const UTF8: u16 = 33;
const BINARY: u16 = 63;

#[derive(Debug, Clone, Copy)]
pub enum Col {
    /// VARCHAR(`n` characters).
    Text(u32),
    /// BIGINT UNSIGNED.
    UInt,
    /// DATETIME, as `YYYY-MM-DD HH:MM:SS` (UTC).
    DateTime,
}

/// Column definitions and rows, ready for the session to send.
#[derive(Debug, Default)]
pub struct ResultSet {
    pub columns: Vec<Vec<u8>>,
    pub rows: Vec<Vec<u8>>,
}

impl ResultSet {
    pub fn new(columns: &[(&str, Col)]) -> ResultSet {
        let columns = columns
            .iter()
            .map(|(name, kind)| {
                let mut def = Vec::new();
                let (charset, len, ty, flags) = match kind {
                    Col::Text(n) => (
                        UTF8,
                        n * 3,
                        ColumnType::MYSQL_TYPE_VAR_STRING,
                        ColumnFlags::empty(),
                    ),
                    Col::UInt => (
                        BINARY,
                        20,
                        ColumnType::MYSQL_TYPE_LONGLONG,
                        ColumnFlags::UNSIGNED_FLAG
                            | ColumnFlags::NUM_FLAG
                            | ColumnFlags::BINARY_FLAG,
                    ),
                    Col::DateTime => (
                        BINARY,
                        19,
                        ColumnType::MYSQL_TYPE_DATETIME,
                        ColumnFlags::BINARY_FLAG,
                    ),
                };
                packets::column_def(&mut def, name.as_bytes(), charset, len, ty, flags, 0);
                def
            })
            .collect();
        ResultSet {
            columns,
            rows: Vec::new(),
        }
    }

    /// The rows in the binary protocol (a prepared statement's answer), by the columns' types.
    pub fn binary_rows(&self) -> Result<Vec<Vec<u8>>, String> {
        let infos = self
            .columns
            .iter()
            .map(|c| super::merge::column_info(c).ok_or("a malformed column definition"))
            .collect::<Result<Vec<_>, _>>()?;
        self.rows
            .iter()
            .map(|r| {
                let values = packets::text_row(r).ok_or("a malformed row")?;
                super::merge::binary_row(&values, &infos)
            })
            .collect()
    }

    /// One row; `None` is SQL NULL.
    pub fn row(&mut self, values: &[Option<String>]) {
        let mut r = Vec::new();
        for v in values {
            match v {
                Some(v) => packets::put_lenenc_str(&mut r, v.as_bytes()),
                None => r.push(0xfb),
            }
        }
        self.rows.push(r);
    }
}

/// A text value.
pub fn text(s: impl Into<String>) -> Option<String> {
    Some(s.into())
}

/// A number value.
pub fn num(n: impl std::fmt::Display) -> Option<String> {
    Some(n.to_string())
}

/// `Yes` / `No`, as MariaDB's SHOW statements print flags.
pub fn yes_no(b: bool) -> Option<String> {
    Some(if b { "Yes" } else { "No" }.into())
}

/// `t` as a DATETIME value in UTC.
pub fn datetime(t: std::time::SystemTime) -> Option<String> {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    Some(format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_are_utc_calendar_dates() {
        let at = |s: u64| datetime(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0).as_deref(), Some("1970-01-01 00:00:00"));
        assert_eq!(at(951_782_400).as_deref(), Some("2000-02-29 00:00:00"));
        assert_eq!(at(1_767_225_599).as_deref(), Some("2025-12-31 23:59:59"));
    }

    #[test]
    fn rows_encode_null_and_text() {
        let mut rs = ResultSet::new(&[("a", Col::Text(10)), ("b", Col::UInt)]);
        rs.row(&[text("x"), None]);
        assert_eq!(rs.rows[0], [1, b'x', 0xfb]);
        assert_eq!(rs.columns.len(), 2);
    }

    #[test]
    fn rows_in_the_binary_protocol() {
        let mut rs = ResultSet::new(&[("a", Col::Text(10)), ("b", Col::UInt), ("c", Col::UInt)]);
        rs.row(&[text("x"), None, num(258)]);
        // Header, NULL bitmap (column 1, offset by 2: bit 3), the text, then 258 as 8 bytes.
        let want = [0, 0b1000, 1, b'x', 2, 1, 0, 0, 0, 0, 0, 0];
        assert_eq!(rs.binary_rows().unwrap(), vec![want.to_vec()]);
    }
}
