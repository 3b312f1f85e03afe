//! Biased ("gene") snowflake and UUIDv7 generators.

mod common;

use idgate::idgen::store_pool::StorePool;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use idgate::idgen::config::{GeneratorConfig, SnowflakeConfig};
use idgate::idgen::uuidv7::Uuid7;
use idgate::idgen::{Clock, Generator, IdGenError, SystemClock, TestClock};
use proptest::prelude::*;

const T0: u64 = 1_750_000_000_000;

fn biased(slot_bits: u32, worker: Option<u64>) -> SnowflakeConfig {
    SnowflakeConfig {
        slot_bits: Some(slot_bits),
        worker_id: worker,
        max_borrow_ms: 5_000,
        ..SnowflakeConfig::default()
    }
}

async fn build(
    cfg: SnowflakeConfig,
    pool: Option<&StorePool>,
    clock: Arc<dyn Clock>,
) -> Arc<Generator> {
    Generator::build("gene", &GeneratorConfig::Biased(cfg), pool, clock)
        .await
        .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Batch(Vec<u64>),
    Advance(u64),
    StepBack(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec(any::<u64>(), 1..300).prop_map(Op::Batch),
        // Few distinct bias values: many IDs per slot in one tick (sequence overflow).
        3 => (prop::collection::vec(0u64..4, 1..3000)).prop_map(Op::Batch),
        2 => (0u64..3000).prop_map(Op::Advance),
        2 => (0u64..4000).prop_map(Op::StepBack),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn mask_property_holds_on_every_path(slot_bits in 1u32..=10, ops in prop::collection::vec(op(), 1..25)) {
        let rt = rt();
        let clock = Arc::new(TestClock::new(T0));
        let g = rt.block_on(build(biased(slot_bits, Some(5)), None, clock.clone()));
        let mask = (1u64 << slot_bits) - 1;
        prop_assert_eq!(g.as_biased().unwrap().mask(), mask);
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for op in ops {
            match op {
                Op::Advance(ms) => clock.advance(Duration::from_millis(ms)),
                Op::StepBack(ms) => clock.step_back(Duration::from_millis(ms)),
                Op::Batch(bias) => {
                    out.clear();
                    match rt.block_on(g.next_biased(&bias, &mut out)) {
                        Ok(()) => {
                            prop_assert_eq!(out.len(), bias.len());
                            for (id, b) in out.iter().zip(&bias) {
                                prop_assert_eq!(id & mask, b & mask);
                                prop_assert!(seen.insert(*id), "duplicate {}", id);
                                prop_assert!(*id < 1u64 << 63);
                            }
                        }
                        Err(e) => {
                            // Only past max_borrow; IDs issued before the error are still unique.
                            prop_assert!(matches!(e, IdGenError::ClockBehind { .. }), "{}", e);
                            for id in &out {
                                prop_assert!(seen.insert(*id));
                            }
                        }
                    }
                }
            }
        }
    }
}

#[tokio::test]
async fn one_slot_overflows_into_borrowed_ticks_keeping_its_bits() {
    let clock = Arc::new(TestClock::new(T0));
    let cfg = SnowflakeConfig {
        sequence_start: idgate::idgen::config::SequenceStart::Zero,
        ..biased(4, Some(1))
    };
    let g = build(cfg, None, clock.clone()).await;
    assert_eq!(g.as_biased().unwrap().layout().sequence_bits, 8);
    let layout = *g.as_biased().unwrap().layout();
    let bias = vec![0xABCDu64; 10_000];
    let mut out = Vec::new();
    g.next_biased(&bias, &mut out).await.unwrap();
    assert!(out.iter().all(|id| id & 0xF == 0xD));
    assert!(
        out.windows(2).all(|w| w[0] < w[1]),
        "per slot, IDs increase"
    );
    // 256 sequence values per tick and slot: 40 ticks at a frozen clock, 39 of them borrowed.
    let ticks: HashSet<u64> = out.iter().map(|&i| layout.decode(i).tick).collect();
    assert_eq!(ticks.len(), 40);
    assert_eq!(clock.wall_ms(), T0);
    // Other slots have their own sequences: they start in the current tick.
    let mut other = Vec::new();
    g.next_biased(&[0x1, 0x2], &mut other).await.unwrap();
    assert_eq!(layout.decode(other[0]).tick, layout.tick_of(T0));
    assert_eq!(other[0] & 0xF, 1);
    assert!(
        g.next_block(1).await.is_err(),
        "biased generators hand out per-row IDs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn biased_with_a_leased_worker_id() {
    let db = common::shared_db();
    let p = StorePool::single(mysql_async::Pool::new(db.url().as_str()));
    let cfg = SnowflakeConfig {
        lease_group: Some("gene".into()),
        ..biased(8, None)
    };
    let g = build(cfg.clone(), Some(&p), Arc::new(SystemClock)).await;
    let h = build(cfg, Some(&p), Arc::new(SystemClock)).await;
    let (wg, wh) = (
        g.as_biased().unwrap().worker_id(),
        h.as_biased().unwrap().worker_id(),
    );
    assert_ne!(wg, wh);
    let bias: Vec<u64> = (0..5000u64).map(|i| i * 7919).collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    g.next_biased(&bias, &mut a).await.unwrap();
    h.next_biased(&bias, &mut b).await.unwrap();
    let all: HashSet<u64> = a.iter().chain(&b).copied().collect();
    assert_eq!(all.len(), 10_000);
    for (id, bv) in a.iter().zip(&bias) {
        assert_eq!(id & 0xFF, bv & 0xFF);
    }
    g.shutdown().await;
    h.shutdown().await;
}

#[test]
fn biased_config_is_checked() {
    let y: GeneratorConfig =
        serde_saphyr::from_str("kind: biased\nslot_bits: 6\nbias_column: user_id\nworker_id: 1\n")
            .unwrap();
    assert!(y.validate("g").is_ok());
    let e = GeneratorConfig::Biased(SnowflakeConfig {
        slot_bits: None,
        ..biased(1, Some(1))
    })
    .validate("g")
    .unwrap_err();
    assert!(e.to_string().contains("needs `slot_bits`"), "{e}");
    // 41 + 10 + 12 + 1 = 64 bits: too many.
    let e = GeneratorConfig::Biased(SnowflakeConfig {
        sequence_bits: Some(12),
        ..biased(1, Some(1))
    })
    .validate("g")
    .unwrap_err();
    assert!(e.to_string().contains("64 bits"), "{e}");
}

// ---- uuidv7 ----

fn uuid_gen(clock: Arc<dyn Clock>) -> Arc<Generator> {
    let rt = rt();
    rt.block_on(Generator::build(
        "u",
        &GeneratorConfig::Uuidv7(Default::default()),
        None,
        clock,
    ))
    .unwrap()
}

fn check_format(u: &Uuid7) {
    let s = u.to_string();
    assert_eq!(s.len(), 36);
    let b = s.as_bytes();
    assert_eq!((b[8], b[13], b[18], b[23]), (b'-', b'-', b'-', b'-'));
    assert_eq!(b[14], b'7', "version 7: {s}");
    assert!(
        matches!(b[19], b'8' | b'9' | b'a' | b'b'),
        "variant 10: {s}"
    );
    let hex: String = s.chars().filter(|&c| c != '-').collect();
    assert_eq!(
        u128::from_str_radix(&hex, 16).unwrap(),
        u128::from_be_bytes(*u.as_bytes())
    );
}

#[test]
fn uuidv7_format_and_monotonic_order() {
    let g = uuid_gen(Arc::new(SystemClock));
    let mut out = Vec::new();
    for _ in 0..100 {
        g.next_uuids(1000, &mut out).unwrap();
    }
    assert_eq!(out.len(), 100_000);
    assert!(out.windows(2).all(|w| w[0] < w[1]), "strictly increasing");
    assert!(
        out.windows(2)
            .all(|w| w[0].to_hyphenated() < w[1].to_hyphenated()),
        "string order matches byte order"
    );
    for u in out.iter().step_by(997) {
        check_format(u);
    }
    let now = SystemClock.wall_ms();
    assert!(out[0].unix_ms() <= now && now - out[0].unix_ms() < 10_000);
}

#[test]
fn uuidv7_stays_monotonic_when_the_clock_steps_back() {
    let clock = Arc::new(TestClock::new(T0));
    let g = uuid_gen(clock.clone());
    let mut out = Vec::new();
    g.next_uuids(10, &mut out).unwrap();
    clock.step_back(Duration::from_secs(5));
    g.next_uuids(10, &mut out).unwrap();
    clock.advance(Duration::from_secs(6));
    g.next_uuids(10, &mut out).unwrap();
    assert!(out.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(out[0].unix_ms(), T0);
    assert_eq!(out[19].unix_ms(), T0, "kept the last millisecond");
    assert_eq!(out[20].unix_ms(), T0 + 1000);
    out.iter().for_each(check_format);
    assert!(
        rt().block_on(g.next_block(1)).is_err(),
        "uuidv7 generators hand out UUIDs"
    );
}
