//! LOAD DATA rows placed without a server: lines, shards, ids asked of the generator, the OK.

use super::load_rows::{answer, fill_ids, lines, wanted_ids, RowPlan, Wanted};
use crate::config::tables::ExplicitIds;
use crate::exec::collect::Collected;
use crate::idgen::NewIds;
use crate::route::test_rules::{rule, sharded};
use crate::route::{Placement, TableRule};
use crate::sql::Field;

fn plan(id_field: Option<usize>, shard_field: Option<usize>) -> RowPlan {
    RowPlan {
        generator: None,
        id_field,
        shard_fields: vec![("id".into(), shard_field)],
        bias_field: None,
        zero_is_value: false,
        binary_uuid: false,
    }
}

fn row(fields: &[Option<&str>]) -> Vec<Field> {
    fields
        .iter()
        .map(|f| f.map(|v| v.as_bytes().to_vec()))
        .collect()
}

fn table() -> TableRule {
    rule("t", Some("g"), sharded("id", &["s0", "s1"]))
}

#[test]
fn each_row_goes_to_its_shard_as_a_line_of_that_shards_file() {
    let rows = [row(&[Some("3"), Some("a\tb")]), row(&[Some("4"), None])];
    let got = lines(&table(), &plan(Some(0), Some(0)), &rows, None, 1).unwrap();
    assert_eq!(
        got,
        vec![
            (Some(1), b"3\ta\\tb\n".to_vec()),
            (Some(0), b"4\t\\N\n".to_vec())
        ]
    );
}

#[test]
fn generated_ids_go_first_and_choose_the_shard() {
    let rows = [row(&[Some("x")]), row(&[Some("y\\z")])];
    let ids: Vec<Field> = vec![Some(b"10".to_vec()), Some(b"11".to_vec())];
    let got = lines(&table(), &plan(None, None), &rows, Some(&ids), 1).unwrap();
    assert_eq!(
        got,
        vec![
            (Some(0), b"10\tx\n".to_vec()),
            (Some(1), b"11\ty\\\\z\n".to_vec())
        ]
    );
}

#[test]
fn a_row_without_a_sharding_value_is_refused_naming_its_line() {
    let rows = [row(&[Some("1")]), row(&[None])];
    let e = lines(&table(), &plan(Some(0), Some(0)), &rows, None, 7).unwrap_err();
    assert!(
        e.message
            .contains("Row 8 of the file has no value for the sharding column `id`"),
        "{e:?}"
    );
}

#[test]
fn an_unsharded_table_gets_every_line_on_every_backend() {
    let single = rule(
        "t",
        None,
        Placement::Single {
            backend: "d".into(),
        },
    );
    let got = lines(&single, &plan(None, None), &[row(&[Some("v")])], None, 1).unwrap();
    assert_eq!(got, vec![(None, b"v\n".to_vec())]);
}

#[test]
fn ids_are_generated_where_auto_increment_would_generate() {
    let rows = [
        row(&[Some("5"), Some("a")]),
        row(&[None, Some("b")]),
        row(&[Some(""), Some("c")]),
        row(&[Some("0"), Some("d")]),
        row(&[Some("a")]),
    ];
    let p = plan(Some(0), None);
    let Wanted { ids, slots, bias } = wanted_ids(&table(), &p, &rows, 1).unwrap();
    assert_eq!(slots, vec![1, 2, 3]);
    assert_eq!(ids[0], Some(b"5".to_vec()));
    assert_eq!(ids[4], Some(b"a".to_vec()), "the file's own value");
    assert!(bias.is_empty());
    // NO_AUTO_VALUE_ON_ZERO keeps 0.
    let keep_zero = RowPlan {
        zero_is_value: true,
        ..plan(Some(0), None)
    };
    let kept = wanted_ids(&table(), &keep_zero, &rows, 1).unwrap();
    assert_eq!(kept.slots, vec![1, 2]);
    // explicit_ids: reject refuses a given id, naming its line.
    let mut strict = table();
    strict.explicit_ids = ExplicitIds::Reject;
    let e = wanted_ids(&strict, &p, &rows, 10).unwrap_err();
    assert!(e.message.contains("on row 10 rejected"), "{e:?}");
}

#[test]
fn generated_numbers_fill_the_rows_that_asked() {
    let mut ids: Vec<Field> = vec![Some(b"5".to_vec()), None, None];
    fill_ids(&mut ids, &[1, 2], &NewIds::Numbers(vec![100, 101]), false);
    assert_eq!(
        ids,
        vec![
            Some(b"5".to_vec()),
            Some(b"100".to_vec()),
            Some(b"101".to_vec())
        ]
    );
}

/// MariaDB's LOAD DATA reports insert id 0; the first id becomes LAST_INSERT_ID() only.
#[test]
fn the_ok_adds_up_the_backends_counts() {
    let ok = |affected: u8, info: &str| {
        let mut p = vec![0x00, affected, 0, 0x02, 0x00, 0x01, 0x00];
        p.push(info.len() as u8);
        p.extend_from_slice(info.as_bytes());
        Collected::Ok(p)
    };
    let r = answer(&[
        ok(2, "Records: 2  Deleted: 0  Skipped: 0  Warnings: 1"),
        ok(3, "Records: 3  Deleted: 0  Skipped: 0  Warnings: 1"),
    ]);
    assert_eq!(r.affected, 5);
    assert_eq!(r.insert_id, 0);
    assert_eq!(r.warnings, 2);
    assert_eq!(r.info, b"Records: 5  Deleted: 0  Skipped: 0  Warnings: 2");
}
