//! Soak: mixed load for a while (inserts from Python and JDBC writers, scatter reads and merges,
//! sessions opened and closed all the time) with idgate's resident memory, open files and the
//! shards' connection counts sampled every second. They must stay flat: a leak shows as growth
//! from the first third of the run to the last. `CHAOS_SOAK_SECONDS` (default 20) sets the
//! length; `scripts/chaos --long` runs 10 minutes.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::history;
use common::idgate_proc::{config_for, Idgate};
use common::scenario;
use common::start_db;
use common::writers::{self, Canary, Writers};
use mysql::prelude::Queryable;

/// The generators, and the tables sharded by id over shard0 and shard1.
fn tables() -> String {
    let generators = "generators:
  seg:
    kind: segment
    step: 1000
  snow:
    kind: snowflake
";
    format!(
        "{generators}{}",
        scenario::tables_mod2(&[("seg_orders", "seg", false), ("snow_orders", "snow", false)])
    )
}

const NAMES: [&str; 2] = ["seg_orders", "snow_orders"];

#[derive(Clone, Copy, Debug)]
struct Sample {
    rss_kib: u64,
    fds: u64,
    backend_conns: u64,
}

fn fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// The median of a window of samples, field by field.
fn median(s: &[Sample], f: impl Fn(&Sample) -> u64) -> u64 {
    let mut v: Vec<u64> = s.iter().map(f).collect();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

#[test]
fn mixed_load_keeps_memory_files_and_connections_flat() {
    let seconds: u64 = std::env::var("CHAOS_SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        writers::create_tables(db, &NAMES);
    }
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], &tables())
    });
    let pid = g.pid();
    let w = Writers::start("chaos-soak", g.port, &NAMES, 3, 1);
    let scatter = Canary::start(
        g.port,
        "SELECT id, note FROM seg_orders ORDER BY id DESC LIMIT 10",
    );
    let grouped = Canary::start(
        g.port,
        "SELECT user_id % 7, COUNT(*), MAX(id) FROM snow_orders GROUP BY user_id % 7",
    );
    // Sessions that come and go: login, a routed read, a generated id, quit.
    let stop = Arc::new(AtomicBool::new(false));
    let churned = Arc::new(AtomicU64::new(0));
    let churn = {
        let (stop, churned, url) = (stop.clone(), churned.clone(), g.url(common::DATABASE));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut c = mysql::Conn::new(mysql::Opts::from_url(&url).unwrap())
                    .expect("a churning session logs in");
                c.query_drop("SELECT note FROM seg_orders WHERE id = 3")
                    .unwrap();
                c.query_drop("SELECT NEXTVAL(seg)").unwrap();
                drop(c);
                churned.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut shard_conns: Vec<mysql::Conn> = dbs.iter().map(common::direct).collect();
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(1));
        let backend_conns = shard_conns
            .iter_mut()
            .map(|c| {
                let r: Option<(String, u64)> = c
                    .query_first("SHOW STATUS LIKE 'Threads_connected'")
                    .unwrap();
                r.map_or(0, |(_, n)| n.saturating_sub(1))
            })
            .sum();
        samples.push(Sample {
            rss_kib: scenario::rss_kib(pid),
            fds: fds(pid),
            backend_conns,
        });
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().expect("the churning thread");
    let reads = scatter
        .stop()
        .into_iter()
        .chain(grouped.stop())
        .collect::<Vec<_>>();
    let attempts = w.stop();

    let shards = [&dbs[0], &dbs[1]];
    let rows: HashMap<_, _> = NAMES
        .iter()
        .map(|t| (t.to_string(), history::read_rows(&shards, t)))
        .collect();
    let report = history::check(
        &attempts,
        &rows,
        |_, id| (id % 2) as usize,
        scenario::seg_snow_order,
    );
    let third = samples.len() / 3;
    let (first, last) = (&samples[..third], &samples[samples.len() - third..]);
    let m = |s: &[Sample], f: fn(&Sample) -> u64| median(s, f);
    let summary = format!(
        "soak {seconds} s: {} INSERTs, {} reads, {} sessions opened and closed; idgate RSS {} -> {} MiB, \
         open files {} -> {}, backend connections {} -> {} (medians of the first and last thirds); \
         {} duplicate ids",
        report.attempts,
        reads.len(),
        churned.load(Ordering::Relaxed),
        m(first, |s| s.rss_kib) / 1024,
        m(last, |s| s.rss_kib) / 1024,
        m(first, |s| s.fds),
        m(last, |s| s.fds),
        m(first, |s| s.backend_conns),
        m(last, |s| s.backend_conns),
        report.duplicates
    );
    println!("{summary}");
    assert!(
        report.problems.is_empty(),
        "{summary}\n{}",
        report.problems[..report.problems.len().min(20)].join("\n")
    );
    assert!(
        reads.iter().all(|(_, _, r)| r.is_ok()),
        "a read failed: {summary}"
    );
    assert!(third >= 3, "too few samples: {summary}");
    // Flat: the last third within a quarter (and a few MiB) of the first; files and backend
    // connections within a small margin (sessions come and go between samples).
    let (rss0, rss1) = (m(first, |s| s.rss_kib), m(last, |s| s.rss_kib));
    assert!(
        rss1 <= rss0 + rss0 / 4 + 8 * 1024,
        "idgate's memory grows: {summary}"
    );
    let (fd0, fd1) = (m(first, |s| s.fds), m(last, |s| s.fds));
    assert!(fd1 <= fd0 + 16, "idgate's open files grow: {summary}");
    let (bc0, bc1) = (m(first, |s| s.backend_conns), m(last, |s| s.backend_conns));
    assert!(bc1 <= bc0 + 8, "backend connections grow: {summary}");
}
