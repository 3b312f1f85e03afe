//! After DDL through idgate on a `unique: global` table: CREATE TABLE makes the new table's
//! lookups, DROP TABLE drops them.

use tracing::{error, warn};

use super::start::{drop_lookup, prepare_created};
use super::Lookups;
use crate::config::tables::UniqueScope;
use crate::config::Config;
use crate::route::Tables;
use crate::sql::{self, DdlAction};

/// After DDL through idgate (`stmt`, run with `db` selected): CREATE TABLE of a `unique:
/// global` table makes its lookups, DROP TABLE drops them. The client already has its answer; a
/// lookup that cannot be made marks the table so its INSERTs are refused (never written without
/// their lookup).
pub async fn after_ddl(
    config: &Config,
    tables: &Tables,
    lookups: &Lookups,
    db: Option<&[u8]>,
    stmt: &[u8],
) {
    let Some(d) = sql::ddl_tables(stmt) else {
        return;
    };
    if d.action == DdlAction::Other {
        return;
    }
    for t in &d.subjects {
        let schema = match (&t.schema, db) {
            (Some(s), _) => s.clone(),
            (None, Some(db)) => String::from_utf8_lossy(db).into_owned(),
            (None, None) => continue,
        };
        let Some(rule) = tables.lookup(Some(&schema), &t.name) else {
            continue;
        };
        if rule.unique != Some(UniqueScope::Global) {
            continue;
        }
        match d.action {
            DdlAction::Create => match prepare_created(config, rule, &schema).await {
                Ok(keys) => lookups.set(&schema, &t.name, keys),
                Err(e) => {
                    error!(table = %t.name, error = %e,
                            "could not make the new table's unique key lookups; its INSERTs are refused");
                    lookups.set_broken(&schema, &t.name, e);
                }
            },
            DdlAction::Drop => {
                for k in lookups
                    .keys_of(&schema, &t.name)
                    .iter()
                    .flat_map(|k| k.iter())
                {
                    if let Err(e) = drop_lookup(config, k).await {
                        warn!(table = %t.name, key = %k.name, error = %e,
                            "could not drop the unique key's lookup table");
                    }
                }
                lookups.remove(&schema, &t.name);
            }
            DdlAction::Other => {}
        }
    }
}
