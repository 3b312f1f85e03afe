//! INSERT plans of each kind, made without a server: a hand-built table and rule, the ids a
//! generator would hand out filled in as the session fills them.

use super::insert::{self, InsertPlan, RowId, Want};
use super::{Algorithm, Placement, TableRule};
use crate::config::tables::ExplicitIds;
use crate::exec::metadata::TableMeta;
use crate::sql;
use crate::wire::errors::SqlError;

/// `orders (id bigint, user_id int, note varchar(20))`.
fn meta() -> TableMeta {
    TableMeta {
        columns: vec!["id".into(), "user_id".into(), "note".into()],
        types: vec!["bigint(20)".into(), "int(11)".into(), "varchar(20)".into()],
    }
}

fn rule(placement: Placement) -> TableRule {
    TableRule {
        schema: None,
        name: "orders".into(),
        id_column: "id".into(),
        generator: Some("ids".into()),
        explicit_ids: ExplicitIds::Allow,
        bias_column: None,
        unique: None,
        placement,
    }
}

/// Sharded by `column` mod 2 over s0, s1.
fn sharded_by(column: &str) -> TableRule {
    rule(Placement::Sharded {
        columns: vec![column.into()],
        algorithm: Algorithm::Mod,
        shards: vec!["s0".into(), "s1".into()],
    })
}

fn single() -> TableRule {
    rule(Placement::Single {
        backend: "s0".into(),
    })
}

fn broadcast() -> TableRule {
    rule(Placement::Broadcast {
        backends: vec!["s0".into(), "s1".into()],
    })
}

/// The row ids of `stmt`, with generated slots still unfilled.
fn ids_of(stmt: &str, rule: &TableRule, zero_is_value: bool) -> Result<Vec<RowId>, SqlError> {
    let a = sql::analyze_insert(stmt.as_bytes()).unwrap();
    let m = meta();
    let wants = insert::wanted_ids(&a, rule, &m)?;
    insert::row_ids(&a, rule, &m, &wants, zero_is_value)
}

/// The plan of `stmt`, the generator handing out `first`, `first + 1`, … in row order (as a
/// block generator does).
fn plan_with(
    stmt: &str,
    rule: &TableRule,
    zero_is_value: bool,
    first: u64,
) -> Result<InsertPlan, SqlError> {
    let a = sql::analyze_insert(stmt.as_bytes()).unwrap();
    let m = meta();
    let mut ids = ids_of(stmt, rule, zero_is_value)?;
    let mut next = first;
    let mut first_generated = None;
    for id in &mut ids {
        if let RowId::Generated(slot) = id {
            *slot = next;
            first_generated.get_or_insert(next);
            next += 1;
        }
    }
    insert::place_and_render(stmt.as_bytes(), &a, rule, &m, &ids, first_generated)
}

fn plan(stmt: &str, rule: &TableRule) -> InsertPlan {
    plan_with(stmt, rule, false, 10).unwrap()
}

/// (backend, SQL, rows) of each part.
fn parts(p: &InsertPlan) -> Vec<(&str, String, Vec<usize>)> {
    p.parts
        .iter()
        .map(|(b, sql, rows)| {
            (
                b.as_str(),
                String::from_utf8_lossy(sql).into_owned(),
                rows.clone(),
            )
        })
        .collect()
}

#[test]
fn null_default_and_a_missing_id_column_get_generated_ids() {
    let r = single();
    let a = sql::analyze_insert(
        b"INSERT INTO orders (id, note) VALUES (NULL, 'a'), (DEFAULT, 'b'), (5, 'c')",
    )
    .unwrap();
    let wants = insert::wanted_ids(&a, &r, &meta()).unwrap();
    assert_eq!(wants.rows, [Want::Generate, Want::Generate, Want::Keep]);
    assert!(!wants.zero_seen());
    let ids = ids_of("INSERT INTO orders (note) VALUES ('a'), ('b')", &r, false).unwrap();
    assert_eq!(ids, [RowId::Generated(0), RowId::Generated(0)]);
    // Without a column list the id is the table's first column.
    let ids = ids_of(
        "INSERT INTO orders VALUES (NULL, 1, 'a'), (8, 2, 'b')",
        &r,
        false,
    )
    .unwrap();
    assert_eq!(ids, [RowId::Generated(0), RowId::Explicit(Some(8))]);
}

#[test]
fn zero_gets_an_id_unless_sql_mode_has_no_auto_value_on_zero() {
    let r = single();
    let stmt = "INSERT INTO orders (id, note) VALUES (0, 'a'), ('00', 'b'), (NULL, 'c')";
    let a = sql::analyze_insert(stmt.as_bytes()).unwrap();
    let wants = insert::wanted_ids(&a, &r, &meta()).unwrap();
    assert!(wants.zero_seen(), "the session must ask for sql_mode");
    assert_eq!(
        ids_of(stmt, &r, false).unwrap(),
        [
            RowId::Generated(0),
            RowId::Generated(0),
            RowId::Generated(0)
        ]
    );
    assert_eq!(
        ids_of(stmt, &r, true).unwrap(),
        [
            RowId::Explicit(Some(0)),
            RowId::Explicit(None),
            RowId::Generated(0)
        ]
    );
    let p = plan_with(stmt, &r, true, 10).unwrap();
    assert_eq!(
        parts(&p)[0].1,
        "INSERT INTO orders (id, note) VALUES (0, 'a'), ('00', 'b'), (LAST_INSERT_ID(10), 'c')"
    );
    assert_eq!(p.insert_id, 10);
}

#[test]
fn explicit_ids_are_kept_or_rejected_as_configured() {
    let stmt = "INSERT INTO orders (id, note) VALUES (NULL, 'a'), (42, 'b')";
    let mut r = single();
    let p = plan(stmt, &r);
    assert_eq!(
        parts(&p)[0].1,
        "INSERT INTO orders (id, note) VALUES (LAST_INSERT_ID(10), 'a'), (42, 'b')"
    );
    r.explicit_ids = ExplicitIds::Reject;
    let e = plan_with(stmt, &r, false, 10).unwrap_err();
    assert_eq!((e.code, &e.state), (1105, b"HY000"));
    assert!(e.message.contains("explicit_ids: reject"), "{}", e.message);
    // A zero kept as a value under NO_AUTO_VALUE_ON_ZERO is explicit too.
    let e = ids_of("INSERT INTO orders (id) VALUES (0)", &r, true).unwrap_err();
    assert!(e.message.contains("explicit_ids: reject"), "{}", e.message);
    assert!(ids_of("INSERT INTO orders (id) VALUES (0)", &r, false).is_ok());
    // Without a generator the policy has nothing to protect: the value is kept.
    r.generator = None;
    assert_eq!(
        ids_of(stmt, &r, false).unwrap(),
        [RowId::Explicit(None), RowId::Explicit(Some(42))]
    );
}

#[test]
fn a_placeholder_outside_a_prepared_statement_is_a_parse_error() {
    let a = sql::analyze_insert(b"INSERT INTO orders (id, note) VALUES (?, 'a')").unwrap();
    let e = insert::wanted_ids(&a, &single(), &meta()).unwrap_err();
    assert_eq!((e.code, &e.state), (sql::ER_PARSE_ERROR, b"42000"));
}

#[test]
fn rows_split_over_shards_by_their_generated_ids() {
    let p = plan(
        "INSERT INTO orders (note) VALUES ('a'), ('b'), ('c'), ('d')",
        &sharded_by("id"),
    );
    assert_eq!(
        parts(&p),
        [
            (
                "s0",
                "INSERT INTO orders (`id`, note) VALUES (LAST_INSERT_ID(10), 'a'),(12, 'c')".into(),
                vec![0, 2]
            ),
            (
                "s1",
                "INSERT INTO orders (`id`, note) VALUES (11, 'b'),(13, 'd')".into(),
                vec![1, 3]
            ),
        ]
    );
    assert!(!p.broadcast);
    assert_eq!(p.insert_id, 10);
    assert_eq!(p.first_generated, Some(10));
    assert_eq!(p.lid_backend.as_deref(), Some("s0"));
}

#[test]
fn rows_split_over_shards_by_another_sharding_column() {
    let p = plan(
        "INSERT INTO orders (user_id, note) VALUES (3, 'a'), (4, 'b'), (5, 'c')",
        &sharded_by("user_id"),
    );
    assert_eq!(
        parts(&p),
        [
            (
                "s0",
                "INSERT INTO orders (`id`, user_id, note) VALUES (11, 4, 'b')".into(),
                vec![1]
            ),
            (
                "s1",
                "INSERT INTO orders (`id`, user_id, note) VALUES (LAST_INSERT_ID(10), 3, 'a'),(12, 5, 'c')"
                    .into(),
                vec![0, 2]
            ),
        ]
    );
    // The first generated id went to s1: that backend sets LAST_INSERT_ID().
    assert_eq!(p.lid_backend.as_deref(), Some("s1"));
    assert_eq!(p.insert_id, 10);
}

#[test]
fn a_row_without_a_literal_sharding_value_is_refused() {
    let e = plan_with(
        "INSERT INTO orders (user_id, note) VALUES (2, 'a'), (@u, 'b')",
        &sharded_by("user_id"),
        false,
        10,
    )
    .unwrap_err();
    assert_eq!((e.code, &e.state), (1105, b"HY000"));
    assert!(
        e.message
            .starts_with("Row 2 of the INSERT into `orders` gives no literal value for its sharding column `user_id`"),
        "{}",
        e.message
    );
}

#[test]
fn broadcast_sends_every_row_everywhere_and_sets_last_insert_id_once() {
    let p = plan(
        "INSERT INTO orders (note) VALUES ('a'), ('b')",
        &broadcast(),
    );
    assert_eq!(
        parts(&p),
        [
            (
                "s0",
                "INSERT INTO orders (`id`, note) VALUES (LAST_INSERT_ID(10), 'a'), (11, 'b')"
                    .into(),
                vec![0, 1]
            ),
            (
                "s1",
                "INSERT INTO orders (`id`, note) VALUES (10, 'a'), (11, 'b')".into(),
                vec![0, 1]
            ),
        ]
    );
    assert!(p.broadcast);
    assert_eq!(p.lid_backend.as_deref(), Some("s0"));
}

#[test]
fn single_placement_is_one_part_with_the_ids_spliced_in() {
    let p = plan("INSERT INTO orders SET note = 'x'", &single());
    assert_eq!(
        parts(&p),
        [(
            "s0",
            "INSERT INTO orders SET `id` = LAST_INSERT_ID(10), note = 'x'".into(),
            vec![0]
        )]
    );
    assert_eq!((p.insert_id, p.first_generated), (10, Some(10)));
}

#[test]
fn last_insert_id_wraps_the_first_generated_id_only() {
    let p = plan(
        "INSERT INTO orders (id, note) VALUES (7, 'a'), (NULL, 'b'), (NULL, 'c')",
        &single(),
    );
    let (_, sql, _) = &parts(&p)[0];
    assert_eq!(
        sql,
        "INSERT INTO orders (id, note) VALUES (7, 'a'), (LAST_INSERT_ID(10), 'b'), (11, 'c')"
    );
    assert_eq!(sql.matches("LAST_INSERT_ID").count(), 1);
    // The client is told the first generated id, not the explicit one before it.
    assert_eq!(p.insert_id, 10);
}

#[test]
fn with_only_explicit_ids_the_insert_id_is_the_last_positive_one() {
    let stmt = "INSERT INTO orders (id, note) VALUES (5, 'a'), (9, 'b'), (-2, 'c')";
    let p = plan(stmt, &sharded_by("id"));
    assert_eq!(p.first_generated, None);
    assert_eq!(p.lid_backend, None);
    assert_eq!(p.insert_id, 9);
    assert_eq!(
        parts(&p),
        [
            (
                "s0",
                "INSERT INTO orders (id, note) VALUES (-2, 'c')".into(),
                vec![2]
            ),
            (
                "s1",
                "INSERT INTO orders (id, note) VALUES (5, 'a'), (9, 'b')".into(),
                vec![0, 1]
            ),
        ]
    );
    // No generator: the statement goes as written when one backend takes every row.
    let mut r = single();
    r.generator = None;
    let p = plan(stmt, &r);
    assert_eq!(parts(&p)[0].1, stmt);
    assert_eq!((p.insert_id, p.first_generated), (9, None));
}

#[test]
fn insert_select_and_moving_updates_are_refused_before_planning() {
    let r = sharded_by("user_id");
    let check = |stmt: &str| {
        let a = sql::analyze_insert(stmt.as_bytes()).unwrap();
        insert::check_statement(stmt.as_bytes(), &a, &r)
    };
    let e = check("INSERT INTO orders (note) SELECT note FROM t").unwrap_err();
    assert_eq!((e.code, &e.state), (sql::ER_NOT_SUPPORTED_YET, b"42000"));
    let e = check(
        "INSERT INTO orders (user_id, note) VALUES (1, 'a') ON DUPLICATE KEY UPDATE user_id = 2",
    )
    .unwrap_err();
    assert!(e.message.contains("would move the row"), "{}", e.message);
    assert!(check(
        "INSERT INTO orders (user_id, note) VALUES (1, 'a') ON DUPLICATE KEY UPDATE note = 'b'"
    )
    .is_ok());
}

#[test]
fn the_id_column_must_hold_the_generators_ids() {
    let r = single();
    assert!(insert::check_id_type(&r, "snowflake", &meta(), "orders").is_ok());
    let mut small = single();
    small.id_column = "user_id".into();
    let e = insert::check_id_type(&small, "snowflake", &meta(), "orders").unwrap_err();
    assert!(e.message.contains("make it BIGINT"), "{}", e.message);
    assert!(insert::check_id_type(&small, "segment", &meta(), "orders").is_ok());
    let mut missing = single();
    missing.id_column = "nope".into();
    let e = insert::check_id_type(&missing, "snowflake", &meta(), "orders").unwrap_err();
    assert_eq!((e.code, &e.state), (1054, b"42S22"));
}
