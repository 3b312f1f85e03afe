//! The `tables:` section: which tables get generated ids and where their rows live.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    /// The column idgate fills, as AUTO_INCREMENT would.
    #[serde(default = "default_id_column")]
    pub id_column: String,
    /// Name of a generator under `generators:`; without one, ids are not generated (routing only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// What an INSERT with its own id value gets: kept (`allow`) or an error (`reject`).
    #[serde(default)]
    pub explicit_ids: ExplicitIds,
    /// For a biased generator: the column whose low bits the id copies (e.g. user_id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bias_column: Option<String>,
    /// Rows spread over several shards; without it the table lives on the default backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharding: Option<ShardingConfig>,
    /// Every row on every backend (small lookup tables joined with sharded ones).
    #[serde(default)]
    pub broadcast: bool,
    /// How unique keys that do not contain the sharding columns hold on a sharded table. Such a
    /// key is checked by each shard for its own rows only: `global` keeps a lookup table per key
    /// so it holds across shards, `per_shard` accepts duplicates across shards knowingly.
    /// Without either idgate refuses to start (and refuses DDL creating such a key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique: Option<UniqueScope>,
    /// With `unique: global`: the backend holding the key lookup tables (default: the default
    /// backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique_lookup_backend: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UniqueScope {
    /// Each shard enforces the key for the rows it holds; duplicates across shards can exist.
    PerShard,
    /// A lookup table per key, written in the same transaction as the row, makes the key hold
    /// across every shard as on one server.
    Global,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExplicitIds {
    #[default]
    Allow,
    Reject,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ShardingConfig {
    /// The sharding column(s). mod, hash and range take one; slot takes the id and its bias
    /// column, which carry the same low bits.
    pub columns: Vec<String>,
    pub algorithm: AlgorithmName,
    /// Backends holding the table's rows, in shard order.
    pub shards: Vec<String>,
    /// For `range`: exclusive upper bound of each shard but the last (one fewer than shards).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AlgorithmName {
    Mod,
    Hash,
    Range,
    Slot,
}

fn default_id_column() -> String {
    "id".into()
}
