//! Combining the aggregates whose shard partials do not simply add up: DISTINCT aggregates
//! (sets of the distinct argument values), GROUP_CONCAT (its pieces, ordered and cut to
//! group_concat_max_len as MariaDB cuts them), variances (Chan's parallel formula over each
//! shard row's count, mean and sum of squared deviations) and BIT_AND/OR/XOR.

use std::collections::BTreeMap;

use super::number::{self, format_double, format_scaled};
use super::rows::Values;
use super::value::{exact, heap_block, KeyPart, Kind};
use super::Key;

fn get(row: &Values, i: usize) -> Option<&[u8]> {
    row.get(i).and_then(|v| v.as_deref())
}

fn parse<T: std::str::FromStr>(v: &[u8], what: &str) -> Result<T, String> {
    std::str::from_utf8(v)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("a shard sent a malformed {what}"))
}

/// What one kept entry (a key and a value of `len` bytes) costs in memory, measured against
/// RSS by `scripts/bench-memory`: the heap blocks, the map's share of a node (entries of
/// two vectors, nodes about two thirds full), and as much again for the blocks the shard
/// rows parsed meanwhile leave between them.
fn held_bytes(key: &[KeyPart], len: usize) -> u64 {
    let live = KeyPart::key_bytes(key) + heap_block(len) + 72;
    (live * 2) as u64
}

/// COUNT/SUM/AVG(DISTINCT): the distinct argument tuples, each with its first argument's text.
#[derive(Debug, Default)]
pub(super) struct DistinctSet(BTreeMap<Vec<KeyPart>, Vec<u8>>);

impl DistinctSet {
    /// Adds a row's arguments (skipped when one is NULL); returns the bytes it now holds more.
    pub(super) fn add(&mut self, args: &[Key], row: &Values) -> Result<u64, String> {
        let key = Key::parts(args, row)?;
        if key.iter().any(|k| matches!(k, KeyPart::Null)) || self.0.contains_key(&key) {
            return Ok(0);
        }
        let text = args
            .first()
            .and_then(|a| get(row, a.value))
            .unwrap_or_default()
            .to_vec();
        let bytes = held_bytes(&key, text.len());
        self.0.insert(key, text);
        Ok(bytes)
    }

    pub(super) fn count(&self) -> usize {
        self.0.len()
    }

    /// SUM (and AVG) of the distinct values, in ascending order as MariaDB adds them.
    /// `Ok(None)`: no values.
    pub(super) fn sum(&self, arg: Kind, scale: u32) -> Result<Option<Sum>, String> {
        if self.0.is_empty() {
            return Ok(None);
        }
        Ok(Some(match arg {
            Kind::Exact => {
                let mut s: i128 = 0;
                for v in self.0.values() {
                    s = s
                        .checked_add(exact(v, scale)?)
                        .ok_or("a SUM(DISTINCT) beyond the 38 digits idgate adds exactly")?;
                }
                Sum::Exact(s)
            }
            _ => {
                let mut s = 0.0;
                for v in self.0.values() {
                    s += parse::<f64>(v, "double")?;
                }
                Sum::Float(s)
            }
        }))
    }
}

pub(super) enum Sum {
    Exact(i128),
    Float(f64),
}

/// SUM(DISTINCT)'s or AVG(DISTINCT)'s text in the result column's type (`scale`: its decimals;
/// `from`: the argument's).
pub(super) fn distinct_result(
    sum: Sum,
    n: usize,
    avg: bool,
    result: Kind,
    from: u32,
    scale: u32,
) -> Result<String, String> {
    let n = n as i128;
    match (sum, result) {
        (Sum::Exact(s), Kind::Exact) => {
            let v = number::rescale(s, from, scale)
                .ok_or("a SUM(DISTINCT) beyond the 38 digits idgate adds exactly")?;
            let v = if avg {
                number::div_round(v, n).ok_or("AVG(DISTINCT)")?
            } else {
                v
            };
            Ok(format_scaled(v, scale))
        }
        (s, _) => {
            let f = match s {
                Sum::Exact(v) => v as f64 / 10f64.powi(from as i32),
                Sum::Float(f) => f,
            };
            let f = if avg { f / n as f64 } else { f };
            format_double(f).ok_or_else(|| "a SUM(DISTINCT) that is not a finite double".into())
        }
    }
}

/// The columns GROUP_CONCAT reads, resolved against the shards' answer.
pub(super) struct ConcatCols {
    pub piece: usize,
    pub count: usize,
    pub separator: Option<usize>,
    pub max_len: usize,
    pub distinct: bool,
    pub args: Vec<Key>,
    pub order: Vec<Key>,
    /// The result is not binary: a cut keeps whole UTF-8 characters.
    pub text: bool,
}

/// GROUP_CONCAT's pieces of one group, as they arrived.
#[derive(Debug, Default)]
pub(super) struct Pieces {
    list: Vec<(Vec<KeyPart>, Vec<u8>, u64)>,
    seen: BTreeMap<Vec<KeyPart>, ()>,
    separator: Option<Vec<u8>>,
    max_len: u64,
    /// Shard rows whose own GROUP_CONCAT went past group_concat_max_len (each shard warned).
    pub shard_cuts: u64,
}

impl Pieces {
    pub(super) fn add(&mut self, c: &ConcatCols, row: &Values) -> Result<u64, String> {
        let Some(piece) = get(row, c.piece) else {
            return Ok(0);
        };
        let count: u64 = parse(get(row, c.count).unwrap_or(b"1"), "COUNT(*)")?;
        let max_len: u64 = parse(
            get(row, c.max_len).unwrap_or(b"1024"),
            "group_concat_max_len",
        )?;
        let sep = match c.separator {
            Some(s) => get(row, s).unwrap_or_default(),
            None => b",",
        };
        self.max_len = max_len;
        self.separator.get_or_insert_with(|| sep.to_vec());
        let len = piece.len() as u64;
        let full = if c.distinct {
            len
        } else {
            count
                .saturating_mul(len)
                .saturating_add(count.saturating_sub(1).saturating_mul(sep.len() as u64))
        };
        if full > max_len {
            self.shard_cuts += 1;
        }
        let mut seen_bytes = 0;
        if c.distinct {
            let key = Key::parts(&c.args, row)?;
            seen_bytes = held_bytes(&key, 0);
            if self.seen.insert(key, ()).is_some() {
                return Ok(0);
            }
        }
        let order = if c.distinct && c.order.is_empty() {
            Key::parts(&c.args, row)?
        } else {
            Key::parts(&c.order, row)?
        };
        let bytes = held_bytes(&order, piece.len()) + seen_bytes;
        self.list
            .push((order, piece.to_vec(), if c.distinct { 1 } else { count }));
        Ok(bytes)
    }

    /// The concatenation (`None` without pieces) and whether it was cut; its bytes come out of
    /// `budget` (`None`: past it).
    pub(super) fn finish(
        mut self,
        c: &ConcatCols,
        budget: &mut u64,
    ) -> Option<(Option<Vec<u8>>, bool)> {
        if self.list.is_empty() {
            return Some((None, false));
        }
        let keys = if c.distinct && c.order.is_empty() {
            &c.args
        } else {
            &c.order
        };
        if !keys.is_empty() {
            self.list.sort_by(|a, b| super::compare(&a.0, &b.0, keys));
        }
        let sep = self.separator.unwrap_or_default();
        let max = usize::try_from(self.max_len.min(*budget)).unwrap_or(usize::MAX);
        let mut out: Vec<u8> = Vec::new();
        let mut first = true;
        for (_, piece, count) in &self.list {
            // Empty pieces joined by an empty separator add nothing however often they repeat.
            let count = if piece.is_empty() && sep.is_empty() {
                (*count).min(1)
            } else {
                *count
            };
            for _ in 0..count {
                if !first {
                    out.extend_from_slice(&sep);
                }
                first = false;
                out.extend_from_slice(piece);
                if out.len() > max {
                    if self.max_len > *budget {
                        return None;
                    }
                    let mut cut = max;
                    // MariaDB keeps the well-formed prefix: no half characters.
                    if c.text && std::str::from_utf8(&out).is_ok() {
                        while cut > 0 && out.get(cut).is_some_and(|b| b & 0xc0 == 0x80) {
                            cut -= 1;
                        }
                    }
                    out.truncate(cut);
                    *budget -= out.len() as u64;
                    return Some((Some(out), true));
                }
            }
        }
        *budget -= out.len() as u64;
        Some((Some(out), false))
    }
}

/// Count, mean and sum of squared deviations of the values seen so far.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Moments {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Moments {
    /// Adds a shard row's COUNT(x), SUM(x) and VAR_POP(x) (Chan et al.'s pairwise update).
    pub(super) fn add(&mut self, cols: [usize; 3], row: &Values) -> Result<(), String> {
        let n: f64 = parse(get(row, cols[0]).unwrap_or(b"0"), "COUNT")?;
        if n == 0.0 {
            return Ok(());
        }
        let sum: f64 = parse(get(row, cols[1]).unwrap_or(b"0"), "SUM")?;
        let var: f64 = parse(get(row, cols[2]).unwrap_or(b"0"), "VAR_POP")?;
        let mean = sum / n;
        let total = self.n + n;
        let delta = mean - self.mean;
        self.m2 += var * n + delta * delta * self.n * n / total;
        self.mean += delta * n / total;
        self.n = total;
        Ok(())
    }

    /// The variance (or its square root); NULL for no values, or one value of a sample.
    pub(super) fn result(&self, sample: bool, root: bool) -> Option<f64> {
        let d = if sample { self.n - 1.0 } else { self.n };
        if self.n == 0.0 || d <= 0.0 {
            return None;
        }
        let v = (self.m2 / d).max(0.0);
        Some(if root { v.sqrt() } else { v })
    }
}

/// A double at a column's fixed decimals, as MariaDB prints it in the text protocol.
pub(super) fn fixed(text: &[u8], decimals: u8) -> Option<Vec<u8>> {
    let f: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    Some(format!("{f:.0$}", usize::from(decimals)).into_bytes())
}

/// BIT_AND/OR/XOR: a shard row's partial.
pub(super) fn bits(row: &Values, col: usize) -> Result<Option<u64>, String> {
    get(row, col).map(|v| parse(v, "BIT_* value")).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chan_combines_shard_variances() {
        // {1, 2} on one shard, {4, 8, 10} on the other: mean 5, population variance 12.
        let rows = [
            vec![
                Some(b"2".to_vec()),
                Some(b"3".to_vec()),
                Some(b"0.25".to_vec()),
            ],
            vec![
                Some(b"3".to_vec()),
                Some(b"22".to_vec()),
                Some(b"6.222222222222222".to_vec()),
            ],
            vec![Some(b"0".to_vec()), None, None],
        ];
        let mut m = Moments::default();
        for r in &rows {
            m.add([0, 1, 2], r).unwrap();
        }
        assert!((m.result(false, false).unwrap() - 12.0).abs() < 1e-12);
        assert!((m.result(true, false).unwrap() - 15.0).abs() < 1e-12);
        let single = vec![
            Some(b"1".to_vec()),
            Some(b"5".to_vec()),
            Some(b"0".to_vec()),
        ];
        let mut s = Moments::default();
        s.add([0, 1, 2], &single).unwrap();
        assert_eq!(s.result(true, true), None, "a sample of one");
        assert_eq!(s.result(false, true), Some(0.0));
        assert_eq!(Moments::default().result(false, false), None);
    }

    fn cols() -> ConcatCols {
        ConcatCols {
            piece: 0,
            count: 1,
            separator: Some(2),
            max_len: 3,
            distinct: false,
            args: Vec::new(),
            order: Vec::new(),
            text: true,
        }
    }

    fn row(piece: &str, count: &str, sep: &str, max: &str) -> Values {
        [piece, count, sep, max]
            .iter()
            .map(|v| Some(v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn concatenations_cut_at_max_len_and_stay_within_the_memory_budget() {
        let c = cols();
        let mut p = Pieces::default();
        p.add(&c, &row("ä", "3", "-", "4")).unwrap();
        let mut budget = 1000;
        // "ä-ä-ä" is 8 bytes: cut at 4 would split the second "ä", so 3 stay.
        assert_eq!(
            p.finish(&c, &mut budget),
            Some((Some("ä-".as_bytes().to_vec()), true))
        );
        assert_eq!(budget, 997);
        // A piece repeated a million times under a 4 GiB limit: past the budget, not built.
        let mut p = Pieces::default();
        p.add(&c, &row("abc", "1000000", ",", "4294967295"))
            .unwrap();
        assert_eq!(p.finish(&c, &mut 4096), None);
        // Empty pieces with an empty separator end at once however often they repeat.
        let mut p = Pieces::default();
        p.add(&c, &row("", "1000000000000", "", "1024")).unwrap();
        assert_eq!(p.finish(&c, &mut 4096), Some((Some(Vec::new()), false)));
    }

    #[test]
    fn fixed_decimals_round_as_mariadb_prints() {
        assert_eq!(fixed(b"0.4714045207910317", 4).unwrap(), b"0.4714");
        assert_eq!(fixed(b"2", 4).unwrap(), b"2.0000");
    }
}
