//! Fault scenario: a shard SIGKILLed under insert load (single-shard INSERTs and multi-shard ones,
//! which commit with XA) and started again; idgate is never restarted. Clients get errors while
//! the shard is away, never a hang; INSERTs into the live shard go on; afterwards service resumes,
//! recovery finishes every prepared branch, and the history check finds nothing lost, nothing
//! half-committed and no id twice.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::history::{self, IdOrder};
use common::idgate_proc::{config_for, Idgate};
use common::start_db;
use common::writers::{self, monotonic_now, Writers};
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

/// Acknowledged INSERTs answered between `from` and `to` whose rows all went to `shard`.
fn acked_on(attempts: &[history::Attempt], shard: u64, from: f64, to: f64) -> usize {
    attempts
        .iter()
        .filter(|a| a.ok && a.ts >= from && a.ts < to && a.notes.len() == 1)
        .filter(|a| a.id.is_some_and(|id| id % 2 == shard))
        .count()
}

#[test]
fn a_shard_killed_and_restarted_under_load() {
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], TABLES)
    });
    let w = Writers::start("chaos-shard", g.port, &NAMES, 4, 2);
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    pause(1500);
    let killed = monotonic_now();
    dbs[1].kill();
    pause(3000);
    let restarted = monotonic_now();
    dbs[1].restart().expect("restart shard1");
    pause(3000);
    let end = monotonic_now();
    let attempts = w.stop();

    // Branches prepared when the shard died are finished by recovery, in the background.
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
    let summary = report.summary("shard1 killed for 3 s, then restarted");
    println!("{summary}");
    assert!(
        report.problems.is_empty(),
        "{summary}\n{}",
        report.problems[..report.problems.len().min(20)].join("\n")
    );
    assert!(
        acked_on(&attempts, 0, killed + 0.5, restarted) > 0,
        "INSERTs into the live shard stopped: {summary}"
    );
    assert!(
        attempts
            .iter()
            .any(|a| !a.ok && a.ts >= killed && a.ts < restarted + 1.0),
        "no client noticed the dead shard: {summary}"
    );
    assert!(
        acked_on(&attempts, 1, restarted + 1.0, end) > 0,
        "INSERTs into the restarted shard did not resume: {summary}"
    );
    assert!(
        report.longest_stall < 3.0,
        "a client waited {:.2} s: {summary}",
        report.longest_stall
    );
}
