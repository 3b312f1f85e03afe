//! The configured tables, looked up by the name a statement uses.

use std::collections::HashMap;
use std::sync::Arc;

use super::algorithm::{Algorithm, ShardValue};
use crate::config::tables::{ExplicitIds, UniqueScope};
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
    /// How unique keys without the sharding columns hold: through lookup tables (`global`) or
    /// per shard only, knowingly (`per_shard`); `None`: such a key is refused.
    pub unique: Option<UniqueScope>,
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
    /// Shared so that a statement can keep its rule without copying it.
    by_name: HashMap<String, Vec<Arc<TableRule>>>,
    names: Option<TableNames>,
    /// Names of sharded and broadcast tables (those not simply on the default backend).
    placed: Option<TableNames>,
    /// The keys of `unique: global` tables, found at start and by CREATE TABLE through idgate.
    lookups: Option<Arc<crate::unique::Lookups>>,
    /// Some rule says `unique: global` (asked for every UPDATE about placed tables).
    global_unique: bool,
}

impl Tables {
    pub fn new(rules: Vec<TableRule>) -> Tables {
        let mut by_name: HashMap<String, Vec<Arc<TableRule>>> = HashMap::new();
        for r in rules {
            by_name
                .entry(r.name.to_ascii_lowercase())
                .or_default()
                .push(Arc::new(r));
        }
        let names = (!by_name.is_empty()).then(|| TableNames::new(by_name.keys()));
        let placed_names: Vec<&String> = by_name
            .iter()
            .filter(|(_, rules)| {
                rules
                    .iter()
                    .any(|r| !matches!(r.placement, Placement::Single { .. }))
            })
            .map(|(n, _)| n)
            .collect();
        let placed = (!placed_names.is_empty()).then(|| TableNames::new(placed_names));
        let global_unique = by_name
            .values()
            .flatten()
            .any(|r| r.unique == Some(UniqueScope::Global));
        Tables {
            by_name,
            names,
            placed,
            lookups: None,
            global_unique,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The same rules, reading the keys held through lookups (`unique: global`) from `lookups`.
    pub fn with_lookups(mut self, lookups: Arc<crate::unique::Lookups>) -> Tables {
        self.lookups = Some(lookups);
        self
    }

    /// Whether some rule says `unique: global`.
    pub fn has_global_unique(&self) -> bool {
        self.global_unique && self.lookups.is_some()
    }

    /// The columns of `rule`'s keys held through lookups, which an UPDATE may not change yet.
    pub fn global_key_columns(&self, rule: &TableRule) -> Vec<String> {
        match (&self.lookups, rule.unique) {
            (Some(l), Some(UniqueScope::Global)) => {
                l.columns_of(rule.schema.as_deref(), &rule.name)
            }
            _ => Vec::new(),
        }
    }

    /// The keys of `rule`'s table (named `spelled` in `schema`) held through lookups.
    pub fn global_keys(
        &self,
        schema: &str,
        spelled: &str,
        rule: &TableRule,
    ) -> Option<Arc<[crate::unique::GlobalKey]>> {
        match (&self.lookups, rule.unique) {
            (Some(l), Some(UniqueScope::Global)) if !l.is_empty() => l
                .keys_of(schema, spelled)
                .or_else(|| l.keys_of(schema, &rule.name)),
            _ => None,
        }
    }

    /// The cheap pre-filter: could `stmt` be about a configured table at all?
    pub fn mentioned_in(&self, stmt: &[u8]) -> bool {
        self.names
            .as_ref()
            .is_some_and(|n| crate::sql::identifiers_mention(stmt, n))
    }

    /// Could `stmt` be about a sharded or broadcast table?
    pub fn placed_mentioned_in(&self, stmt: &[u8]) -> bool {
        self.placed
            .as_ref()
            .is_some_and(|n| crate::sql::identifiers_mention(stmt, n))
    }

    /// Sharded and broadcast rules whose table name `stmt` mentions (for DDL, whose table
    /// names sqlparser does not always expose).
    pub fn placed_rules_named_in(&self, stmt: &[u8]) -> Vec<Arc<TableRule>> {
        self.by_name
            .iter()
            .filter(|(name, _)| {
                crate::sql::identifiers_mention(stmt, &TableNames::new([name.as_str()]))
            })
            .flat_map(|(_, rules)| rules.iter())
            .filter(|r| !matches!(r.placement, Placement::Single { .. }))
            .cloned()
            .collect()
    }

    /// Every rule, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = &TableRule> {
        self.by_name.values().flatten().map(|r| r.as_ref())
    }

    /// The rule for `schema.name` (schema from the statement, else the session's database).
    /// Names compare case-insensitively, as MariaDB does with lower_case_table_names=1; a rule
    /// limited to a schema wins over one for any schema.
    pub fn lookup(&self, schema: Option<&str>, name: &str) -> Option<&TableRule> {
        self.lookup_shared(schema, name).map(|r| &**r)
    }

    /// [`Tables::lookup`], as a handle the caller can keep.
    pub fn lookup_shared(&self, schema: Option<&str>, name: &str) -> Option<&Arc<TableRule>> {
        // Names are mostly lower case already: lower them only when needed.
        let rules = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            self.by_name.get(&name.to_ascii_lowercase())?
        } else {
            self.by_name.get(name)?
        };
        rules
            .iter()
            .find(|r| match (&r.schema, schema) {
                (Some(rs), Some(s)) => rs.eq_ignore_ascii_case(s),
                _ => false,
            })
            .or_else(|| rules.iter().find(|r| r.schema.is_none()))
    }
}

impl Tables {
    /// The table rules of a validated configuration.
    pub fn from_config(cfg: &crate::config::Config) -> Tables {
        let rules = cfg
            .tables
            .iter()
            .map(|(key, t)| TableRule::from_entry(cfg, key, &t.value))
            .collect();
        Tables::new(rules)
    }
}

impl TableRule {
    /// The rule of one validated `tables:` entry, named `key` (`table` or `schema.table`).
    pub fn from_entry(
        cfg: &crate::config::Config,
        key: &str,
        t: &crate::config::tables::TableConfig,
    ) -> TableRule {
        use crate::config::tables::AlgorithmName;
        use crate::idgen::config::GeneratorConfig;
        let (schema, name) = match key.split_once('.') {
            Some((s, n)) => (Some(s.to_string()), n.to_string()),
            None => (None, key.to_string()),
        };
        let biased =
            t.generator
                .as_ref()
                .and_then(|g| match cfg.generators.get(g).map(|s| &s.value) {
                    Some(GeneratorConfig::Biased(b)) => Some(b),
                    _ => None,
                });
        let bias_column = t
            .bias_column
            .clone()
            .or_else(|| biased.and_then(|b| b.bias_column.clone()));
        let placement = if let Some(s) = &t.sharding {
            let algorithm = match s.algorithm {
                AlgorithmName::Mod => Algorithm::Mod,
                AlgorithmName::Hash => Algorithm::Hash,
                AlgorithmName::Range => Algorithm::Range {
                    bounds: s.bounds.iter().map(|b| *b as i128).collect(),
                },
                AlgorithmName::Slot => Algorithm::Slot {
                    slot_bits: biased.and_then(|b| b.slot_bits).unwrap_or(0),
                },
            };
            Placement::Sharded {
                columns: s.columns.clone(),
                algorithm,
                shards: s.shards.clone(),
            }
        } else if t.broadcast {
            Placement::Broadcast {
                backends: cfg.backends.keys().cloned().collect(),
            }
        } else {
            Placement::Single {
                backend: cfg.default_backend.value.clone(),
            }
        };
        TableRule {
            schema,
            name,
            id_column: t.id_column.clone(),
            generator: t.generator.clone(),
            explicit_ids: t.explicit_ids,
            bias_column,
            unique: t.unique,
            placement,
        }
    }

    /// The backends one row lives on, given its columns' values (`value_of`): a sharded row on
    /// the shard of its first sharding column that has a value.
    pub fn backends_of_row(
        &self,
        value_of: impl Fn(&str) -> Option<ShardValue>,
    ) -> Result<&[String], String> {
        let (columns, algorithm, shards) = match &self.placement {
            Placement::Sharded {
                columns,
                algorithm,
                shards,
            } => (columns, algorithm, shards),
            _ => return Ok(self.backends()),
        };
        let Some((column, value)) = columns.iter().find_map(|c| Some((c, value_of(c)?))) else {
            return Err(format!(
                "a row of `{}` has no value for its sharding column `{}`",
                self.name,
                columns.first().map_or("", String::as_str)
            ));
        };
        let i = algorithm
            .shard_of(&value, shards.len(), column)
            .map_err(|e| e.to_string())?;
        shards
            .get(i..=i)
            .ok_or_else(|| format!("shard {i} of {} out of range", shards.len()))
    }
}
