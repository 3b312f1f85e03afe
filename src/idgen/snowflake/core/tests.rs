//! The sequencer keeps a worker id and its timeline together across worker switches.

use super::*;
use crate::idgen::clock::TestClock;
use std::sync::atomic::AtomicBool;

/// Takes racing with worker switches never pair a worker id with another worker's timeline:
/// worker `k` starts far after worker `k - 1`, so a mixed ID would fall outside its range.
#[tokio::test]
async fn takes_racing_a_switch_keep_worker_and_timeline_together() {
    let cfg = SnowflakeConfig {
        worker_id: Some(0),
        max_borrow_ms: 1 << 40,
        sequence_start: SequenceStart::Zero,
        ..SnowflakeConfig::default()
    };
    let layout = cfg.validate("t", false).unwrap();
    let clock = Arc::new(TestClock::new(1_750_000_000_000));
    let metrics = Arc::new(Metrics::default());
    let core = Core::start("t", &cfg, layout, 4, None, clock.clone(), metrics)
        .await
        .unwrap();
    let now = layout.tick_of(clock.wall_ms());
    let start = |k: u64| if k == 0 { 0 } else { now + k * 1_000_000 };
    let switches = 40u64;
    let stop = AtomicBool::new(false);
    let taken: Vec<Vec<(usize, u64, u64, u64)>> = std::thread::scope(|s| {
        let takers: Vec<_> = (0..2)
            .map(|t| {
                let (core, stop) = (&core, &stop);
                s.spawn(move || {
                    let mut out = Vec::new();
                    let mut i = t;
                    while !stop.load(Relaxed) {
                        let space = i % 4;
                        let n = 1 + (i % 3) as u64;
                        if let Ok((tick, worker, seq)) = core.take(space, n) {
                            out.extend((seq..seq + n).map(|q| (space, tick, worker, q)));
                        }
                        i += 1;
                    }
                    out
                })
            })
            .collect();
        for k in 1..=switches {
            std::thread::sleep(Duration::from_micros(200));
            for q in core.seqs.iter() {
                q.restart(&layout, start(k), k);
            }
            core.worker.store(k, Relaxed);
        }
        std::thread::sleep(Duration::from_micros(200));
        stop.store(true, Relaxed);
        takers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<_> = taken.into_iter().flatten().collect();
    let mut seen_workers = std::collections::BTreeSet::new();
    for &(space, tick, worker, seq) in &all {
        seen_workers.insert(worker);
        assert!(
            start(worker) < tick && (worker == switches || tick < start(worker + 1)),
            "worker {worker} issued tick {tick} (space {space}, sequence {seq}) outside its timeline"
        );
    }
    assert!(
        seen_workers.len() > switches as usize / 2,
        "{seen_workers:?}"
    );
    let mut keys = all.clone();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(
        keys.len(),
        all.len(),
        "a (tick, worker, sequence) was taken twice"
    );
}
