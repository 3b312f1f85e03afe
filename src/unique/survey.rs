//! Reading a table's unique keys, with their columns' definitions, from one backend.

use std::collections::BTreeMap;

use super::KeyColumn;
use crate::exec::metadata::quote_literal;
use crate::exec::BackendConn;

/// A unique key as one backend holds it.
#[derive(Debug, Clone)]
pub struct SurveyedKey {
    pub schema: String,
    pub name: String,
    pub columns: Vec<KeyColumn>,
}

/// Each unique key of `table`, in every schema holding it (or `schema` only), columns in key
/// order.
pub async fn unique_keys_on(
    conn: &mut BackendConn,
    schema: Option<&str>,
    table: &str,
) -> Result<Vec<SurveyedKey>, String> {
    let in_schema = match schema {
        Some(s) => format!("s.TABLE_SCHEMA = {}", quote_literal(s)),
        None => {
            "s.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys', \
             'idgate_unique')"
                .to_string()
        }
    };
    let sql = format!(
        "SELECT s.TABLE_SCHEMA, s.INDEX_NAME, s.COLUMN_NAME, s.SUB_PART, c.COLUMN_TYPE, \
         c.CHARACTER_SET_NAME, c.COLLATION_NAME, c.COLUMN_DEFAULT \
         FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c \
         ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME \
         AND c.COLUMN_NAME = s.COLUMN_NAME \
         WHERE {in_schema} AND s.TABLE_NAME = {} AND s.NON_UNIQUE = 0 \
         ORDER BY s.TABLE_SCHEMA, s.INDEX_NAME, s.SEQ_IN_INDEX",
        quote_literal(table)
    );
    let rows = conn.query_rows(&sql).await.map_err(|e| e.to_string())?;
    let text = |v: &Option<Vec<u8>>| {
        v.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    let mut keys: BTreeMap<(String, String), Vec<KeyColumn>> = BTreeMap::new();
    for r in &rows {
        let [schema, index, column, sub_part, ty, charset, collation, default] = r.as_slice()
        else {
            return Err("unexpected information_schema answer".into());
        };
        keys.entry((
            text(schema).unwrap_or_default(),
            text(index).unwrap_or_default(),
        ))
        .or_default()
        .push(KeyColumn {
            name: text(column).unwrap_or_default(),
            column_type: text(ty).unwrap_or_default(),
            charset: text(charset),
            collation: text(collation),
            sub_part: text(sub_part).and_then(|s| s.parse().ok()),
            default: text(default),
        });
    }
    Ok(keys
        .into_iter()
        .map(|((schema, name), columns)| SurveyedKey {
            schema,
            name,
            columns,
        })
        .collect())
}
