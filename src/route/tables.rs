//! The configured tables, looked up by the name a statement uses.

use std::collections::HashMap;

use super::algorithm::Algorithm;
use crate::config::tables::ExplicitIds;
use crate::sql::TableNames;

#[derive(Debug, Clone)]
pub enum Placement {
    /// On the default backend only.
    Single { backend: String },
    /// Every row on each of these backends.
    Broadcast { backends: Vec<String> },
    /// Each row on the shard its sharding value maps to.
    Sharded {
        columns: Vec<String>,
        algorithm: Algorithm,
        shards: Vec<String>,
    },
}

#[derive(Debug, Clone)]
pub struct TableRule {
    /// Schema the rule is limited to (`schema.table` in the config), else any.
    pub schema: Option<String>,
    pub name: String,
    pub id_column: String,
    pub generator: Option<String>,
    pub explicit_ids: ExplicitIds,
    pub bias_column: Option<String>,
    pub placement: Placement,
}

impl TableRule {
    /// Backends a statement about the whole table touches.
    pub fn backends(&self) -> &[String] {
        match &self.placement {
            Placement::Single { backend } => std::slice::from_ref(backend),
            Placement::Broadcast { backends } => backends,
            Placement::Sharded { shards, .. } => shards,
        }
    }
}

#[derive(Default)]
pub struct Tables {
    by_name: HashMap<String, Vec<TableRule>>,
    names: Option<TableNames>,
}

impl Tables {
    pub fn new(rules: Vec<TableRule>) -> Tables {
        let mut by_name: HashMap<String, Vec<TableRule>> = HashMap::new();
        for r in rules {
            by_name
                .entry(r.name.to_ascii_lowercase())
                .or_default()
                .push(r);
        }
        let names = (!by_name.is_empty()).then(|| TableNames::new(by_name.keys()));
        Tables { by_name, names }
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The cheap pre-filter: could `stmt` be about a configured table at all?
    pub fn mentioned_in(&self, stmt: &[u8]) -> bool {
        self.names
            .as_ref()
            .is_some_and(|n| crate::sql::identifiers_mention(stmt, n))
    }

    /// The rule for `schema.name` (schema from the statement, else the session's database).
    /// Names compare case-insensitively, as MariaDB does with lower_case_table_names=1; a rule
    /// limited to a schema wins over one for any schema.
    pub fn lookup(&self, schema: Option<&str>, name: &str) -> Option<&TableRule> {
        let rules = self.by_name.get(&name.to_ascii_lowercase())?;
        rules
            .iter()
            .find(|r| match (&r.schema, schema) {
                (Some(rs), Some(s)) => rs.eq_ignore_ascii_case(s),
                _ => false,
            })
            .or_else(|| rules.iter().find(|r| r.schema.is_none()))
    }
}
