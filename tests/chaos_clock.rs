//! Fault scenario: the wall clock of the running idgate stepped back 5 ms, 1 s and 10 s, then
//! forward 1 h, under insert load, with libfaketime (Debian `faketime`) reading its offset from a
//! file the test rewrites; the monotonic clock is left alone, as an NTP step leaves it. Snowflake
//! (leased worker id) and biased ids must never repeat; a step within `max_borrow_ms` costs
//! nothing; a larger one gets a clear error, never a long wait, until the clock catches up.

mod common;

use std::path::Path;
use std::time::Duration;

use common::history::{self, IdOrder};
use common::idgate_proc::{config_for, Idgate};
use common::scenario;
use common::start_db;
use common::writers::{self, monotonic_now, Writers};

const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// The generators, and the tables sharded by id over shard0 and shard1.
fn tables() -> String {
    let generators = "generators:
  snow:
    kind: snowflake
    max_borrow_ms: 2000
  bias:
    kind: biased
    worker_id: 9
    slot_bits: 4
    bias_column: user_id
    max_borrow_ms: 2000
";
    format!(
        "{generators}{}",
        scenario::tables_mod2(&[
            ("snow_orders", "snow", false),
            ("bias_orders", "bias", true)
        ])
    )
}

const NAMES: [&str; 2] = ["snow_orders", "bias_orders"];

fn acked(attempts: &[history::Attempt], from: f64, to: f64) -> usize {
    attempts
        .iter()
        .filter(|a| a.ok && a.ts >= from && a.ts < to)
        .count()
}

#[test]
fn wall_clock_stepped_back_and_forward_under_load() {
    assert!(
        Path::new(FAKETIME_LIB).is_file(),
        "{FAKETIME_LIB} is missing (Debian package faketime): run scripts/test"
    );
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let dir = std::env::temp_dir().join(format!("idgate-chaos-clock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let offset_file = dir.join("offset");
    let set_offset = |o: &str| std::fs::write(&offset_file, format!("{o}\n")).unwrap();
    set_offset("+0");
    let offset_path = offset_file.display().to_string();
    let g = Idgate::start_with_env(
        |port| config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], &tables()),
        &[
            ("LD_PRELOAD", FAKETIME_LIB),
            ("FAKETIME_TIMESTAMP_FILE", &offset_path),
            ("FAKETIME_NO_CACHE", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    let w = Writers::start("chaos-clock", g.port, &NAMES, 3, 1);
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    pause(1000);
    // Each offset is from the real time: every step below goes back by the difference.
    let mut marks = Vec::new();
    for (offset, ms) in [
        ("-0.005", 1500),
        ("-1.005", 3000),
        ("-11.005", 13000),
        ("+3600", 2000),
    ] {
        marks.push((offset, monotonic_now()));
        set_offset(offset);
        pause(ms);
    }
    let end = monotonic_now();
    let attempts = w.stop();

    let order = |t: &str| match t {
        "snow_orders" => IdOrder::Increasing,
        _ => IdOrder::Any,
    };
    let (report, summary) = scenario::check_history(
        "wall clock stepped back 5 ms, 1 s, 10 s, forward 1 h",
        &attempts,
        &[&dbs[0], &dbs[1]],
        &NAMES,
        order,
    );

    let at = |i: usize| marks[i].1;
    // Steps within max_borrow_ms: INSERTs go on.
    assert!(
        acked(&attempts, at(0), at(1)) > 0,
        "after 5 ms back: {summary}"
    );
    assert!(
        acked(&attempts, at(1), at(2)) > 0,
        "after 1 s back: {summary}"
    );
    // 10 s back: borrowing runs out after 2 s of ticks, then a clear error until the clock is
    // past the last issued timestamp again (about 11 s after the step).
    let clock_errors = attempts
        .iter()
        .filter(|a| !a.ok && a.ts >= at(2) && a.ts < at(3))
        .filter(|a| a.err.as_deref().is_some_and(|e| e.contains("clock is")))
        .count();
    assert!(
        clock_errors > 0,
        "no clear clock error after 10 s back: {summary}"
    );
    assert!(
        acked(&attempts, at(2) + 11.5, at(3)) > 0,
        "INSERTs did not resume once the clock caught up: {summary}"
    );
    assert!(
        acked(&attempts, at(3), end) > 0,
        "after 1 h forward: {summary}"
    );
    assert!(
        report.longest_stall < 2.0,
        "a client waited {:.2} s: {summary}",
        report.longest_stall
    );
}
