//! Unique keys of sharded tables that the shards cannot check alone. Each shard checks a unique
//! key for the rows it holds; a key that does not contain what picks the shard holds across
//! shards only if something else checks it. With `unique: global` that is a lookup table per
//! key on one backend (`lookup_table`), written in the same transaction as the row, as Vitess's
//! consistent lookup vindexes do. A lookup entry whose row is gone is stale and harmless: a new
//! row meeting it checks the shards for a real holder before it counts as a duplicate.

pub mod after_ddl;
pub mod lookup_table;
pub mod row_values;
pub mod start;
pub mod survey;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use dashmap::DashMap;

/// LOAD DATA streams rows idgate does not claim one by one yet.
pub fn load_data_refusal(table: &str) -> crate::wire::errors::SqlError {
    crate::wire::errors::SqlError::new(
        crate::sql::ER_NOT_SUPPORTED_YET,
        b"42000",
        format!(
            "idgate: LOAD DATA into `{table}`, whose unique keys are held across shards through \
             lookups (unique: global), is not supported yet; load the file into a table \
             without global keys and copy the rows with INSERT … SELECT"
        ),
    )
}

/// One column of a unique key, as the shards define it (the lookup table copies it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyColumn {
    pub name: String,
    /// `COLUMN_TYPE` (`varchar(40)`, `int(11) unsigned`, `enum('a','b')`).
    pub column_type: String,
    pub charset: Option<String>,
    pub collation: Option<String>,
    /// The key's prefix length on this column (`name(10)`).
    pub sub_part: Option<u32>,
    /// `COLUMN_DEFAULT` as MariaDB reports it (`NULL`, `'text'`, `5`, `current_timestamp()`);
    /// `None`: no default.
    pub default: Option<String>,
}

impl KeyColumn {
    /// An integer column: `= 5` matches one value of it.
    pub fn is_integer(&self) -> bool {
        let t = self.column_type.to_ascii_lowercase();
        ["tinyint", "smallint", "mediumint", "int", "bigint"]
            .iter()
            .any(|n| {
                t.strip_prefix(n)
                    .is_some_and(|r| r.is_empty() || r.starts_with(['(', ' ']))
            })
    }

    /// A character column: `= 'text'` matches one value of it, compared by its collation (an
    /// integer would compare as a number, matching '5' and '05' alike).
    pub fn is_text(&self) -> bool {
        self.charset.is_some()
    }
}

/// A unique key held across the shards through a lookup table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalKey {
    pub schema: String,
    pub table: String,
    /// The key's name on the shards (`PRIMARY` for the primary key); the lookup's key has the
    /// same name, so a duplicate there is reported as the shard would report it.
    pub name: String,
    pub columns: Vec<KeyColumn>,
    /// The backend holding the lookup table.
    pub backend: String,
    /// The lookup table's qualified, quoted name.
    pub lookup: String,
}

/// The global keys of every table that has some, by (schema, table).
#[derive(Debug, Default)]
pub struct Lookups {
    by_table: DashMap<(String, String), Arc<[GlobalKey]>>,
    /// Tables whose lookups could not be made after CREATE TABLE: their INSERTs are refused
    /// with the reason until idgate restarts and makes them.
    broken: DashMap<(String, String), String>,
    /// Grows with every change, so plans made before it are made again.
    generation: AtomicU64,
    /// Entries in `by_table` and `broken` together: every INSERT asks whether there are any,
    /// and a map's own emptiness check visits each of its shards.
    entries: AtomicUsize,
}

impl Lookups {
    /// The global keys of the table an INSERT writes (`db`: the session's database), if it has
    /// any; an error when its lookups could not be made.
    pub fn keys_for_insert(
        &self,
        db: Option<&[u8]>,
        a: &crate::sql::InsertAnalysis,
    ) -> Result<Option<Arc<[GlobalKey]>>, crate::wire::errors::SqlError> {
        if self.is_empty() {
            return Ok(None);
        }
        let schema = match (&a.table.schema, db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => return Ok(None),
        };
        if let Some(why) = self.broken(&schema, &a.table.name) {
            return Err(crate::wire::errors::SqlError::new(
                crate::wire::errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!(
                    "idgate: the unique key lookups of `{}` could not be made ({why}); restart \
                     idgate to make them before writing to it",
                    a.table.name
                ),
            ));
        }
        Ok(self.keys_of(&schema, &a.table.name))
    }

    pub fn keys_of(&self, schema: &str, table: &str) -> Option<Arc<[GlobalKey]>> {
        self.by_table
            .get(&(schema.to_string(), table.to_string()))
            .map(|k| k.clone())
            .filter(|k| !k.is_empty())
    }

    pub fn set(&self, schema: &str, table: &str, keys: Vec<GlobalKey>) {
        self.broken.remove(&(schema.to_string(), table.to_string()));
        self.by_table
            .insert((schema.to_string(), table.to_string()), keys.into());
        self.changed();
    }

    /// Counts the entries again after a change and makes plans be made again.
    fn changed(&self) {
        self.entries
            .store(self.by_table.len() + self.broken.len(), Ordering::Release);
        self.generation.fetch_add(1, Ordering::Release);
    }

    pub fn set_broken(&self, schema: &str, table: &str, why: String) {
        self.broken
            .insert((schema.to_string(), table.to_string()), why);
        self.changed();
    }

    /// Why the table's lookups are missing, if they are.
    pub fn broken(&self, schema: &str, table: &str) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        self.broken
            .get(&(schema.to_string(), table.to_string()))
            .map(|w| w.clone())
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Every column of the global keys of `table` (in `schema`, or in any schema).
    pub fn columns_of(&self, schema: Option<&str>, table: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in self.by_table.iter() {
            let (s, t) = e.key();
            if !t.eq_ignore_ascii_case(table) || schema.is_some_and(|x| x != s) {
                continue;
            }
            for c in e.value().iter().flat_map(|k| &k.columns) {
                if !out.iter().any(|o| o.eq_ignore_ascii_case(&c.name)) {
                    out.push(c.name.clone());
                }
            }
        }
        out
    }

    /// After DROP TABLE through idgate.
    pub fn remove(&self, schema: &str, table: &str) {
        let key = (schema.to_string(), table.to_string());
        self.by_table.remove(&key);
        self.broken.remove(&key);
        self.changed();
    }

    pub fn is_empty(&self) -> bool {
        self.entries.load(Ordering::Acquire) == 0
    }
}
