//! What the tables a generator fills already hold, read on every backend holding them before the
//! generator hands out its first id. A table adopted from AUTO_INCREMENT, or filled by hand,
//! holds ids the generator never issued: a segment generator starts above the highest of them
//! (as AUTO_INCREMENT continues above MAX(id)), a time-based one must already be above them, and
//! every generator's ids must fit the id column's type. Otherwise idgate refuses to start with a
//! message saying what to set, instead of failing INSERTs later with duplicate keys or 1264.

use std::collections::BTreeMap;
use std::time::Duration;

use tracing::{info, warn};

use crate::config::Config;
use crate::exec::metadata::quote_literal;
use crate::exec::BackendConn;
use crate::idgen::config::GeneratorConfig;
use crate::idgen::IdGen;
use crate::route::tables::Tables;

/// How long one backend may take to answer the survey.
const SURVEY_TIMEOUT: Duration = Duration::from_secs(10);

/// One table's id column on one backend.
#[derive(Debug, Clone)]
pub struct HeldIds {
    pub backend: String,
    pub schema: String,
    pub table: String,
    pub column: String,
    /// COLUMN_TYPE, lowercase (`int(11)`, `bigint(20) unsigned`).
    pub column_type: String,
    /// The highest id the table holds or its AUTO_INCREMENT counter has handed out (0: none).
    pub highest: u64,
}

impl HeldIds {
    fn name(&self) -> String {
        format!("{}.{} on `{}`", self.schema, self.table, self.backend)
    }
}

/// A table rule's id column to look for on a backend, and the generator filling it.
struct Wanted {
    schema: Option<String>,
    table: String,
    column: String,
    generator: String,
}

/// The id columns of every table filled by an integer generator, by generator name. A backend
/// that cannot be reached is reported in the log and left out (its rows came from the same
/// generator or from before it; the next start checks it again).
pub async fn survey(config: &Config) -> BTreeMap<String, Vec<HeldIds>> {
    let tables = Tables::from_config(config);
    let mut wanted: BTreeMap<String, Vec<Wanted>> = BTreeMap::new();
    for rule in tables.rules() {
        let Some(g) = &rule.generator else { continue };
        if matches!(
            config.generators.get(g).map(|s| &s.value),
            Some(GeneratorConfig::Uuidv7(_)) | None
        ) {
            continue;
        }
        for backend in rule.backends() {
            wanted.entry(backend.clone()).or_default().push(Wanted {
                schema: rule.schema.clone(),
                table: rule.name.clone(),
                column: rule.id_column.clone(),
                generator: g.clone(),
            });
        }
    }
    let mut out: BTreeMap<String, Vec<HeldIds>> = BTreeMap::new();
    for (backend, items) in wanted {
        let Some(cfg) = config.backends.get(&backend) else {
            continue;
        };
        let found = tokio::time::timeout(SURVEY_TIMEOUT, async {
            let mut conn =
                BackendConn::connect(&backend, &cfg.value, Default::default(), SURVEY_TIMEOUT)
                    .await
                    .map_err(|e| e.to_string())?;
            let mut found = Vec::new();
            for w in &items {
                let on = held_on(
                    &mut conn,
                    &backend,
                    w.schema.as_deref(),
                    &w.table,
                    &w.column,
                );
                for held in on.await? {
                    found.push((w.generator.clone(), held));
                }
            }
            conn.close().await;
            Ok::<_, String>(found)
        })
        .await
        .unwrap_or_else(|_| Err("no answer in time".into()));
        match found {
            Ok(found) => {
                for (g, held) in found {
                    out.entry(g).or_default().push(held);
                }
            }
            Err(e) => warn!(
                backend,
                error = %e,
                "could not read the ids the configured tables hold on this backend; \
                 generators start without checking them"
            ),
        }
    }
    out
}

/// The table's id column in every schema of `conn` holding it (or in `schema` only).
async fn held_on(
    conn: &mut BackendConn,
    backend: &str,
    schema: Option<&str>,
    table: &str,
    column: &str,
) -> Result<Vec<HeldIds>, String> {
    let in_schema = match schema {
        Some(s) => format!("c.TABLE_SCHEMA = {}", quote_literal(s)),
        None => {
            "c.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')"
                .to_string()
        }
    };
    let sql = format!(
        "SELECT c.TABLE_SCHEMA, c.TABLE_NAME, c.COLUMN_NAME, LOWER(c.COLUMN_TYPE), t.AUTO_INCREMENT \
         FROM information_schema.COLUMNS c JOIN information_schema.TABLES t \
         ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME \
         WHERE {in_schema} AND c.TABLE_NAME = {} AND c.COLUMN_NAME = {} \
         AND t.TABLE_TYPE = 'BASE TABLE'",
        quote_literal(table),
        quote_literal(column)
    );
    let text = |v: &Option<Vec<u8>>| {
        String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned()
    };
    let mut out = Vec::new();
    for row in conn.query_rows(&sql).await.map_err(|e| e.to_string())? {
        let [schema, table, column, column_type, auto_increment] = row.as_slice() else {
            return Err("unexpected information_schema answer".into());
        };
        let (schema, table, column) = (text(schema), text(table), text(column));
        let integer = type_max(&text(column_type)).is_some();
        let mut highest = text(auto_increment)
            .parse::<u64>()
            .unwrap_or(0)
            .saturating_sub(1);
        if integer {
            let max = format!(
                "SELECT MAX({}) FROM {}.{}",
                quote_ident(&column),
                quote_ident(&schema),
                quote_ident(&table)
            );
            let rows = conn.query_rows(&max).await.map_err(|e| e.to_string())?;
            let max = rows
                .first()
                .and_then(|r| r.first())
                .map(text)
                .unwrap_or_default();
            // A negative or absent maximum holds nothing a generator could collide with.
            highest = highest.max(max.parse::<u64>().unwrap_or(0));
        }
        out.push(HeldIds {
            backend: backend.to_string(),
            schema,
            table,
            column,
            column_type: text(column_type),
            highest,
        });
    }
    Ok(out)
}

fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// Segment generators start above every id their tables hold: their `start` is raised (the
/// store's mark only ever moves up, so a start below it changes nothing).
pub fn raise_segment_starts(
    configs: &mut BTreeMap<String, GeneratorConfig>,
    held: &BTreeMap<String, Vec<HeldIds>>,
) {
    for (name, cfg) in configs.iter_mut() {
        let GeneratorConfig::Segment(seg) = cfg else {
            continue;
        };
        let Some(top) = held
            .get(name)
            .and_then(|h| h.iter().max_by_key(|h| h.highest))
        else {
            continue;
        };
        if top.highest >= seg.start {
            info!(
                generator = %name,
                table = %top.name(),
                highest = top.highest,
                "the table already holds ids; the generator starts above them"
            );
            seg.start = top.highest.saturating_add(1);
        }
    }
}

/// The largest value an integer column type holds (`None`: not an integer type).
pub fn type_max(column_type: &str) -> Option<u64> {
    let unsigned = column_type.contains("unsigned");
    let bits = [
        ("bigint", 64),
        ("mediumint", 24),
        ("smallint", 16),
        ("tinyint", 8),
        ("int", 32),
    ]
    .into_iter()
    .find(|(name, _)| column_type.starts_with(name))?
    .1;
    Some(if unsigned {
        if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        }
    } else {
        (1u64 << (bits - 1)) - 1
    })
}

/// Checks each generator's next id against its tables: above every id they hold, and within
/// the id column's type. A time-based generator gives one id to tell where it stands (a gap of
/// one, as any unused id of it).
pub async fn check_generators(
    idgen: &IdGen,
    held: &BTreeMap<String, Vec<HeldIds>>,
) -> Result<(), String> {
    for (name, tables) in held {
        let Ok(g) = idgen.get(name) else { continue };
        let next = match g.kind() {
            "biased" => {
                let mut out = Vec::with_capacity(1);
                g.next_biased(&[0], &mut out)
                    .await
                    .map_err(|e| e.to_string())?;
                out.first().copied()
            }
            "uuidv7" => None,
            "segment" => g.as_segment().map(|s| s.peek_next()),
            _ => Some(g.next_block(1).await.map_err(|e| e.to_string())?.first),
        };
        let Some(next) = next else { continue };
        for t in tables {
            if next <= t.highest {
                return Err(format!(
                    "generator `{name}` ({kind}) would hand out ids at or below what {table} \
                     already holds ({highest}; its next id is {next}): those INSERTs would meet \
                     duplicate keys. {what}",
                    kind = g.kind(),
                    table = t.name(),
                    highest = t.highest,
                    what = if g.kind() == "segment" {
                        format!("Raise generators.{name}.start above {}", t.highest)
                    } else {
                        "Use a segment generator for this table (it starts above the ids the \
                         table holds), or an epoch that puts this generator's ids above them"
                            .to_string()
                    }
                ));
            }
            if let Some(max) = type_max(&t.column_type) {
                if next > max {
                    return Err(format!(
                        "generator `{name}`'s next id {next} does not fit column `{column}` of \
                         {table} ({ty}, at most {max}): every INSERT would fail. Make the column \
                         BIGINT (ALTER TABLE {schema}.{tname} MODIFY {column} BIGINT …), or fill \
                         the table from a generator whose ids fit",
                        column = t.column,
                        table = t.name(),
                        ty = t.column_type,
                        schema = t.schema,
                        tname = t.table,
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::type_max;

    #[test]
    fn integer_types_know_their_largest_value() {
        assert_eq!(type_max("int(11)"), Some(2_147_483_647));
        assert_eq!(type_max("int(10) unsigned"), Some(4_294_967_295));
        assert_eq!(type_max("smallint(6)"), Some(32_767));
        assert_eq!(type_max("tinyint(3) unsigned"), Some(255));
        assert_eq!(type_max("mediumint(9)"), Some(8_388_607));
        assert_eq!(type_max("bigint(20)"), Some(i64::MAX as u64));
        assert_eq!(type_max("bigint(20) unsigned"), Some(u64::MAX));
        assert_eq!(type_max("binary(16)"), None);
        assert_eq!(type_max("char(36)"), None);
    }
}
