//! Whether a unique key of a sharded table holds across its shards. Each shard checks a unique
//! key for the rows it holds; two rows that agree on the key hold it across shards only if they
//! surely land on the same shard, i.e. the key contains what picks the shard. Otherwise
//! INSERT IGNORE, ON DUPLICATE KEY UPDATE, REPLACE and plain duplicates go wrong silently, so
//! such a key needs the table's rule to say `unique: global` (held through lookup tables) or
//! `unique: per_shard` (accepting it knowingly).

use super::{Placement, TableRule};
use crate::config::tables::UniqueScope;
use crate::sql::{InsertAnalysis, ER_NOT_SUPPORTED_YET};
use crate::wire::errors::SqlError;

/// Whether a unique key on `columns` holds across the shards of `rule`'s table.
pub fn holds_across_shards(rule: &TableRule, columns: &[String]) -> bool {
    let Placement::Sharded {
        columns: sharding,
        algorithm,
        ..
    } = &rule.placement
    else {
        return true; // one backend, or every row everywhere: each server checks all rows
    };
    let has = |c: &str| columns.iter().any(|k| k.eq_ignore_ascii_case(c));
    // Ids idgate generates are unique across every shard by construction.
    if rule.generator.is_some() && has(&rule.id_column) {
        return true;
    }
    match algorithm {
        // `slot` takes the id or its bias column, which carry the same low bits: rows that
        // agree on either land together.
        super::Algorithm::Slot { .. } => sharding.iter().any(|c| has(c)),
        _ => sharding.iter().all(|c| has(c)),
    }
}

/// The refusal for a unique key that would hold per shard only.
pub fn per_shard_refusal(rule: &TableRule, key: &str, columns: &[String]) -> SqlError {
    let sharding = match &rule.placement {
        Placement::Sharded { columns, .. } => columns.join(", "),
        _ => String::new(),
    };
    SqlError::new(
        ER_NOT_SUPPORTED_YET,
        b"42000",
        format!(
            "idgate: unique key {key} ({}) of sharded table `{}` does not contain its sharding \
             column ({sharding}), so each shard would check it for its own rows only and \
             duplicates across shards would pass silently; add the sharding column to the key, \
             or set under tables.{} either `unique: global` (idgate keeps a lookup table that \
             holds the key across shards) or `unique: per_shard` (to accept that knowingly)",
            columns.join(", "),
            rule.name,
            rule.name
        ),
    )
}

/// An INSERT IGNORE, REPLACE or INSERT … ON DUPLICATE KEY UPDATE into a table over several
/// shards whose rule accepts unique keys held per shard (`unique: per_shard`): the statement asks
/// the keys which rows to leave out, replace or update, and each shard answers for its own rows
/// only, so a duplicate of a row on another shard would be written as a new row where one
/// server leaves it out (Django's many-to-many `add()` writes its link rows with INSERT IGNORE
/// and relies on the pair's key; the duplicates then count twice in every join). Refused: a
/// wrong row written is worse than a refusal.
pub fn per_shard_key_write(a: &InsertAnalysis, rule: &TableRule) -> Result<(), SqlError> {
    let (what, verb) = if a.replace {
        ("REPLACE", "replaces the existing row with")
    } else if a.on_duplicate_update {
        (
            "INSERT ... ON DUPLICATE KEY UPDATE",
            "updates the existing row for",
        )
    } else if a.ignore {
        ("INSERT IGNORE", "leaves out")
    } else {
        return Ok(());
    };
    refuse_per_shard(rule, what, verb)
}

/// LOAD DATA into such a table: with LOCAL, MariaDB skips a row whose key is there already
/// (as with IGNORE), or replaces the existing row (REPLACE); each shard would do so for its
/// own rows only.
pub fn per_shard_key_load(replace: bool, rule: &TableRule) -> Result<(), SqlError> {
    if replace {
        refuse_per_shard(
            rule,
            "LOAD DATA ... REPLACE",
            "replaces the existing row with",
        )
    } else {
        refuse_per_shard(rule, "LOAD DATA LOCAL", "skips")
    }
}

/// The refusal of `what` (which one server answers by what it `verb` a duplicate row) into
/// `rule`'s table, when its keys hold per shard over several shards.
fn refuse_per_shard(rule: &TableRule, what: &str, verb: &str) -> Result<(), SqlError> {
    let Placement::Sharded { shards, .. } = &rule.placement else {
        return Ok(());
    };
    if rule.unique != Some(UniqueScope::PerShard) || shards.len() < 2 {
        return Ok(());
    }
    Err(SqlError::new(
        ER_NOT_SUPPORTED_YET,
        b"42000",
        format!(
            "idgate: {what} into `{t}` is not supported: the table is sharded over {n} shards \
             with `unique: per_shard`, so each shard would check its unique keys against its own \
             rows only and a row duplicating one on another shard would be written as a new row, \
             where one server {verb} it; set `unique: global` under tables.{t} (idgate then holds \
             its unique keys across the shards and {what} answers as one server), or, when every \
             unique key of `{t}` contains its sharding column, drop `unique: per_shard`",
            t = rule.name,
            n = shards.len(),
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tables::ExplicitIds;
    use crate::route::Algorithm;

    fn rule(columns: &[&str], algorithm: Algorithm, generator: bool) -> TableRule {
        TableRule {
            schema: None,
            name: "t".into(),
            id_column: "id".into(),
            generator: generator.then(|| "seq".into()),
            explicit_ids: ExplicitIds::Allow,
            bias_column: None,
            unique: None,
            placement: Placement::Sharded {
                columns: columns.iter().map(|c| c.to_string()).collect(),
                algorithm,
                shards: vec!["a".into(), "b".into()],
            },
        }
    }

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn a_key_holds_across_shards_when_it_contains_what_picks_the_shard() {
        let by_user = rule(&["user_id"], Algorithm::Mod, true);
        assert!(holds_across_shards(&by_user, &cols(&["USER_ID", "email"])));
        assert!(!holds_across_shards(&by_user, &cols(&["email"])));
        // The generated id is unique everywhere.
        assert!(holds_across_shards(&by_user, &cols(&["id"])));
        let plain = rule(&["user_id"], Algorithm::Mod, false);
        assert!(!holds_across_shards(&plain, &cols(&["id"])));
        // Slot: the id or its bias column.
        let slot = rule(&["id", "user_id"], Algorithm::Slot { slot_bits: 4 }, false);
        assert!(holds_across_shards(&slot, &cols(&["user_id", "day"])));
        assert!(!holds_across_shards(&slot, &cols(&["day"])));
        let e = per_shard_refusal(&by_user, "`email`", &cols(&["email"]));
        assert!(e.message.contains("unique: per_shard"), "{}", e.message);
    }

    #[test]
    fn ignore_replace_and_upserts_into_a_per_shard_table_over_shards_are_refused() {
        let analyze = |sql: &str| crate::sql::analyze_insert(sql.as_bytes()).unwrap();
        let mut links = rule(&["id"], Algorithm::Mod, true);
        links.unique = Some(UniqueScope::PerShard);
        for sql in [
            "INSERT IGNORE INTO t (a, b) VALUES (1, 2), (1, 4)",
            "REPLACE INTO t (a, b) VALUES (1, 2)",
            "INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE b = 2",
            "INSERT IGNORE INTO t (a, b) SELECT 1, 2",
        ] {
            let e = per_shard_key_write(&analyze(sql), &links).unwrap_err();
            assert_eq!(
                (e.code, &e.state),
                (ER_NOT_SUPPORTED_YET, b"42000"),
                "{sql}"
            );
            assert!(
                e.message.contains("`t`") && e.message.contains("unique: global"),
                "{sql}: {}",
                e.message
            );
        }
        // A plain INSERT, or one shard, or keys held across shards: nothing to refuse.
        assert!(per_shard_key_write(&analyze("INSERT INTO t (a) VALUES (1)"), &links).is_ok());
        let ignore = analyze("INSERT IGNORE INTO t (a) VALUES (1)");
        let mut global = links.clone();
        global.unique = Some(UniqueScope::Global);
        assert!(per_shard_key_write(&ignore, &global).is_ok());
        let mut none = links.clone();
        none.unique = None;
        assert!(per_shard_key_write(&ignore, &none).is_ok());
        let mut one = links.clone();
        if let Placement::Sharded { shards, .. } = &mut one.placement {
            shards.truncate(1);
        }
        assert!(per_shard_key_write(&ignore, &one).is_ok());
        // LOAD DATA LOCAL skips duplicates (or REPLACE replaces them): the same.
        for replace in [false, true] {
            assert!(per_shard_key_load(replace, &links).is_err());
            assert!(per_shard_key_load(replace, &global).is_ok());
            assert!(per_shard_key_load(replace, &one).is_ok());
        }
    }
}
