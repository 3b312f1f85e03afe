//! Fault scenario: the network between idgate and one shard misbehaves under insert load, through
//! a fault relay: every packet delayed, every connection reset, then a half-open path that keeps
//! connections up but carries nothing. Clients get answers or errors within the configured
//! timeouts (never a stuck session), the pool recovers when the path does, recovery finishes
//! every XA branch, and the history check finds nothing lost and no id twice.

mod common;

use std::time::Duration;

use common::fault_relay::FaultRelay;
use common::history::IdOrder;
use common::idgate_proc::{config_for_ports, Idgate};
use common::scenario;
use common::start_db;
use common::writers::{self, monotonic_now, Canary, Writers};

const NAMES: [&str; 1] = ["seg_orders"];

#[test]
fn delays_resets_and_a_half_open_path_to_a_shard() {
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let relay = FaultRelay::start(dbs[1].port);
    let g = Idgate::start_with(|port| {
        scenario::short_backend_bounds(config_for_ports(
            port,
            &[("shard0", dbs[0].port), ("shard1", relay.port)],
            &scenario::seg_orders_config(),
        ))
    });
    let w = Writers::start("chaos-network", g.port, &NAMES, 4, 2);
    // Only ever on shard0 (id 2 is even): it must not notice shard1's trouble.
    let canary = Canary::start(g.port, "SELECT note FROM seg_orders WHERE id = 2");
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    pause(1500);
    let delayed = monotonic_now();
    relay.delay(100);
    pause(3000);
    relay.pass();
    let reset = monotonic_now();
    relay.reset_all();
    pause(2000);
    let cut = monotonic_now();
    relay.blackhole();
    pause(5000);
    let restored = monotonic_now();
    relay.pass();
    relay.reset_all();
    pause(3000);
    let end = monotonic_now();
    let attempts = w.stop();
    let canary = canary.stop();

    scenario::wait_xa_recovered(&[&dbs[0], &dbs[1]], &g);
    let (report, summary) = scenario::check_history(
        "shard1's path delayed 100 ms, reset, half-open 5 s",
        &attempts,
        &[&dbs[0], &dbs[1]],
        &NAMES,
        |_| IdOrder::Block,
    );
    assert!(
        scenario::acked_on(&attempts, 1, delayed, reset) > 0,
        "nothing got through the delay: {summary}"
    );
    assert!(
        scenario::acked_on(&attempts, 1, reset + 0.5, cut) > 0,
        "no recovery after the reset: {summary}"
    );
    writers::assert_undisturbed(
        &canary,
        Duration::from_millis(500),
        "a session on shard0 only",
    );
    assert!(
        attempts
            .iter()
            .any(|a| !a.ok && a.ts >= cut && a.ts < restored + 1.0),
        "no client noticed the half-open path: {summary}"
    );
    assert!(
        scenario::acked_on(&attempts, 1, restored + 1.0, end) > 0,
        "no recovery after the path came back: {summary}"
    );
    // The longest wait for an answer: a query timeout plus a pool acquire at most.
    assert!(
        report.longest_stall < 4.5,
        "a client waited {:.2} s: {summary}",
        report.longest_stall
    );
}
