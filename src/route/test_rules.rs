//! Table rules for the planner's unit tests, made without a configuration file.

use super::{Algorithm, Placement, TableRule};

/// A rule for `name` with the id column `id`, filled by `generator` when given.
pub fn rule(name: &str, generator: Option<&str>, placement: Placement) -> TableRule {
    TableRule {
        schema: None,
        name: name.into(),
        id_column: "id".into(),
        generator: generator.map(String::from),
        explicit_ids: Default::default(),
        bias_column: None,
        unique: None,
        placement,
    }
}

/// Sharded by `column` mod the number of `shards`.
pub fn sharded(column: &str, shards: &[&str]) -> Placement {
    sharded_by(column, Algorithm::Mod, shards)
}

/// Sharded by `column` under `algorithm`.
pub fn sharded_by(column: &str, algorithm: Algorithm, shards: &[&str]) -> Placement {
    Placement::Sharded {
        columns: vec![column.into()],
        algorithm,
        shards: shards.iter().map(|s| s.to_string()).collect(),
    }
}
