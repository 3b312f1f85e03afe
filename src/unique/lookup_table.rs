//! A global key's lookup table: one row per key value the table's rows hold, in the database
//! `idgate_unique` of the lookup backend, with the key's own columns (same types, charsets and
//! collations, so values compare as on the shards) and the key's own name, and the shard that
//! holds the row (`idgate_owner`, a hint: `WHERE key = value` goes to that shard first). The
//! statements idgate runs on it and, to check a duplicate, on the shards.

use super::{GlobalKey, KeyColumn};
use crate::route::quote_ident;

/// The database holding every lookup table.
pub const DATABASE: &str = "idgate_unique";

/// The lookup table's qualified, quoted name for `schema.table`'s key `key` (MariaDB allows 64
/// characters; longer names end in a hash of the whole).
pub fn name(schema: &str, table: &str, key: &str) -> String {
    let full = format!("{schema}__{table}__{key}");
    let short = if full.chars().count() <= 64 {
        full
    } else {
        let head: String = full.chars().take(47).collect();
        format!("{head}_{:016x}", fnv1a(full.as_bytes()))
    };
    format!("{}.{}", quote_ident(DATABASE), quote_ident(&short))
}

/// A stable hash of a name (not randomized per process, unlike std's).
fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn column_def(c: &KeyColumn) -> String {
    let mut d = format!("{} {}", quote_ident(&c.name), c.column_type);
    if let Some(cs) = &c.charset {
        d.push_str(&format!(" CHARACTER SET {cs}"));
    }
    if let Some(co) = &c.collation {
        d.push_str(&format!(" COLLATE {co}"));
    }
    d.push_str(" NOT NULL");
    d
}

fn key_part(c: &KeyColumn) -> String {
    match c.sub_part {
        Some(n) => format!("{}({n})", quote_ident(&c.name)),
        None => quote_ident(&c.name),
    }
}

/// The owner column: NULL (unknown) in lookups filled before idgate kept owners.
const OWNER_COLUMN: &str = "idgate_owner VARBINARY(255) NULL DEFAULT NULL";

/// A shard's name as the owner column's value (NULL for a name longer than the column).
fn owner_literal(shard: &str) -> String {
    if shard.len() > 255 {
        return "NULL".into();
    }
    let hex: String = shard.bytes().map(|b| format!("{b:02X}")).collect();
    format!("X'{hex}'")
}

/// `CREATE TABLE IF NOT EXISTS` for the lookup table. `idgate_flip` changes on every claim of
/// an existing value, so the backend reports it as updated (2 rows) whatever the client flags.
pub fn create_sql(k: &GlobalKey) -> String {
    let cols: Vec<String> = k.columns.iter().map(column_def).collect();
    let parts: Vec<String> = k.columns.iter().map(key_part).collect();
    let key = if k.name.eq_ignore_ascii_case("PRIMARY") {
        "PRIMARY KEY".to_string()
    } else {
        format!("UNIQUE KEY {}", quote_ident(&k.name))
    };
    format!(
        "CREATE TABLE IF NOT EXISTS {} ({}, idgate_flip TINYINT NOT NULL DEFAULT 0, \
         {OWNER_COLUMN}, {key} ({})) ENGINE=InnoDB",
        k.lookup,
        cols.join(", "),
        parts.join(", ")
    )
}

/// Adds the owner column to a lookup table made before idgate kept owners.
pub fn add_owner_sql(k: &GlobalKey) -> String {
    format!(
        "ALTER TABLE {} ADD COLUMN IF NOT EXISTS {OWNER_COLUMN}",
        k.lookup
    )
}

/// Values (SQL expressions, one per key column) as a list.
fn list(values: &[Vec<u8>]) -> Vec<u8> {
    values.join(&b", "[..])
}

/// Claims one key value (SQL expressions as the client wrote them, in its character set, one
/// per key column) for a row on shard `owner`: 1 affected row when the value is new, 2 when it
/// was there (its owner unchanged: `own_sql` moves it once the row takes the value); either way
/// the entry stays locked until the statement's transaction ends, so two sessions claiming one
/// value take turns.
pub fn claim_sql(k: &GlobalKey, values: &[Vec<u8>], owner: &str) -> Vec<u8> {
    let cols: Vec<String> = k.columns.iter().map(|c| quote_ident(&c.name)).collect();
    [
        format!(
            "INSERT INTO {} ({}, idgate_flip, idgate_owner) VALUES (",
            k.lookup,
            cols.join(", ")
        )
        .as_bytes(),
        &list(values),
        format!(
            ", 0, {}) ON DUPLICATE KEY UPDATE idgate_flip = 1 - idgate_flip",
            owner_literal(owner)
        )
        .as_bytes(),
    ]
    .concat()
}

/// Run on the lookup backend: the row on shard `owner` now holds the value.
pub fn own_sql(k: &GlobalKey, values: &[Vec<u8>], owner: &str) -> Vec<u8> {
    let head = format!(
        "UPDATE {} SET idgate_owner = {} WHERE ",
        k.lookup,
        owner_literal(owner)
    );
    [head.as_bytes(), &holds(k, values)].concat()
}

/// Run on the lookup backend: the shard whose row holds the value, as last recorded; two rows
/// back mean the value does not name one entry.
pub fn owner_sql(k: &GlobalKey, values: &[&[u8]]) -> Vec<u8> {
    let values: Vec<Vec<u8>> = values.iter().map(|v| v.to_vec()).collect();
    let head = format!("SELECT idgate_owner FROM {} WHERE ", k.lookup);
    [head.as_bytes(), &holds(k, &values), b" LIMIT 2"].concat()
}

/// The condition "this row holds the key value", as the shard's unique index compares it.
fn holds(k: &GlobalKey, values: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (c, v)) in k.columns.iter().zip(values).enumerate() {
        if i > 0 {
            out.extend_from_slice(b" AND ");
        }
        let col = quote_ident(&c.name);
        match c.sub_part {
            Some(n) => {
                out.extend(format!("LEFT({col}, {n}) = LEFT(").into_bytes());
                out.extend_from_slice(v);
                out.extend(format!(", {n})").into_bytes());
            }
            None => {
                out.extend(format!("{col} = ").into_bytes());
                out.extend_from_slice(v);
            }
        }
    }
    out
}

fn table(k: &GlobalKey) -> String {
    format!("{}.{}", quote_ident(&k.schema), quote_ident(&k.table))
}

/// Run on a shard: whether it holds a row with the key value, locking that row.
pub fn holder_sql(k: &GlobalKey, values: &[Vec<u8>]) -> Vec<u8> {
    let head = format!("SELECT 1 FROM {} WHERE ", table(k));
    [head.as_bytes(), &holds(k, values), b" LIMIT 1 FOR UPDATE"].concat()
}

/// Run on a shard: whether a row that an UPDATE does not change (`condition` is its WHERE)
/// holds the key value, locking that row.
pub fn other_holder_sql(k: &GlobalKey, values: &[Vec<u8>], condition: &[u8]) -> Vec<u8> {
    let head = format!("SELECT 1 FROM {} WHERE ", table(k));
    [
        head.as_bytes(),
        &holds(k, values),
        b" AND ((",
        condition,
        b") IS NOT TRUE) LIMIT 1 FOR UPDATE",
    ]
    .concat()
}

/// Run on the lookup backend: the value is free again (its row took another).
pub fn release_sql(k: &GlobalKey, values: &[Vec<u8>]) -> Vec<u8> {
    let head = format!("DELETE FROM {} WHERE ", k.lookup);
    [head.as_bytes(), &holds(k, values)].concat()
}

/// Run on a shard: deletes the row holding the key value (REPLACE of a row owned elsewhere).
pub fn delete_holder_sql(k: &GlobalKey, values: &[Vec<u8>]) -> Vec<u8> {
    let head = format!("DELETE FROM {} WHERE ", table(k));
    [head.as_bytes(), &holds(k, values)].concat()
}

/// Run on a shard at fill time: the next `limit` key values its rows hold, in key order, after
/// `after` (the last values of the page before), each read as [`read_expr`] reads it.
pub fn values_sql(k: &GlobalKey, after: Option<&[Vec<u8>]>, limit: usize) -> Vec<u8> {
    let cols: Vec<String> = k.columns.iter().map(|c| quote_ident(&c.name)).collect();
    let hexed: Vec<String> = k.columns.iter().map(read_expr).collect();
    let conds: Vec<String> = cols.iter().map(|c| format!("{c} IS NOT NULL")).collect();
    let mut sql = format!(
        "SELECT {} FROM {} WHERE {}",
        hexed.join(", "),
        table(k),
        conds.join(" AND ")
    )
    .into_bytes();
    if let Some(after) = after {
        sql.extend(format!(" AND ({}) > (", cols.join(", ")).into_bytes());
        sql.extend(list(after));
        sql.push(b')');
    }
    sql.extend(format!(" ORDER BY {} LIMIT {limit}", cols.join(", ")).into_bytes());
    sql
}

/// Adds key values (SQL expressions, a row per key value) of rows on shard `owner` to the
/// lookup; a value already there fails the statement with 1062.
pub fn fill_sql(k: &GlobalKey, rows: &[Vec<Vec<u8>>], owner: &str) -> Vec<u8> {
    let cols: Vec<String> = k.columns.iter().map(|c| quote_ident(&c.name)).collect();
    let owner = owner_literal(owner);
    let mut sql = format!(
        "INSERT INTO {} ({}, idgate_owner) VALUES ",
        k.lookup,
        cols.join(", ")
    )
    .into_bytes();
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            sql.extend_from_slice(b", ");
        }
        sql.push(b'(');
        sql.extend(list(r));
        sql.extend(format!(", {owner})").into_bytes());
    }
    sql
}

/// How a key column's value is read back from a table and written again as SQL, exactly,
/// whatever the connection's character set.
enum Form {
    /// A number: its text is ASCII.
    Number,
    /// A character string: read as `HEX()`, written as `_charset X'…'` in the column's own
    /// character set.
    Text,
    /// A binary string: read as `HEX()`, written as `X'…'`.
    Bytes,
    /// Anything else (dates, times, INET6, UUID): its text is ASCII, written quoted.
    Plain,
}

fn form(c: &KeyColumn) -> Form {
    let t = c.column_type.to_ascii_lowercase();
    if c.charset.is_some() {
        Form::Text
    } else if [
        "binary",
        "varbinary",
        "tinyblob",
        "blob",
        "mediumblob",
        "longblob",
    ]
    .iter()
    .any(|b| t.starts_with(b))
    {
        Form::Bytes
    } else if c.is_integer()
        || ["decimal", "float", "double", "bit"]
            .iter()
            .any(|n| t.starts_with(n))
    {
        Form::Number
    } else {
        Form::Plain
    }
}

/// What a SELECT reads for column `c` to write its value again with [`literal_from_read`].
pub fn read_expr(c: &KeyColumn) -> String {
    let col = quote_ident(&c.name);
    match form(c) {
        Form::Text | Form::Bytes => format!("HEX({col})"),
        Form::Number if c.column_type.to_ascii_lowercase().starts_with("bit") => {
            format!("{col} + 0")
        }
        Form::Number | Form::Plain => col,
    }
}

/// The value read by [`read_expr`] as a message shows it.
pub fn shown_from_read(c: &KeyColumn, v: &[u8]) -> String {
    match form(c) {
        Form::Text | Form::Bytes => {
            let bytes: Vec<u8> = v
                .chunks(2)
                .filter_map(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Form::Number | Form::Plain => String::from_utf8_lossy(v).into_owned(),
    }
}

/// The value read by [`read_expr`] as an SQL expression for column `c`.
pub fn literal_from_read(c: &KeyColumn, v: &[u8]) -> Vec<u8> {
    // HEX() and numbers are ASCII; anything else is not what `read_expr` reads.
    let text: String = v
        .iter()
        .filter(|b| b.is_ascii_graphic() || **b == b' ')
        .map(|&b| char::from(b))
        .collect();
    match form(c) {
        Form::Number => text.into_bytes(),
        Form::Text => match &c.charset {
            Some(cs) => format!("_{cs} X'{text}'").into_bytes(),
            None => format!("X'{text}'").into_bytes(),
        },
        Form::Bytes => format!("X'{text}'").into_bytes(),
        Form::Plain => crate::exec::metadata::quote_literal(&text).into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> GlobalKey {
        let col = |n: &str, ty: &str, cs: bool, sub: Option<u32>| KeyColumn {
            name: n.into(),
            column_type: ty.into(),
            charset: cs.then(|| "utf8mb4".into()),
            collation: cs.then(|| "utf8mb4_general_ci".into()),
            sub_part: sub,
            default: None,
        };
        GlobalKey {
            schema: "app".into(),
            table: "users".into(),
            name: "email".into(),
            columns: vec![
                col("tenant", "int(11)", false, None),
                col("email", "varchar(80)", true, Some(20)),
            ],
            backend: "main".into(),
            lookup: name("app", "users", "email"),
        }
    }

    #[test]
    fn the_lookup_copies_the_key_and_checks_values_as_the_shard_index_does() {
        let k = key();
        assert_eq!(k.lookup, "`idgate_unique`.`app__users__email`");
        assert_eq!(
            create_sql(&k),
            "CREATE TABLE IF NOT EXISTS `idgate_unique`.`app__users__email` (`tenant` int(11) \
             NOT NULL, `email` varchar(80) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT \
             NULL, idgate_flip TINYINT NOT NULL DEFAULT 0, idgate_owner VARBINARY(255) NULL \
             DEFAULT NULL, UNIQUE KEY `email` (`tenant`, `email`(20))) ENGINE=InnoDB"
        );
        let v = [b"7".to_vec(), b"'a@x'".to_vec()];
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        assert!(text(claim_sql(&k, &v, "s1")).contains("VALUES (7, 'a@x', 0, X'7331')"));
        assert_eq!(
            String::from_utf8(owner_sql(&k, &[b"7", b"'a@x'"])).unwrap(),
            "SELECT idgate_owner FROM `idgate_unique`.`app__users__email` WHERE `tenant` = 7 AND \
             LEFT(`email`, 20) = LEFT('a@x', 20) LIMIT 2"
        );
        assert!(text(own_sql(&k, &v, &"s".repeat(256))).contains("SET idgate_owner = NULL WHERE"));
        assert_eq!(
            text(fill_sql(&k, &[v.to_vec()], "s1")),
            "INSERT INTO `idgate_unique`.`app__users__email` (`tenant`, `email`, idgate_owner) \
             VALUES (7, 'a@x', X'7331')"
        );
        assert_eq!(
            text(holder_sql(&k, &v)),
            "SELECT 1 FROM `app`.`users` WHERE `tenant` = 7 AND LEFT(`email`, 20) = \
             LEFT('a@x', 20) LIMIT 1 FOR UPDATE"
        );
        assert_eq!(
            text(values_sql(&k, Some(&v), 100)),
            "SELECT `tenant`, HEX(`email`) FROM `app`.`users` WHERE `tenant` IS NOT NULL AND \
             `email` IS NOT NULL AND (`tenant`, `email`) > (7, 'a@x') ORDER BY `tenant`, `email` \
             LIMIT 100"
        );
        // Values read back are written again exactly, in the column's own character set.
        assert_eq!(literal_from_read(&k.columns[0], b"-12"), b"-12");
        assert_eq!(
            literal_from_read(&k.columns[1], b"E96127"),
            b"_utf8mb4 X'E96127'"
        );
        let mut day = k.columns[0].clone();
        day.column_type = "date".into();
        assert_eq!(read_expr(&day), "`tenant`");
        assert_eq!(literal_from_read(&day, b"2026-11-27"), b"'2026-11-27'");
        let mut raw = k.columns[0].clone();
        raw.column_type = "varbinary(16)".into();
        assert_eq!(read_expr(&raw), "HEX(`tenant`)");
        assert_eq!(literal_from_read(&raw, b"00FF"), b"X'00FF'");
        let long = name("s", &"t".repeat(80), "k");
        assert!(long.len() <= 64 + 20, "{long}");
        assert_eq!(long, name("s", &"t".repeat(80), "k"));
    }
}
