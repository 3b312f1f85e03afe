//! Fault scenario: idgate SIGKILLed at random moments, again and again, under insert load from
//! Python client threads into tables with segment, snowflake and biased ids sharded over two
//! MariaDB shards. After the last restart the history every client saw is checked against the
//! shards (tests/common/history.rs): no acknowledged row lost or misplaced, no id twice, no half
//! INSERT, `LAST_INSERT_ID()` right, and no XA branch left prepared.
//!
//! CI runs `CHAOS_KILLS` (default 10) kills; `scripts/chaos --long` runs 100 or more.

mod common;

use std::time::{Duration, Instant};

use common::history;
use common::idgate_proc::{config_for, Idgate};
use common::scenario;
use common::start_db;
use common::writers::{self, Writers};
use mysql::prelude::Queryable;
use rand::Rng;

/// The generators, and the tables sharded by id over shard0 and shard1.
fn tables() -> String {
    let generators = "generators:
  seg:
    kind: segment
    step: 50
  snow:
    kind: snowflake
    lease_ttl_ms: 6000
    heartbeat_ms: 1000
    lease_safety_ms: 2000
  bias:
    kind: biased
    slot_bits: 4
    bias_column: user_id
    lease_ttl_ms: 6000
    heartbeat_ms: 1000
    lease_safety_ms: 2000
";
    format!(
        "{generators}{}",
        scenario::tables_mod2(&[
            ("seg_orders", "seg", false),
            ("snow_orders", "snow", false),
            ("bias_orders", "bias", true)
        ])
    )
}

const NAMES: [&str; 3] = ["seg_orders", "snow_orders", "bias_orders"];

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn idgate_killed_again_and_again_under_insert_load() {
    let kills = env_number("CHAOS_KILLS", 10);
    let threads = env_number("CHAOS_THREADS", 4);
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], &tables())
    });
    let writers = Writers::start("chaos-kill", g.port, &NAMES, threads, threads.div_ceil(2));
    let started = Instant::now();
    let mut rng = rand::rng();
    std::thread::sleep(Duration::from_millis(700));
    for _ in 0..kills {
        // A random moment under load, then a random pause before the restart.
        std::thread::sleep(Duration::from_millis(rng.random_range(150..900)));
        g.kill();
        std::thread::sleep(Duration::from_millis(rng.random_range(0..300)));
        g.restart();
    }
    std::thread::sleep(Duration::from_millis(1000));
    let (python, jdbc) = (writers.python_threads, writers.jdbc_threads);
    let attempts = writers.stop();
    let elapsed = started.elapsed();

    // The last start recovered every branch the kills left prepared.
    for (i, db) in dbs.iter().enumerate() {
        let left: Vec<mysql::Row> = common::direct(db).query("XA RECOVER").unwrap();
        assert!(
            left.is_empty(),
            "shard {i} still has {} prepared XA branches",
            left.len()
        );
    }
    let order = |t: &str| match t {
        "seg_orders" => history::IdOrder::Block,
        "snow_orders" => history::IdOrder::Increasing,
        _ => history::IdOrder::Any,
    };
    let (report, summary) = scenario::check_history(
        &format!(
            "idgate SIGKILL x{kills}, {python} Python + {jdbc} JDBC writers, {:.1} s",
            elapsed.as_secs_f64()
        ),
        &attempts,
        &[&dbs[0], &dbs[1]],
        &NAMES,
        order,
    );
    assert!(
        report.acknowledged > kills as usize * 5,
        "too little load to mean anything: {summary}"
    );
    assert!(
        report.unknown > 0 || kills == 0,
        "no INSERT was cut by a kill: {summary}"
    );
    for t in NAMES {
        assert!(
            attempts.iter().any(|a| a.ok && a.t == t),
            "no acknowledged INSERT into {t}"
        );
    }
}
