//! The plan cache: hits bind without planning, keys keep databases and generations apart,
//! the LRU stays bounded, and a size of 0 keeps nothing.

use super::cache::PlanCache;
use super::plan::{PlanContext, Route};
use super::planner_tests::tables;

fn one(r: Option<Route>) -> String {
    match r {
        Some(Route::One(b)) => b,
        other => panic!("one backend, not {other:?}"),
    }
}

#[test]
fn a_shape_is_planned_once_and_bound_per_statement() {
    let t = tables();
    let ctx = PlanContext {
        db: None,
        tables: &t,
    };
    let cache = PlanCache::new(8);
    for (id, shard) in [(1, "s1"), (2, "s0"), (3, "s1"), (40, "s0")] {
        let stmt = format!("SELECT * FROM orders WHERE id = {id}");
        assert_eq!(
            one(cache.route(stmt.as_bytes(), &ctx, 0, false).unwrap()),
            shard
        );
    }
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.entries), (3, 1, 1));
    // Another database, another generation: other plans.
    let other_db = PlanContext {
        db: Some("app"),
        tables: &t,
    };
    cache
        .route(b"SELECT * FROM orders WHERE id = 5", &other_db, 0, false)
        .unwrap();
    cache
        .route(b"SELECT * FROM orders WHERE id = 5", &ctx, 1, false)
        .unwrap();
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.entries), (3, 3, 3));
}

#[test]
fn a_changed_fixed_literal_is_planned_again() {
    let t = tables();
    let ctx = PlanContext {
        db: None,
        tables: &t,
    };
    let cache = PlanCache::new(8);
    let run = |item: &str| {
        let stmt = format!("SELECT id, {item} FROM orders WHERE k > 1 ORDER BY id LIMIT 10");
        match cache.route(stmt.as_bytes(), &ctx, 0, false).unwrap() {
            Some(Route::Merge(_, m)) => m.shard_sql,
            other => panic!("a merge, not {other:?}"),
        }
    };
    assert!(run("'a'").windows(3).any(|w| w == b"'a'"));
    assert!(run("'a'").windows(3).any(|w| w == b"'a'"));
    assert!(
        run("'b'").windows(3).any(|w| w == b"'b'"),
        "never the plan of another item"
    );
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 2, 1));
}

#[test]
fn pages_of_a_shape_hit_one_plan() {
    let t = tables();
    let ctx = PlanContext {
        db: None,
        tables: &t,
    };
    let cache = PlanCache::new(8);
    let page = |o: u64, n: u64| {
        let stmt = format!("SELECT id FROM orders WHERE k > 1 ORDER BY id LIMIT {n} OFFSET {o}");
        match cache.route(stmt.as_bytes(), &ctx, 0, false).unwrap() {
            Some(Route::Merge(_, m)) => (m.offset, m.limit, m.shard_sql),
            other => panic!("a merge, not {other:?}"),
        }
    };
    for p in 0..10u64 {
        let (offset, limit, sql) = page(p * 20, 20);
        assert_eq!((offset, limit), (p * 20, Some(20)));
        let tail = format!("LIMIT {} ", p * 20 + 20);
        assert!(String::from_utf8_lossy(&sql).ends_with(&tail), "{tail}");
    }
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.entries), (9, 1, 1));
    // LIMIT 0 has a plan of its own, and does not leave it to other pages.
    assert_eq!(page(0, 0).1, Some(0));
    assert_eq!(page(20, 20).1, Some(20));
    let s = cache.stats();
    assert_eq!((s.hits, s.misses), (9, 3));
}

#[test]
fn the_least_recently_used_plan_goes_first() {
    let t = tables();
    let ctx = PlanContext {
        db: None,
        tables: &t,
    };
    let cache = PlanCache::new(2);
    let run = |stmt: &str| cache.route(stmt.as_bytes(), &ctx, 0, false).unwrap();
    run("SELECT a FROM orders WHERE id = 1");
    run("SELECT b FROM orders WHERE id = 1");
    run("SELECT a FROM orders WHERE id = 2"); // a is now the most recent
    run("SELECT c FROM orders WHERE id = 1"); // evicts b
    let before = cache.stats();
    assert_eq!((before.entries, before.evictions), (2, 1));
    run("SELECT a FROM orders WHERE id = 3");
    assert_eq!(cache.stats().hits, before.hits + 1, "a was kept");
    run("SELECT b FROM orders WHERE id = 3");
    assert_eq!(cache.stats().misses, before.misses + 1, "b was evicted");
}

#[test]
fn size_zero_plans_every_statement() {
    let t = tables();
    let ctx = PlanContext {
        db: None,
        tables: &t,
    };
    let cache = PlanCache::new(0);
    for id in [1, 2] {
        let stmt = format!("SELECT * FROM orders WHERE id = {id}");
        cache.route(stmt.as_bytes(), &ctx, 0, false).unwrap();
    }
    assert_eq!(cache.stats(), Default::default());
}

#[test]
fn long_statements_are_not_kept() {
    let t = tables();
    let ctx = PlanContext {
        db: None,
        tables: &t,
    };
    let cache = PlanCache::new(8);
    let ids: Vec<String> = (0..super::cache::MAX_KEPT_STATEMENT / 4)
        .map(|i| (i * 2).to_string())
        .collect();
    let stmt = format!("SELECT * FROM orders WHERE id IN ({})", ids.join(", "));
    assert!(stmt.len() > super::cache::MAX_KEPT_STATEMENT);
    assert_eq!(
        one(cache.route(stmt.as_bytes(), &ctx, 0, false).unwrap()),
        "s0"
    );
    assert_eq!(cache.stats(), Default::default());
}
