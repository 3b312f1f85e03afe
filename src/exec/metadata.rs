//! Column order and types of configured tables, read from a backend's information_schema and
//! cached; needed to find the id column of an INSERT without a column list. DDL on a table drops
//! its entry.

use std::sync::Arc;

use dashmap::DashMap;

use super::backend::{BackendConn, BackendError};

#[derive(Debug)]
pub struct TableMeta {
    /// Column names in table order.
    pub columns: Vec<String>,
    /// COLUMN_TYPE of each column (e.g. `bigint(20) unsigned`, `binary(16)`), lowercase.
    pub types: Vec<String>,
}

impl TableMeta {
    pub fn position(&self, column: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(column))
    }

    pub fn column_type(&self, column: &str) -> Option<&str> {
        self.position(column).map(|i| self.types[i].as_str())
    }
}

#[derive(Default)]
pub struct MetadataCache {
    /// Keyed by [`key`].
    tables: DashMap<String, Arc<TableMeta>>,
}

/// `schema` NUL `table`, lower case (NUL is in no identifier).
fn key(schema: &str, table: &str) -> String {
    let mut k = String::with_capacity(schema.len() + 1 + table.len());
    k.push_str(schema);
    k.push('\0');
    k.push_str(table);
    k.make_ascii_lowercase();
    k
}

/// Calls `f` with [`key`], built on the stack when short: a lookup on every INSERT then
/// allocates nothing.
fn with_key<T>(schema: &str, table: &str, f: impl FnOnce(&str) -> T) -> T {
    const MAX: usize = 192;
    let len = schema.len() + 1 + table.len();
    if len <= MAX {
        let mut buf = [0u8; MAX];
        buf[..schema.len()].copy_from_slice(schema.as_bytes());
        buf[schema.len() + 1..len].copy_from_slice(table.as_bytes());
        buf[..len].make_ascii_lowercase();
        // Lowering ASCII letters keeps UTF-8 valid.
        if let Ok(k) = std::str::from_utf8(&buf[..len]) {
            return f(k);
        }
    }
    f(&key(schema, table))
}

/// A string literal for MySQL (backslashes escaped, quotes doubled).
pub fn quote_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            // Doubled, not backslashed: read the same whatever the session's sql_mode.
            '\'' => out.push_str("''"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

impl MetadataCache {
    /// The table's columns, from the cache or else from `be`. `None` if the table does not exist.
    pub async fn get_or_load(
        &self,
        be: &mut BackendConn,
        schema: &str,
        table: &str,
    ) -> Result<Option<Arc<TableMeta>>, BackendError> {
        if let Some(m) = with_key(schema, table, |k| self.tables.get(k).map(|m| m.clone())) {
            return Ok(Some(m));
        }
        let sql = format!(
            "SELECT COLUMN_NAME, LOWER(COLUMN_TYPE) FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION",
            quote_literal(schema),
            quote_literal(table)
        );
        let rows = be.query_rows(&sql).await?;
        if rows.is_empty() {
            return Ok(None);
        }
        let text = |v: &Option<Vec<u8>>| {
            String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned()
        };
        let cell = |r: &Vec<Option<Vec<u8>>>, i: usize| r.get(i).map(text).unwrap_or_default();
        let meta = Arc::new(TableMeta {
            columns: rows.iter().map(|r| cell(r, 0)).collect(),
            types: rows.iter().map(|r| cell(r, 1)).collect(),
        });
        self.tables.insert(key(schema, table), meta.clone());
        Ok(Some(meta))
    }

    /// Forgets every cached table (after DDL on a configured table).
    pub fn clear(&self) {
        self.tables.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_keys_equal_heap_keys() {
        let long = "x".repeat(300);
        for (s, t) in [("Db", "T1"), ("", ""), ("é", "ÉtÉ"), (long.as_str(), "t")] {
            assert_eq!(with_key(s, t, str::to_string), key(s, t));
        }
        assert_eq!(key("My", "Tbl"), "my\0tbl");
    }
}
