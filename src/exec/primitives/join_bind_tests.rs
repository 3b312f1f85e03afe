//! Binding a gateway join against a fake cursor: which rows it fetches in which order, the
//! statement it gives back, and its limits told as the join's.

use super::fake_cursor::{block_on, FakeCursor};
use super::join_bind::bind_join;
use super::GatewayLimits;
use crate::exec::Cursor;
use crate::route::test_rules::{rule, sharded};
use crate::route::{self, Plan, Tables};
use crate::wire::errors::SqlError;

const STMT: &str = "SELECT u.name, o.total FROM users u JOIN orders o ON o.user_id = u.id \
                    WHERE u.id IN (1, 2)";

fn cursor() -> FakeCursor {
    FakeCursor::new(Tables::new(vec![
        rule("users", None, sharded("id", &["s0", "s1"])),
        rule("orders", None, sharded("id", &["s0", "s1"])),
    ]))
}

fn bind(c: &mut FakeCursor, stmt: &str, max_rows: u64) -> Result<String, SqlError> {
    let refusal = c
        .route(stmt.as_bytes())
        .expect_err("not one backend's join");
    let Some(Plan::Join(shape)) = c.plan(|ctx| route::join_plan(stmt.as_bytes(), &refusal, ctx))
    else {
        panic!("no gateway join for {stmt}");
    };
    let limits = GatewayLimits {
        max_rows,
        max_bytes: 1 << 20,
    };
    block_on(bind_join(c, stmt.as_bytes(), &shape, limits))
        .expect("the session goes on")
        .map(|b| String::from_utf8(b).expect("utf-8"))
}

#[test]
fn the_driver_is_fetched_first_and_the_other_table_by_its_distinct_keys() {
    let mut c = cursor();
    c.answer_ints(
        "SELECT * FROM users AS `u` WHERE (u.id IN (1, 2))",
        "id",
        &[Some(1), Some(2)],
    );
    c.answer_ints(
        "SELECT * FROM orders AS `o` WHERE (`o`.`user_id` IN (1,2))",
        "user_id",
        &[Some(1), Some(1), Some(2)],
    );
    let got = bind(&mut c, STMT, 10).expect("bound");
    let fetched: Vec<&str> = c.fetched.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        fetched,
        [
            "SELECT * FROM users AS `u` WHERE (u.id IN (1, 2))",
            "SELECT * FROM orders AS `o` WHERE (`o`.`user_id` IN (1,2))"
        ]
    );
    // Each table is now a literal table of its rows, under the client's names for it.
    assert_eq!(
        got,
        "SELECT u.name, o.total FROM (SELECT CAST(1 AS SIGNED) AS `id` UNION ALL VALUES (2)) u \
         JOIN (SELECT CAST(1 AS SIGNED) AS `user_id` UNION ALL VALUES (1),(2)) o \
         ON o.user_id = u.id WHERE u.id IN (1, 2)"
    );
}

#[test]
fn row_caps_are_told_as_the_joins_with_the_table_to_narrow() {
    let mut c = cursor();
    c.answer_error(
        "SELECT * FROM users AS `u` WHERE (u.id IN (1, 2))",
        SqlError::new(
            crate::sql::ER_NOT_SUPPORTED_YET,
            b"42000",
            "the subquery over sharded tables gives more than max_subquery_rows (1) rows",
        ),
    );
    let e = bind(&mut c, STMT, 1).expect_err("over the cap");
    assert!(
        e.message.contains("the join of `users` and `orders`")
            && e.message.contains("max_subquery_rows (1) rows of `users`"),
        "{}",
        e.message
    );
}
