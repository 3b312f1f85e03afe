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
    tables: DashMap<(String, String), Arc<TableMeta>>,
}

fn key(schema: &str, table: &str) -> (String, String) {
    (schema.to_ascii_lowercase(), table.to_ascii_lowercase())
}

/// A string literal for MySQL (backslashes and quotes escaped).
pub fn quote_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
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
        if let Some(m) = self.tables.get(&key(schema, table)) {
            return Ok(Some(m.clone()));
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
