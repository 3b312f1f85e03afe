//! Snowflake generators: layout, clock steps, sequence exhaustion, worker-id leases in MariaDB.

mod common;

use idgate::idgen::store_pool::StorePool;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idgate::idgen::config::{GeneratorConfig, Preset, SnowflakeConfig, TimeUnit};
use idgate::idgen::snowflake::layout::{format_ms, Parts};
use idgate::idgen::snowflake::Layout;
use idgate::idgen::{Clock, Generator, IdGenError, SystemClock, TestClock};
use proptest::prelude::*;

const T0: u64 = 1_750_000_000_000;

fn fixed(worker: u64) -> SnowflakeConfig {
    SnowflakeConfig {
        worker_id: Some(worker),
        ..SnowflakeConfig::default()
    }
}

async fn build(
    cfg: SnowflakeConfig,
    pool: Option<&StorePool>,
    clock: Arc<dyn Clock>,
) -> idgate::idgen::Result<Arc<Generator>> {
    Generator::build("sf", &GeneratorConfig::Snowflake(cfg), pool, clock).await
}

/// Issues `count` IDs in blocks of `block`, checking that they increase strictly.
async fn issue(g: &Generator, count: u64, block: u64, out: &mut Vec<u64>) {
    let mut left = count;
    while left > 0 {
        let n = block.min(left);
        let b = g.next_block(n).await.unwrap();
        assert_eq!(b.count, n);
        if let Some(&prev) = out.last() {
            assert!(
                b.first > prev,
                "IDs must increase: {} after {}",
                b.first,
                prev
            );
        }
        out.extend(b.iter());
        left -= n;
    }
}

fn assert_unique(ids: &[u64]) {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    assert_eq!(v.len(), ids.len(), "an ID was issued twice");
}

proptest! {
    #[test]
    fn layout_encode_decode_roundtrip(
        t in 20u32..=45, w in 0u32..=12, s in 1u32..=16, slot in 0u32..=4,
        tick in any::<u64>(), worker in any::<u64>(), seq in any::<u64>(), sl in any::<u64>(),
    ) {
        prop_assume!(t + w + s + slot <= 63);
        let l = Layout { timestamp_bits: t, worker_bits: w, sequence_bits: s, slot_bits: slot, unit: TimeUnit::Ms, epoch_ms: 0 };
        let m = |b: u32| (1u64 << b) - 1;
        let p = Parts { tick: tick & m(t), worker: worker & m(w), sequence: seq & m(s), slot: sl & m(slot) };
        let id = l.encode(p);
        prop_assert!(id < 1u64 << 63);
        prop_assert_eq!(l.decode(id), p);
    }
}

#[test]
fn layouts_are_validated_with_their_end_date() {
    let std = fixed(1).validate("sf", false).unwrap();
    assert_eq!(
        (std.timestamp_bits, std.worker_bits, std.sequence_bits),
        (41, 10, 12)
    );
    assert_eq!(format_ms(std.end_ms()), "2093-09-06T15:47:35Z");
    let js = SnowflakeConfig {
        preset: Preset::Js53,
        ..fixed(1)
    }
    .validate("sf", false)
    .unwrap();
    assert_eq!(js.timestamp_bits + js.worker_bits + js.sequence_bits, 53);
    assert_eq!(format_ms(js.end_ms()), "2092-01-19T03:14:08Z");
    let max = js.encode(Parts {
        tick: js.max_tick(),
        worker: 255,
        sequence: 16383,
        slot: 0,
    });
    assert!(max < 1u64 << 53, "js53 IDs are safe JavaScript integers");
    let e = SnowflakeConfig {
        timestamp_bits: Some(42),
        ..fixed(1)
    }
    .validate("sf", false)
    .unwrap_err();
    assert!(e.to_string().contains("64 bits"), "{e}");
    let e = SnowflakeConfig {
        timestamp_bits: Some(30),
        ..fixed(1)
    }
    .validate("sf", false)
    .unwrap_err();
    assert!(e.to_string().contains("ran out on 2024-01-13"), "{e}");
    let e = SnowflakeConfig {
        worker_id: Some(1024),
        ..fixed(1)
    }
    .validate("sf", false)
    .unwrap_err();
    assert!(
        e.to_string().contains("does not fit in 10 worker bits"),
        "{e}"
    );
    let y: GeneratorConfig = serde_saphyr::from_str(
        "kind: snowflake\npreset: js53\nworker_id: 3\nsequence_start: random\n",
    )
    .unwrap();
    assert!(y.validate("sf").is_ok());
    assert!(serde_saphyr::from_str::<GeneratorConfig>("kind: snowflake\nworker: 3\n").is_err());
    assert!(GeneratorConfig::Snowflake(SnowflakeConfig {
        slot_bits: Some(4),
        ..fixed(1)
    })
    .validate("sf")
    .is_err());
}

#[tokio::test]
async fn small_backward_steps_are_waited_out() {
    let clock = Arc::new(TestClock::new(T0));
    let g = build(fixed(7), None, clock.clone()).await.unwrap();
    let mut ids = Vec::new();
    issue(&g, 100, 10, &mut ids).await;
    for back in [1, 5] {
        clock.advance(Duration::from_millis(3));
        issue(&g, 10, 1, &mut ids).await;
        let before = clock.wall_ms();
        clock.step_back(Duration::from_millis(back));
        issue(&g, 10, 1, &mut ids).await;
        // The generator slept (virtual time) until the clock caught up, and issued no borrowed tick.
        assert_eq!(clock.wall_ms(), before, "waited exactly {back} ms");
        assert_eq!(g.metrics().borrowed_ticks.load(Relaxed), 0);
    }
    assert!(g.metrics().clock_backwards.load(Relaxed) >= 2);
    assert_unique(&ids);
}

#[tokio::test]
async fn large_backward_steps_borrow_up_to_max_borrow_then_fail_cleanly() {
    let clock = Arc::new(TestClock::new(T0));
    let g = build(fixed(7), None, clock.clone()).await.unwrap();
    let layout = *g.as_snowflake().unwrap().layout();
    let mut ids = Vec::new();
    issue(&g, 1000, 100, &mut ids).await;
    // 1 s back: no wait, the sequence overflows into borrowed ticks (max_borrow 2 s).
    clock.step_back(Duration::from_secs(1));
    let at = clock.wall_ms();
    issue(&g, 20_000, 1000, &mut ids).await;
    assert_eq!(clock.wall_ms(), at, "no sleeping");
    assert!(g.metrics().borrowed_ticks.load(Relaxed) >= 4);
    // 10 s back: beyond max_borrow, requests fail at once with a clear error.
    clock.step_back(Duration::from_secs(10));
    let t = Instant::now();
    let e = g.next_block(1).await.unwrap_err();
    assert!(matches!(e, IdGenError::ClockBehind { .. }), "{e}");
    assert!(e.to_string().contains("behind"));
    assert!(t.elapsed() < Duration::from_millis(200), "never hangs");
    // The clock catches up: issuing resumes above everything issued.
    clock.advance(Duration::from_secs(11));
    issue(&g, 5000, 500, &mut ids).await;
    assert_unique(&ids);
    assert!(ids.iter().all(|&id| layout.decode(id).worker == 7));
}

#[tokio::test]
async fn ten_second_step_within_a_larger_max_borrow_keeps_issuing() {
    let clock = Arc::new(TestClock::new(T0));
    let cfg = SnowflakeConfig {
        max_borrow_ms: 20_000,
        ..fixed(1)
    };
    let g = build(cfg, None, clock.clone()).await.unwrap();
    let mut ids = Vec::new();
    issue(&g, 100, 10, &mut ids).await;
    clock.step_back(Duration::from_secs(10));
    issue(&g, 10_000, 100, &mut ids).await;
    clock.advance(Duration::from_secs(10));
    issue(&g, 10_000, 100, &mut ids).await;
    assert_unique(&ids);
}

#[tokio::test]
async fn sequence_exhaustion_borrows_the_next_tick() {
    let clock = Arc::new(TestClock::new(T0));
    let cfg = SnowflakeConfig {
        sequence_start: idgate::idgen::config::SequenceStart::Zero,
        max_borrow_ms: 3,
        ..fixed(2)
    };
    let g = build(cfg, None, clock.clone()).await.unwrap();
    let layout = *g.as_snowflake().unwrap().layout();
    let mut ids = Vec::new();
    // 4 ticks' worth at a frozen clock: 3 borrowed ticks, no sleep.
    issue(&g, 4 * 4096, 4096, &mut ids).await;
    assert_eq!(clock.wall_ms(), T0);
    let ticks: std::collections::BTreeSet<u64> =
        ids.iter().map(|&i| layout.decode(i).tick).collect();
    assert_eq!(ticks.len(), 4);
    // Past max_borrow the generator waits (bounded) for the clock instead of failing or spinning.
    issue(&g, 4096, 4096, &mut ids).await;
    assert_eq!(clock.wall_ms(), T0 + 1);
    // A block that does not fit a tick's remainder skips it (waste) and stays contiguous.
    let b = g.next_block(3000).await.unwrap();
    let b2 = g.next_block(3000).await.unwrap();
    assert_eq!(layout.decode(b2.first).sequence, 0);
    assert_eq!(
        layout.decode(b.first).tick + 1,
        layout.decode(b2.first).tick
    );
    assert_eq!(g.metrics().wasted_ids.load(Relaxed), 4096 - 3000);
    let e = g.next_block(4097).await.unwrap_err();
    assert!(matches!(e, IdGenError::BlockTooLarge { max: 4096, .. }));
    assert_unique(&ids);
}

#[tokio::test]
async fn sequence_start_rotates_to_spread_modulo() {
    let clock = Arc::new(TestClock::new(T0));
    let g = build(fixed(0), None, clock.clone()).await.unwrap();
    let mut counts = [0u32; 4];
    for _ in 0..400 {
        clock.advance(Duration::from_millis(1));
        counts[(g.next_block(1).await.unwrap().first % 4) as usize] += 1;
    }
    assert_eq!(counts, [100, 100, 100, 100]);
}

// ---- leases (real MariaDB) ----

fn leased(group: &str) -> SnowflakeConfig {
    SnowflakeConfig {
        worker_id: None,
        lease_group: Some(group.to_string()),
        lease_ttl_ms: 1500,
        heartbeat_ms: 250,
        lease_safety_ms: 500,
        store_timeout_ms: 300,
        ..SnowflakeConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_with_clock_behind_last_issued_timestamp() {
    let db = common::shared_db();
    let p = StorePool::single(mysql_async::Pool::new(db.url().as_str()));
    let clock = Arc::new(TestClock::new(T0));
    let a = build(leased("restart"), Some(&p), clock.clone())
        .await
        .unwrap();
    let layout = *a.as_snowflake().unwrap().layout();
    let worker = a.as_snowflake().unwrap().worker_id();
    let mut ids = Vec::new();
    issue(&a, 5000, 100, &mut ids).await;
    clock.advance(Duration::from_millis(500));
    issue(&a, 5000, 100, &mut ids).await;
    let last = *ids.last().unwrap();
    a.shutdown().await;
    // The next owner's clock is 1 s behind: it starts strictly after the recorded timestamp.
    let clock_b = Arc::new(TestClock::new(T0 - 500));
    let b = build(leased("restart"), Some(&p), clock_b.clone())
        .await
        .unwrap();
    assert_eq!(
        b.as_snowflake().unwrap().worker_id(),
        worker,
        "the released id is reused"
    );
    let first_b = b.next_block(1).await.unwrap().first;
    assert!(layout.decode(first_b).tick > layout.decode(last).tick);
    ids.push(first_b);
    issue(&b, 1000, 100, &mut ids).await;
    b.shutdown().await;
    // 10 s behind: beyond max_borrow, a clean error, no hang, and no ID below the mark.
    let clock_c = Arc::new(TestClock::new(T0 - 10_000));
    let c = build(leased("restart"), Some(&p), clock_c.clone())
        .await
        .unwrap();
    let e = c.next_block(1).await.unwrap_err();
    assert!(matches!(e, IdGenError::ClockBehind { .. }), "{e}");
    // The wall clock catches up (without local time passing, so the lease stays valid).
    clock_c.set_wall_ms(T0 + 1000);
    issue(&c, 1000, 100, &mut ids).await;
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    c.shutdown().await;
}

/// A TCP forwarder to the store that can be cut, as a network partition of one node.
struct Partition {
    port: u16,
    cut: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Partition {
    async fn start(target: u16) -> Partition {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (c2, k2) = (cut.clone(), conns.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = l.accept().await {
                if c2.load(Relaxed) {
                    continue;
                }
                let h = tokio::spawn(async move {
                    if let Ok(mut out) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                    }
                });
                k2.lock().unwrap().push(h);
            }
        });
        Partition { port, cut, conns }
    }
    fn cut(&self) {
        self.cut.store(true, Relaxed);
        for h in self.conns.lock().unwrap().drain(..) {
            h.abort();
        }
    }
    fn heal(&self) {
        self.cut.store(false, Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_loss_stops_issuing_before_takeover_and_exhaustion_is_an_error() {
    let db = common::shared_db();
    let direct = StorePool::single(mysql_async::Pool::new(db.url().as_str()));
    let part = Partition::start(db.port).await;
    // prefer_socket=false: else mysql_async switches to the server's Unix socket, around the cut.
    let url_a = db
        .url()
        .replace(&format!(":{}/", db.port), &format!(":{}/", part.port))
        + "?prefer_socket=false";
    let pool_a = StorePool::single(mysql_async::Pool::new(url_a.as_str()));
    let cfg = SnowflakeConfig {
        worker_bits: Some(1),
        ..leased("takeover")
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let a = build(cfg.clone(), Some(&pool_a), clock.clone())
        .await
        .unwrap();
    let c = build(cfg.clone(), Some(&direct), clock.clone())
        .await
        .unwrap();
    assert_eq!(a.as_snowflake().unwrap().worker_id(), 0);
    assert_eq!(c.as_snowflake().unwrap().worker_id(), 1);
    // Both worker ids are leased: a third node gets a clear error at start-up.
    let e = build(cfg.clone(), Some(&direct), clock.clone())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(e, IdGenError::WorkerIdsExhausted { capacity: 2, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("widen `worker_bits`"));
    // A issues continuously; then it is cut off from the store.
    let a_ids = Arc::new(Mutex::new(Vec::<(u64, Instant)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (a2, ids2, stop2) = (a.clone(), a_ids.clone(), stop.clone());
    let issuer = tokio::spawn(async move {
        let mut errors = Vec::new();
        while !stop2.load(Relaxed) {
            match a2.next_block(10).await {
                Ok(b) => {
                    let now = Instant::now();
                    ids2.lock().unwrap().extend(b.iter().map(|i| (i, now)));
                }
                Err(e) => errors.push(e.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        errors
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    part.cut();
    let cut_at = Instant::now();
    // B claims in a loop; it succeeds once A's lease expired by the store's clock.
    let b = loop {
        match build(cfg.clone(), Some(&direct), clock.clone()).await {
            Ok(b) => break b,
            Err(IdGenError::WorkerIdsExhausted { .. }) => {
                if cut_at.elapsed() > Duration::from_secs(5) {
                    use mysql::prelude::Queryable;
                    let rows: Vec<(u64, Option<String>, i64, i64)> = common::direct(db).query("SELECT worker_id, owner, lease_until_ms, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) FROM idgate_workers WHERE lease_group='takeover'").unwrap();
                    panic!("A's lease never expired: {rows:?}");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    let took_over = Instant::now();
    assert_eq!(
        b.as_snowflake().unwrap().worker_id(),
        0,
        "B took over A's worker id"
    );
    let mut b_ids = Vec::new();
    issue(&b, 2000, 50, &mut b_ids).await;
    part.heal();
    tokio::time::sleep(Duration::from_millis(700)).await;
    stop.store(true, Relaxed);
    let errors = issuer.await.unwrap();
    let a_ids = a_ids.lock().unwrap().clone();
    let a_last = a_ids.iter().map(|&(_, t)| t).max().unwrap();
    assert!(
        a_last < took_over,
        "A issued after B took over its worker id"
    );
    assert!(
        !errors.is_empty() && errors.iter().all(|e| e.contains("lease")),
        "{errors:?}"
    );
    // After the partition heals, A finds its id taken; B and C hold both ids, so A cannot claim
    // another one and stays stopped.
    let e = a.next_block(1).await.unwrap_err();
    assert!(
        matches!(
            e,
            IdGenError::LeaseExpired { .. } | IdGenError::LeaseLost { .. }
        ),
        "{e}"
    );
    let layout = *b.as_snowflake().unwrap().layout();
    let a_max_tick = a_ids
        .iter()
        .map(|&(i, _)| layout.decode(i).tick)
        .max()
        .unwrap();
    assert!(layout.decode(b_ids[0]).tick > a_max_tick);
    let mut all: Vec<u64> = a_ids.iter().map(|&(i, _)| i).collect();
    all.extend(&b_ids);
    let mut c_ids = Vec::new();
    issue(&c, 2000, 50, &mut c_ids).await;
    all.extend(&c_ids);
    assert_unique(&all);
    b.shutdown().await;
    c.shutdown().await;
    a.shutdown().await;
}

// ---- re-claiming a worker id after a takeover ----

fn relay_url(db: &idgate::testbed::MariaDb, part: &Partition) -> String {
    // prefer_socket=false: else mysql_async switches to the server's Unix socket, around the cut.
    db.url()
        .replace(&format!(":{}/", db.port), &format!(":{}/", part.port))
        + "?prefer_socket=false"
}

async fn build_kind(
    cfg: &SnowflakeConfig,
    biased: bool,
    pool: &StorePool,
    clock: Arc<dyn Clock>,
) -> idgate::idgen::Result<Arc<Generator>> {
    let cfg = if biased {
        GeneratorConfig::Biased(cfg.clone())
    } else {
        GeneratorConfig::Snowflake(cfg.clone())
    };
    Generator::build("sf", &cfg, Some(pool), clock).await
}

fn layout_of(g: &Generator) -> Layout {
    match g.as_biased() {
        Some(b) => *b.layout(),
        None => *g.as_snowflake().unwrap().layout(),
    }
}

fn worker_of(g: &Generator) -> u64 {
    match g.as_biased() {
        Some(b) => b.worker_id(),
        None => g.as_snowflake().unwrap().worker_id(),
    }
}

/// A few IDs: a block of 1..=16 (snowflake) or one per bias value of 1..=16 random ones (biased).
async fn some_ids(g: &Generator, round: u64, out: &mut Vec<u64>) -> idgate::idgen::Result<()> {
    let n = round % 16 + 1;
    if g.as_biased().is_some() {
        let bias: Vec<u64> = (0..n).map(|_| rand::random::<u64>() >> 1).collect();
        let at = out.len();
        g.next_biased(&bias, out).await?;
        let mask = g.as_biased().unwrap().mask();
        assert!(out[at..]
            .iter()
            .zip(&bias)
            .all(|(i, b)| i & mask == b & mask));
    } else {
        out.extend(g.next_block(n).await?.iter());
    }
    Ok(())
}

/// Tasks that take IDs from one generator until stopped, recording each ID with the time it
/// was handed out, and every error.
struct Takers {
    ids: Arc<Mutex<Vec<(u64, Instant)>>>,
    errors: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Takers {
    fn spawn(g: &Arc<Generator>, count: u64) -> Takers {
        let t = Takers {
            ids: Arc::default(),
            errors: Arc::default(),
            stop: Arc::default(),
            tasks: Vec::new(),
        };
        let tasks = (0..count)
            .map(|k| {
                let (g, ids, errors, stop) =
                    (g.clone(), t.ids.clone(), t.errors.clone(), t.stop.clone());
                tokio::spawn(async move {
                    let mut round = k;
                    let mut out = Vec::new();
                    while !stop.load(Relaxed) {
                        out.clear();
                        match some_ids(&g, round, &mut out).await {
                            Ok(()) => {
                                let now = Instant::now();
                                ids.lock().unwrap().extend(out.iter().map(|&i| (i, now)));
                            }
                            Err(e) => errors.lock().unwrap().push(e.to_string()),
                        }
                        round += 1;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                })
            })
            .collect();
        Takers { tasks, ..t }
    }

    fn count(&self, f: impl Fn(u64) -> bool) -> usize {
        self.ids
            .lock()
            .unwrap()
            .iter()
            .filter(|&&(i, _)| f(i))
            .count()
    }

    async fn stop(self) -> (Vec<(u64, Instant)>, Vec<String>) {
        self.stop.store(true, Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        let ids = std::mem::take(&mut *self.ids.lock().unwrap());
        let errors = std::mem::take(&mut *self.errors.lock().unwrap());
        (ids, errors)
    }
}

/// Polls `cond` until it holds; panics with `what` after a generous deadline.
async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Node A (behind a relay) leases worker 0 and node F worker 1 of a two-id space. A is cut off
/// while six tasks take IDs from it; B takes A's id over. F, its clock now 1.5 s ahead, then
/// leaves (before the relay heals, or, with `full_at_reclaim`, only after A found both ids
/// leased and failed with a clear error). A claims F's id by itself and issues again, after F's
/// last timestamp; every ID of A, B and F is unique.
async fn reclaim_after_takeover(group: &str, biased: bool, full_at_reclaim: bool) {
    let db = common::shared_db();
    let direct = StorePool::single(mysql_async::Pool::new(db.url().as_str()));
    let part = Partition::start(db.port).await;
    let pool_a = StorePool::single(mysql_async::Pool::new(relay_url(db, &part).as_str()));
    let cfg = SnowflakeConfig {
        worker_bits: Some(1),
        slot_bits: biased.then_some(4),
        ..leased(group)
    };
    let sys: Arc<dyn Clock> = Arc::new(SystemClock);
    let a = build_kind(&cfg, biased, &pool_a, sys.clone())
        .await
        .unwrap();
    let f_clock = Arc::new(TestClock::new(SystemClock.wall_ms()));
    let f = build_kind(&cfg, biased, &direct, f_clock.clone())
        .await
        .unwrap();
    assert_eq!((worker_of(&a), worker_of(&f)), (0, 1));
    let layout = layout_of(&a);
    let worker = move |i: u64| layout.decode(i).worker;

    let a_takers = Takers::spawn(&a, 6);
    wait_for("A issues", || a_takers.count(|_| true) >= 200).await;
    part.cut();
    let cut_at = Instant::now();
    // B claims in a loop; it gets A's id once A's lease expired by the store's clock.
    let b = loop {
        match build_kind(&cfg, biased, &direct, sys.clone()).await {
            Ok(b) => break b,
            Err(IdGenError::WorkerIdsExhausted { .. }) => {
                assert!(
                    cut_at.elapsed() < Duration::from_secs(60),
                    "A's lease never expired"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    let took_over = Instant::now();
    assert_eq!(worker_of(&b), 0, "B took over A's worker id");
    let b_takers = Takers::spawn(&b, 2);
    // F's last IDs lie 1.5 s ahead of the real time; then F leaves, recording them.
    let mut f_ids = Vec::new();
    let f_leaves = async {
        f_clock.set_wall_ms(SystemClock.wall_ms() + 1500);
        for round in 0..200 {
            some_ids(&f, round, &mut f_ids).await.unwrap();
        }
        f.shutdown().await;
    };

    if full_at_reclaim {
        part.heal();
        // Both ids are leased by live nodes: A fails every take with a clear error.
        let mut round = 0;
        let e = loop {
            let mut out = Vec::new();
            let e = some_ids(&a, round, &mut out).await.unwrap_err();
            if e.to_string().contains("all 2 worker ids are leased") {
                break e;
            }
            assert!(
                matches!(
                    e,
                    IdGenError::LeaseExpired { .. } | IdGenError::LeaseLost { .. }
                ),
                "{e}"
            );
            assert!(
                cut_at.elapsed() < Duration::from_secs(60),
                "A never reported the full worker-id space: {e}"
            );
            round += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(
            matches!(e, IdGenError::LeaseLost { worker_id: 0, .. }),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.contains("lost worker id 0") && text.contains("retry"),
            "{text}"
        );
        assert_eq!(worker_of(&a), 0);
        assert_eq!(a.metrics().worker_id.load(Relaxed), u64::MAX);
        assert_eq!(a.metrics().lease_reacquisitions.load(Relaxed), 0);
        f_leaves.await;
    } else {
        f_leaves.await;
        part.heal();
    }
    // A claims the id F gave back, by itself, and its takers get IDs again.
    wait_for("A issues with a new worker id", || {
        a_takers.count(|i| worker(i) == 1) >= 2000
    })
    .await;
    assert_eq!(worker_of(&a), 1);
    assert_eq!(a.metrics().worker_id.load(Relaxed), 1);
    assert_eq!(a.metrics().lease_reacquisitions.load(Relaxed), 1);
    let (a_ids, a_errors) = a_takers.stop().await;
    let (b_ids, b_errors) = b_takers.stop().await;
    assert!(b_errors.is_empty(), "{b_errors:?}");
    assert!(
        !a_errors.is_empty() && a_errors.iter().all(|e| e.contains("lease")),
        "{a_errors:?}"
    );

    // A never issued with worker 0 after B took it over, and B started after A's IDs.
    let (a0, a1): (Vec<_>, Vec<_>) = a_ids.iter().partition(|&&(i, _)| worker(i) == 0);
    assert!(a0.iter().all(|&&(_, t)| t < took_over));
    let tick = |i: u64| layout.decode(i).tick;
    let a0_max = a0.iter().map(|&&(i, _)| tick(i)).max().unwrap();
    assert!(b_ids
        .iter()
        .all(|&(i, _)| worker(i) == 0 && tick(i) > a0_max));
    // On worker 1, A starts strictly after F's last timestamp (F's clock was ahead).
    let f_max = f_ids.iter().map(|&i| tick(i)).max().unwrap();
    assert!(a1.iter().all(|&&(i, _)| tick(i) > f_max));
    let mut all: Vec<u64> = a_ids.iter().chain(&b_ids).map(|&(i, _)| i).collect();
    all.extend(&f_ids);
    assert_unique(&all);
    b.shutdown().await;
    a.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taken_over_lease_is_replaced_by_a_new_worker_id() {
    reclaim_after_takeover("reclaim_sf", false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn biased_generator_replaces_a_taken_over_lease() {
    reclaim_after_takeover("reclaim_biased", true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_worker_id_space_at_reclaim_time_is_an_error_until_an_id_frees_up() {
    reclaim_after_takeover("reclaim_full", false, true).await;
}
