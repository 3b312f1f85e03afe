//! Fault scenario: the sequence store (its own MariaDB, also holding the XA decision log) killed,
//! restarted, then frozen (SIGSTOP) and resumed, under insert load from Python and JDBC writers
//! over two shards. Segment ids keep flowing from the buffered ranges, then INSERTs that need the
//! store fail with a clear error within the configured wait, and everything recovers without
//! restarting idgate; the history check finds nothing lost and no id twice. A frozen store
//! never holds a client longer than the bound on a decision-log statement.

mod common;

use std::time::Duration;

use common::history::{self};
use common::idgate_proc::{config_for, Idgate};
use common::scenario;
use common::start_db;
use common::writers::{self, monotonic_now, Writers};
use mysql::prelude::Queryable;

/// The generators, and the tables sharded by id over shard0 and shard1.
fn tables() -> String {
    let generators = "sequence_store:
  backend: store
generators:
  seg:
    kind: segment
    step: 3000
    dynamic_step: false
    max_wait_ms: 500
    store_timeout_ms: 1000
  snow:
    kind: snowflake
    worker_id: 7
";
    format!(
        "{generators}{}",
        scenario::tables_mod2(&[
            ("seg_orders", "seg", false),
            ("snow_orders", "snow", false),
            ("snow_probe", "snow", false),
        ])
    )
}

const NAMES: [&str; 2] = ["seg_orders", "snow_orders"];

/// Acknowledged INSERTs into `table` whose answer came between `from` and `to`.
fn acked(attempts: &[history::Attempt], table: &str, from: f64, to: f64) -> usize {
    attempts
        .iter()
        .filter(|a| a.ok && a.t == table && a.ts >= from && a.ts < to)
        .count()
}

#[test]
fn sequence_store_killed_and_frozen_under_load() {
    let dbs = [start_db(), start_db()];
    let store = start_db();
    for db in &dbs {
        writers::create_tables(db, &NAMES);
        writers::create_tables(db, &["snow_probe"]);
    }
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1]), ("store", &store)],
            &tables(),
        )
    });
    let w = Writers::start("chaos-store", g.port, &NAMES, 4, 2);
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    pause(1500);

    let killed = monotonic_now();
    store.kill();
    pause(4000);
    let restarted = monotonic_now();
    store.restart().expect("restart the store");
    pause(2500);

    // Longer than the decision log's 5 s bound on a statement: an INSERT across shards must get
    // its error, not wait out the freeze.
    let frozen = monotonic_now();
    store.freeze();
    pause(1000);
    // A single-shard snowflake INSERT needs no store, whatever the writers are waiting on: a
    // session of its own shows it (the writers' threads may all sit in multi-shard INSERTs
    // waiting out the decision log's bound).
    let probe = std::time::Instant::now();
    let mut c = g.conn();
    c.query_drop("INSERT INTO snow_probe (user_id, note) VALUES (1, 'while frozen')")
        .unwrap_or_else(|e| panic!("a snowflake INSERT while the store was frozen: {e}"));
    let took = probe.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "a snowflake INSERT while the store was frozen took {took:?}"
    );
    drop(c);
    pause(6000u64.saturating_sub(took.as_millis() as u64));
    let thawed = monotonic_now();
    store.thaw();
    pause(2500);
    let end = monotonic_now();
    let attempts = w.stop();

    let (report, summary) = scenario::check_history(
        "store killed 4 s, then frozen 7 s",
        &attempts,
        &[&dbs[0], &dbs[1]],
        &NAMES,
        scenario::seg_snow_order,
    );

    // While the store was down, ids kept coming: from the buffered ranges at first, and all
    // along for the snowflake generator (its worker id is fixed; single-shard INSERTs need no
    // decision log).
    let early = acked(&attempts, "seg_orders", killed, killed + 1.0);
    assert!(
        early > 0,
        "no segment id from the buffers after the kill: {summary}"
    );
    assert!(
        acked(&attempts, "snow_orders", killed, restarted) > 0,
        "no snowflake INSERT while the store was killed: {summary}"
    );
    // Then the buffers ran dry and INSERTs needing the store failed with a clear error, soon:
    // every answer within the wait and timeouts configured, never a hang.
    let store_errors: Vec<&str> = attempts
        .iter()
        .filter(|a| !a.ok && a.ts >= killed && a.ts < thawed + 1.0)
        .filter_map(|a| a.err.as_deref())
        .collect();
    assert!(
        store_errors
            .iter()
            .any(|e| e.contains("sequence store") || e.contains("ids")),
        "no clear error naming the store while it was away: {store_errors:?}"
    );
    assert!(
        report.longest_stall < 6.5,
        "a client waited {:.2} s for an answer: {summary}",
        report.longest_stall
    );
    // And service came back after each fault without restarting idgate.
    for (what, from, to) in [
        ("restart", restarted + 1.0, frozen),
        ("thaw", thawed + 1.0, end),
    ] {
        assert!(
            acked(&attempts, "seg_orders", from, to) > 0,
            "segment INSERTs did not resume after the store's {what}: {summary}"
        );
    }
}
