//! Fault scenario: a shard SIGKILLed under insert load (single-shard INSERTs and multi-shard ones,
//! which commit with XA) and started again; idgate is never restarted. Clients get errors while
//! the shard is away, never a hang; INSERTs into the live shard go on; afterwards service resumes,
//! recovery finishes every prepared branch, and the history check finds nothing lost, nothing
//! half-committed and no id twice.

mod common;

use std::time::Duration;

use common::history::IdOrder;
use common::idgate_proc::{config_for, Idgate};
use common::scenario;
use common::start_db;
use common::writers::{self, monotonic_now, Writers};

const NAMES: [&str; 1] = ["seg_orders"];

/// Acknowledged INSERTs answered between `from` and `to` whose rows all went to `shard`.

#[test]
fn a_shard_killed_and_restarted_under_load() {
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            &scenario::seg_orders_config(),
        )
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
    scenario::wait_xa_recovered(&[&dbs[0], &dbs[1]], &g);
    let (report, summary) = scenario::check_history(
        "shard1 killed for 3 s, then restarted",
        &attempts,
        &[&dbs[0], &dbs[1]],
        &NAMES,
        |_| IdOrder::Block,
    );
    assert!(
        scenario::acked_on(&attempts, 0, killed + 0.5, restarted) > 0,
        "INSERTs into the live shard stopped: {summary}"
    );
    assert!(
        attempts
            .iter()
            .any(|a| !a.ok && a.ts >= killed && a.ts < restarted + 1.0),
        "no client noticed the dead shard: {summary}"
    );
    assert!(
        scenario::acked_on(&attempts, 1, restarted + 1.0, end) > 0,
        "INSERTs into the restarted shard did not resume: {summary}"
    );
    assert!(
        report.longest_stall < 3.0,
        "a client waited {:.2} s: {summary}",
        report.longest_stall
    );
}
