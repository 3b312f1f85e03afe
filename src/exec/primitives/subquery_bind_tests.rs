//! Subquery binding against a fake cursor: what it fetches, under which limits, and the
//! statement it gives back.

use super::fake_cursor::{block_on, FakeCursor};
use super::subquery_bind::bind_subqueries;
use super::GatewayLimits;
use crate::exec::Cursor;
use crate::route::test_rules::{rule, sharded};
use crate::route::{self, Tables};
use crate::wire::errors::SqlError;

const LIMITS: GatewayLimits = GatewayLimits {
    max_rows: 3,
    max_bytes: 1 << 20,
};

fn cursor() -> FakeCursor {
    FakeCursor::new(Tables::new(vec![
        rule("users", None, sharded("id", &["s0", "s1"])),
        rule("orders", None, sharded("id", &["s0", "s1"])),
    ]))
}

/// Binds `stmt`'s subqueries over placed tables as the session would.
fn bind(c: &mut FakeCursor, stmt: &str) -> Result<String, SqlError> {
    let subs = c
        .plan(|ctx| route::placed_subqueries(stmt.as_bytes(), ctx))
        .expect("the statement has subqueries over placed tables");
    let bound =
        block_on(bind_subqueries(c, stmt.as_bytes(), &subs, LIMITS)).expect("the session goes on");
    bound.map(|b| String::from_utf8(b).expect("utf-8"))
}

#[test]
fn an_in_list_and_exists_are_fetched_once_and_bound_as_literals() {
    let mut c = cursor();
    c.answer_ints(
        "SELECT id FROM orders WHERE total > 5",
        "id",
        &[Some(4), Some(9)],
    );
    c.answer_ints("SELECT 1 FROM orders WHERE user_id = 7", "1", &[Some(1)]);
    let got = bind(
        &mut c,
        "SELECT name FROM users WHERE id IN (SELECT id FROM orders WHERE total > 5) \
         AND EXISTS (SELECT 1 FROM orders WHERE user_id = 7)",
    )
    .expect("bound");
    assert_eq!(got, "SELECT name FROM users WHERE id IN (4,9) AND TRUE");
    assert_eq!(c.fetched.len(), 2);
    assert_eq!(c.fetched[0].1.max_rows, 3);
    assert_eq!(c.fetched[0].1.enough, None);
    // EXISTS needs one row and keeps no more.
    assert_eq!(c.fetched[1].1.enough, Some(1));
}

#[test]
fn union_members_of_an_in_list_are_fetched_one_by_one_within_the_row_cap() {
    let mut c = cursor();
    c.answer_ints(
        "SELECT id FROM orders WHERE a = 1",
        "id",
        &[Some(1), Some(2)],
    );
    c.answer_ints("SELECT id FROM orders WHERE b = 1", "id", &[Some(3)]);
    let got = bind(
        &mut c,
        "SELECT * FROM users WHERE id IN ((SELECT id FROM orders WHERE a = 1) UNION \
         (SELECT id FROM orders WHERE b = 1))",
    )
    .expect("bound");
    assert_eq!(got, "SELECT * FROM users WHERE id IN (1,2,3)");

    // Past max_subquery_rows over the members together: refused, saying which setting.
    c.answer_ints(
        "SELECT id FROM orders WHERE b = 1",
        "id",
        &[Some(3), Some(5)],
    );
    let e = bind(
        &mut c,
        "SELECT * FROM users WHERE id IN ((SELECT id FROM orders WHERE a = 1) UNION \
         (SELECT id FROM orders WHERE b = 1))",
    )
    .expect_err("over the cap");
    assert_eq!(e.code, crate::sql::ER_NOT_SUPPORTED_YET);
    assert!(e.message.contains("max_subquery_rows (3)"), "{}", e.message);
}

#[test]
fn a_scalar_subquery_of_two_rows_is_mariadbs_error() {
    let mut c = cursor();
    c.answer_ints(
        "SELECT id FROM orders WHERE a = 1",
        "id",
        &[Some(1), Some(2)],
    );
    let e = bind(
        &mut c,
        "SELECT * FROM users WHERE id = (SELECT id FROM orders WHERE a = 1)",
    )
    .expect_err("two rows");
    assert_eq!((e.code, &e.state), (1242, b"21000"));
}

#[test]
fn an_inner_query_naming_the_outer_one_is_refused_with_advice() {
    let mut c = cursor();
    c.answer_error(
        "SELECT id FROM orders o WHERE o.user_id = u.id",
        SqlError::new(1054, b"42S22", "Unknown column 'u.id' in 'WHERE'"),
    );
    let e = bind(
        &mut c,
        "SELECT * FROM users u WHERE u.id IN (SELECT id FROM orders o WHERE o.user_id = u.id)",
    )
    .expect_err("correlated");
    assert_eq!(e.code, crate::sql::ER_NOT_SUPPORTED_YET);
    assert!(
        e.message.contains("refers to `u` of the outer query"),
        "{}",
        e.message
    );
}

#[test]
fn limit_inside_in_is_refused_before_anything_runs() {
    let mut c = cursor();
    let e = bind(
        &mut c,
        "SELECT * FROM users WHERE id IN (SELECT id FROM orders ORDER BY id LIMIT 2)",
    )
    .expect_err("LIMIT inside IN");
    assert_eq!(e.code, crate::sql::ER_NOT_SUPPORTED_YET);
    assert!(c.fetched.is_empty());
}
