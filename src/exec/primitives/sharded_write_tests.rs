//! The write split over several backends against a fake cursor (pipelined after each part's
//! start, all-or-nothing), and its one answer.

use mysql_common::constants::StatusFlags;

use super::fake_cursor::{block_on, FakeCursor};
use super::sharded_write::{answer, write, Answering, Outcome};
use crate::exec::collect::Collected;
use crate::route::Tables;
use crate::wire::framing::PacketWriter;
use crate::wire::packets;

const PARTS: [(&str, &[u8]); 2] = [("s0", b"INSERT a"), ("s1", b"INSERT b")];

fn run(c: &mut FakeCursor, parts: &[(&str, &[u8])]) -> Outcome {
    block_on(write(c, parts, "INSERT")).expect("the session goes on")
}

#[test]
fn every_part_is_sent_before_any_answer_is_read_and_all_are_kept() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let Outcome::Written(answers) = run(&mut c, &PARTS) else {
        panic!("not written");
    };
    assert_eq!(
        c.sent,
        [
            ("s0".to_string(), "START TRANSACTION".to_string()),
            ("s0".into(), "INSERT a".into()),
            ("s1".into(), "START TRANSACTION".into()),
            ("s1".into(), "INSERT b".into()),
        ]
    );
    assert_eq!(answers.len(), 2);
    assert_eq!(c.ended, [(vec!["s0".to_string(), "s1".into()], true)]);
}

#[test]
fn a_part_refused_on_one_backend_undoes_the_others() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    c.refuse_statement("INSERT b");
    let Outcome::Failed(e) = run(&mut c, &PARTS) else {
        panic!("not failed");
    };
    assert_eq!(packets::parse_err(&e).0, 1062);
    assert_eq!(c.ended, [(vec!["s0".to_string(), "s1".into()], false)]);
}

#[test]
fn a_backend_it_cannot_reach_gets_nothing_sent_anywhere() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let Outcome::Refused(e) = run(&mut c, &[PARTS[0], ("gone", b"INSERT c")]) else {
        panic!("not refused");
    };
    assert!(e.message.contains("gone"), "{}", e.message);
    assert!(c.sent.is_empty() && c.ended.is_empty());
}

fn ok(affected: u64, warnings: u16, info: &[u8]) -> Collected {
    let mut p = Vec::new();
    let status = StatusFlags::empty();
    packets::ok(
        &mut p,
        packets::OK_HEADER,
        affected,
        0,
        status,
        warnings,
        info,
    );
    Collected::Ok(p)
}

fn how(rows_of_parts: Vec<&[usize]>, broadcast: bool, needs_rows: bool) -> Answering<'_> {
    Answering {
        rows_of_parts,
        broadcast,
        insert_id: 7,
        insert_id_needs_rows: needs_rows,
        status: StatusFlags::SERVER_STATUS_AUTOCOMMIT,
        deprecate_eof: true,
        insert: None,
    }
}

/// The payloads of the packets `answer` wrote.
fn answered(how: &Answering<'_>, answers: &[Collected]) -> Vec<Vec<u8>> {
    let mut w = PacketWriter::new(Vec::new());
    answer(&mut w, how, answers);
    block_on(w.flush()).expect("written to memory");
    let mut bytes = w.inner().as_slice();
    let mut out = Vec::new();
    while bytes.len() >= 4 {
        let len = usize::from(bytes[0]) | usize::from(bytes[1]) << 8 | usize::from(bytes[2]) << 16;
        out.push(bytes[4..4 + len].to_vec());
        bytes = &bytes[4 + len..];
    }
    out
}

#[test]
fn the_ok_sums_the_parts_counts_warnings_and_infos() {
    let answers = [
        ok(2, 1, b"Records: 2  Duplicates: 0  Warnings: 1"),
        ok(1, 0, b"Records: 1  Duplicates: 0  Warnings: 0"),
    ];
    let out = answered(&how(vec![&[0, 2], &[1]], false, true), &answers);
    assert_eq!(out.len(), 1);
    let o = packets::parse_ok(&out[0]).expect("an OK");
    assert_eq!((o.affected_rows, o.last_insert_id, o.warnings), (3, 7, 1));
    assert_eq!(
        packets::ok_info(&out[0]),
        b"Records: 3  Duplicates: 0  Warnings: 1"
    );
}

#[test]
fn a_one_row_part_counts_in_the_info_as_one_server_would() {
    use crate::route::insert::InsertKind;
    let info = |kind: InsertKind, answers: &[Collected]| {
        let mut h = how(vec![&[0, 2], &[1], &[3]], false, true);
        h.insert = Some(kind);
        let out = answered(&h, answers);
        String::from_utf8(packets::ok_info(&out[0]).to_vec()).expect("text")
    };
    let two = b"Records: 2  Duplicates: 1  Warnings: 0";
    // REPLACE or an upsert: 2 affected is a duplicate; IGNORE: 0 affected is.
    assert_eq!(
        info(
            InsertKind::Replace,
            &[ok(3, 0, two), ok(2, 0, b""), ok(1, 1, b"")]
        ),
        "Records: 4  Duplicates: 2  Warnings: 1"
    );
    assert_eq!(
        info(
            InsertKind::Ignore,
            &[
                ok(1, 1, b"Records: 2  Duplicates: 1  Warnings: 1"),
                ok(0, 0, b""),
                ok(1, 0, b"")
            ]
        ),
        "Records: 4  Duplicates: 2  Warnings: 1"
    );
    // A statement of one row has no info, as on one server.
    let out = answered(
        &Answering {
            insert: Some(InsertKind::Plain),
            ..how(vec![&[0]], false, true)
        },
        &[ok(1, 0, b"")],
    );
    assert_eq!(packets::ok_info(&out[0]), b"");
}

#[test]
fn a_broadcast_write_counts_one_copy_and_no_row_means_no_insert_id() {
    let out = answered(
        &how(vec![&[], &[]], true, false),
        &[ok(1, 0, b""), ok(1, 0, b"")],
    );
    let o = packets::parse_ok(&out[0]).expect("an OK");
    assert_eq!((o.affected_rows, o.last_insert_id), (1, 7));
    let out = answered(
        &how(vec![&[0], &[1]], false, true),
        &[ok(0, 0, b""), ok(0, 0, b"")],
    );
    let o = packets::parse_ok(&out[0]).expect("an OK");
    assert_eq!((o.affected_rows, o.last_insert_id), (0, 0));
}

#[test]
fn returning_rows_come_back_in_the_statements_row_order() {
    let rows = |rows: &[&[u8]]| Collected::Rows {
        columns: vec![b"col".to_vec()],
        rows: rows.iter().map(|r| r.to_vec()).collect(),
        eof: {
            let mut p = Vec::new();
            packets::terminator(&mut p, true, 0, StatusFlags::empty());
            p
        },
    };
    let answers = [rows(&[b"r0", b"r2"]), rows(&[b"r1"])];
    let out = answered(&how(vec![&[0, 2], &[1]], false, false), &answers);
    // Column count, the definition, three rows, the terminator (no EOF: DEPRECATE_EOF).
    assert_eq!(out.len(), 6, "{out:?}");
    assert_eq!(out[1], b"col");
    assert_eq!(&out[2..5], [b"r0".to_vec(), b"r1".to_vec(), b"r2".to_vec()]);
}
