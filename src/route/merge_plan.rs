//! What merging a SELECT's answers from several shards takes: the plan the executor follows
//! (sort keys, groups and their aggregates, HAVING, OFFSET/LIMIT) and the columns each shard
//! must return beyond the client's own, which the merge strips again. Pure data, no I/O.

/// A column of a shard's answer: one of the client's select items, or a hidden one idgate
/// appended (counted from the first hidden column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColRef {
    Visible(usize),
    Hidden(usize),
}

impl ColRef {
    /// The column's index in a shard row of `total` columns of which `hidden` are idgate's.
    pub fn index(self, total: usize, hidden: usize) -> Option<usize> {
        let visible = total.checked_sub(hidden)?;
        match self {
            ColRef::Visible(i) if i < visible => Some(i),
            ColRef::Hidden(h) if h < hidden => Some(visible + h),
            _ => None,
        }
    }
}

/// Hidden columns that give a string value's collation weight: `WEIGHT_STRING(e)` and the
/// weight of one space in e's collation (PAD SPACE collations ignore trailing spaces, while
/// MariaDB's WEIGHT_STRING keeps them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weight {
    pub bytes: ColRef,
    pub space: ColRef,
}

/// One sort (or grouping) key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub value: ColRef,
    pub weight: Option<Weight>,
    pub desc: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFn {
    Count,
    Sum,
    Min,
    Max,
    Avg,
    CountDistinct,
    SumDistinct,
    AvgDistinct,
    GroupConcat,
    /// VAR_POP/VAR_SAMP/STDDEV_POP/STDDEV_SAMP: `sample` divides by n - 1, `root` takes the
    /// square root.
    Variance {
        sample: bool,
        root: bool,
    },
    BitAnd,
    BitOr,
    BitXor,
}

/// GROUP_CONCAT's pieces: each shard row holds one piece (or NULL) and how many rows gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concat {
    /// `CONCAT(args…)`: the piece as MariaDB converts it to a string.
    pub piece: ColRef,
    /// `COUNT(*)` of the shard row's (sub)group: how often the piece repeats.
    pub count: ColRef,
    /// The SEPARATOR literal as the shard evaluates it (`None`: ',').
    pub separator: Option<ColRef>,
    /// `@@group_concat_max_len` on the shard's connection.
    pub max_len: ColRef,
    pub distinct: bool,
    /// DISTINCT: the arguments, by which pieces are told apart.
    pub args: Vec<SortKey>,
    /// The ORDER BY inside GROUP_CONCAT.
    pub order: Vec<SortKey>,
}

/// A column whose per-shard values combine by an aggregate function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggCol {
    pub col: ColRef,
    pub func: AggFn,
    /// MIN/MAX: the value's weight, which moves with the value chosen.
    pub weight: Option<Weight>,
    /// AVG: the SUM and COUNT columns it is computed from.
    pub parts: Option<(ColRef, ColRef)>,
    /// DISTINCT aggregates and GROUP_CONCAT(DISTINCT): the arguments' values (with weights),
    /// which the shards group by so each distinct value arrives at least once.
    pub args: Vec<SortKey>,
    /// Variances: the shard's COUNT(x), SUM(x) and VAR_POP(x) as a full double.
    pub moments: Option<[ColRef; 3]>,
    pub concat: Option<Box<Concat>>,
}

impl AggCol {
    pub fn new(col: ColRef, func: AggFn) -> AggCol {
        AggCol {
            col,
            func,
            weight: None,
            parts: None,
            args: Vec::new(),
            moments: None,
            concat: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HavingOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    Add,
    Sub,
    Mul,
    Div,
}

/// A HAVING condition idgate evaluates over merged groups.
#[derive(Debug, Clone, PartialEq)]
pub enum Having {
    Col(ColRef),
    /// A numeric literal's text.
    Num(String),
    Str(Vec<u8>),
    Null,
    Bin(HavingOp, Box<Having>, Box<Having>),
    Not(Box<Having>),
    Neg(Box<Having>),
    IsNull(Box<Having>, bool),
    Between(Box<Having>, Box<Having>, Box<Having>, bool),
    In(Box<Having>, Vec<Having>, bool),
}

#[derive(Debug, Clone, PartialEq)]
pub enum MergeMode {
    /// Rows stream through a k-way merge by `order` (no keys: shard after shard).
    Stream,
    /// Rows with equal keys combine into one; without ORDER BY the groups come out by key.
    Group {
        keys: Vec<SortKey>,
        aggs: Vec<AggCol>,
        having: Option<Having>,
    },
    /// SELECT DISTINCT: one row per distinct value of the client's columns.
    Distinct { keys: Vec<SortKey> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct MergePlan {
    /// The statement each shard runs.
    pub shard_sql: Vec<u8>,
    /// The client's byte ranges `shard_sql` holds unchanged, each with where it starts there
    /// (so a plan cached for one statement can take another's literals).
    pub copied: Vec<(std::ops::Range<usize>, usize)>,
    /// The client's bytes after FROM up to the end of the WHERE clause: nothing of the merge
    /// depends on them.
    pub unread: std::ops::Range<usize>,
    /// How many columns at the end of each shard row are idgate's own.
    pub hidden: usize,
    pub mode: MergeMode,
    pub order: Vec<SortKey>,
    pub offset: u64,
    pub limit: Option<u64>,
    /// Where the LIMIT's literals are, so a cached plan can bind another page's.
    pub window: Option<Window>,
}

/// How a LIMIT clause is written (statements of one shape write it alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitForm {
    /// `LIMIT n`
    Limit,
    /// `LIMIT o, n`
    OffsetComma,
    /// `LIMIT n OFFSET o`
    LimitOffset,
}

/// The LIMIT of a merged SELECT written as literal numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub form: LimitForm,
    /// The client's bytes of the offset and of the row count.
    pub offset_at: Option<std::ops::Range<usize>>,
    pub limit_at: std::ops::Range<usize>,
    /// A streaming merge: the bytes of `shard_sql` holding offset + row count, which each shard
    /// returns at most.
    pub sum_at: Option<std::ops::Range<usize>>,
}

/// A LIMIT literal's value as idgate reads it (`None`: not a number that fits u64).
pub fn limit_value(text: &[u8]) -> Option<u64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// What the shards' answers showed about the keys a merge compares by weight: whether any is
/// a string. Made for a plan kept by shape and shared by its executions: while none has been a
/// string, the shards may be asked for no weights (`KeyTypes::lean`), and the first answer that
/// shows one turns that off for good.
#[derive(Debug, Default)]
pub struct KeyTypes(std::sync::atomic::AtomicU8);

const KEYS_UNKNOWN: u8 = 0;
const KEYS_NO_STRINGS: u8 = 1;
const KEYS_STRINGS: u8 = 2;

impl KeyTypes {
    /// Whether an execution may leave the weights out.
    pub fn lean(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed) == KEYS_NO_STRINGS
    }

    /// An answer's columns showed a string among the keys (`true`) or none (`false`).
    pub fn saw(&self, strings: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        if strings {
            self.0.store(KEYS_STRINGS, Relaxed);
        } else {
            let _ = self
                .0
                .compare_exchange(KEYS_UNKNOWN, KEYS_NO_STRINGS, Relaxed, Relaxed);
        }
    }
}

impl MergePlan {
    /// Every key compared by value (ORDER BY, GROUP BY/DISTINCT keys, MIN/MAX, DISTINCT
    /// aggregate arguments, GROUP_CONCAT's arguments and order).
    pub fn compared_keys(&self) -> Vec<SortKey> {
        let mut out = self.order.clone();
        match &self.mode {
            MergeMode::Stream => {}
            MergeMode::Distinct { keys } => out.extend(keys.iter().copied()),
            MergeMode::Group { keys, aggs, .. } => {
                out.extend(keys.iter().copied());
                for a in aggs {
                    if let Some(w) = a.weight {
                        out.push(SortKey {
                            value: a.col,
                            weight: Some(w),
                            desc: false,
                        });
                    }
                    out.extend(a.args.iter().copied());
                    if let Some(c) = &a.concat {
                        out.extend(c.args.iter().chain(&c.order).copied());
                    }
                }
            }
        }
        out
    }

    /// Whether the shards are asked for collation weights of any key.
    pub fn has_weights(&self) -> bool {
        self.compared_keys().iter().any(|k| k.weight.is_some())
    }

    /// A one-line description for EXPLAIN ROUTE.
    pub fn describe(&self) -> String {
        self.describe_page(self.offset, self.limit)
    }

    /// The description with `offset`/`limit` bound for one execution.
    pub fn describe_page(&self, offset: u64, limit: Option<u64>) -> String {
        let keys = |ks: &[SortKey]| {
            ks.iter()
                .map(|k| {
                    let c = match k.value {
                        ColRef::Visible(i) => format!("column {}", i + 1),
                        ColRef::Hidden(h) => format!("hidden {}", h + 1),
                    };
                    let w = if k.weight.is_some() { " (weights)" } else { "" };
                    let d = if k.desc { " DESC" } else { "" };
                    format!("{c}{w}{d}")
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = match &self.mode {
            MergeMode::Stream => format!("k-way merge by [{}]", keys(&self.order)),
            MergeMode::Group {
                keys: k,
                aggs,
                having,
            } => format!(
                "groups by [{}] combining {:?}{}{}",
                keys(k),
                aggs.iter().map(|a| a.func).collect::<Vec<_>>(),
                if having.is_some() {
                    ", HAVING in idgate"
                } else {
                    ""
                },
                if self.order.is_empty() {
                    String::new()
                } else {
                    format!(", sorted by [{}]", keys(&self.order))
                }
            ),
            MergeMode::Distinct { keys: k } => format!("distinct rows by [{}]", keys(k)),
        };
        if offset > 0 {
            out.push_str(&format!(", skip {offset}"));
        }
        if let Some(l) = limit {
            out.push_str(&format!(", first {l} rows"));
        }
        out
    }
}

/// For a SELECT that needs more than concatenation across shards (ORDER BY, LIMIT, GROUP BY,
/// aggregates, DISTINCT, HAVING): how to merge it, or what idgate cannot merge. `stmt` is the
/// statement analysed. Without `weights` no collation weights are asked for: right only while
/// no compared key is a string, which the executor checks on every answer.
pub fn merge_plan(
    a: &crate::sql::DmlAnalysis,
    stmt: &[u8],
    weights: bool,
) -> Option<Result<MergePlan, String>> {
    let (q, s) = a.merge_select()?;
    let text = crate::sql::parse::sanitize(stmt);
    Some(super::merge_rewrite::plan_merge_with(
        stmt, &text, q, s, weights,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::analyze_dml;

    #[test]
    fn merges_are_planned_only_when_needed() {
        let sql = b"SELECT * FROM t WHERE x = 1 ORDER BY id DESC, k LIMIT 10";
        let plan = merge_plan(&analyze_dml(sql).unwrap(), sql, true)
            .unwrap()
            .unwrap();
        assert_eq!((plan.limit, plan.order.len()), (Some(10), 2));
        let plain = b"SELECT * FROM t WHERE x = 1";
        assert!(merge_plan(&analyze_dml(plain).unwrap(), plain, true).is_none());
        let distinct = b"SELECT JSON_ARRAYAGG(k) FROM t";
        let a = analyze_dml(distinct).unwrap();
        assert!(merge_plan(&a, distinct, true).unwrap().is_err());
        let a = analyze_dml(b"SELECT k FROM t UNION SELECT k FROM u").unwrap();
        assert_eq!(a.needs_merge, Some("UNION or a nested query"));
    }
}
