//! Which moves idgate can make while the table serves, decided before anything is touched.
//!
//! Until the switch, clients read the table where it is now; so a row may be copied only onto a
//! backend that does not serve the table now, or stay where it is. That holds for:
//! - any move onto backends that do not hold the table now;
//! - a table on one backend (adoption) onto shards that include that backend: its rows for that
//!   shard stay, the others move to the new shards;
//! - a split under `mod` or `slot` to a multiple of the shard count with the old shards first in
//!   the same order: shard `i` of `n` keeps its rows or gives them to shard `i + k·n`.
//!
//! Other moves (a hash split, merging shards, a broadcast table) are refused with the reason.

use crate::route::{Algorithm, Placement, TableRule};

/// The source backends of a rule, or why it cannot be moved from.
pub fn sources(rule: &TableRule) -> Result<Vec<String>, String> {
    match &rule.placement {
        Placement::Broadcast { .. } => Err(format!(
            "`{}` is a broadcast table; idgate moves tables on one backend or sharded",
            rule.name
        )),
        _ => Ok(rule.backends().to_vec()),
    }
}

/// Whether moving from `from` to `to` keeps every read before the switch right; the error says
/// why not and what is supported.
pub fn check_move(from: &TableRule, to: &TableRule) -> Result<(), String> {
    let sources = sources(from)?;
    if matches!(to.placement, Placement::Broadcast { .. }) {
        return Err(
            "moving a table to `broadcast` is not supported; give `sharding:` or \
                    neither (the default backend)"
                .into(),
        );
    }
    if same_placement(&from.placement, &to.placement) {
        return Err("the table is placed so already".into());
    }
    let targets = to.backends();
    let shared: Vec<&String> = targets.iter().filter(|b| sources.contains(b)).collect();
    if shared.is_empty() {
        return Ok(());
    }
    if let Some(b) = shared.iter().find(|b| !super::fence::possible(to, b)) {
        return Err(format!(
            "a `hash` placement that keeps rows on `{b}`, which serves the table now, cannot be \
             fenced at the switch; move the table onto backends that do not hold it, or use \
             `mod`, `slot` or `range`"
        ));
    }
    match (&from.placement, &to.placement) {
        (Placement::Single { backend }, Placement::Sharded { .. }) if shared == [backend] => Ok(()),
        (
            Placement::Sharded {
                columns: fc,
                algorithm: fa,
                shards: fs,
            },
            Placement::Sharded {
                columns: tc,
                algorithm: ta,
                shards: ts,
            },
        ) => {
            let modular = matches!(fa, Algorithm::Mod | Algorithm::Slot { .. });
            let multiple = !fs.is_empty() && ts.len() > fs.len() && ts.len() % fs.len() == 0;
            let prefix = ts.get(..fs.len()) == Some(fs.as_slice());
            let rest_new = ts[fs.len().min(ts.len())..].iter().all(|b| !fs.contains(b));
            let same_columns = fc
                .iter()
                .map(|c| c.to_ascii_lowercase())
                .eq(tc.iter().map(|c| c.to_ascii_lowercase()));
            if modular && fa == ta && same_columns && multiple && prefix && rest_new {
                Ok(())
            } else {
                Err(format!(
                    "rows would move between backends that serve the table now ({}); idgate \
                     splits a `mod` or `slot` table onto a multiple of its shard count, with \
                     the same sharding columns and the old shards first in the same order \
                     (e.g. [{}] to [{}, …]), or moves it onto backends that do not hold it",
                    join(&shared),
                    fs.join(", "),
                    fs.join(", ")
                ))
            }
        }
        _ => Err(format!(
            "rows would be copied onto {}, which serves the table now; move it onto backends \
             that do not hold it",
            join(&shared)
        )),
    }
}

fn join(b: &[&String]) -> String {
    let names: Vec<String> = b.iter().map(|s| format!("`{s}`")).collect();
    names.join(", ")
}

fn same_placement(a: &Placement, b: &Placement) -> bool {
    match (a, b) {
        (Placement::Single { backend: x }, Placement::Single { backend: y }) => x == y,
        (
            Placement::Sharded {
                columns: c1,
                algorithm: a1,
                shards: s1,
            },
            Placement::Sharded {
                columns: c2,
                algorithm: a2,
                shards: s2,
            },
        ) => c1 == c2 && a1 == a2 && s1 == s2,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::test_rules::{rule, sharded_by};

    fn single(b: &str) -> TableRule {
        rule("t", None, Placement::Single { backend: b.into() })
    }

    fn sharded(a: Algorithm, shards: &[&str]) -> TableRule {
        rule("t", None, sharded_by("id", a, shards))
    }

    #[test]
    fn adoption_onto_shards_with_or_without_its_backend() {
        assert!(check_move(&single("db0"), &sharded(Algorithm::Mod, &["db1", "db2"])).is_ok());
        assert!(check_move(&single("db0"), &sharded(Algorithm::Mod, &["db0", "db1"])).is_ok());
        assert!(check_move(&single("db0"), &sharded(Algorithm::Hash, &["db0", "db1"])).is_err());
        assert!(check_move(&single("db0"), &single("db0")).is_err());
        assert!(check_move(&single("db0"), &single("db1")).is_ok());
    }

    #[test]
    fn splits_by_doubling_mod_and_slot_only() {
        let two = sharded(Algorithm::Mod, &["a", "b"]);
        assert!(check_move(&two, &sharded(Algorithm::Mod, &["a", "b", "c", "d"])).is_ok());
        assert!(check_move(
            &two,
            &sharded(Algorithm::Mod, &["a", "b", "c", "d", "e", "f"])
        )
        .is_ok());
        // Old shards out of order, a hash split, a count that is no multiple, merging.
        assert!(check_move(&two, &sharded(Algorithm::Mod, &["b", "a", "c", "d"])).is_err());
        assert!(check_move(&two, &sharded(Algorithm::Hash, &["a", "b", "c", "d"])).is_err());
        assert!(check_move(&two, &sharded(Algorithm::Mod, &["a", "b", "c"])).is_err());
        assert!(check_move(&two, &single("a")).is_err());
        // Onto backends that do not hold it: anything goes.
        assert!(check_move(&two, &sharded(Algorithm::Hash, &["c", "d", "e"])).is_ok());
        assert!(check_move(&two, &single("c")).is_ok());
        let slot = sharded(Algorithm::Slot { slot_bits: 8 }, &["a", "b"]);
        assert!(check_move(
            &slot,
            &sharded(Algorithm::Slot { slot_bits: 8 }, &["a", "b", "c", "d"])
        )
        .is_ok());
    }

    #[test]
    fn broadcast_is_refused_both_ways() {
        let b = rule(
            "t",
            None,
            Placement::Broadcast {
                backends: vec!["a".into()],
            },
        );
        assert!(check_move(&b, &single("c")).is_err());
        assert!(check_move(&single("c"), &b).is_err());
    }
}
