//! Segment generators against a real MariaDB sequence store.

mod common;

use idgate::idgen::store_pool::StorePool;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idgate::idgen::config::{GeneratorConfig, SegmentConfig};
use idgate::idgen::{Clock, Generator, IdGenError, SystemClock, TestClock};
use mysql::prelude::Queryable;
use rand::Rng;

fn pool(url: &str) -> StorePool {
    StorePool::single(mysql_async::Pool::new(url))
}

fn seg(tag: &str, step: u32) -> SegmentConfig {
    SegmentConfig {
        tag: Some(tag.to_string()),
        step,
        ..SegmentConfig::default()
    }
}

async fn build(cfg: SegmentConfig, pool: &StorePool, clock: Arc<dyn Clock>) -> Arc<Generator> {
    Generator::build("seg", &GeneratorConfig::Segment(cfg), Some(pool), clock)
        .await
        .unwrap()
}

fn max_id(tag: &str) -> i64 {
    let mut c = common::direct(common::shared_db());
    c.exec_first(
        "SELECT max_id FROM idgate_segments WHERE biz_tag = ?",
        (tag,),
    )
    .unwrap()
    .unwrap()
}

/// Expands blocks and asserts that no ID appears twice.
fn assert_unique(blocks: &[(u64, u64)]) -> Vec<u64> {
    let mut all: Vec<u64> = blocks.iter().flat_map(|&(f, c)| f..f + c).collect();
    all.sort_unstable();
    let n = all.len();
    all.dedup();
    assert_eq!(all.len(), n, "an ID was handed out twice");
    all
}

async fn run_tasks(gens: Vec<Arc<Generator>>, tasks: usize, per_task: u64) -> Vec<(u64, u64)> {
    let mut handles = Vec::new();
    for t in 0..tasks {
        let g = gens[t % gens.len()].clone();
        handles.push(tokio::spawn(async move {
            let mut blocks = Vec::new();
            let mut got = 0;
            let mut prev_last = 0u64;
            while got < per_task {
                let n = rand::rng().random_range(1..=16).min(per_task - got);
                let b = g.next_block(n).await.unwrap();
                assert_eq!(b.count, n);
                assert!(b.first > prev_last, "IDs of one task must increase");
                prev_last = b.last();
                blocks.push((b.first, b.count));
                got += n;
            }
            blocks
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_tasks_one_generator_unique_contiguous() {
    let db = common::shared_db();
    let p = pool(&db.url());
    let g = build(seg("t16", 1000), &p, Arc::new(SystemClock)).await;
    let blocks = run_tasks(vec![g.clone()], 16, 100_000).await;
    let all = assert_unique(&blocks);
    assert_eq!(all.len(), 1_600_000);
    assert!(*all.last().unwrap() as i64 <= max_id("t16"));
    assert_eq!(
        g.metrics()
            .ids_issued
            .load(std::sync::atomic::Ordering::Relaxed),
        1_600_000
    );
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_store() {
    let db = common::shared_db();
    // Two pools, as two idgate processes would have.
    let (p1, p2) = (pool(&db.url()), pool(&db.url()));
    let a = build(seg("two", 500), &p1, Arc::new(SystemClock)).await;
    let b = build(seg("two", 500), &p2, Arc::new(SystemClock)).await;
    let blocks = run_tasks(vec![a.clone(), b.clone()], 16, 50_000).await;
    let all = assert_unique(&blocks);
    assert_eq!(all.len(), 800_000);
    assert!(*all.last().unwrap() as i64 <= max_id("two"));
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_raised_moves_up_and_lowered_is_ignored() {
    let db = common::shared_db();
    let p = pool(&db.url());
    let mk = |start| SegmentConfig {
        start,
        dynamic_step: false,
        ..seg("start", 1000)
    };
    let g = build(mk(1000), &p, Arc::new(SystemClock)).await;
    assert_eq!(g.next_block(1).await.unwrap().first, 1000);
    assert_eq!(g.next_block(3).await.unwrap().first, 1001);
    g.shutdown().await;
    drop(g);
    let g = build(mk(50_000), &p, Arc::new(SystemClock)).await;
    assert_eq!(g.next_block(1).await.unwrap().first, 50_000);
    g.shutdown().await;
    drop(g);
    assert_eq!(max_id("start"), 50_999);
    let g = build(mk(10), &p, Arc::new(SystemClock)).await;
    assert_eq!(
        g.next_block(1).await.unwrap().first,
        51_000,
        "a lower start never moves the mark down"
    );
    assert_eq!(max_id("start"), 51_999);
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_tail_is_wasted_and_large_blocks_get_a_dedicated_range() {
    let db = common::shared_db();
    let p = pool(&db.url());
    // The standby range is fetched only at 90 % of the current one, so no background fetch
    // moves max_id while the dedicated range is checked below.
    let cfg = SegmentConfig {
        dynamic_step: false,
        preload_at: 0.9,
        ..seg("tail", 100)
    };
    let g = build(cfg, &p, Arc::new(SystemClock)).await;
    let a = g.next_block(90).await.unwrap();
    assert_eq!((a.first, a.count), (1, 90));
    // 10 left in (0, 100]; a block of 20 skips them and comes from (100, 200].
    let b = g.next_block(20).await.unwrap();
    assert_eq!((b.first, b.count), (101, 20));
    assert_eq!(
        g.metrics()
            .wasted_ids
            .load(std::sync::atomic::Ordering::Relaxed),
        10
    );
    // 250 > step: a dedicated range of exactly 250 above everything reserved so far.
    let before = max_id("tail");
    let c = g.next_block(250).await.unwrap();
    assert_eq!(c.count, 250);
    assert_eq!(c.first as i64, before + 1);
    assert_eq!(max_id("tail"), before + 250);
    // Small blocks continue from the buffered range.
    let d = g.next_block(5).await.unwrap();
    assert_eq!(d.first, 121);
    g.shutdown().await;
}

async fn consume_until_fetch(g: &Generator, seen: &mut Vec<u64>) {
    use std::sync::atomic::Ordering::Relaxed;
    let before = g.metrics().ranges_fetched.load(Relaxed);
    for i in 0..100_000 {
        seen.push(g.next_block(1).await.unwrap().first);
        if g.metrics().ranges_fetched.load(Relaxed) > before {
            return;
        }
        if i % 8 == 7 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    panic!("no range was fetched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_step_doubles_halves_and_caps() {
    let db = common::shared_db();
    let p = pool(&db.url());
    let clock = Arc::new(TestClock::new(1_750_000_000_000));
    let cfg = SegmentConfig {
        max_step: 400,
        ..seg("dyn", 100)
    };
    let g = build(cfg, &p, clock.clone()).await;
    let seg = g.as_segment().unwrap();
    assert_eq!(seg.current_step(), 100);
    let mut seen = Vec::new();
    let min = Duration::from_secs(60);
    for (lasted, expect) in [
        (min, 200),
        (min, 400),
        (min, 400),
        (20 * min, 400),
        (31 * min, 200),
        (30 * min, 100),
        (45 * min, 100),
        (min, 200),
    ] {
        clock.advance(lasted);
        let mark = max_id("dyn");
        consume_until_fetch(&g, &mut seen).await;
        assert_eq!(
            seg.current_step(),
            expect,
            "after a range that lasted {lasted:?}"
        );
        assert_eq!(
            max_id("dyn") - mark,
            expect as i64,
            "the store reserved one range of the new step"
        );
    }
    let n = seen.len();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), n);
    g.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_outage_serves_buffers_then_fails_within_bound_then_recovers() {
    use std::sync::atomic::Ordering::Relaxed;
    let db = common::start_db();
    let p = pool(&db.url());
    let cfg = SegmentConfig {
        dynamic_step: false,
        max_wait_ms: 400,
        store_timeout_ms: 300,
        ..seg("outage", 100)
    };
    let g = build(cfg, &p, Arc::new(SystemClock)).await;
    let mut ids = Vec::new();
    for _ in 0..50 {
        ids.push(g.next_block(1).await.unwrap().first);
    }
    // The standby range was fetched at 10%.
    let t = Instant::now();
    while g.metrics().ranges_fetched.load(Relaxed) < 2 {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "standby range not fetched"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    db.kill();
    // 50 left in the current range and 100 in the standby range keep flowing.
    let mut after_kill = 0;
    let err = loop {
        let t0 = Instant::now();
        match g.next_block(1).await {
            Ok(b) => {
                ids.push(b.first);
                after_kill += 1;
            }
            Err(e) => break (e, t0.elapsed()),
        }
    };
    assert_eq!(after_kill, 150);
    assert!(matches!(err.0, IdGenError::Exhausted { .. }), "{:?}", err.0);
    assert!(err.0.to_string().contains("retry later"), "{}", err.0);
    assert!(
        err.1 >= Duration::from_millis(400) && err.1 < Duration::from_millis(1500),
        "{:?}",
        err.1
    );
    // Still failing cleanly while the store is down.
    assert!(g.next_block(1).await.is_err());
    db.restart().unwrap();
    let t = Instant::now();
    let resumed = loop {
        match g.next_block(1).await {
            Ok(b) => break b.first,
            Err(_) => assert!(
                t.elapsed() < Duration::from_secs(20),
                "issuing did not resume"
            ),
        }
    };
    ids.push(resumed);
    for _ in 0..300 {
        ids.push(g.next_block(1).await.unwrap().first);
    }
    let n = ids.len();
    assert!(resumed > 200);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n);
    g.shutdown().await;
}

const CRASH_ENV: &str = "IDGATE_CRASH_CHILD_URL";

/// Entry point of the child process of `crash_safety_under_sigkill`; does nothing in a normal run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() {
    let Ok(url) = std::env::var(CRASH_ENV) else {
        return;
    };
    let p = pool(&url);
    let cfg = SegmentConfig {
        preload_at: 0.5,
        ..seg("crash", 20)
    };
    let g = build(cfg, &p, Arc::new(SystemClock)).await;
    let out = std::io::stdout();
    loop {
        let n = rand::rng().random_range(1..=7);
        let b = g.next_block(n).await.unwrap();
        // The block counts as used once printed and flushed.
        let mut o = out.lock();
        writeln!(o, "ID {} {}", b.first, b.count).unwrap();
        o.flush().unwrap();
    }
}

#[test]
fn crash_safety_under_sigkill() {
    let db = common::shared_db();
    let exe = std::env::current_exe().unwrap();
    let blocks = Arc::new(Mutex::new(Vec::<(u64, u64)>::new()));
    let mut runs_with_ids = 0;
    for run in 0..20 {
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CRASH_ENV, db.url())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let sink = blocks.clone();
        let (first_tx, first_rx) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let mut count = 0;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut it = line
                    .strip_prefix("ID ")
                    .into_iter()
                    .flat_map(|l| l.split(' '));
                if let (Some(f), Some(c)) = (it.next(), it.next()) {
                    sink.lock()
                        .unwrap()
                        .push((f.parse().unwrap(), c.parse().unwrap()));
                    if count == 0 {
                        let _ = first_tx.send(());
                    }
                    count += 1;
                }
            }
            count
        });
        // Random kill point: every fifth run during start-up, the others while allocating.
        let startup = run % 5 == 0;
        if startup {
            std::thread::sleep(Duration::from_millis(rand::rng().random_range(5..120)));
        } else {
            first_rx
                .recv_timeout(Duration::from_secs(20))
                .expect("the child issued no IDs within 20 s");
            std::thread::sleep(Duration::from_millis(rand::rng().random_range(0..200)));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if reader.join().unwrap() > 0 && !startup {
            runs_with_ids += 1;
        }
    }
    let blocks = blocks.lock().unwrap();
    assert!(
        runs_with_ids == 16,
        "too few runs issued IDs: {runs_with_ids}"
    );
    let all = assert_unique(&blocks);
    assert!(all.len() > 1000);
    assert!(*all.last().unwrap() as i64 <= max_id("crash"));
}

#[test]
fn segment_yaml_config_is_checked() {
    let ok: BTreeMap<String, GeneratorConfig> = serde_saphyr::from_str(
        "orders:\n  kind: segment\n  step: 500\n  start: 1000\n  max_wait_ms: 100\n",
    )
    .unwrap();
    let GeneratorConfig::Segment(c) = &ok["orders"] else {
        panic!("not a segment config")
    };
    assert_eq!(
        (c.step, c.start, c.max_step, c.preload_at),
        (500, 1000, 1_000_000, 0.1)
    );
    assert!(ok["orders"].validate("orders").is_ok());
    let unknown = serde_saphyr::from_str::<GeneratorConfig>("kind: segment\nstpe: 5\n");
    assert!(unknown.is_err());
    let bad: GeneratorConfig =
        serde_saphyr::from_str("kind: segment\nstep: 10\nmax_step: 5\n").unwrap();
    let e = bad.validate("orders").unwrap_err().to_string();
    assert!(e.contains("`max_step` (5) must be >= `step` (10)"), "{e}");
}
