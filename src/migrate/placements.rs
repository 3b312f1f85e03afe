//! The placements of moved tables, kept in the sequence store and routed by on every instance:
//! the configuration's rules with each moved table's rule replaced. An instance applies them
//! before it serves and again whenever they change (it looks every two seconds); a
//! configuration file that says otherwise for a moved table is reported, not obeyed.

use tracing::{info, warn};

use crate::config::Config;
use crate::proxy::Proxy;
use crate::route::{TableRule, Tables};

/// The rules of `proxy`'s configuration with `moved` (`schema.table`, entry) applied.
pub fn tables_with(proxy: &Proxy, moved: &[(String, String)]) -> Tables {
    let cfg = &proxy.config;
    let mut rules: Vec<TableRule> = cfg
        .tables
        .iter()
        .map(|(k, t)| TableRule::from_entry(cfg, k, &t.value))
        .collect();
    for (key, entry) in moved {
        let rule = match super::start::target_rule(proxy, key, entry) {
            Ok(r) => r,
            Err(e) => {
                warn!(table = %key, error = %e, "cannot route by the table's moved placement");
                continue;
            }
        };
        rules.retain(|r| {
            !(r.name.eq_ignore_ascii_case(&rule.name)
                && r.schema
                    .as_deref()
                    .is_some_and(|s| Some(s) == rule.schema.as_deref()))
        });
        if disagrees(proxy, key, &rule) {
            warn!(table = %key, placement = %entry,
                "the configuration places this table otherwise; it was moved by IDGATE \
                 MIGRATE and is routed by its new placement: put this entry under tables:");
        }
        rules.push(rule);
    }
    Tables::new(rules).with_lookups(proxy.unique.clone())
}

/// Whether the configuration file places the moved table `key` otherwise than `moved` (or
/// does not name it).
fn disagrees(proxy: &Proxy, key: &str, moved: &TableRule) -> bool {
    config_disagrees(&proxy.config, key, moved)
}

/// Whether `cfg` places the moved table `key` otherwise than `moved` (or does not name it).
fn config_disagrees(cfg: &Config, key: &str, moved: &TableRule) -> bool {
    match cfg.tables.iter().find(|(k, _)| k.as_str() == key) {
        Some((_, t)) => {
            let yaml = TableRule::from_entry(cfg, key, &t.value);
            format!("{:?}", yaml.placement) != format!("{:?}", moved.placement)
        }
        None => true,
    }
}

/// For a table `proxy` routes by a placement IDGATE MIGRATE recorded: its key and entry, and
/// the line to put under `tables:` when the configuration file says otherwise.
pub fn moved_placement(proxy: &Proxy, rule: &TableRule) -> Option<(String, Option<String>)> {
    let moved = proxy.migrations.applied_placements();
    let (key, entry) = moved.iter().find(|(k, _)| match k.rsplit_once('.') {
        Some((s, t)) => {
            t.eq_ignore_ascii_case(&rule.name) && rule.schema.as_deref().is_some_and(|r| r == s)
        }
        None => k.eq_ignore_ascii_case(&rule.name),
    })?;
    let paste = disagrees(proxy, key, rule).then(|| format!("{key}: {entry}"));
    Some((key.clone(), paste))
}

/// Routes by the store's placements when they differ from what `proxy` routes by now.
pub async fn apply(migrations: &super::Migrations, moved: &[(String, String)]) {
    let proxy = &migrations.proxy;
    let applied = proxy.migrations.applied_placements();
    if applied.as_slice() == moved {
        return;
    }
    for (key, entry) in moved {
        if !applied.contains(&(key.clone(), entry.clone())) {
            if let Err(e) = super::ids::raise_for(migrations, key, entry).await {
                warn!(table = %key, error = %e, "cannot route by the table's new placement yet");
                return;
            }
            info!(table = %key, placement = %entry, "routing the table by its moved placement");
        }
    }
    proxy.set_tables(tables_with(proxy, moved));
    proxy.migrations.set_applied_placements(moved.to_vec());
}

/// For `idgate check-config --placements`: the placements IDGATE MIGRATE recorded in the
/// sequence store that `cfg` states otherwise, each as the line to put under `tables:`. A store
/// without the table (nothing was ever moved) has none.
pub async fn entries_to_paste(cfg: &Config) -> Result<Vec<String>, String> {
    use mysql_async::prelude::Queryable;
    let pool = crate::proxy::sequence_store_pool(cfg)
        .await
        .map_err(|e| format!("sequence store: {e}"))?;
    let mut c = pool
        .get_conn()
        .await
        .map_err(|e| format!("sequence store: {e}"))?;
    let exists: Option<u64> = c
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = 'idgate_placements'",
        )
        .await
        .map_err(|e| format!("sequence store: {e}"))?;
    if exists.unwrap_or(0) == 0 {
        return Ok(Vec::new());
    }
    let moved: Vec<(String, String)> = c
        .query("SELECT table_key, entry FROM idgate_placements ORDER BY table_key")
        .await
        .map_err(|e| format!("sequence store: {e}"))?;
    let _ = c.disconnect().await;
    let mut out = Vec::new();
    for (key, entry) in moved {
        let rule = super::start::target_rule_in(cfg, &key, &entry)
            .map_err(|e| format!("the placement recorded for `{key}`: {e}"))?;
        if config_disagrees(cfg, &key, &rule) {
            out.push(format!("{key}: {entry}"));
        }
    }
    Ok(out)
}
