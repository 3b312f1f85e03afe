//! Fault scenario: a shard frozen (SIGSTOP) under insert load, single-shard INSERTs and
//! multi-shard ones committing with XA, then resumed; idgate is never restarted. Clients waiting
//! on the frozen shard get an error within `query_timeout_ms` (never a hang), INSERTs into the
//! other shard go on, service resumes after the thaw, recovery finishes every XA branch, and the
//! history check finds nothing lost, nothing half-committed and no id twice.

mod common;

use std::time::Duration;

use common::history::IdOrder;
use common::idgate_proc::{config_for, Idgate};
use common::scenario;
use common::start_db;
use common::writers::{self, monotonic_now, Canary, Writers};

const NAMES: [&str; 1] = ["seg_orders"];

#[test]
fn a_shard_frozen_then_resumed_under_load() {
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let g = Idgate::start_with(|port| {
        scenario::short_backend_bounds(config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            &scenario::seg_orders_config(),
        ))
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

    scenario::wait_xa_recovered(&[&dbs[0], &dbs[1]], &g);
    let (report, summary) = scenario::check_history(
        "shard1 frozen 5 s, then resumed",
        &attempts,
        &[&dbs[0], &dbs[1]],
        &NAMES,
        |_| IdOrder::Block,
    );
    writers::assert_undisturbed(
        &canary,
        Duration::from_millis(500),
        "a session on the live shard only",
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
        scenario::acked_on(&attempts, 1, thawed + 1.0, end) > 0,
        "INSERTs into the resumed shard did not come back: {summary}"
    );
    assert!(
        report.longest_stall < 4.5,
        "a client waited {:.2} s: {summary}",
        report.longest_stall
    );
}
