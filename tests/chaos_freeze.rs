//! Fault scenario: a shard frozen (SIGSTOP) under insert load, single-shard INSERTs and
//! multi-shard ones committing with XA, then resumed; idgate is never restarted. Clients waiting
//! on the frozen shard get an error within `query_timeout_ms` (never a hang), INSERTs into the
//! other shard go on, service resumes after the thaw, recovery finishes every XA branch, and the
//! history check finds nothing lost, nothing half-committed and no id twice.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::history::{self, IdOrder};
use common::idgate_proc::{config_for, Idgate};
use common::start_db;
use common::writers::{self, monotonic_now, Canary, Writers};
use mysql::prelude::Queryable;

const TABLES: &str = "generators:
  seg:
    kind: segment
    step: 500
tables:
  seg_orders:
    generator: seg
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

const NAMES: [&str; 1] = ["seg_orders"];

fn acked_on(attempts: &[history::Attempt], shard: u64, from: f64, to: f64) -> usize {
    attempts
        .iter()
        .filter(|a| a.ok && a.ts >= from && a.ts < to)
        .filter(|a| a.id.is_some_and(|id| id % 2 == shard) && a.notes.len() == 1)
        .count()
}

#[test]
fn a_shard_frozen_then_resumed_under_load() {
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], TABLES)
            .replace("acquire_timeout_ms: 10000", "acquire_timeout_ms: 2000")
            .replace("    pool:\n", "    query_timeout_ms: 1500\n    pool:\n")
    });
    let w = Writers::start("chaos-freeze", g.port, &NAMES, 4, 2);
    // Only ever on shard0 (id 2 is even): it must not notice shard1's trouble.
    let canary = Canary::start(g.port, "SELECT note FROM seg_orders WHERE id = 2");
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    pause(1500);
    let frozen = monotonic_now();
    dbs[1].freeze();
    pause(5000);
    let thawed = monotonic_now();
    dbs[1].thaw();
    pause(3000);
    let end = monotonic_now();
    let attempts = w.stop();
    let canary = canary.stop();

    let deadline = Instant::now() + Duration::from_secs(30);
    for (i, db) in dbs.iter().enumerate() {
        loop {
            let left: Vec<mysql::Row> = common::direct(db).query("XA RECOVER").unwrap();
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "shard {i} still has {} prepared XA branches; idgate log:\n{}",
                left.len(),
                g.log()
            );
            pause(200);
        }
    }
    let shards = [&dbs[0], &dbs[1]];
    let rows: HashMap<_, _> = NAMES
        .iter()
        .map(|t| (t.to_string(), history::read_rows(&shards, t)))
        .collect();
    let report = history::check(
        &attempts,
        &rows,
        |_, id| (id % 2) as usize,
        |_| IdOrder::Block,
    );
    let summary = report.summary("shard1 frozen 5 s, then resumed");
    println!("{summary}");
    assert!(
        report.problems.is_empty(),
        "{summary}\n{}",
        report.problems[..report.problems.len().min(20)].join("\n")
    );
    let worst = canary
        .iter()
        .map(|(_, took, _)| *took)
        .max()
        .unwrap_or_default();
    assert!(
        canary.iter().all(|(_, _, r)| r.is_ok()) && worst < Duration::from_millis(500),
        "a session on the live shard only was disturbed (slowest {worst:?}): {:?}",
        canary
            .iter()
            .filter(|(_, _, r)| r.is_err())
            .take(3)
            .collect::<Vec<_>>()
    );
    assert!(
        canary
            .iter()
            .filter(|(ts, _, _)| *ts > frozen && *ts < thawed)
            .count()
            > 20,
        "the canary ran during the freeze"
    );
    assert!(
        attempts
            .iter()
            .any(|a| !a.ok && a.ts >= frozen && a.ts < thawed + 1.0),
        "no client noticed the frozen shard: {summary}"
    );
    assert!(
        acked_on(&attempts, 1, thawed + 1.0, end) > 0,
        "INSERTs into the resumed shard did not come back: {summary}"
    );
    assert!(
        report.longest_stall < 4.5,
        "a client waited {:.2} s: {summary}",
        report.longest_stall
    );
}
