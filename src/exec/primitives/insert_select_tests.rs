//! INSERT … SELECT's rows against a fake cursor: each row's id and shard, the batches each shard
//! gets, and the one OK for the whole statement.

use std::sync::Arc;

use mysql_common::constants::{ColumnFlags, ColumnType};

use super::fake_cursor::{block_on, FakeCursor};
use super::insert_select::{shard_rows, source_ids, write_rows, RowId, Target, Written};
use super::insert_source::Source;
use crate::exec::metadata::TableMeta;
use crate::exec::Fetched;
use crate::route::test_rules::{rule, sharded};
use crate::route::{TableRule, Tables};
use crate::sql::{analyze_insert, BoundColumn};

fn table() -> TableRule {
    rule("t", None, sharded("id", &["s0", "s1"]))
}

/// `(id, note)` rows as the SELECT gave them.
fn source(rows: &[(Option<i64>, &str)]) -> Source {
    let column = |name: &str, ty, charset| BoundColumn {
        name: name.as_bytes().to_vec(),
        ty,
        charset,
        flags: ColumnFlags::empty(),
        decimals: 0,
    };
    let mut src = Source::new(Fetched {
        columns: vec![
            column("id", ColumnType::MYSQL_TYPE_LONGLONG, 63),
            column("note", ColumnType::MYSQL_TYPE_VAR_STRING, 45),
        ],
        rows: rows
            .iter()
            .map(|(id, note)| {
                vec![
                    id.map(|i| i.to_string().into_bytes()),
                    Some(note.as_bytes().to_vec()),
                ]
            })
            .collect(),
    });
    assert!(
        src.name_charsets().is_empty(),
        "utf8mb4_general_ci is known"
    );
    src
}

fn target() -> Target {
    Target {
        schema: "s".into(),
        meta: Arc::new(TableMeta {
            columns: vec!["id".into(), "note".into()],
            types: vec!["bigint(20)".into(), "varchar(20)".into()],
        }),
        columns: vec!["id".into(), "note".into()],
        generator: None,
        id_pos: Some(0),
        zero_is_value: true,
    }
}

/// `INSERT INTO t (id, note) SELECT …` of `src` with `ids`, placed and written through `c`.
fn write(c: &mut FakeCursor, src: &Source, ids: &[RowId]) -> Written {
    let shares = shard_rows(&table(), &target(), src, ids).unwrap();
    let a = analyze_insert(b"INSERT INTO t (id, note) SELECT id, note FROM u").unwrap();
    block_on(write_rows(c, &a, &table(), &target(), (src, ids), &shares)).unwrap()
}

#[test]
fn rows_keep_their_own_ids_and_go_to_the_shard_the_id_picks() {
    let src = source(&[(Some(4), "a"), (Some(7), "b"), (Some(10), "c")]);
    let ids = block_on(source_ids(&table(), &target(), &src)).unwrap();
    assert_eq!(
        ids,
        vec![RowId::Own; 3],
        "no generator: every id is the row's own"
    );
    let shares = shard_rows(&table(), &target(), &src, &ids).unwrap();
    let placed: Vec<(&str, &[usize])> = shares
        .iter()
        .map(|s| (s.backend.as_str(), s.items.as_slice()))
        .collect();
    assert_eq!(placed, [("s0", &[0, 2][..]), ("s1", &[1][..])]);

    let nameless = source(&[(None, "x")]);
    let e = shard_rows(&table(), &target(), &nameless, &[RowId::Own]).unwrap_err();
    assert!(
        e.message.contains("no value for the sharding column `id`"),
        "{e:?}"
    );
}

#[test]
fn generated_ids_choose_the_shard_and_are_written_in_place_of_the_rows_nulls() {
    let src = source(&[(None, "a"), (None, "b")]);
    let ids = [RowId::Number(11), RowId::Number(12)];
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let written = write(&mut c, &src, &ids);
    let Written::Done {
        ok,
        first_generated,
    } = written
    else {
        panic!("not written: {written:?}");
    };
    assert_eq!(first_generated, Some(11));
    assert_eq!(ok.insert_id, 11, "LAST_INSERT_ID is the first generated id");
    assert_eq!(ok.affected, 2, "one OK of one row from each shard");
    assert_eq!(ok.info, b"Records: 2  Duplicates: 0  Warnings: 0");
    let writes: Vec<&(String, String)> = c
        .sent
        .iter()
        .filter(|(_, sql)| sql.starts_with("INSERT"))
        .collect();
    assert_eq!(
        writes,
        [
            &(
                "s0".to_string(),
                "INSERT INTO `s`.`t` (`id`,`note`) VALUES (12,_utf8mb4 X'62')".to_string()
            ),
            &(
                "s1".to_string(),
                "INSERT INTO `s`.`t` (`id`,`note`) VALUES (11,_utf8mb4 X'61')".to_string()
            ),
        ]
    );
    assert_eq!(c.ended, [(vec!["s0".to_string(), "s1".to_string()], true)]);
}

#[test]
fn a_refused_batch_undoes_every_shards_part_and_gives_the_backends_error() {
    let src = source(&[(Some(1), "a"), (Some(2), "b")]);
    let ids = [RowId::Own, RowId::Own];
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    c.refuse_statement("INSERT INTO `s`.`t` (`id`,`note`) VALUES (1,_utf8mb4 X'61')");
    let written = write(&mut c, &src, &ids);
    let Written::Failed(err) = written else {
        panic!("written: {written:?}");
    };
    assert_eq!(crate::wire::packets::parse_err(&err).0, 1062);
    assert_eq!(c.ended.len(), 1);
    assert!(!c.ended[0].1, "nothing kept");
}
