//! The rows of an `INSERT … SELECT`'s query, as idgate's own reader of SELECTs kept them
//! (routed as the SELECT alone would be, capped by `merge_memory_limit`). Each value can be
//! written back as a literal that round-trips: numbers bare, dates and decimals as quoted text,
//! strings as hex in the character set they came in, binary values as hex.

use mysql_common::collations::{Collation, CollationId};
use mysql_common::constants::ColumnType;

use crate::exec::{Fetched, RelayCursor};
use crate::sql::BoundRow;
use crate::wire::errors::{self, SqlError};

/// The binary character set: values that are bytes, not text.
const BINARY: u16 = 63;

/// The source needed more memory than `merge_memory_limit` allows.
pub fn too_large(limit: u64) -> SqlError {
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

pub fn malformed(what: &str) -> SqlError {
    SqlError::new(
        errors::CR_SERVER_LOST,
        b"HY000",
        format!("idgate: the SELECT's answer was malformed ({what})"),
    )
}

/// What a column definition of the answer says about its values.
pub struct SourceColumn {
    pub ty: ColumnType,
    pub charset: u16,
    /// The character set name text values are written with (`_utf8mb4 X'…'`).
    pub charset_name: Option<String>,
}

/// The SELECT's answer, as idgate's own reader kept it.
pub struct Source {
    pub columns: Vec<SourceColumn>,
    pub rows: Vec<BoundRow>,
}

impl Source {
    /// The SELECT's answer; the character sets of its text columns are not named yet
    /// ([`Source::name_charsets`]).
    pub fn new(fetched: Fetched) -> Source {
        let columns = fetched
            .columns
            .iter()
            .map(|c| SourceColumn {
                ty: c.ty,
                charset: c.charset,
                charset_name: None,
            })
            .collect();
        Source {
            columns,
            rows: fetched.rows,
        }
    }

    /// Row `k`'s value of column `p` (`None`: NULL).
    pub fn value(&self, k: usize, p: usize) -> Option<&[u8]> {
        self.rows.get(k)?.get(p)?.as_deref()
    }

    /// Appends row `k`'s value of column `p` as a literal the backend reads back as the same
    /// value.
    pub fn push_literal(&self, out: &mut Vec<u8>, k: usize, p: usize) {
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

    /// Names the character set of every text column from the collation id in its definition,
    /// where idgate knows the id; returns the ids it does not know (to look up on a backend,
    /// then give to [`Source::name_found_charsets`]).
    pub fn name_charsets(&mut self) -> Vec<u16> {
        let mut unknown = Vec::new();
        for c in self.text_columns() {
            // Ids below 248 mean the same on MariaDB and MySQL.
            if c.charset < 248 {
                c.charset_name =
                    charset_name(Collation::resolve(CollationId::from(c.charset)).charset());
            }
            if c.charset_name.is_none() && !unknown.contains(&c.charset) {
                unknown.push(c.charset);
            }
        }
        unknown
    }

    /// Names the remaining text columns' character sets from `found` (collation id, character
    /// set name as a backend's information_schema gives them); a column still unnamed is an
    /// error for the client.
    pub fn name_found_charsets(&mut self, found: &[(u16, String)]) -> Result<(), SqlError> {
        for c in self.text_columns() {
            if c.charset_name.is_none() {
                c.charset_name = found
                    .iter()
                    .find(|f| f.0 == c.charset)
                    .and_then(|f| charset_name(&f.1));
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

/// Names the character set of every text column of `source` (from the collation id in its
/// definition; ids idgate does not know are looked up on `default`, the default backend).
pub async fn resolve_charsets<C: RelayCursor>(
    c: &mut C,
    default: &str,
    source: &mut Source,
) -> Result<Result<(), SqlError>, C::End> {
    let unknown = source.name_charsets();
    if unknown.is_empty() {
        return Ok(Ok(()));
    }
    let ids: Vec<String> = unknown.iter().map(u16::to_string).collect();
    let ids = ids.join(",");
    let i = match c.connection(default).await? {
        Ok(i) => i,
        Err(e) => return Ok(Err(e)),
    };
    let mut found: Vec<(u16, String)> = Vec::new();
    for table in ["COLLATION_CHARACTER_SET_APPLICABILITY", "COLLATIONS"] {
        let q = format!(
            "SELECT ID, CHARACTER_SET_NAME FROM information_schema.{table} WHERE ID IN ({ids})"
        );
        // A server without an ID column there answers with an error: try the other table.
        if let Ok(rows) = c.conn(i).query_rows(&q).await {
            for r in rows {
                let id = r.first().and_then(|v| v.as_deref());
                let name = r.get(1).and_then(|v| v.as_deref());
                let id = id.and_then(|v| std::str::from_utf8(v).ok()?.parse::<u16>().ok());
                let name = name.and_then(|v| std::str::from_utf8(v).ok());
                if let (Some(id), Some(name)) = (id, name) {
                    found.push((id, name.to_string()));
                }
            }
        }
        if c.conn(i).broken {
            return Ok(Err(malformed("the default backend was lost")));
        }
    }
    Ok(source.name_found_charsets(&found))
}
