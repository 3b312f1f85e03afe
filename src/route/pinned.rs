//! The shards a sharded table's WHERE conditions restrict a statement to.

use std::collections::BTreeSet;

use super::plan::Term;
use super::{Placement, ShardValue, TableRule};

/// The shards (indices) `keys` restrict a sharded table to; `None`: all of them. A condition
/// with a value that does not resolve (NULL, a float, an unbound `?`) pins nothing, and the
/// next condition on a sharding column may: every condition holds for every row returned, so
/// any of them gives a correct set of shards.
pub fn pinned_shards(
    rule: &TableRule,
    keys: &[(String, Vec<Term>)],
    resolve: impl Fn(&Term) -> Option<ShardValue>,
) -> Option<BTreeSet<usize>> {
    let Placement::Sharded {
        columns,
        algorithm,
        shards,
    } = &rule.placement
    else {
        return None;
    };
    for c in columns {
        for (_, terms) in keys.iter().filter(|(k, _)| k.eq_ignore_ascii_case(c)) {
            let Some(values) = terms.iter().map(&resolve).collect::<Option<Vec<_>>>() else {
                continue;
            };
            let mut set = BTreeSet::new();
            for v in values {
                // A value that is not plainly an integer ('12abc', 1.5) compares by MariaDB's
                // conversion rules: every shard decides for itself.
                if !v.pins_reads() {
                    return None;
                }
                set.insert(algorithm.shard_of(&v, shards.len(), c).ok()?);
            }
            return Some(set);
        }
    }
    None
}
