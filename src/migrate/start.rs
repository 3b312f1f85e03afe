//! `IDGATE MIGRATE START`: every check made before anything changes (the entry, the move, the
//! source's binlog and rights, the table's key, the new backends), then the table created where
//! it is missing and the job recorded. Also rebuilds a recorded job's plan on any instance.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::columns::TableShape;
use super::job::Spec;
use super::source::{self, bounded};
use super::store::{JobRow, StreamRow};
use crate::config::tables::{TableConfig, UniqueScope};
use crate::config::Config;
use crate::exec::BackendConn;
use crate::proxy::Proxy;
use crate::route::{Placement, TableRule};
use crate::wire::errors::SqlError;

use super::statements::refused;

/// The rule a job's target entry gives `key`, checked against this instance's configuration.
pub fn target_rule(proxy: &Proxy, key: &str, entry: &str) -> Result<TableRule, String> {
    target_rule_in(&proxy.config, key, entry)
}

/// [`target_rule`] under configuration `config`.
pub fn target_rule_in(config: &Config, key: &str, entry: &str) -> Result<TableRule, String> {
    let t: TableConfig = serde_saphyr::from_str(entry)
        .map_err(|e| format!("the placement is not a valid `tables:` entry: {e}"))?;
    crate::config::validate_tables::check_table(config, key, &t)
        .map_err(|e| format!("the placement does not fit the configuration: {e}"))?;
    if t.unique == Some(UniqueScope::Global) {
        return Err("moving a table with `unique: global` is not supported yet".into());
    }
    Ok(TableRule::from_entry(config, key, &t))
}

/// The rule the table is served by now (a table without one lives on the default backend).
pub fn current_rule(proxy: &Proxy, schema: &str, table: &str) -> TableRule {
    match proxy.tables.load().lookup(Some(schema), table) {
        Some(r) => r.clone(),
        None => TableRule {
            schema: Some(schema.into()),
            name: table.into(),
            id_column: "id".into(),
            generator: None,
            explicit_ids: Default::default(),
            bias_column: None,
            unique: None,
            placement: Placement::Single {
                backend: proxy.config.default_backend.value.clone(),
            },
        },
    }
}

/// How long the copy rests after each chunk, as configured now.
fn rest_percent(proxy: &Proxy) -> u32 {
    proxy.live().config.migrations.copy_rest_percent
}

fn backends(proxy: &Proxy) -> BTreeMap<String, crate::config::Backend> {
    proxy
        .config
        .backends
        .iter()
        .map(|(k, v)| (k.clone(), v.value.clone()))
        .collect()
}

async fn connect(proxy: &Proxy, backend: &str) -> Result<BackendConn, String> {
    let cfg = proxy
        .config
        .backends
        .get(backend)
        .ok_or_else(|| format!("backend `{backend}` is not configured"))?;
    BackendConn::connect(
        backend,
        &cfg.value,
        Default::default(),
        source::CHECK_TIMEOUT,
    )
    .await
    .map_err(|e| e.to_string())
}

/// MySQL's ER_NO_SUCH_TABLE.
pub const ER_NO_SUCH_TABLE: u16 = 1146;

/// Checks a new job and prepares the new backends; returns the job to record and run.
pub async fn prepare(
    proxy: &Proxy,
    schema: &str,
    table: &str,
    entry: &str,
) -> Result<(Spec, JobRow, Vec<StreamRow>), SqlError> {
    let from = current_rule(proxy, schema, table);
    for s in from.backends() {
        let mut c = connect(proxy, s).await.map_err(refused)?;
        let there = bounded(super::columns::read_shape(&mut c, schema, table)).await;
        c.close().await;
        if there.map_err(refused)?.is_none() {
            return Err(SqlError::new(
                ER_NO_SUCH_TABLE,
                b"42S02",
                format!("Table '{schema}.{table}' doesn't exist on backend `{s}`"),
            ));
        }
    }
    prepare_checked(proxy, schema, table, entry)
        .await
        .map_err(refused)
}

async fn prepare_checked(
    proxy: &Proxy,
    schema: &str,
    table: &str,
    entry: &str,
) -> Result<(Spec, JobRow, Vec<StreamRow>), String> {
    let key = format!("{schema}.{table}");
    let target = target_rule(proxy, &key, entry)?;
    let from = current_rule(proxy, schema, table);
    super::plan::check_move(&from, &target)?;
    let sources = super::plan::sources(&from)?;
    // The source: binlog settings, rights, the table's shape and unique keys.
    let mut shape: Option<TableShape> = None;
    let mut streams = Vec::new();
    let mut create = None;
    for s in &sources {
        let mut c = connect(proxy, s).await?;
        let checked = async {
            source::check_binlog(&mut c, s).await?;
            let got = source::table_shape(&mut c, s, schema, table).await?;
            if let Some(first) = &shape {
                if first.columns != got.columns {
                    return Err(format!("`{key}` is defined differently on `{s}`"));
                }
            }
            check_unique_keys(&mut c, &target, schema, table).await?;
            if create.is_none() {
                create = Some(source::create_statement(&mut c, schema, table).await?);
            }
            let estimated = source::estimated_rows(&mut c, schema, table).await;
            Ok::<_, String>((got, estimated))
        }
        .await;
        c.close().await;
        let (got, estimated) = checked?;
        shape = Some(got);
        streams.push(StreamRow {
            source: s.clone(),
            rows_estimated: estimated,
            ..StreamRow::default()
        });
    }
    let shape = shape.ok_or("the table has no source backend")?;
    if let Placement::Sharded { columns, .. } = &target.placement {
        for col in columns {
            if shape.position(col).is_none() {
                return Err(format!("`{key}` has no column `{col}` to shard by"));
            }
        }
    }
    // The new backends: the table is created where it is missing, and must be empty elsewhere.
    let create = create.unwrap_or_default();
    let mut created_on = Vec::new();
    for b in target.backends().iter().filter(|b| !sources.contains(b)) {
        let mut c = connect(proxy, b).await?;
        let r = async {
            match bounded(super::columns::read_shape(&mut c, schema, table)).await? {
                Some(there) => {
                    if there.columns != shape.columns {
                        return Err(format!(
                            "`{b}` already has a `{key}` defined differently; drop it or make it \
                             the same"
                        ));
                    }
                    if source::has_rows(&mut c, schema, table).await? {
                        return Err(format!(
                            "`{b}` already has rows in `{key}`; idgate moves rows only onto \
                             empty tables"
                        ));
                    }
                    Ok(false)
                }
                None => {
                    let q = super::columns::quote_ident(schema);
                    super::writer::exec(&mut c, &format!("CREATE DATABASE IF NOT EXISTS {q}"))
                        .await?;
                    super::writer::exec(&mut c, &format!("USE {q}")).await?;
                    super::writer::exec(&mut c, &create).await?;
                    Ok(true)
                }
            }
        }
        .await;
        c.close().await;
        if r.map_err(|e| format!("preparing `{b}`: {e}"))? {
            created_on.push(b.clone());
        }
    }
    let job = JobRow {
        table_key: key.clone(),
        target: entry.to_string(),
        source_entry: source_entry(proxy, schema, table),
        sources: sources.clone(),
        phase: "copying".into(),
        last_error: None,
        created_on: created_on.clone(),
        owner: None,
        lease_live: true,
        lag_events: -1,
        lag_seconds: 0,
    };
    let spec = Spec {
        key,
        schema: schema.into(),
        table: table.into(),
        target: Arc::new(target),
        sources,
        created_on,
        shape: Arc::new(shape),
        backends: backends(proxy),
        reverse: false,
        rest_percent: rest_percent(proxy),
    };
    Ok((spec, job, streams))
}

/// A unique key that the new placement would hold per shard only is refused as configuration
/// refuses it, unless the entry says `unique: per_shard`.
async fn check_unique_keys(
    c: &mut BackendConn,
    target: &TableRule,
    schema: &str,
    table: &str,
) -> Result<(), String> {
    if !matches!(target.placement, Placement::Sharded { .. })
        || target.unique == Some(UniqueScope::PerShard)
    {
        return Ok(());
    }
    let keys = bounded(crate::unique::survey::unique_keys_on(
        c,
        Some(schema),
        table,
    ))
    .await?;
    for k in keys {
        let cols: Vec<String> = k.columns.iter().map(|c| c.name.clone()).collect();
        if !crate::route::unique_keys::holds_across_shards(target, &cols) {
            return Err(
                crate::route::unique_keys::per_shard_refusal(target, &k.name, &cols).message,
            );
        }
    }
    Ok(())
}

/// A recorded job's plan, rebuilt here (on takeover or after a restart).
pub async fn spec_of(proxy: &Proxy, j: &JobRow) -> Result<Spec, String> {
    let (schema, table) = j
        .table_key
        .split_once('.')
        .ok_or_else(|| format!("job `{}` has no schema", j.table_key))?;
    let target = target_rule(proxy, &j.table_key, &j.target)?;
    let first = j.sources.first().ok_or("the job has no source")?;
    let mut c = connect(proxy, first).await?;
    let shape = source::table_shape(&mut c, first, schema, table).await;
    c.close().await;
    Ok(Spec {
        key: j.table_key.clone(),
        schema: schema.into(),
        table: table.into(),
        target: Arc::new(target),
        sources: j.sources.clone(),
        created_on: j.created_on.clone(),
        shape: Arc::new(shape?),
        backends: backends(proxy),
        reverse: false,
        rest_percent: rest_percent(proxy),
    })
}

/// The placement the table has now, as a `tables:` entry (empty: the default backend), so that
/// REVERSE can route by it again.
pub fn source_entry(proxy: &Proxy, schema: &str, table: &str) -> String {
    let key = format!("{schema}.{table}");
    if let Some((_, e)) = proxy
        .migrations
        .applied_placements()
        .into_iter()
        .find(|(k, _)| *k == key)
    {
        return e;
    }
    for k in [key.as_str(), table] {
        if let Some(t) = proxy.config.tables.get(k) {
            return serde_saphyr::to_string(&t.value).unwrap_or_default();
        }
    }
    String::new()
}

/// The rule of a job's old placement.
pub fn source_rule(proxy: &Proxy, j: &JobRow) -> Result<TableRule, String> {
    let (schema, table) = j
        .table_key
        .split_once('.')
        .ok_or_else(|| format!("job `{}` has no schema", j.table_key))?;
    if j.source_entry.trim().is_empty() {
        let mut r = current_rule(proxy, schema, table);
        r.placement = Placement::Single {
            backend: proxy.config.default_backend.value.clone(),
        };
        return Ok(r);
    }
    target_rule(proxy, &j.table_key, &j.source_entry)
}

/// The stream back to the old placement of a switched job: from every backend of the new
/// placement, nothing to copy.
pub async fn reverse_spec_of(proxy: &Proxy, j: &JobRow) -> Result<Spec, String> {
    let forward = spec_of(proxy, j).await?;
    let old = source_rule(proxy, j)?;
    Ok(Spec {
        sources: forward.target.backends().to_vec(),
        target: Arc::new(old),
        created_on: Vec::new(),
        reverse: true,
        ..forward
    })
}
