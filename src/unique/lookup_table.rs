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

/// Claims one key value (SQL expressions, one per key column) for a row on shard `owner`: 1
/// affected row when the value is new, 2 when it was there (its owner unchanged: `own_sql`
/// moves it once the row takes the value); either way the entry stays locked until the
/// statement's transaction ends, so two sessions claiming one value take turns.
pub fn claim_sql(k: &GlobalKey, values: &[String], owner: &str) -> String {
    let cols: Vec<String> = k.columns.iter().map(|c| quote_ident(&c.name)).collect();
    format!(
        "INSERT INTO {} ({}, idgate_flip, idgate_owner) VALUES ({}, 0, {}) \
         ON DUPLICATE KEY UPDATE idgate_flip = 1 - idgate_flip",
        k.lookup,
        cols.join(", "),
        values.join(", "),
        owner_literal(owner)
    )
}

/// Run on the lookup backend: the row on shard `owner` now holds the value.
pub fn own_sql(k: &GlobalKey, values: &[String], owner: &str) -> String {
    format!(
        "UPDATE {} SET idgate_owner = {} WHERE {}",
        k.lookup,
        owner_literal(owner),
        holds(k, values)
    )
}

/// Run on the lookup backend: the shard whose row holds the value (SQL text in the client's
/// character set, one per key column), as last recorded; two rows back mean the value does not
/// name one entry.
pub fn owner_sql(k: &GlobalKey, values: &[&[u8]]) -> Vec<u8> {
    let mut sql = format!("SELECT idgate_owner FROM {} WHERE ", k.lookup).into_bytes();
    sql.extend(holds_bytes(k, values));
    sql.extend_from_slice(b" LIMIT 2");
    sql
}

/// The condition "this row holds the key value", as the shard's unique index compares it.
fn holds(k: &GlobalKey, values: &[String]) -> String {
    let v: Vec<&[u8]> = values.iter().map(|s| s.as_bytes()).collect();
    String::from_utf8_lossy(&holds_bytes(k, &v)).into_owned()
}

/// [`holds`] for values as the client wrote them (in its character set, not always UTF-8).
fn holds_bytes(k: &GlobalKey, values: &[&[u8]]) -> Vec<u8> {
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
pub fn holder_sql(k: &GlobalKey, values: &[String]) -> String {
    format!(
        "SELECT 1 FROM {} WHERE {} LIMIT 1 FOR UPDATE",
        table(k),
        holds(k, values)
    )
}

/// Run on a shard: whether a row that an UPDATE does not change (`condition` is its WHERE)
/// holds the key value, locking that row.
pub fn other_holder_sql(k: &GlobalKey, values: &[String], condition: &str) -> String {
    format!(
        "SELECT 1 FROM {} WHERE {} AND (({condition}) IS NOT TRUE) LIMIT 1 FOR UPDATE",
        table(k),
        holds(k, values)
    )
}

/// Run on the lookup backend: the value is free again (its row took another).
pub fn release_sql(k: &GlobalKey, values: &[String]) -> String {
    format!("DELETE FROM {} WHERE {}", k.lookup, holds(k, values))
}

/// Run on a shard: deletes the row holding the key value (REPLACE of a row owned elsewhere).
pub fn delete_holder_sql(k: &GlobalKey, values: &[String]) -> String {
    format!("DELETE FROM {} WHERE {}", table(k), holds(k, values))
}

/// Run on a shard at fill time: the next `limit` key values its rows hold, in key order, after
/// `after` (the last values of the page before).
pub fn values_sql(k: &GlobalKey, after: Option<&[String]>, limit: usize) -> String {
    let cols: Vec<String> = k.columns.iter().map(|c| quote_ident(&c.name)).collect();
    let mut conds: Vec<String> = cols.iter().map(|c| format!("{c} IS NOT NULL")).collect();
    if let Some(after) = after {
        conds.push(format!("({}) > ({})", cols.join(", "), after.join(", ")));
    }
    format!(
        "SELECT {} FROM {} WHERE {} ORDER BY {} LIMIT {limit}",
        cols.join(", "),
        table(k),
        conds.join(" AND "),
        cols.join(", ")
    )
}

/// Adds key values (SQL expressions, a row per key value) of rows on shard `owner` to the
/// lookup; a value already there fails the statement with 1062.
pub fn fill_sql(k: &GlobalKey, rows: &[Vec<String>], owner: &str) -> String {
    let cols: Vec<String> = k.columns.iter().map(|c| quote_ident(&c.name)).collect();
    let owner = owner_literal(owner);
    let values: Vec<String> = rows
        .iter()
        .map(|r| format!("({}, {owner})", r.join(", ")))
        .collect();
    format!(
        "INSERT INTO {} ({}, idgate_owner) VALUES {}",
        k.lookup,
        cols.join(", "),
        values.join(", ")
    )
}

/// A value read in the text protocol (connection in utf8mb4) as an SQL expression for `c`.
pub fn literal_from_text(c: &KeyColumn, v: &[u8]) -> String {
    let numeric = c.charset.is_none()
        && v.iter()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
        && !v.is_empty();
    let hex: String = v.iter().map(|b| format!("{b:02X}")).collect();
    if numeric && !c.column_type.starts_with("bit") {
        String::from_utf8_lossy(v).into_owned()
    } else if c.charset.is_some() {
        format!("_utf8mb4 X'{hex}'")
    } else {
        format!("X'{hex}'")
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
        let v = ["7".to_string(), "'a@x'".to_string()];
        assert!(claim_sql(&k, &v, "s1").contains("VALUES (7, 'a@x', 0, X'7331')"));
        assert_eq!(
            String::from_utf8(owner_sql(&k, &[b"7", b"'a@x'"])).unwrap(),
            "SELECT idgate_owner FROM `idgate_unique`.`app__users__email` WHERE `tenant` = 7 AND \
             LEFT(`email`, 20) = LEFT('a@x', 20) LIMIT 2"
        );
        assert!(own_sql(&k, &v, &"s".repeat(256)).contains("SET idgate_owner = NULL WHERE"));
        assert_eq!(
            fill_sql(&k, &[v.to_vec()], "s1"),
            "INSERT INTO `idgate_unique`.`app__users__email` (`tenant`, `email`, idgate_owner) \
             VALUES (7, 'a@x', X'7331')"
        );
        assert_eq!(
            holder_sql(&k, &v),
            "SELECT 1 FROM `app`.`users` WHERE `tenant` = 7 AND LEFT(`email`, 20) = \
             LEFT('a@x', 20) LIMIT 1 FOR UPDATE"
        );
        assert_eq!(literal_from_text(&k.columns[0], b"-12"), "-12");
        assert_eq!(
            values_sql(&k, Some(&v), 100),
            "SELECT `tenant`, `email` FROM `app`.`users` WHERE `tenant` IS NOT NULL AND `email` IS \
             NOT NULL AND (`tenant`, `email`) > (7, 'a@x') ORDER BY `tenant`, `email` LIMIT 100"
        );
        assert_eq!(literal_from_text(&k.columns[1], b"a'"), "_utf8mb4 X'6127'");
        let long = name("s", &"t".repeat(80), "k");
        assert!(long.len() <= 64 + 20, "{long}");
        assert_eq!(long, name("s", &"t".repeat(80), "k"));
    }
}
