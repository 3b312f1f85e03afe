//! A moved table's columns as the source defines them, and how one stored value is written back
//! as SQL. Rows travel as the text protocol gives them with `character_set_results = binary`:
//! the stored bytes of strings, decimal text of numbers, `YYYY-MM-DD hh:mm:ss` of times in
//! UTC (the copy's sessions run at `time_zone = '+00:00'`). Binlog values are brought to the same
//! form (`binlog::values`), so one renderer and one placement serve the copy and the catch-up.

use crate::exec::metadata::quote_literal;
use crate::exec::BackendConn;
use crate::route::ShardValue;

/// How a column's values are written as SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// An integer type, its width in bits and signedness.
    Integer { bits: u32, unsigned: bool },
    /// Numbers and times written as their ASCII text: DECIMAL, FLOAT, DATE, TIME, YEAR…
    Plain,
    /// TIMESTAMP (its binlog value is seconds since the epoch).
    Timestamp,
    /// Strings in a character set (CHAR, VARCHAR, TEXT, JSON), with their collation.
    Text { charset: String, collation: String },
    /// ENUM and SET: written by member name, in the column's character set.
    Members {
        set: bool,
        members: Vec<Vec<u8>>,
        charset: String,
        collation: String,
    },
    /// Bytes: BINARY, VARBINARY, BLOB, BIT, geometry.
    Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
}

/// The table's columns in their order, and the positions of its primary key's columns.
#[derive(Debug, Clone)]
pub struct TableShape {
    pub columns: Vec<Column>,
    pub primary_key: Vec<usize>,
}

impl TableShape {
    pub fn position(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// `a`, `b`, … quoted, in table order.
    pub fn column_list(&self) -> String {
        let names: Vec<String> = self.columns.iter().map(|c| quote_ident(&c.name)).collect();
        names.join(", ")
    }

    /// `pk1 = v1 AND pk2 = v2` for one row.
    pub fn pk_equals(&self, row: &[Option<Vec<u8>>]) -> String {
        let parts: Vec<String> = self
            .primary_key
            .iter()
            .map(|&i| {
                format!(
                    "{} = {}",
                    quote_ident(&self.columns[i].name),
                    literal(&self.columns[i].kind, row.get(i).and_then(|v| v.as_deref()))
                )
            })
            .collect();
        parts.join(" AND ")
    }

    /// Rows after `after` (primary key values) in key order: `(a > x) OR (a = x AND b > y)…`.
    pub fn pk_after(&self, after: &[Vec<u8>]) -> String {
        let mut ors = Vec::new();
        for k in 0..self.primary_key.len().min(after.len()) {
            let mut ands = Vec::new();
            for (j, &i) in self.primary_key.iter().enumerate().take(k + 1) {
                let col = &self.columns[i];
                let op = if j == k { ">" } else { "=" };
                ands.push(format!(
                    "{} {op} {}",
                    quote_ident(&col.name),
                    literal(&col.kind, Some(&after[j]))
                ));
            }
            ors.push(format!("({})", ands.join(" AND ")));
        }
        ors.join(" OR ")
    }

    /// `ORDER BY pk1, pk2`.
    pub fn pk_order(&self) -> String {
        let names: Vec<String> = self
            .primary_key
            .iter()
            .map(|&i| quote_ident(&self.columns[i].name))
            .collect();
        names.join(", ")
    }

    /// The primary key's values of `row`.
    pub fn pk_of(&self, row: &[Option<Vec<u8>>]) -> Vec<Vec<u8>> {
        self.primary_key
            .iter()
            .map(|&i| row.get(i).cloned().flatten().unwrap_or_default())
            .collect()
    }

    /// A column's value as the sharding algorithm takes it.
    pub fn shard_value(&self, row: &[Option<Vec<u8>>], name: &str) -> Option<ShardValue> {
        let i = self.position(name)?;
        let raw = row.get(i)?.as_deref()?;
        Some(match &self.columns[i].kind {
            Kind::Integer { .. } => std::str::from_utf8(raw)
                .ok()
                .and_then(|t| t.parse::<i128>().ok())
                .map_or_else(|| ShardValue::Str(raw.to_vec()), ShardValue::Int),
            _ => ShardValue::Str(raw.to_vec()),
        })
    }
}

/// `name` in backquotes.
pub fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// One stored value as an SQL literal that stores the same value in a column of this kind,
/// whatever the session's character set.
pub fn literal(kind: &Kind, value: Option<&[u8]>) -> String {
    let Some(v) = value else {
        return "NULL".into();
    };
    match kind {
        Kind::Integer { .. } | Kind::Plain | Kind::Timestamp => {
            quote_literal(&String::from_utf8_lossy(v))
        }
        Kind::Text { charset, collation }
        | Kind::Members {
            charset, collation, ..
        } => format!("CONVERT(X'{}' USING {charset}) COLLATE {collation}", hex(v)),
        Kind::Bytes => format!("X'{}'", hex(v)),
    }
}

/// One stored value as an SQL literal to store in a column (not to compare with): text that is
/// plain ASCII, or UTF-8 going to a UTF-8 column, is sent as a quoted string, which is shorter
/// and cheaper for the server than [`literal`]'s conversion. Sessions writing with it use
/// `SET NAMES utf8mb4`.
pub fn value_literal(kind: &Kind, value: Option<&[u8]>) -> String {
    let text_kind = match kind {
        Kind::Text { charset, .. } | Kind::Members { charset, .. } => Some(charset.as_str()),
        _ => None,
    };
    if let (Some(charset), Some(v)) = (text_kind, value) {
        let utf8_column = matches!(charset, "utf8mb4" | "utf8mb3" | "utf8");
        if let Ok(s) = std::str::from_utf8(v) {
            if s.is_ascii() || utf8_column {
                return quote_literal(s);
            }
        }
    }
    literal(kind, value)
}

fn hex(v: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(v.len() * 2);
    for b in v {
        let _ = write!(s, "{b:02X}");
    }
    s
}

/// The kind of a column from its `information_schema.COLUMNS` definition.
pub fn kind_of(
    data_type: &str,
    column_type: &str,
    charset: Option<&str>,
    collation: Option<&str>,
) -> Kind {
    let unsigned = column_type.to_ascii_lowercase().contains("unsigned");
    let text = |charset: &str, collation: &str| Kind::Text {
        charset: charset.into(),
        collation: collation.into(),
    };
    match data_type.to_ascii_lowercase().as_str() {
        "tinyint" => Kind::Integer { bits: 8, unsigned },
        "smallint" => Kind::Integer { bits: 16, unsigned },
        "mediumint" => Kind::Integer { bits: 24, unsigned },
        "int" | "integer" => Kind::Integer { bits: 32, unsigned },
        "bigint" => Kind::Integer { bits: 64, unsigned },
        "timestamp" => Kind::Timestamp,
        t @ ("enum" | "set") => match (charset, collation) {
            (Some(cs), Some(co)) => Kind::Members {
                set: t == "set",
                members: members_of(column_type),
                charset: cs.into(),
                collation: co.into(),
            },
            _ => Kind::Bytes,
        },
        "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" | "json" => {
            match (charset, collation) {
                (Some(cs), Some(co)) if cs != "binary" => text(cs, co),
                _ => Kind::Bytes,
            }
        }
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" | "bit"
        | "geometry" | "point" | "linestring" | "polygon" | "multipoint" | "multilinestring"
        | "multipolygon" | "geometrycollection" => Kind::Bytes,
        _ => match (charset, collation) {
            (Some(cs), Some(co)) if cs != "binary" => text(cs, co),
            _ => Kind::Plain,
        },
    }
}

/// The members of `enum('a','b''c')` or `set(…)`, unquoted.
fn members_of(column_type: &str) -> Vec<Vec<u8>> {
    let b = column_type.as_bytes();
    let mut out = Vec::new();
    let mut i = b.iter().position(|&c| c == b'(').map_or(b.len(), |p| p + 1);
    while i < b.len() {
        if b[i] != b'\'' {
            i += 1;
            continue;
        }
        let mut cur = Vec::new();
        i += 1;
        while i < b.len() {
            if b[i] == b'\'' && b.get(i + 1) == Some(&b'\'') {
                cur.push(b'\'');
                i += 2;
            } else if b[i] == b'\'' {
                i += 1;
                break;
            } else if b[i] == b'\\' && i + 1 < b.len() {
                cur.push(b[i + 1]);
                i += 2;
            } else {
                cur.push(b[i]);
                i += 1;
            }
        }
        out.push(cur);
    }
    out
}

/// The shape of `schema.table` on one backend; `None` when the table is not there.
pub async fn read_shape(
    conn: &mut BackendConn,
    schema: &str,
    table: &str,
) -> Result<Option<TableShape>, String> {
    let sql = format!(
        "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_SET_NAME, COLLATION_NAME, \
         COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} \
         ORDER BY ORDINAL_POSITION",
        quote_literal(schema),
        quote_literal(table)
    );
    let rows = conn.query_rows(&sql).await.map_err(|e| e.to_string())?;
    if rows.is_empty() {
        return Ok(None);
    }
    let text = |v: &Option<Vec<u8>>| {
        v.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    let mut columns = Vec::new();
    for r in &rows {
        let [name, data_type, column_type, charset, collation, _] = r.as_slice() else {
            return Err("unexpected information_schema answer".into());
        };
        let (data_type, column_type) = (
            text(data_type).unwrap_or_default(),
            text(column_type).unwrap_or_default(),
        );
        columns.push(Column {
            name: text(name).unwrap_or_default(),
            kind: kind_of(
                &data_type,
                &column_type,
                text(charset).as_deref(),
                text(collation).as_deref(),
            ),
        });
    }
    // The primary key's columns in key order.
    let sql = format!(
        "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = {} \
         AND TABLE_NAME = {} AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
        quote_literal(schema),
        quote_literal(table)
    );
    let pk_rows = conn.query_rows(&sql).await.map_err(|e| e.to_string())?;
    let mut primary_key = Vec::new();
    for r in &pk_rows {
        let name = r.first().and_then(text).unwrap_or_default();
        if let Some(i) = columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(&name))
        {
            primary_key.push(i);
        }
    }
    Ok(Some(TableShape {
        columns,
        primary_key,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> TableShape {
        TableShape {
            columns: vec![
                Column {
                    name: "id".into(),
                    kind: Kind::Integer {
                        bits: 64,
                        unsigned: true,
                    },
                },
                Column {
                    name: "na`me".into(),
                    kind: kind_of(
                        "varchar",
                        "varchar(10)",
                        Some("latin1"),
                        Some("latin1_swedish_ci"),
                    ),
                },
            ],
            primary_key: vec![0, 1],
        }
    }

    #[test]
    fn renders_values_by_kind() {
        let s = shape();
        assert_eq!(literal(&s.columns[0].kind, Some(b"42")), "'42'");
        assert_eq!(
            literal(&s.columns[1].kind, Some(&[0xE9])),
            "CONVERT(X'E9' USING latin1) COLLATE latin1_swedish_ci"
        );
        assert_eq!(literal(&Kind::Bytes, Some(&[0, 1])), "X'0001'");
        assert_eq!(literal(&Kind::Bytes, None), "NULL");
    }

    #[test]
    fn values_to_store_are_plain_strings_when_the_server_reads_them_so() {
        let latin1 = kind_of(
            "varchar",
            "varchar(9)",
            Some("latin1"),
            Some("latin1_swedish_ci"),
        );
        let utf8 = kind_of("text", "text", Some("utf8mb4"), Some("utf8mb4_general_ci"));
        assert_eq!(value_literal(&latin1, Some(b"it's")), "'it''s'");
        assert_eq!(
            value_literal(&latin1, Some(&[0xE9])),
            "CONVERT(X'E9' USING latin1) COLLATE latin1_swedish_ci"
        );
        assert_eq!(value_literal(&utf8, Some("é".as_bytes())), "'é'");
        assert_eq!(value_literal(&Kind::Bytes, Some(b"a")), "X'61'");
        assert_eq!(value_literal(&utf8, None), "NULL");
    }

    #[test]
    fn keyset_condition_walks_the_key_in_order() {
        let s = shape();
        assert_eq!(
            s.pk_after(&[b"7".to_vec(), b"x".to_vec()]),
            "(`id` > '7') OR (`id` = '7' AND `na``me` > CONVERT(X'78' USING latin1) COLLATE latin1_swedish_ci)"
        );
        assert_eq!(s.pk_order(), "`id`, `na``me`");
    }

    #[test]
    fn reads_kinds_and_members() {
        assert_eq!(
            kind_of("int", "int(10) unsigned", None, None),
            Kind::Integer {
                bits: 32,
                unsigned: true
            }
        );
        assert_eq!(kind_of("decimal", "decimal(10,2)", None, None), Kind::Plain);
        assert_eq!(
            kind_of("varbinary", "varbinary(3)", None, None),
            Kind::Bytes
        );
        match kind_of(
            "enum",
            "enum('a','b''c','d\\\\e')",
            Some("utf8mb4"),
            Some("utf8mb4_bin"),
        ) {
            Kind::Members { members, set, .. } => {
                assert!(!set);
                assert_eq!(
                    members,
                    vec![b"a".to_vec(), b"b'c".to_vec(), b"d\\e".to_vec()]
                );
            }
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn sharding_values_are_integers_for_integer_columns() {
        let s = shape();
        let row = vec![Some(b"12".to_vec()), Some(b"ab".to_vec())];
        assert_eq!(s.shard_value(&row, "ID"), Some(ShardValue::Int(12)));
        assert_eq!(
            s.shard_value(&row, "na`me"),
            Some(ShardValue::Str(b"ab".to_vec()))
        );
    }
}
