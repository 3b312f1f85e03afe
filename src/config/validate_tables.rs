//! Consistency of `generators:`, `tables:` and `sequence_store:` with each other and with the
//! backends, each mistake reported at its line and column.

use super::tables::{AlgorithmName, TableConfig, UniqueScope};
use super::validate::at;
use super::{Config, ConfigError};
use crate::idgen::config::GeneratorConfig;

pub fn validate(cfg: &Config) -> Result<(), ConfigError> {
    if let Some(store) = &cfg.sequence_store.backend {
        if !cfg.backends.contains_key(&store.value) {
            return Err(at(
                &store.referenced,
                format!(
                    "sequence_store `{}` is not one of the backends",
                    store.value
                ),
            ));
        }
    }
    for (name, g) in &cfg.generators {
        g.value
            .validate(name)
            .map_err(|e| at(&g.referenced, format!("generator `{name}`: {e}")))?;
    }
    for (name, t) in &cfg.tables {
        check_table(cfg, name, &t.value)
            .map_err(|m| at(&t.referenced, format!("table `{name}`: {m}")))?;
    }
    Ok(())
}

/// Whether the `tables:` entry `t`, named `name`, fits `cfg` (its generator, backends, columns).
pub fn check_table(cfg: &Config, name: &str, t: &TableConfig) -> Result<(), String> {
    if name.split('.').count() > 2 || name.split('.').any(str::is_empty) {
        return Err("name tables as `table` or `schema.table`".into());
    }
    let generator = match &t.generator {
        Some(g) => Some(cfg.generators.get(g).map(|s| &s.value).ok_or_else(|| {
            format!(
                "generator `{g}` is not defined under generators: ({})",
                cfg.generators
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?),
        None => None,
    };
    let biased = match generator {
        Some(GeneratorConfig::Biased(c)) => Some(c),
        _ => None,
    };
    if let Some(b) = biased {
        if t.bias_column.is_none() && b.bias_column.is_none() {
            return Err(format!(
                "generator `{}` is biased: set bias_column (the column whose low bits the id copies, e.g. user_id)",
                t.generator.as_deref().unwrap_or_default()
            ));
        }
    } else if t.bias_column.is_some() {
        return Err("bias_column is only meaningful with a biased generator".into());
    }
    if t.broadcast && t.sharding.is_some() {
        return Err("a table is either broadcast or sharded, not both".into());
    }
    if let Some(b) = &t.unique_lookup_backend {
        if t.unique != Some(UniqueScope::Global) {
            return Err("unique_lookup_backend goes with `unique: global`".into());
        }
        if !cfg.backends.contains_key(b) {
            return Err(format!(
                "unique_lookup_backend `{b}` is not defined under backends:"
            ));
        }
    }
    let Some(s) = &t.sharding else {
        if t.unique.is_some() {
            return Err(
                "unique applies to sharded tables only (a table on one backend, or \
                        broadcast, has its unique keys checked by that server)"
                    .into(),
            );
        }
        return Ok(());
    };
    if s.shards.is_empty() {
        return Err("sharding.shards lists no backend".into());
    }
    for shard in &s.shards {
        if !cfg.backends.contains_key(shard) {
            return Err(format!("shard `{shard}` is not one of the backends"));
        }
    }
    if s.columns.is_empty() {
        return Err("sharding.columns names no column".into());
    }
    match s.algorithm {
        AlgorithmName::Mod | AlgorithmName::Hash => {
            if s.columns.len() != 1 {
                return Err("mod and hash shard by exactly one column".into());
            }
        }
        AlgorithmName::Range => {
            if s.columns.len() != 1 {
                return Err("range shards by exactly one column".into());
            }
            if s.bounds.len() + 1 != s.shards.len() {
                return Err(format!(
                    "range needs one bound fewer than shards ({} shards, {} bounds)",
                    s.shards.len(),
                    s.bounds.len()
                ));
            }
            if s.bounds.windows(2).any(|w| w[0] >= w[1]) {
                return Err("range bounds must increase".into());
            }
        }
        AlgorithmName::Slot => {
            let Some(b) = biased else {
                return Err(
                    "the slot algorithm needs a biased generator (its low bits are the slot)"
                        .into(),
                );
            };
            let bias = t.bias_column.as_ref().or(b.bias_column.as_ref());
            for c in &s.columns {
                let ok = c.eq_ignore_ascii_case(&t.id_column)
                    || bias.is_some_and(|b| c.eq_ignore_ascii_case(b));
                if !ok {
                    return Err(format!(
                        "slot sharding can only use the id column `{}` and the bias column, not `{c}`",
                        t.id_column
                    ));
                }
            }
            if b.slot_bits.is_none() {
                return Err("the biased generator needs slot_bits for slot sharding".into());
            }
        }
    }
    Ok(())
}
