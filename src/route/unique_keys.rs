//! Whether a unique key of a sharded table holds across its shards. Each shard checks a unique
//! key for the rows it holds; two rows that agree on the key hold it across shards only if they
//! surely land on the same shard, i.e. the key contains what picks the shard. Otherwise
//! INSERT IGNORE, ON DUPLICATE KEY UPDATE, REPLACE and plain duplicates go wrong silently, so
//! such a key needs the table's rule to say `unique: global` (held through lookup tables) or
//! `unique: per_shard` (accepting it knowingly).

use super::{Placement, TableRule};
use crate::sql::ER_NOT_SUPPORTED_YET;
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
}
