//! Sharding algorithms: a sharding value in, a shard index out.

/// A sharding column's value as the statement gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardValue {
    Int(i128),
    Str(Vec<u8>),
}

impl ShardValue {
    /// The integer a string means when compared with an integer column ('42' = 42 in MySQL).
    fn as_int(&self) -> Option<i128> {
        match self {
            ShardValue::Int(v) => Some(*v),
            ShardValue::Str(s) => std::str::from_utf8(s).ok()?.trim().parse().ok(),
        }
    }

    /// Canonical bytes for hashing: integers (and strings that are integers) as decimal text, so
    /// a value routes the same whether the client sent it as a number or a string; other strings
    /// with ASCII letters lowercased and trailing spaces dropped, so values equal under the usual
    /// case-insensitive, space-padded collations ('ABC', 'abc ') land on the same shard.
    fn canonical(&self) -> std::borrow::Cow<'_, [u8]> {
        match (self, self.as_int()) {
            (_, Some(v)) => v.to_string().into_bytes().into(),
            (ShardValue::Str(s), None) => {
                let end = s.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
                s[..end].to_ascii_lowercase().into()
            }
            (ShardValue::Int(v), None) => v.to_string().into_bytes().into(),
        }
    }

    /// False for a string with non-ASCII characters: collations equate some of those with other
    /// spellings ('é' = 'e', 'ß' = 'ss'), so a lookup by it cannot trust one shard.
    pub fn pins_reads(&self) -> bool {
        match self {
            ShardValue::Int(_) => true,
            ShardValue::Str(s) => s.is_ascii(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Algorithm {
    /// value mod number of shards (integers only).
    Mod,
    /// A stable 64-bit FNV-1a hash of the value, mod number of shards.
    Hash,
    /// `bounds[i]` is the exclusive upper bound of shard `i`; the last shard takes the rest.
    Range { bounds: Vec<i128> },
    /// The low `slot_bits` of the value (a biased ID or its bias column) mod number of shards.
    Slot { slot_bits: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error(
        "sharding column `{column}` needs an integer for the {algorithm} algorithm, got {value}"
    )]
    NotInteger {
        column: String,
        algorithm: &'static str,
        value: String,
    },
}

impl Algorithm {
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Mod => "mod",
            Algorithm::Hash => "hash",
            Algorithm::Range { .. } => "range",
            Algorithm::Slot { .. } => "slot",
        }
    }

    /// True when every integer lands on the same one of `shards` shards under both algorithms:
    /// the same algorithm, or `mod`/`slot` with 2^slot_bits a multiple of the shard count
    /// (`x & (2^b - 1)` is then congruent to `x` modulo the shard count).
    pub fn places_like(&self, other: &Algorithm, shards: usize) -> bool {
        let modular = |a: &Algorithm| match a {
            Algorithm::Mod => true,
            Algorithm::Slot { slot_bits } => {
                *slot_bits < 64 && shards > 0 && (1u64 << slot_bits).is_multiple_of(shards as u64)
            }
            _ => false,
        };
        self == other || (modular(self) && modular(other))
    }

    /// The index (into the table's shard list) of the shard that owns `value`.
    pub fn shard_of(
        &self,
        value: &ShardValue,
        shards: usize,
        column: &str,
    ) -> Result<usize, RouteError> {
        let n = shards.max(1) as i128;
        let int = || {
            value.as_int().ok_or_else(|| RouteError::NotInteger {
                column: column.to_string(),
                algorithm: self.name(),
                value: match value {
                    ShardValue::Str(s) => format!("'{}'", String::from_utf8_lossy(s)),
                    ShardValue::Int(v) => v.to_string(),
                },
            })
        };
        Ok(match self {
            Algorithm::Mod => int()?.rem_euclid(n) as usize,
            Algorithm::Hash => (fnv1a(&value.canonical()) % shards.max(1) as u64) as usize,
            Algorithm::Range { bounds } => {
                let v = int()?;
                bounds.iter().position(|b| v < *b).unwrap_or(bounds.len())
            }
            Algorithm::Slot { slot_bits } => {
                let mask = (1i128 << slot_bits) - 1;
                ((int()? & mask) % n) as usize
            }
        })
    }
}

/// FNV-1a, 64-bit: stable across versions and platforms, which a persisted placement requires.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mod_handles_negative_values_and_strings_that_are_numbers() {
        let a = Algorithm::Mod;
        assert_eq!(a.shard_of(&ShardValue::Int(7), 2, "c").unwrap(), 1);
        assert_eq!(a.shard_of(&ShardValue::Int(-7), 2, "c").unwrap(), 1);
        assert_eq!(
            a.shard_of(&ShardValue::Str(b"8".to_vec()), 2, "c").unwrap(),
            0
        );
        assert!(a.shard_of(&ShardValue::Str(b"x".to_vec()), 2, "c").is_err());
    }

    #[test]
    fn mod_and_slot_place_alike_when_the_slots_divide_evenly() {
        let slot = Algorithm::Slot { slot_bits: 4 };
        assert!(Algorithm::Mod.places_like(&slot, 2));
        assert!(Algorithm::Mod.places_like(&slot, 4));
        assert!(!Algorithm::Mod.places_like(&slot, 3));
        assert!(!Algorithm::Hash.places_like(&Algorithm::Mod, 2));
        for x in [-17i128, -1, 0, 5, 1 << 40] {
            let v = ShardValue::Int(x);
            assert_eq!(
                Algorithm::Mod.shard_of(&v, 4, "c").unwrap(),
                slot.shard_of(&v, 4, "c").unwrap(),
                "{x}"
            );
        }
    }

    #[test]
    fn hash_follows_case_insensitive_padded_equality() {
        let a = Algorithm::Hash;
        let shard = |s: &[u8]| a.shard_of(&ShardValue::Str(s.to_vec()), 16, "c").unwrap();
        assert_eq!(shard(b"Tenant-ABC"), shard(b"tenant-abc  "));
        assert!(!ShardValue::Str("caf\u{e9}".as_bytes().to_vec()).pins_reads());
        assert!(ShardValue::Str(b"cafe".to_vec()).pins_reads());
    }

    #[test]
    fn hash_is_stable_and_type_blind() {
        let a = Algorithm::Hash;
        let i = a.shard_of(&ShardValue::Int(12345), 3, "c").unwrap();
        let s = a
            .shard_of(&ShardValue::Str(b"12345".to_vec()), 3, "c")
            .unwrap();
        assert_eq!(i, s);
        // Pinned: changing the hash would move existing rows.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn range_and_slot() {
        let r = Algorithm::Range {
            bounds: vec![100, 200],
        };
        assert_eq!(r.shard_of(&ShardValue::Int(99), 3, "c").unwrap(), 0);
        assert_eq!(r.shard_of(&ShardValue::Int(100), 3, "c").unwrap(), 1);
        assert_eq!(r.shard_of(&ShardValue::Int(1000), 3, "c").unwrap(), 2);
        let s = Algorithm::Slot { slot_bits: 4 };
        for v in [0i128, 5, 17, 1 << 40 | 9] {
            let id = (v << 4) | (v & 15);
            assert_eq!(
                s.shard_of(&ShardValue::Int(id), 4, "c").unwrap(),
                s.shard_of(&ShardValue::Int(v), 4, "c").unwrap()
            );
        }
    }
}
