//! Plans as values. A [`ShapePlan`] is what planning one statement decides for every statement
//! of its shape (the same text but for literal values): the tables' placement, the merge and the
//! per-shard SQL as a template with literal slots. [`ShapePlan::bind`] takes one statement's
//! literals and gives its [`Route`]: the shards its WHERE pins and the SQL each runs.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

use super::pinned::pinned_shards;
use super::{ShardValue, TableRule, Tables};
use crate::route::{KeyTypes, MergePlan};
use crate::sql::{self, DmlKind, KeyTerm, KeyValue};
use crate::wire::errors::SqlError;

/// What planning needs from the session.
#[derive(Clone, Copy)]
pub struct PlanContext<'a> {
    /// The session's current database (for table names without a schema).
    pub db: Option<&'a str>,
    pub tables: &'a Tables,
}

/// Where one statement about placed tables goes and how the answers combine.
#[derive(Debug)]
pub enum Route {
    /// One backend answers as it is.
    One(String),
    /// A SELECT on several shards: rows concatenated.
    Concat(Vec<String>),
    /// UPDATE/DELETE on several shards, all-or-nothing; `broadcast`: every backend holds the
    /// same rows, so one backend's counts are the answer.
    Write {
        backends: Vec<String>,
        broadcast: bool,
    },
    /// DDL on every backend of the table, one after the other.
    Everywhere(Vec<String>),
    /// A SELECT on several shards whose answers merge (ORDER BY, LIMIT, GROUP BY, aggregates,
    /// HAVING, DISTINCT): each shard runs `shard_sql`.
    Merge(Vec<String>, Box<BoundMerge>),
    /// A SELECT, UPDATE or DELETE whose WHERE gives a whole unique key held through a lookup:
    /// the shard the lookup names runs it; its rows (or the row it changed) are the answer, and
    /// when it has none `otherwise` runs.
    ByKey(Box<ByKey>),
}

/// Where a statement goes when a lookup names the shard of the one row it can match.
#[derive(Debug)]
pub struct ByKey {
    /// The lookup's backend and the SELECT reading the owner there.
    pub lookup: String,
    pub owner_sql: Vec<u8>,
    /// The table's shards: an owner that is not one of them is not followed.
    pub shards: Vec<String>,
    /// The route without the lookup (a concatenation, a merge or a write over every shard).
    pub otherwise: Route,
}

impl Route {
    /// The route without a lookup's shortcut.
    pub fn general(self) -> Route {
        match self {
            Route::ByKey(k) => k.otherwise,
            r => r,
        }
    }
}

/// A unique key held through a lookup whose every column the WHERE sets to a literal.
#[derive(Debug)]
pub struct KeyProbe {
    pub key: crate::unique::GlobalKey,
    /// Each key column's value.
    pub terms: Vec<Term>,
}

/// A term's value and its SQL text, as the statement gives them (`None`: not known, or not a
/// plain integer or string).
pub type TermLiteral<'a> = &'a dyn Fn(&Term) -> Option<(ShardValue, Vec<u8>)>;

impl KeyProbe {
    /// The SELECT of the owner, when each value matches one value of its column (an integer
    /// for an integer column, a string for a character column).
    fn owner_sql(&self, literal: TermLiteral) -> Option<Vec<u8>> {
        let mut values: Vec<Vec<u8>> = Vec::with_capacity(self.terms.len());
        for (c, t) in self.key.columns.iter().zip(&self.terms) {
            let (v, text) = literal(t)?;
            let fits = match v {
                ShardValue::Int(_) => c.is_integer(),
                ShardValue::Str(_) => c.is_text(),
            };
            if !fits {
                return None;
            }
            values.push(text);
        }
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        Some(crate::unique::lookup_table::owner_sql(&self.key, &refs))
    }
}

/// The fewest shards a SELECT must reach for a lookup to pick one. With two, asking both at
/// once is as much work for the backends as asking the lookup and then one shard, in one round
/// trip instead of two (`scripts/bench-unique`: 0.95x the QPS at 8 threads, 0.76x at one); with
/// four the lookup gave 1.42x at 8 threads.
pub const LOOKUP_MIN_SHARDS: usize = 3;

/// `otherwise` (a concatenation, merge or write over the shards) through the lookup of the
/// first of `probes` whose values `literal` gives; unchanged when none, or when it reaches
/// fewer than [`LOOKUP_MIN_SHARDS`].
pub fn through_lookup(probes: &[KeyProbe], literal: TermLiteral, otherwise: Route) -> Route {
    if probes.is_empty() {
        return otherwise;
    }
    let shards = match &otherwise {
        Route::Concat(bs)
        | Route::Merge(bs, _)
        | Route::Write {
            backends: bs,
            broadcast: false,
        } if bs.len() >= LOOKUP_MIN_SHARDS => bs.clone(),
        _ => return otherwise,
    };
    match probes.iter().find_map(|k| Some((k, k.owner_sql(literal)?))) {
        Some((k, owner_sql)) => Route::ByKey(Box::new(ByKey {
            lookup: k.key.backend.clone(),
            owner_sql,
            shards,
            otherwise,
        })),
        None => otherwise,
    }
}

/// A merge plan and the statement each shard runs for this execution.
#[derive(Debug)]
pub struct BoundMerge {
    pub plan: Arc<MergePlan>,
    pub shard_sql: Vec<u8>,
    /// This execution's OFFSET and LIMIT (a cached plan serves every page of its shape).
    pub offset: u64,
    pub limit: Option<u64>,
    /// What the plan's executions learn about its keys (`None`: nothing to learn, the plan
    /// asks for no weights).
    pub key_types: Option<Arc<KeyTypes>>,
    /// The same merge without collation weights, when earlier answers showed no string among
    /// the keys: lighter on the shards, and right as long as that still holds (the executor
    /// checks, and runs `plan`/`shard_sql` instead when it no longer does).
    pub lean: Option<(Arc<MergePlan>, Vec<u8>)>,
}

impl BoundMerge {
    /// A one-line description for EXPLAIN ROUTE.
    pub fn describe(&self) -> String {
        self.plan.describe_page(self.offset, self.limit)
    }
}

/// Where a value of a sharding-key condition comes from at each execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// The statement's literal number `slot`, negated or not.
    Slot { slot: usize, negated: bool },
    /// A value written the same in every statement of the shape (`None`: pins nothing).
    Const(Option<KeyValue>),
    /// A `?` of a prepared statement, bound at execution.
    Placeholder(usize),
}

/// Where a hole of a merge template gets its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// The statement's literal number `n`, as written.
    Literal(usize),
    /// The bound offset plus row count: the rows each shard of a streaming merge returns.
    Rows,
}

/// The per-shard statement of a merge, with the literal slots it takes from each statement.
#[derive(Debug)]
pub struct MergeTemplate {
    pub plan: Arc<MergePlan>,
    /// The same merge without collation weights (when the plan asks for any), used once the
    /// shards' answers showed that no compared key is a string.
    lean: Option<Box<MergeTemplate>>,
    key_types: Arc<KeyTypes>,
    /// `plan.shard_sql` cut around the holes: piece, hole, piece, …, piece.
    pieces: Vec<Vec<u8>>,
    fills: Vec<Fill>,
    /// The literal slots of the LIMIT's offset and row count, when each statement binds its own.
    offset_slot: Option<usize>,
    limit_slot: Option<usize>,
}

impl MergeTemplate {
    /// `holes`: where in `plan.shard_sql` each fill goes; `page`: the slots of the offset and
    /// of the row count that bind per statement.
    pub fn new(
        plan: MergePlan,
        mut holes: Vec<(Range<usize>, Fill)>,
        page: (Option<usize>, Option<usize>),
    ) -> MergeTemplate {
        holes.sort_by_key(|(r, _)| r.start);
        let mut pieces = Vec::with_capacity(holes.len() + 1);
        let mut fills = Vec::with_capacity(holes.len());
        let mut at = 0;
        for (r, fill) in holes {
            pieces.push(plan.shard_sql[at..r.start].to_vec());
            fills.push(fill);
            at = r.end;
        }
        pieces.push(plan.shard_sql[at..].to_vec());
        MergeTemplate {
            plan: Arc::new(plan),
            lean: None,
            key_types: Arc::new(KeyTypes::default()),
            pieces,
            fills,
            offset_slot: page.0,
            limit_slot: page.1,
        }
    }

    /// Adds the variant of this merge planned without collation weights.
    pub fn with_lean(mut self, lean: MergeTemplate) -> MergeTemplate {
        self.lean = Some(Box::new(lean));
        self
    }

    /// The value of literal `slot` of `stmt` read as a LIMIT number.
    fn number(stmt: &[u8], literals: &[Range<usize>], slot: usize) -> Option<u64> {
        super::limit_value(stmt.get(literals.get(slot)?.clone())?)
    }

    /// `stmt`'s OFFSET and LIMIT: its own literals where they are slots, else the plan's.
    /// `None` when a slot is not a number that fits u64, or is a row count of 0 (a LIMIT 0
    /// asks the shards for nothing and has a plan of its own).
    pub fn page(&self, stmt: &[u8], literals: &[Range<usize>]) -> Option<(u64, Option<u64>)> {
        let offset = match self.offset_slot {
            Some(s) => Self::number(stmt, literals, s)?,
            None => self.plan.offset,
        };
        let limit = match self.limit_slot {
            Some(s) => Some(Self::number(stmt, literals, s).filter(|&n| n > 0)?),
            None => self.plan.limit,
        };
        Some((offset, limit))
    }

    /// This execution's shard statement with `stmt`'s literals in the slots, and its page.
    pub fn render(&self, stmt: &[u8], literals: &[Range<usize>]) -> Option<BoundMerge> {
        let (offset, limit) = self.page(stmt, literals)?;
        let mut out = Vec::with_capacity(self.plan.shard_sql.len() + 16);
        for (i, piece) in self.pieces.iter().enumerate() {
            out.extend_from_slice(piece);
            match self.fills.get(i) {
                Some(Fill::Literal(s)) => {
                    out.extend_from_slice(stmt.get(literals.get(*s)?.clone())?)
                }
                Some(Fill::Rows) => {
                    let rows = offset.saturating_add(limit?);
                    out.extend_from_slice(rows.to_string().as_bytes());
                }
                None => {}
            }
        }
        // A lean variant that cannot bind leaves the full statement to run.
        let lean = self
            .lean
            .as_ref()
            .filter(|_| self.key_types.lean())
            .and_then(|l| l.render(stmt, literals))
            .map(|b| (b.plan, b.shard_sql));
        Some(BoundMerge {
            plan: self.plan.clone(),
            shard_sql: out,
            offset,
            limit,
            key_types: self.lean.as_ref().map(|_| self.key_types.clone()),
            lean,
        })
    }
}

/// A SELECT/UPDATE/DELETE whose target is a sharded table.
#[derive(Debug)]
pub struct ShardedPlan {
    pub rule: Arc<TableRule>,
    pub kind: DmlKind,
    /// Conditions of the WHERE that may pin the rows to shards: column, values.
    pub keys: Vec<(String, Vec<Term>)>,
    /// For a SELECT that needs more than concatenation: its merge, or what idgate cannot merge.
    pub merge: Option<Result<MergeTemplate, String>>,
    /// Why an UPDATE/DELETE cannot reach several shards (ORDER BY/LIMIT, UNION).
    pub needs_merge: Option<&'static str>,
    /// For a SELECT of one table whose rows are the answer as they are: its keys held through
    /// lookups that the WHERE gives whole.
    pub probes: Vec<KeyProbe>,
}

#[derive(Debug)]
pub enum ShapeKind {
    /// Nothing placed: the statement runs where it would without idgate's tables.
    Forward,
    /// DDL on every backend of the tables it names.
    Everywhere(Vec<String>),
    /// UPDATE/DELETE of broadcast tables only: on each of these backends.
    BroadcastWrite(Vec<String>),
    Sharded(Box<ShardedPlan>),
}

#[derive(Debug)]
pub struct ShapePlan {
    pub kind: ShapeKind,
    /// Literals the plan depends on in ways binding cannot follow (a LIMIT, a select item, a
    /// positional ORDER BY): a statement of the same shape with other texts there is planned
    /// anew.
    pub fixed: Vec<(usize, Vec<u8>)>,
}

pub(super) fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

/// The shard value of a key value.
fn shard_value(v: KeyValue) -> Option<ShardValue> {
    match v {
        KeyValue::Int(i) => Some(ShardValue::Int(i)),
        KeyValue::Str(s) => Some(ShardValue::Str(s)),
        KeyValue::Placeholder(_) => None,
    }
}

impl Term {
    /// The value of a literal or constant term for `stmt` (its literals at `literals`); `None`
    /// for a `?` and for a value that pins nothing.
    pub fn literal_value(&self, stmt: &[u8], literals: &[Range<usize>]) -> Option<ShardValue> {
        match self {
            Term::Slot { slot, negated } => {
                let text = stmt.get(literals.get(*slot)?.clone())?;
                shard_value(KeyTerm::resolve_literal(text, *negated)?)
            }
            Term::Const(v) => shard_value(v.clone()?),
            Term::Placeholder(_) => None,
        }
    }
}

impl Term {
    /// The value of a literal or constant term for `stmt` and its SQL text: a string as the
    /// statement writes it (in the client's character set), an integer in decimal.
    pub fn literal_text(
        &self,
        stmt: &[u8],
        literals: &[Range<usize>],
    ) -> Option<(ShardValue, Vec<u8>)> {
        let v = self.literal_value(stmt, literals)?;
        let text = match (&v, self) {
            (ShardValue::Int(i), _) => i.to_string().into_bytes(),
            (ShardValue::Str(_), Term::Slot { slot, .. }) => {
                stmt.get(literals.get(*slot)?.clone())?.to_vec()
            }
            _ => return None,
        };
        Some((v, text))
    }
}

impl ShapePlan {
    /// Whether this plan holds for `stmt` (its literals at `literals`): the fixed literals
    /// match, and a LIMIT bound per statement reads as the planner would read it.
    pub fn holds_for(&self, stmt: &[u8], literals: &[Range<usize>]) -> bool {
        if let ShapeKind::Sharded(p) = &self.kind {
            if let Some(Ok(t)) = &p.merge {
                if t.page(stmt, literals).is_none() {
                    return false;
                }
            }
        }
        self.fixed.iter().all(|(slot, text)| {
            literals
                .get(*slot)
                .and_then(|r| stmt.get(r.clone()))
                .is_some_and(|t| t == text.as_slice())
        })
    }

    /// The shard indices a sharded plan's conditions pin, given how each term resolves.
    pub fn pinned(
        &self,
        resolve: impl Fn(&Term) -> Option<ShardValue>,
    ) -> Option<(&ShardedPlan, Option<BTreeSet<usize>>)> {
        let ShapeKind::Sharded(p) = &self.kind else {
            return None;
        };
        Some((p, pinned_shards(&p.rule, &p.keys, resolve)))
    }

    /// The route of `stmt`, a statement of this plan's shape with its literals at `literals`.
    /// `Ok(None)`: it runs where it would without idgate's tables. `by_key`: a SELECT that a
    /// lookup may send to one shard gets [`Route::ByKey`].
    pub fn bind(
        &self,
        stmt: &[u8],
        literals: &[Range<usize>],
        by_key: bool,
    ) -> Result<Option<Route>, SqlError> {
        let resolve = |t: &Term| t.literal_value(stmt, literals);
        let (p, set) = match &self.kind {
            ShapeKind::Forward => return Ok(None),
            ShapeKind::Everywhere(bs) => return Ok(Some(Route::Everywhere(bs.clone()))),
            ShapeKind::BroadcastWrite(bs) => {
                return Ok(Some(Route::Write {
                    backends: bs.clone(),
                    broadcast: true,
                }))
            }
            ShapeKind::Sharded(_) => match self.pinned(resolve) {
                Some(x) => x,
                None => return Ok(None),
            },
        };
        let shards = p.rule.backends();
        let targets: Vec<String> = match set {
            Some(set) => set
                .into_iter()
                .filter_map(|i| shards.get(i).cloned())
                .collect(),
            None => shards.to_vec(),
        };
        if targets.len() <= 1 {
            let one = targets
                .into_iter()
                .next()
                .or_else(|| shards.first().cloned());
            return Ok(one.map(Route::One));
        }
        let by_key = |otherwise: Route| match by_key {
            true => through_lookup(&p.probes, &|t| t.literal_text(stmt, literals), otherwise),
            false => otherwise,
        };
        if let (DmlKind::Select, Some(merge)) = (p.kind, &p.merge) {
            return match merge {
                Ok(t) => {
                    let bound = t.render(stmt, literals).ok_or_else(|| {
                        unsupported("a statement whose literals idgate could not place".into())
                    })?;
                    Ok(Some(by_key(Route::Merge(targets, Box::new(bound)))))
                }
                Err(what) => Err(unsupported(format!(
                    "this SELECT on sharded table `{}` reaches {} shards, and {} for {what}; pin it \
                     to one shard with a condition on the sharding column",
                    p.rule.name,
                    targets.len(),
                    crate::route::MERGE_REFUSED
                ))),
            };
        }
        if let Some(why) = p.needs_merge {
            return Err(unsupported(format!(
                "this statement on sharded table `{}` reaches {} shards and needs {why} across them, \
                 which idgate does not merge yet; pin it to one shard with a condition on the sharding column",
                p.rule.name,
                targets.len()
            )));
        }
        Ok(Some(by_key(match p.kind {
            DmlKind::Select => Route::Concat(targets),
            _ => Route::Write {
                backends: targets,
                broadcast: false,
            },
        })))
    }
}
