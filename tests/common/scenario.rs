//! What every fault scenario does at its end and its start: the tables block of its config, the
//! wait for XA recovery, and the history check with its summary line.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

use super::history::{self, Attempt, IdOrder, Report};
use super::{Idgate, MariaDb};

/// The `tables:` block for `(table, generator)` pairs, each sharded by `id` mod 2 over `shard0`
/// and `shard1` (`id, user_id` with the `slot` algorithm for biased generators, whose ids carry
/// their row's slot: the owner is the id's low bit either way).
/// The writers' `UNIQUE (note)` is checked per shard (`unique: per_shard`): each note is new.
pub fn tables_mod2(tables: &[(&str, &str, bool)]) -> String {
    let mut y = String::from("tables:\n");
    for (table, generator, biased) in tables {
        let (columns, algorithm) = if *biased {
            ("[id, user_id]", "slot")
        } else {
            ("[id]", "mod")
        };
        y.push_str(&format!(
            "  {table}:\n    generator: {generator}\n    unique: per_shard\n    sharding:\n      \
             columns: {columns}\n      algorithm: {algorithm}\n      shards: [shard0, shard1]\n"
        ));
    }
    y
}

/// The config of the single-table scenarios: `seg_orders`, segment ids, sharded by id mod 2.
pub fn seg_orders_config() -> String {
    format!(
        "generators:\n  seg:\n    kind: segment\n    step: 500\n{}",
        tables_mod2(&[("seg_orders", "seg", false)])
    )
}

/// Short backend bounds (acquire 2 s, queries 1.5 s) for a config from `config_for*`, so a
/// dead or frozen path shows within a scenario.
pub fn short_backend_bounds(config: String) -> String {
    config
        .replace("acquire_timeout_ms: 10000", "acquire_timeout_ms: 2000")
        .replace("    pool:\n", "    query_timeout_ms: 1500\n    pool:\n")
}

/// How the ids of one INSERT relate in the `seg_orders` / `snow_orders` tables of the scenarios.
pub fn seg_snow_order(table: &str) -> IdOrder {
    match table {
        "seg_orders" => IdOrder::Block,
        _ => IdOrder::Increasing,
    }
}

/// Waits (30 s at most) until no shard holds a prepared XA branch.
pub fn wait_xa_recovered(dbs: &[&MariaDb], g: &Idgate) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for (i, db) in dbs.iter().enumerate() {
        loop {
            let left: Vec<mysql::Row> = super::direct(db).query("XA RECOVER").unwrap();
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "shard {i} still has {} prepared XA branches; idgate log:\n{}",
                left.len(),
                g.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Checks `attempts` against the rows of `tables` on the shards (owner: the id's low bit),
/// prints the summary line and fails on any problem; returns the report and the summary.
pub fn check_history(
    what: &str,
    attempts: &[Attempt],
    dbs: &[&MariaDb],
    tables: &[&str],
    order: impl Fn(&str) -> IdOrder,
) -> (Report, String) {
    let rows: HashMap<_, _> = tables
        .iter()
        .map(|t| (t.to_string(), history::read_rows(dbs, t)))
        .collect();
    let report = history::check(attempts, &rows, |_, id| (id % 2) as usize, order);
    let summary = report.summary(what);
    println!("{summary}");
    assert!(
        report.problems.is_empty(),
        "{summary}\n{} problems, first ones:\n{}",
        report.problems.len(),
        report.problems[..report.problems.len().min(20)].join("\n")
    );
    (report, summary)
}

/// The resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Acknowledged single-row INSERTs answered between `from` and `to` whose row went to `shard`
/// (the id's low bit).
pub fn acked_on(attempts: &[Attempt], shard: u64, from: f64, to: f64) -> usize {
    attempts
        .iter()
        .filter(|a| a.ok && a.ts >= from && a.ts < to && a.notes.len() == 1)
        .filter(|a| a.id.is_some_and(|id| id % 2 == shard))
        .count()
}
