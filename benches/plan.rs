//! CPU cost of routing a scatter `ORDER BY k, id LIMIT 10` over two shards: planned from the
//! text (sqlparser parse, merge planning, per-shard SQL) against bound to the plan kept for its
//! shape (literal scan, cache lookup, shard choice, per-shard SQL from the template), and the
//! same for a point select by sharding key. Also the look every relayed text statement gets
//! for idgate's own statements (`admin_statement`), which a SELECT now pays one more word of.
//!
//! Run: `cargo bench --bench plan`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use idgate::route::{planner, Algorithm, Placement, PlanCache, PlanContext, TableRule, Tables};

fn tables() -> Tables {
    Tables::new(vec![TableRule {
        schema: None,
        name: "sbtest1".into(),
        id_column: "id".into(),
        generator: None,
        explicit_ids: Default::default(),
        bias_column: None,
        unique: None,
        placement: Placement::Sharded {
            columns: vec!["id".into()],
            algorithm: Algorithm::Mod,
            shards: vec!["shard0".into(), "shard1".into()],
        },
    }])
}

fn bench(c: &mut Criterion) {
    let t = tables();
    let ctx = PlanContext {
        db: Some("sbtest"),
        tables: &t,
    };
    let mut g = c.benchmark_group("plan");
    for (name, stmt) in [
        (
            "scatter_order_limit",
            &b"SELECT id, k, c FROM sbtest1 WHERE k >= 5012 ORDER BY k, id LIMIT 10"[..],
        ),
        ("point_select", &b"SELECT c FROM sbtest1 WHERE id=5012"[..]),
    ] {
        g.bench_function(format!("{name}/cold"), |b| {
            b.iter(|| {
                let literals = idgate::sql::shape(black_box(stmt)).slots;
                let plan = planner::plan(stmt, &literals, &ctx).unwrap();
                plan.bind(stmt, &literals, true).unwrap()
            })
        });
        let cache = PlanCache::new(1024);
        cache.route(stmt, &ctx, 0, true).unwrap();
        g.bench_function(format!("{name}/cached"), |b| {
            b.iter(|| cache.route(black_box(stmt), &ctx, 0, true).unwrap())
        });
    }
    // The relay path's look for idgate's own statements: a SELECT is compared as far as its
    // second word (`SELECT CONNECTION_ID()`), an UPDATE by its first.
    for (name, stmt) in [
        (
            "admin_look/select",
            &b"SELECT c FROM sbtest1 WHERE id=5012"[..],
        ),
        (
            "admin_look/update",
            &b"UPDATE sbtest1 SET k=k+1 WHERE id=5012"[..],
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| idgate::sql::admin_statement(black_box(stmt)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
