//! Throughput of each generator kind on one and two threads, and the latency distribution of
//! segment requests including range switches. Segment generators use a throwaway MariaDB.
//!
//! Run: `cargo bench --bench idgen`

use idgate::idgen::store_pool::StorePool;
use std::hint::black_box;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use idgate::idgen::config::{GeneratorConfig, SegmentConfig, SnowflakeConfig};
use idgate::idgen::{Generator, SystemClock};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    })
}

/// A throwaway MariaDB for the segment store, alive until the bench process exits.
fn db() -> &'static idgate::testbed::MariaDb {
    static DB: std::sync::OnceLock<idgate::testbed::MariaDb> = std::sync::OnceLock::new();
    DB.get_or_init(|| idgate::testbed::MariaDb::start().unwrap_or_else(|e| panic!("{e}")))
}

fn pool() -> &'static StorePool {
    static P: std::sync::OnceLock<StorePool> = std::sync::OnceLock::new();
    P.get_or_init(|| StorePool::single(mysql_async::Pool::new(db().url().as_str())))
}

fn build(name: &str, cfg: GeneratorConfig) -> Arc<Generator> {
    let pool = pool();
    runtime()
        .block_on(Generator::build(
            name,
            &cfg,
            Some(pool),
            Arc::new(SystemClock),
        ))
        .unwrap()
}

#[inline]
fn one(g: &Generator, n: u64) -> u64 {
    match g.try_next_block(n) {
        Some(b) => b.first,
        None => runtime().block_on(g.next_block(n)).unwrap().first,
    }
}

fn segment(tag: &str, step: u32, dynamic: bool) -> GeneratorConfig {
    GeneratorConfig::Segment(SegmentConfig {
        tag: Some(tag.into()),
        step,
        dynamic_step: dynamic,
        ..SegmentConfig::default()
    })
}

fn snowflake() -> GeneratorConfig {
    GeneratorConfig::Snowflake(SnowflakeConfig {
        worker_id: Some(1),
        ..SnowflakeConfig::default()
    })
}

/// A snowflake config whose worker id is leased in the store (lease check on every take).
fn leased(group: &str) -> SnowflakeConfig {
    SnowflakeConfig {
        worker_id: None,
        lease_group: Some(group.into()),
        ..SnowflakeConfig::default()
    }
}

/// Runs `iters` calls split over `threads` threads; returns the wall time.
fn threaded(threads: u64, iters: u64, f: impl Fn() + Sync) -> Duration {
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..iters / threads {
                    f();
                }
            });
        }
    });
    t.elapsed()
}

fn throughput(c: &mut Criterion) {
    let seg = build("bench_seg", segment("bench_seg", 1000, true));
    let sf = build("bench_sf", snowflake());
    let biased = build(
        "bench_biased",
        GeneratorConfig::Biased(SnowflakeConfig {
            worker_id: Some(1),
            slot_bits: Some(4),
            ..SnowflakeConfig::default()
        }),
    );
    let sf_leased = build(
        "bench_sf_leased",
        GeneratorConfig::Snowflake(leased("bench_sf_leased")),
    );
    let biased_leased = build(
        "bench_biased_leased",
        GeneratorConfig::Biased(SnowflakeConfig {
            slot_bits: Some(4),
            ..leased("bench_biased_leased")
        }),
    );
    // Wide sequences (2^20 per ms): the layout's rate does not cap these, so they show the cost
    // of a take itself.
    let wide = SnowflakeConfig {
        worker_bits: Some(2),
        sequence_bits: Some(20),
        ..leased("bench_wide")
    };
    let sf_wide = build("bench_wide", GeneratorConfig::Snowflake(wide.clone()));
    let biased_wide = build(
        "bench_biased_wide",
        GeneratorConfig::Biased(SnowflakeConfig {
            slot_bits: Some(4),
            sequence_bits: Some(16),
            lease_group: Some("bench_biased_wide".into()),
            ..wide
        }),
    );
    let uuid = build("bench_uuid", GeneratorConfig::Uuidv7(Default::default()));
    let mut g = c.benchmark_group("idgen");
    g.throughput(Throughput::Elements(1));
    for threads in [1u64, 2] {
        g.bench_function(format!("segment/{threads}t"), |b| {
            b.iter_custom(|iters| {
                threaded(threads, iters, || {
                    black_box(one(&seg, 1));
                })
            })
        });
        g.bench_function(format!("snowflake/{threads}t"), |b| {
            b.iter_custom(|iters| {
                threaded(threads, iters, || {
                    black_box(one(&sf, 1));
                })
            })
        });
        g.bench_function(format!("snowflake_leased/{threads}t"), |b| {
            b.iter_custom(|iters| {
                threaded(threads, iters, || {
                    black_box(one(&sf_leased, 1));
                })
            })
        });
        g.bench_function(format!("uuidv7/{threads}t"), |b| {
            b.iter_custom(|iters| {
                threaded(threads, iters, || {
                    black_box(uuid.as_uuidv7().unwrap().next());
                })
            })
        });
    }
    let gene = biased.as_biased().unwrap();
    g.bench_function("biased/1t", |b| {
        let mut bias = 0u64;
        b.iter(|| {
            bias = bias.wrapping_add(0x9E37_79B9_7F4A_7C15);
            black_box(gene.try_next(bias))
        })
    });
    let gene_leased = biased_leased.as_biased().unwrap();
    g.bench_function("biased_leased/1t", |b| {
        let mut bias = 0u64;
        b.iter(|| {
            bias = bias.wrapping_add(0x9E37_79B9_7F4A_7C15);
            black_box(gene_leased.try_next(bias))
        })
    });
    g.bench_function("snowflake_leased_wide/1t", |b| {
        b.iter(|| black_box(one(&sf_wide, 1)))
    });
    let gene_wide = biased_wide.as_biased().unwrap();
    g.bench_function("biased_leased_wide/1t", |b| {
        let mut bias = 0u64;
        b.iter(|| {
            bias = bias.wrapping_add(0x9E37_79B9_7F4A_7C15);
            black_box(gene_wide.try_next(bias))
        })
    });
    g.throughput(Throughput::Elements(100));
    g.bench_function("segment/1t/blocks_of_100", |b| {
        b.iter(|| black_box(one(&seg, 100)))
    });
    g.bench_function("snowflake/1t/blocks_of_100", |b| {
        b.iter(|| black_box(one(&sf, 100)))
    });
    g.finish();
    eprintln!(
        "segment: step now {}, ranges fetched {}, waits on empty buffer {}",
        seg.metrics().current_step.load(Relaxed),
        seg.metrics().ranges_fetched.load(Relaxed),
        seg.metrics().empty_buffer_waits.load(Relaxed)
    );
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() as f64 - 1.0) * p) as usize]
}

/// Latency of single-ID segment requests with a fixed step of 1,000 (a range switch every 1,000
/// IDs), and a paced run at 1 M IDs/s that must never wait on the store.
fn latency(_c: &mut Criterion) {
    let g = build("bench_lat", segment("bench_lat", 1000, false));
    let mut lat = Vec::with_capacity(2_000_000);
    for _ in 0..2_000_000 {
        let t = Instant::now();
        black_box(one(&g, 1));
        lat.push(t.elapsed().as_nanos() as u64);
        if lat.len() % 1000 == 0 {
            // Let the background fetcher run, as a real request stream would.
            std::thread::yield_now();
        }
    }
    lat.sort_unstable();
    eprintln!(
        "segment step 1000, 2 M single-ID requests: p50 {} ns, p99 {} ns, p99.9 {} ns, p99.99 {} ns, max {} ns; waits on empty buffer {}",
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        pct(&lat, 0.999),
        pct(&lat, 0.9999),
        lat[lat.len() - 1],
        g.metrics().empty_buffer_waits.load(Relaxed)
    );
    for dynamic in [false, true] {
        let tag = format!("bench_paced_{dynamic}");
        let g = build(&tag, segment(&tag, 1000, dynamic));
        let start = Instant::now();
        let mut issued = 0u64;
        let mut max_ns = 0u64;
        while start.elapsed() < Duration::from_secs(3) {
            let due = start.elapsed().as_micros() as u64; // 1 ID per microsecond
            while issued < due {
                let t = Instant::now();
                black_box(one(&g, 1));
                max_ns = max_ns.max(t.elapsed().as_nanos() as u64);
                issued += 1;
            }
            std::thread::yield_now();
        }
        let m = g.metrics();
        let fetched = m.ranges_fetched.load(Relaxed);
        eprintln!(
            "segment step 1000 (dynamic step {dynamic}, now {}) paced at 1 M IDs/s for 3 s: {issued} IDs, {fetched} ranges, \
             fetch latency avg {} us max {} us, waits on empty buffer {}, max request latency {} ns",
            m.current_step.load(Relaxed),
            m.fetch_latency_us_sum.load(Relaxed) / fetched.max(1),
            m.fetch_latency_us_max.load(Relaxed),
            m.empty_buffer_waits.load(Relaxed),
            max_ns
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = throughput, latency
}
criterion_main!(benches);
