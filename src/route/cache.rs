//! Plans kept by statement shape: the statement with its literals replaced by `?`, the
//! session's database and the configuration generation. A bounded LRU shared by all sessions;
//! a hit binds the statement's literals to the kept plan without parsing it.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use super::plan::{PlanContext, Route, ShapePlan};
use super::planner;
use crate::wire::errors::SqlError;

/// Longer statements are planned each time and not kept: the cache's memory stays bounded by
/// `plan_cache_size` times this (plus the plan), whatever clients send.
pub const MAX_KEPT_STATEMENT: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlanKey {
    pub shape: Vec<u8>,
    /// Where the shape's literals are (a `?` of the client's is not one).
    pub marks: Vec<u32>,
    pub db: Option<String>,
    pub generation: u64,
}

#[derive(Default)]
struct Lru {
    /// Each plan with the tick of its last use.
    map: HashMap<Arc<PlanKey>, (Arc<ShapePlan>, u64)>,
    /// Keys by last use, oldest first.
    order: BTreeMap<u64, Arc<PlanKey>>,
    tick: u64,
}

/// Hit, miss and eviction counts and the entries held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub entries: u64,
}

pub struct PlanCache {
    capacity: usize,
    lru: Mutex<Lru>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    entries: AtomicU64,
}

impl PlanCache {
    /// A cache of at most `capacity` plans; 0 keeps none (every statement is planned).
    pub fn new(capacity: usize) -> PlanCache {
        PlanCache {
            capacity,
            lru: Mutex::new(Lru::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            entries: AtomicU64::new(0),
        }
    }

    fn lru(&self) -> std::sync::MutexGuard<'_, Lru> {
        // A panic elsewhere while holding the lock leaves a consistent map: keep using it.
        self.lru.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
            evictions: self.evictions.load(Relaxed),
            entries: self.entries.load(Relaxed),
        }
    }

    /// The plan kept under `key`, marked as just used.
    pub fn get(&self, key: &PlanKey) -> Option<Arc<ShapePlan>> {
        let mut lru = self.lru();
        lru.tick += 1;
        let tick = lru.tick;
        let (plan, old) = {
            let (plan, used) = lru.map.get_mut(key)?;
            let old = std::mem::replace(used, tick);
            (plan.clone(), old)
        };
        if let Some(k) = lru.order.remove(&old) {
            lru.order.insert(tick, k);
        }
        Some(plan)
    }

    /// Keeps `plan` under `key` (replacing what was there), evicting the least recently used.
    pub fn insert(&self, key: PlanKey, plan: Arc<ShapePlan>) {
        if self.capacity == 0 {
            return;
        }
        let mut lru = self.lru();
        lru.tick += 1;
        let tick = lru.tick;
        let key = Arc::new(key);
        if let Some((_, old)) = lru.map.insert(key.clone(), (plan, tick)) {
            lru.order.remove(&old);
        }
        lru.order.insert(tick, key);
        while lru.map.len() > self.capacity {
            let Some((_, oldest)) = lru.order.pop_first() else {
                break;
            };
            lru.map.remove(&oldest);
            self.evictions.fetch_add(1, Relaxed);
        }
        self.entries.store(lru.map.len() as u64, Relaxed);
    }

    /// The plan for `stmt` (kept, or made and kept) and where its literals are.
    pub fn plan_for(
        &self,
        stmt: &[u8],
        ctx: &PlanContext,
        generation: u64,
    ) -> Result<(Arc<ShapePlan>, Vec<Range<usize>>), SqlError> {
        let shape = crate::sql::shape(stmt);
        if self.capacity == 0 || stmt.len() > MAX_KEPT_STATEMENT {
            let plan = planner::plan(stmt, &shape.slots, ctx)?;
            return Ok((Arc::new(plan), shape.slots));
        }
        let key = PlanKey {
            shape: shape.text,
            marks: shape.marks,
            db: ctx.db.map(str::to_string),
            generation,
        };
        if let Some(plan) = self.get(&key) {
            if plan.holds_for(stmt, &shape.slots) {
                self.hits.fetch_add(1, Relaxed);
                return Ok((plan, shape.slots));
            }
        }
        self.misses.fetch_add(1, Relaxed);
        let plan = Arc::new(planner::plan(stmt, &shape.slots, ctx)?);
        self.insert(key, plan.clone());
        Ok((plan, shape.slots))
    }

    /// The route of `stmt`: its shape's plan bound to its literals. `Ok(None)`: it runs where
    /// it would without idgate's tables. `by_key`: a SELECT a lookup may send to one shard gets
    /// [`Route::ByKey`] (for the client's own statements; idgate's internal reads take the
    /// general route).
    pub fn route(
        &self,
        stmt: &[u8],
        ctx: &PlanContext,
        generation: u64,
        by_key: bool,
    ) -> Result<Option<Route>, SqlError> {
        let (plan, literals) = self.plan_for(stmt, ctx, generation)?;
        plan.bind(stmt, &literals, by_key)
    }
}
