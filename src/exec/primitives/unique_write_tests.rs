//! The write of a `unique: global` statement against a fake cursor: a connection starts only
//! when a statement first goes there, and only those take part in the end.

use super::fake_cursor::{block_on, FakeCursor};
use super::unique_write::{open, Failure};
use crate::exec::collect::Collected;
use crate::route::Tables;

#[test]
fn only_the_connections_a_statement_went_to_are_started_and_ended() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let shards = ["s0".to_string(), "s1".to_string()];
    let mut w = block_on(open(&mut c, ["s1"].into_iter(), &shards))
        .expect("goes on")
        .expect("leased");
    for sql in ["CLAIM", "WRITE"] {
        let got = block_on(w.collect_one(&mut c, "s1", sql.into())).expect("goes on");
        assert!(matches!(got, Ok(Collected::Ok(_))), "{got:?}");
    }
    let kept = block_on(w.close(&mut c, Ok::<_, Failure>(7), "INSERT")).expect("goes on");
    assert_eq!(kept.ok(), Some(7));
    assert_eq!(
        c.sent,
        [
            ("s1".to_string(), "START TRANSACTION".to_string()),
            ("s1".into(), "CLAIM".into()),
            ("s1".into(), "WRITE".into()),
        ]
    );
    assert_eq!(c.ended, [(vec!["s1".to_string()], true)]);
}

#[test]
fn a_failure_undoes_what_was_written_and_is_handed_back_for_the_client() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    c.refuse_statement("WRITE");
    let shards = ["s0".to_string(), "s1".to_string()];
    let mut w = block_on(open(&mut c, ["s0"].into_iter(), &shards))
        .expect("goes on")
        .expect("leased");
    block_on(w.collect_one(&mut c, "s0", "CLAIM".into()))
        .expect("goes on")
        .expect("claimed");
    let Ok(Collected::Err(e)) =
        block_on(w.collect_one(&mut c, "s1", "WRITE".into())).expect("goes on")
    else {
        panic!("the refusal is the answer");
    };
    let outcome: Result<(), Failure> = Err(Failure::Packet(e));
    let told = block_on(w.close(&mut c, outcome, "INSERT")).expect("goes on");
    assert!(matches!(told, Err(Failure::Packet(_))));
    assert_eq!(c.ended, [(vec!["s0".to_string(), "s1".into()], false)]);
    // A backend the write holds no connection to is idgate's error, not a panic.
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let mut w = block_on(open(&mut c, std::iter::empty(), &shards))
        .expect("goes on")
        .expect("leased");
    let got = block_on(w.collect_one(&mut c, "elsewhere", "X".into())).expect("goes on");
    assert!(matches!(got, Err(Failure::Sql(e)) if e.message.contains("elsewhere")));
}
