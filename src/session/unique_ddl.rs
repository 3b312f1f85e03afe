//! After DDL through idgate on a `unique: global` table: CREATE TABLE makes the new table's
//! lookups, DROP TABLE drops them. The client already has its answer; a lookup that cannot be
//! made marks the table so its INSERTs are refused (never written without their lookup).

use tokio::io::{AsyncRead, AsyncWrite};
use tracing::{error, warn};

use super::Session;
use crate::config::tables::UniqueScope;
use crate::sql::{self, DdlAction};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    pub(super) async fn unique_after_ddl(&mut self, stmt: &[u8]) {
        let Some(d) = sql::ddl_tables(stmt) else {
            return;
        };
        if d.action == DdlAction::Other {
            return;
        }
        for t in &d.subjects {
            let schema = match (&t.schema, &self.db) {
                (Some(s), _) => s.clone(),
                (None, Some(db)) => String::from_utf8_lossy(db).into_owned(),
                (None, None) => continue,
            };
            let Some(rule) = self
                .proxy
                .tables
                .load()
                .lookup(Some(&schema), &t.name)
                .cloned()
            else {
                continue;
            };
            if rule.unique != Some(UniqueScope::Global) {
                continue;
            }
            let proxy = self.proxy.clone();
            match d.action {
                DdlAction::Create => {
                    match crate::unique::start::prepare_created(&proxy.config, &rule, &schema).await
                    {
                        Ok(keys) => proxy.unique.set(&schema, &t.name, keys),
                        Err(e) => {
                            error!(table = %t.name, error = %e,
                                "could not make the new table's unique key lookups; its INSERTs are refused");
                            proxy.unique.set_broken(&schema, &t.name, e);
                        }
                    }
                }
                DdlAction::Drop => {
                    for k in proxy
                        .unique
                        .keys_of(&schema, &t.name)
                        .iter()
                        .flat_map(|k| k.iter())
                    {
                        if let Err(e) = crate::unique::start::drop_lookup(&proxy.config, k).await {
                            warn!(table = %t.name, key = %k.name, error = %e,
                                "could not drop the unique key's lookup table");
                        }
                    }
                    proxy.unique.remove(&schema, &t.name);
                }
                DdlAction::Other => {}
            }
        }
    }
}
