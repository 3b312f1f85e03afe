//! The bulk writer against a fake cursor: batches per backend per round, pipelined after the
//! statement that starts each part, and all-or-nothing.

use super::bulk_write::{write_batches, Outcome, Share};
use super::fake_cursor::{block_on, FakeCursor};
use crate::route::Tables;

fn shares() -> Vec<Share> {
    vec![
        Share {
            backend: "s0".into(),
            items: vec![0, 2, 4],
        },
        Share {
            backend: "s1".into(),
            items: vec![1],
        },
    ]
}

/// Two items per batch at most: `INSERT <items>`.
fn render(_: usize, items: &[usize]) -> (Vec<u8>, usize) {
    let take = items.len().min(2);
    let list: Vec<String> = items[..take].iter().map(|i| i.to_string()).collect();
    (format!("INSERT {}", list.join(",")).into_bytes(), take)
}

fn run(c: &mut FakeCursor, shares: &[Share]) -> Outcome {
    block_on(write_batches(c, shares, render, "sp", "TEST")).expect("the session goes on")
}

#[test]
fn each_backend_gets_its_batches_in_rounds_after_its_start() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let Outcome::Written(oks) = run(&mut c, &shares()) else {
        panic!("not written");
    };
    assert_eq!(
        c.sent,
        [
            ("s0".to_string(), "START TRANSACTION".to_string()),
            ("s0".into(), "INSERT 0,2".into()),
            ("s1".into(), "START TRANSACTION".into()),
            ("s1".into(), "INSERT 1".into()),
            ("s0".into(), "INSERT 4".into()),
        ]
    );
    let batches: Vec<(usize, u64)> = oks.iter().map(|b| (b.share, b.items)).collect();
    assert_eq!(batches, [(0, 2), (1, 1), (0, 1)]);
    assert_eq!(c.ended, [(vec!["s0".to_string(), "s1".into()], true)]);
}

#[test]
fn a_refused_batch_undoes_the_whole_write_and_stops_it() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    c.refuse_statement("INSERT 1");
    let Outcome::Failed(e) = run(&mut c, &shares()) else {
        panic!("not failed");
    };
    assert_eq!(crate::wire::packets::parse_err(&e).0, 1062);
    // No second round after the error; every part rolled back.
    assert!(!c.sent.iter().any(|(_, s)| s == "INSERT 4"));
    assert_eq!(c.ended, [(vec!["s0".to_string(), "s1".into()], false)]);
}

#[test]
fn a_backend_it_cannot_reach_writes_nothing() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let mut s = shares();
    s[1].backend = "gone".into();
    let Outcome::Refused(e) = run(&mut c, &s) else {
        panic!("not refused");
    };
    assert!(e.message.contains("gone"), "{}", e.message);
    assert!(c.sent.is_empty() && c.ended.is_empty());
}
