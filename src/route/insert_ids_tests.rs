//! Generated values turned into row ids without a server: UUID literals per column type, bias
//! values per row, and only the rows waiting for an id filled.

use super::insert::{self, RowId};
use super::insert_ids;
use super::{Placement, TableRule};
use crate::config::tables::ExplicitIds;
use crate::exec::metadata::TableMeta;
use crate::idgen::uuidv7::Uuid7;
use crate::sql;

fn meta(id_type: &str) -> TableMeta {
    TableMeta {
        columns: vec!["id".into(), "user_id".into(), "note".into()],
        types: vec![id_type.into(), "int(11)".into(), "varchar(20)".into()],
    }
}

fn rule(bias_column: Option<&str>) -> TableRule {
    TableRule {
        schema: None,
        name: "orders".into(),
        id_column: "id".into(),
        generator: Some("ids".into()),
        explicit_ids: ExplicitIds::Allow,
        bias_column: bias_column.map(String::from),
        unique: None,
        placement: Placement::Single {
            backend: "s0".into(),
        },
    }
}

/// The row ids of `stmt` before the generator fills them.
fn ids_of(stmt: &str, rule: &TableRule, meta: &TableMeta) -> Vec<RowId> {
    let a = sql::analyze_insert(stmt.as_bytes()).unwrap();
    let wants = insert::wanted_ids(&a, rule, meta).unwrap();
    insert::row_ids(&a, rule, meta, &wants, false).unwrap()
}

const UUID: Uuid7 = Uuid7([
    0x01, 0x93, 0x4f, 0x2a, 0x10, 0x00, 0x7a, 0xbc, 0x80, 0x01, 0x02, 0x03, 0xfe, 0xdc, 0xba, 0x98,
]);

#[test]
fn only_rows_waiting_for_an_id_are_filled() {
    let (r, m) = (rule(None), meta("bigint(20)"));
    let mut ids = ids_of(
        "INSERT INTO orders (id, note) VALUES (NULL, 'a'), (5, 'b'), (0, 'c')",
        &r,
        &m,
    );
    let slots = insert_ids::generated_slots(&ids);
    assert_eq!(slots, vec![0, 2]);
    insert_ids::fill_numeric(&mut ids, &slots, [100, 101]);
    assert_eq!(
        ids,
        vec![
            RowId::Generated(100),
            RowId::Explicit(Some(5)),
            RowId::Generated(101)
        ]
    );
}

#[test]
fn uuids_become_literals_of_the_id_columns_type() {
    let r = rule(None);
    for (id_type, literal) in [
        ("char(36)", "'01934f2a-1000-7abc-8001-0203fedcba98'"),
        ("binary(16)", "x'01934f2a10007abc80010203fedcba98'"),
    ] {
        let m = meta(id_type);
        let stmt = "INSERT INTO orders (note) VALUES ('a')";
        let mut ids = ids_of(stmt, &r, &m);
        let slots = insert_ids::generated_slots(&ids);
        let binary = insert_ids::id_column_is_binary(&r, &m);
        assert_eq!(binary, id_type.starts_with("binary"));
        insert_ids::fill_uuids(&mut ids, &slots, &[UUID], binary);
        assert_eq!(ids, vec![RowId::GeneratedText(literal.as_bytes().to_vec())]);
        let a = sql::analyze_insert(stmt.as_bytes()).unwrap();
        let plan = insert::place_and_render(stmt.as_bytes(), &a, &r, &m, &ids, None).unwrap();
        let sent = String::from_utf8_lossy(&plan.parts[0].1).into_owned();
        assert_eq!(
            sent,
            format!("INSERT INTO orders (`id`, note) VALUES ({literal}, 'a')")
        );
    }
}

#[test]
fn bias_values_are_each_generated_rows_integer() {
    let (r, m) = (rule(Some("user_id")), meta("bigint(20)"));
    let stmt = "INSERT INTO orders (id, user_id, note) VALUES (NULL, 7, 'a'), (9, 8, 'b'), \
                (NULL, ' 12 ', 'c')";
    let a = sql::analyze_insert(stmt.as_bytes()).unwrap();
    let slots = insert_ids::generated_slots(&ids_of(stmt, &r, &m));
    assert_eq!(
        insert_ids::bias_values(&a, &r, &m, &slots).unwrap(),
        vec![7, 12]
    );
}

#[test]
fn a_row_without_an_integer_bias_value_is_refused_by_its_number() {
    let (r, m) = (rule(Some("user_id")), meta("bigint(20)"));
    for stmt in [
        "INSERT INTO orders (user_id, note) VALUES (7, 'a'), (NULL, 'b')",
        "INSERT INTO orders (user_id, note) VALUES (7, 'a'), ('x', 'b')",
        "INSERT INTO orders (note) VALUES ('a'), ('b')",
    ] {
        let a = sql::analyze_insert(stmt.as_bytes()).unwrap();
        let slots = insert_ids::generated_slots(&ids_of(stmt, &r, &m));
        let e = insert_ids::bias_values(&a, &r, &m, &slots).unwrap_err();
        let msg = e.to_string();
        let row = if stmt.contains("(7,") {
            "Row 2"
        } else {
            "Row 1"
        };
        assert!(
            msg.contains(row) && msg.contains("`user_id`") && msg.contains("`orders`"),
            "{stmt}: {msg}"
        );
    }
}
