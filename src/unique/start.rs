//! At start: the unique keys of every sharded table, read on its shards. A key that does not
//! contain what picks the shard holds per shard only (`route::unique_keys`): with
//! `unique: global` idgate creates its lookup table and fills it once from the rows the shards
//! hold; with `unique: per_shard` it is accepted; otherwise idgate refuses to start, naming each
//! such key and the two choices.

use std::collections::BTreeMap;
use std::time::Duration;

use tracing::{info, warn};

use super::survey::{unique_keys_on, SurveyedKey};
use super::{lookup_table, GlobalKey, Lookups};
use crate::config::tables::UniqueScope;
use crate::config::Config;
use crate::exec::metadata::quote_literal;
use crate::exec::BackendConn;
use crate::route::tables::Tables;
use crate::route::{unique_keys, Placement, TableRule};

/// How long one backend may take to answer a survey statement.
const SURVEY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long filling one lookup table may take (it reads every row of the table once).
const FILL_TIMEOUT: Duration = Duration::from_secs(3600);
/// Key values per INSERT while filling.
const FILL_BATCH: usize = 500;
/// Key values read from a shard at a time while filling.
const FILL_PAGE: usize = 10_000;

/// The global keys of every sharded table, their lookup tables ready; or why idgate cannot
/// serve: a key without a choice, or a lookup that cannot be filled. A shard that cannot be
/// reached is named in the log (its keys are checked at the next start).
pub async fn prepare(config: &Config) -> Result<Lookups, String> {
    let tables = Tables::from_config(config);
    let mut refusals: BTreeMap<String, String> = BTreeMap::new();
    let mut global: BTreeMap<(String, String, String), GlobalKey> = BTreeMap::new();
    for rule in tables.rules() {
        if rule.unique == Some(UniqueScope::PerShard)
            || !matches!(rule.placement, Placement::Sharded { .. })
        {
            continue;
        }
        for shard in rule.backends() {
            let Some(cfg) = config.backends.get(shard) else {
                continue;
            };
            let keys = bounded(SURVEY_TIMEOUT, async {
                let mut conn =
                    BackendConn::connect(shard, &cfg.value, Default::default(), SURVEY_TIMEOUT)
                        .await
                        .map_err(|e| e.to_string())?;
                let keys = unique_keys_on(&mut conn, rule.schema.as_deref(), &rule.name).await;
                conn.close().await;
                keys
            })
            .await;
            let keys = match keys {
                Ok(keys) => keys,
                Err(e) => {
                    warn!(backend = %shard, table = %rule.name, error = %e,
                        "could not read the table's unique keys on this shard");
                    continue;
                }
            };
            for k in keys {
                let names: Vec<String> = k.columns.iter().map(|c| c.name.clone()).collect();
                if unique_keys::holds_across_shards(rule, &names) {
                    continue;
                }
                if rule.unique == Some(UniqueScope::Global) {
                    let id = (k.schema.clone(), rule.name.clone(), k.name.clone());
                    global
                        .entry(id)
                        .or_insert_with(|| global_key(config, rule, k));
                } else {
                    let e = unique_keys::per_shard_refusal(rule, &format!("`{}`", k.name), &names);
                    refusals.insert(format!("{}.{}", rule.name, k.name), e.message);
                }
            }
        }
    }
    if !refusals.is_empty() {
        return Err(refusals.into_values().collect::<Vec<_>>().join("; "));
    }
    let lookups = Lookups::default();
    let mut by_table: BTreeMap<(String, String), Vec<GlobalKey>> = BTreeMap::new();
    for ((schema, table, _), k) in global {
        let rule = tables
            .lookup(Some(&schema), &table)
            .ok_or_else(|| format!("no rule for `{schema}`.`{table}`"))?;
        bounded(FILL_TIMEOUT, fill(config, rule, &k)).await?;
        by_table.entry((schema, table)).or_default().push(k);
    }
    for ((schema, table), keys) in by_table {
        lookups.set(&schema, &table, keys);
    }
    Ok(lookups)
}

/// After CREATE TABLE through idgate: the new table's global keys, their lookup tables made
/// afresh (an entry left by an earlier table of that name is stale) and filled from whatever
/// rows the shards hold (none, for a new table).
pub async fn prepare_created(
    config: &Config,
    rule: &TableRule,
    schema: &str,
) -> Result<Vec<GlobalKey>, String> {
    let mut keys: Vec<GlobalKey> = Vec::new();
    for shard in rule.backends() {
        let mut conn = connect(config, shard).await?;
        let found = bounded(
            SURVEY_TIMEOUT,
            unique_keys_on(&mut conn, Some(schema), &rule.name),
        )
        .await;
        conn.close().await;
        for k in found? {
            let names: Vec<String> = k.columns.iter().map(|c| c.name.clone()).collect();
            if !unique_keys::holds_across_shards(rule, &names)
                && !keys.iter().any(|g| g.name == k.name)
            {
                keys.push(global_key(config, rule, k));
            }
        }
    }
    for k in &keys {
        drop_lookup(config, k).await?;
        bounded(FILL_TIMEOUT, fill(config, rule, k)).await?;
    }
    Ok(keys)
}

/// Drops a key's lookup table and its mark (DROP TABLE through idgate, or before a new fill).
pub async fn drop_lookup(config: &Config, k: &GlobalKey) -> Result<(), String> {
    let mut lc = connect(config, &k.backend).await?;
    let r = bounded(SURVEY_TIMEOUT, async {
        for sql in [
            format!("CREATE DATABASE IF NOT EXISTS {}", lookup_table::DATABASE),
            format!("DROP TABLE IF EXISTS {}", k.lookup),
            format!(
                "CREATE TABLE IF NOT EXISTS {}.idgate_filled (lookup VARCHAR(200) PRIMARY KEY, \
                 filled_at DATETIME NOT NULL) ENGINE=InnoDB",
                lookup_table::DATABASE
            ),
            format!(
                "DELETE FROM {}.idgate_filled WHERE lookup = {}",
                lookup_table::DATABASE,
                quote_literal(&k.lookup)
            ),
        ] {
            lc.query_drop(&sql).await.map_err(|e| e.to_string())?;
        }
        Ok(())
    })
    .await;
    lc.close().await;
    r
}

async fn bounded<T>(
    limit: Duration,
    f: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(limit, f)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", limit.as_secs())))
}

fn global_key(config: &Config, rule: &TableRule, k: SurveyedKey) -> GlobalKey {
    let entry = match &rule.schema {
        Some(s) => format!("{s}.{}", rule.name),
        None => rule.name.clone(),
    };
    let backend = config
        .tables
        .get(&entry)
        .and_then(|t| t.value.unique_lookup_backend.clone())
        .unwrap_or_else(|| config.default_backend.value.clone());
    GlobalKey {
        lookup: lookup_table::name(&k.schema, &rule.name, &k.name),
        schema: k.schema,
        table: rule.name.clone(),
        name: k.name,
        columns: k.columns,
        backend,
    }
}

async fn connect(config: &Config, backend: &str) -> Result<BackendConn, String> {
    let cfg = config
        .backends
        .get(backend)
        .ok_or_else(|| format!("backend `{backend}` is not configured"))?;
    let mut c = BackendConn::connect(backend, &cfg.value, Default::default(), SURVEY_TIMEOUT)
        .await
        .map_err(|e| format!("backend `{backend}`: {e}"))?;
    c.query_drop("SET NAMES utf8mb4")
        .await
        .map_err(|e| format!("backend `{backend}`: {e}"))?;
    Ok(c)
}

/// Creates the key's lookup table and, the first time, fills it from every shard's rows in one
/// transaction with a mark that it is filled (another idgate starting at the same time waits for
/// the mark). Rows that already break the key across shards keep idgate from starting.
async fn fill(config: &Config, rule: &TableRule, k: &GlobalKey) -> Result<(), String> {
    let at = |e: crate::exec::BackendError| format!("lookup of `{}`.`{}`: {e}", k.table, k.name);
    let mut lc = connect(config, &k.backend).await?;
    for sql in [
        format!("CREATE DATABASE IF NOT EXISTS {}", lookup_table::DATABASE),
        format!(
            "CREATE TABLE IF NOT EXISTS {}.idgate_filled (lookup VARCHAR(200) PRIMARY KEY, \
             filled_at DATETIME NOT NULL) ENGINE=InnoDB",
            lookup_table::DATABASE
        ),
        lookup_table::create_sql(k),
        lookup_table::add_owner_sql(k),
        "START TRANSACTION".to_string(),
    ] {
        lc.query_drop(&sql).await.map_err(at)?;
    }
    let mark = quote_literal(&k.lookup);
    let done = lc
        .query_rows(&format!(
            "SELECT 1 FROM {}.idgate_filled WHERE lookup = {mark} FOR UPDATE",
            lookup_table::DATABASE
        ))
        .await
        .map_err(at)?;
    if !done.is_empty() {
        lc.query_drop("COMMIT").await.map_err(at)?;
        lc.close().await;
        return Ok(());
    }
    let mut filled = 0usize;
    for shard in rule.backends() {
        let mut sc = connect(config, shard).await?;
        // Page by page in key order, so a large table never sits in memory whole.
        let mut after: Option<Vec<Vec<u8>>> = None;
        loop {
            let rows = sc
                .query_rows(&lookup_table::values_sql(k, after.as_deref(), FILL_PAGE))
                .await
                .map_err(at)?;
            let literals: Vec<Vec<Vec<u8>>> = rows
                .iter()
                .map(|row| {
                    k.columns
                        .iter()
                        .zip(row)
                        .map(|(c, v)| {
                            lookup_table::literal_from_read(c, v.as_deref().unwrap_or_default())
                        })
                        .collect()
                })
                .collect();
            for batch in literals.chunks(FILL_BATCH) {
                let fill = lookup_table::fill_sql(k, batch, shard);
                if let Err(e) = lc.query_drop_bytes(&fill).await {
                    let _ = lc.query_drop("ROLLBACK").await;
                    return Err(format!(
                        "table `{}`.`{}` already holds rows with the same value of unique key \
                         `{}` on different shards ({e}); remove the duplicates, or set \
                         `unique: per_shard` under tables.{}",
                        k.schema, k.table, k.name, rule.name
                    ));
                }
                filled += batch.len();
            }
            if rows.len() < FILL_PAGE {
                break;
            }
            after = literals.last().cloned();
        }
        sc.close().await;
    }
    lc.query_drop(&format!(
        "INSERT INTO {}.idgate_filled VALUES ({mark}, NOW())",
        lookup_table::DATABASE
    ))
    .await
    .map_err(at)?;
    lc.query_drop("COMMIT").await.map_err(at)?;
    lc.close().await;
    info!(table = %k.table, key = %k.name, values = filled, "filled the unique key's lookup table");
    Ok(())
}
