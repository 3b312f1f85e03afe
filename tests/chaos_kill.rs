//! Fault scenario: idgate SIGKILLed at random moments, again and again, under insert load from
//! Python client threads into tables with segment, snowflake and biased ids sharded over two
//! MariaDB shards. After the last restart the history every client saw is checked against the
//! shards (tests/common/history.rs): no acknowledged row lost or misplaced, no id twice, no half
//! INSERT, `LAST_INSERT_ID()` right, and no XA branch left prepared.
//!
//! CI runs `CHAOS_KILLS` (default 10) kills; `scripts/chaos --long` runs 100 or more.

mod common;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::clients::{compile_java, require_python_modules, source_dir};
use common::history;
use common::idgate_proc::{config_for, Idgate, APP_PASSWORD, APP_USER};
use common::{start_db, DATABASE};
use mysql::prelude::Queryable;
use rand::Rng;

const TABLES: &str = "generators:
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
tables:
  seg_orders:
    generator: seg
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  snow_orders:
    generator: snow
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  bias_orders:
    generator: bias
    sharding:
      columns: [id, user_id]
      algorithm: slot
      shards: [shard0, shard1]
";

const NAMES: [&str; 3] = ["seg_orders", "snow_orders", "bias_orders"];

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn idgate_killed_again_and_again_under_insert_load() {
    require_python_modules("pymysql", "pymysql");
    let kills = env_number("CHAOS_KILLS", 10);
    let threads = env_number("CHAOS_THREADS", 4);
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        let mut c = common::direct(db);
        for t in NAMES {
            c.query_drop(format!(
                "CREATE TABLE {t} (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, \
                 note VARCHAR(40) NOT NULL, UNIQUE KEY (note))"
            ))
            .unwrap();
        }
    }
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], TABLES)
    });
    let dir = std::env::temp_dir().join(format!("idgate-chaos-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stop = dir.join("stop");
    let history_path = dir.join("history.jsonl");
    let _ = std::fs::remove_file(&stop);
    let mut writer = Command::new("python3")
        .arg(source_dir().join("py_chaos_writer.py"))
        .args([
            "127.0.0.1",
            &g.port.to_string(),
            APP_USER,
            APP_PASSWORD,
            DATABASE,
        ])
        .arg(threads.to_string())
        .arg(&stop)
        .args(NAMES)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&history_path).unwrap())
        .stderr(std::fs::File::create(dir.join("writer.err")).unwrap())
        .spawn()
        .expect("start the Python writers");

    // Connector/J threads too, numbered after the Python ones, into their own history file.
    let (java, classpath) = compile_java("JdbcChaosWriter.java");
    let jdbc_history = dir.join("history-jdbc.jsonl");
    let mut jdbc = Command::new(java)
        .arg("-cp")
        .arg(&classpath)
        .arg("JdbcChaosWriter")
        .args([
            "127.0.0.1",
            &g.port.to_string(),
            APP_USER,
            APP_PASSWORD,
            DATABASE,
        ])
        .arg(threads.div_ceil(2).to_string())
        .arg("1000")
        .arg(&stop)
        .args(NAMES)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&jdbc_history).unwrap())
        .stderr(std::fs::File::create(dir.join("jdbc.err")).unwrap())
        .spawn()
        .expect("start the JDBC writers");

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
    std::fs::write(&stop, b"").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while writer.try_wait().unwrap().is_none() || jdbc.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the writers did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
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
    let text = std::fs::read_to_string(&history_path).unwrap()
        + &std::fs::read_to_string(&jdbc_history).unwrap();
    let attempts = history::parse(&text);
    assert!(
        attempts.iter().any(|a| a.c >= 1000 && a.ok) && attempts.iter().any(|a| a.c < 1000 && a.ok),
        "both Python and JDBC clients wrote"
    );
    let shards = [&dbs[0], &dbs[1]];
    let rows: HashMap<String, HashMap<String, Vec<history::Row>>> = NAMES
        .iter()
        .map(|t| (t.to_string(), history::read_rows(&shards, t)))
        .collect();
    // Every table is sharded by the id's low bit (mod 2; slot of a biased id with 4 slot bits).
    let order = |t: &str| match t {
        "seg_orders" => history::IdOrder::Block,
        "snow_orders" => history::IdOrder::Increasing,
        _ => history::IdOrder::Any,
    };
    let report = history::check(&attempts, &rows, |_, id| (id % 2) as usize, order);
    let summary = report.summary(&format!(
        "idgate SIGKILL x{kills}, {threads} Python + {} JDBC writers, {:.1} s",
        threads.div_ceil(2),
        elapsed.as_secs_f64()
    ));
    println!("{summary}");
    assert!(
        report.problems.is_empty(),
        "{summary}\n{} problems, first ones:\n{}\nhistory: {}",
        report.problems.len(),
        report.problems[..report.problems.len().min(20)].join("\n"),
        history_path.display()
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
