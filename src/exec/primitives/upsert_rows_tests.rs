//! Which rows an upsert inserted, against a fake cursor: what each part's counts say, and the
//! question asked of a backend when they cannot say.

use mysql_common::constants::StatusFlags;

use super::fake_cursor::{block_on, FakeCursor};
use super::upsert_rows::{
    first_inserted, insert_candidates, judge, Counting, IdTable, Inserted, PartOk,
};
use crate::exec::collect::Collected;
use crate::route::insert::UpsertRows;
use crate::route::Tables;
use crate::wire::packets;

fn ok(affected: u64, info: &str) -> Vec<u8> {
    ok_with_id(affected, 0, info)
}

fn ok_with_id(affected: u64, insert_id: u64, info: &str) -> Vec<u8> {
    let mut p = Vec::new();
    let status = StatusFlags::SERVER_STATUS_AUTOCOMMIT;
    packets::ok(&mut p, 0, affected, insert_id, status, 0, info.as_bytes());
    p
}

fn counting(updates: bool, found_rows: bool) -> Counting {
    Counting {
        updates,
        ignore: false,
        found_rows,
    }
}

fn info(rows: u64, duplicates: u64) -> String {
    format!("Records: {rows}  Duplicates: {duplicates}  Warnings: 0")
}

#[test]
fn counts_tell_when_every_row_or_none_went_in() {
    use Inserted::*;
    // IGNORE counts the rows it inserted.
    assert_eq!(
        judge(
            counting(false, false),
            (3, Option::None, false),
            &ok(3, &info(3, 0))
        ),
        All
    );
    assert_eq!(
        judge(
            counting(false, true),
            (3, Option::None, false),
            &ok(0, &info(3, 3))
        ),
        None
    );
    assert_eq!(
        judge(
            counting(false, false),
            (3, Option::None, false),
            &ok(2, &info(3, 1))
        ),
        Unknown
    );
    assert_eq!(
        judge(counting(false, false), (1, Option::None, false), &ok(1, "")),
        All
    );
    // One row, ON DUPLICATE KEY UPDATE: 1 new, 2 updated, 0 left as it was; with
    // CLIENT_FOUND_ROWS a row left as it was counts 1 too.
    assert_eq!(
        judge(counting(true, false), (1, Option::None, false), &ok(1, "")),
        All
    );
    assert_eq!(
        judge(counting(true, false), (1, Option::None, false), &ok(2, "")),
        None
    );
    assert_eq!(
        judge(counting(true, false), (1, Option::None, false), &ok(0, "")),
        None
    );
    assert_eq!(
        judge(counting(true, true), (1, Option::None, false), &ok(1, "")),
        Unknown
    );
    assert_eq!(
        judge(counting(true, true), (1, Option::None, false), &ok(2, "")),
        None
    );
    // An AUTO_INCREMENT id column on the backend reports the new row's id.
    assert_eq!(
        judge(
            counting(true, true),
            (1, Some(9), false),
            &ok_with_id(1, 9, "")
        ),
        All
    );
    assert_eq!(
        judge(
            counting(true, true),
            (1, Some(9), false),
            &ok_with_id(1, 0, "")
        ),
        Unknown
    );
    // Several rows: no duplicate and every row counted once is all new; without
    // CLIENT_FOUND_ROWS, twice the duplicates is all updated.
    assert_eq!(
        judge(
            counting(true, false),
            (2, Option::None, false),
            &ok(2, &info(2, 0))
        ),
        All
    );
    assert_eq!(
        judge(
            counting(true, false),
            (2, Option::None, false),
            &ok(4, &info(2, 2))
        ),
        None
    );
    assert_eq!(
        judge(
            counting(true, false),
            (2, Option::None, false),
            &ok(3, &info(2, 1))
        ),
        Unknown
    );
    assert_eq!(
        judge(
            counting(true, true),
            (2, Option::None, false),
            &ok(2, &info(2, 2))
        ),
        Unknown
    );
    assert_eq!(
        judge(
            counting(true, true),
            (2, Option::None, false),
            &ok(4, &info(2, 2))
        ),
        Unknown
    );
    // IGNORE with an update counts as Duplicates the rows neither inserted nor updated.
    let ignoring = Counting {
        updates: true,
        ignore: true,
        found_rows: false,
    };
    assert_eq!(
        judge(ignoring, (3, Option::None, false), &ok(2, &info(3, 1))),
        Unknown
    );
    assert_eq!(
        judge(
            counting(true, true),
            (2, Option::None, false),
            &ok(2, &info(2, 0))
        ),
        All
    );
}

fn upsert(generated: &[Option<u64>]) -> UpsertRows {
    UpsertRows {
        updates: false,
        ignore: true,
        id_may_change: false,
        returning: false,
        names_matched: false,
        schema: "app".into(),
        table: "t`x".into(),
        id_column: "id".into(),
        generated: generated.to_vec(),
    }
}

const TABLE: IdTable<'static> = IdTable {
    schema: "app",
    table: "t`x",
    column: "id",
};

/// A read-back's answer: one row per id present.
fn present(ids: &[u64]) -> Collected {
    Collected::Rows {
        columns: Vec::new(),
        rows: ids
            .iter()
            .map(|id| {
                let text = id.to_string();
                [&[text.len() as u8], text.as_bytes()].concat()
            })
            .collect(),
        eof: vec![0xfe, 0, 0, 2, 0],
    }
}

fn first(c: &mut FakeCursor, u: &UpsertRows, parts: &[PartOk<'_>]) -> Option<u64> {
    let candidates = insert_candidates(u, false, parts);
    block_on(first_inserted(c, &TABLE, &candidates))
        .expect("goes on")
        .expect("answered")
}

#[test]
fn when_counts_cannot_tell_the_parts_ids_are_read_back_in_row_order() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    // Rows 0, 2 and 3 (its own id) on s1, one left out; row 1 on s0, inserted.
    let u = upsert(&[Some(10), Some(11), Some(12), None]);
    let question = b"SELECT `id` FROM `app`.`t``x` WHERE `id` IN (10,12)";
    c.answer_write_on("s1", question, present(&[12]));
    let (s1_ok, s0_ok) = (ok(2, &info(3, 1)), ok(1, ""));
    let parts = [
        PartOk {
            backend: "s1",
            rows: &[0, 2, 3],
            ok: &s1_ok,
        },
        PartOk {
            backend: "s0",
            rows: &[1],
            ok: &s0_ok,
        },
    ];
    assert_eq!(first(&mut c, &u, &parts), Some(11));
    let asked: Vec<(&str, &[u8])> = c
        .sent
        .iter()
        .map(|(b, s)| (b.as_str(), s.as_bytes()))
        .collect();
    assert_eq!(asked, [("s1", question.as_slice())]);
}

#[test]
fn a_row_found_earlier_spares_later_parts_their_question() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let u = upsert(&[Some(10), Some(11), Some(12)]);
    let all = ok(1, "");
    let unknown = ok(1, &info(2, 1));
    let parts = [
        PartOk {
            backend: "s0",
            rows: &[0],
            ok: &all,
        },
        PartOk {
            backend: "s1",
            rows: &[1, 2],
            ok: &unknown,
        },
    ];
    assert_eq!(first(&mut c, &u, &parts), Some(10));
    assert!(c.sent.is_empty(), "asked: {:?}", c.sent);
}

#[test]
fn long_parts_are_asked_about_a_bounded_list_at_a_time_and_stop_at_the_first_found() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let generated: Vec<Option<u64>> = (0..2500).map(|k| Some(100 + k)).collect();
    let u = upsert(&generated);
    let rows: Vec<usize> = (0..2500).collect();
    let list = |from: u64, to: u64| {
        let ids: Vec<String> = (from..to).map(|id| id.to_string()).collect();
        format!(
            "SELECT `id` FROM `app`.`t``x` WHERE `id` IN ({})",
            ids.join(",")
        )
    };
    // The first thousand were all left out; the second holds the first row inserted.
    c.answer_write_on("s0", list(1100, 2100).as_bytes(), present(&[1500, 2000]));
    let some = ok(2, &info(2500, 2498));
    let parts = [PartOk {
        backend: "s0",
        rows: &rows,
        ok: &some,
    }];
    assert_eq!(first(&mut c, &u, &parts), Some(1500));
    let asked: Vec<&str> = c.sent.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(asked, [list(100, 1100), list(1100, 2100)]);
}

#[test]
fn no_row_inserted_and_a_backends_error_come_back() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let u = upsert(&[Some(10), Some(11)]);
    let none = ok(0, &info(2, 2));
    let parts = [PartOk {
        backend: "s0",
        rows: &[0, 1],
        ok: &none,
    }];
    assert_eq!(first(&mut c, &u, &parts), None);
    let unknown = ok(1, &info(2, 1));
    let parts = [PartOk {
        backend: "s0",
        rows: &[0, 1],
        ok: &unknown,
    }];
    let question = "SELECT `id` FROM `app`.`t``x` WHERE `id` IN (10,11)";
    c.refuse_statement(question);
    let candidates = insert_candidates(&u, false, &parts);
    let answer = block_on(first_inserted(&mut c, &TABLE, &candidates)).expect("goes on");
    assert_eq!(answer.map_err(|e| e.code), Err(1062));
}

#[test]
fn returning_counts_its_rows() {
    let u = upsert(&[Some(10), Some(11), Some(12)]);
    let parts: [(&str, &[usize], usize); 3] =
        [("s0", &[0], 1), ("s1", &[1, 2], 0), ("s0", &[1, 2], 1)];
    let c = super::upsert_rows::returning_candidates(&u, &parts);
    let judged: Vec<Inserted> = c.iter().map(|c| c.inserted).collect();
    assert_eq!(judged, [Inserted::All, Inserted::None, Inserted::Unknown]);
    assert_eq!(c[2].rows, [(1, 11), (2, 12)]);
}
