//! The unique-id check of an ordered write against a fake cursor: the question asked of the one
//! backend, with the table's names quoted as literals, and each answer's meaning.

use super::fake_cursor::{block_on, FakeCursor};
use super::ordered_write_check::is_unique_by_itself;
use crate::route::{Tables, UniqueId};
use crate::wire::errors::SqlError;

fn question(schema: &str, table: &str, column: &str) -> String {
    format!(
        "s1: SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = {schema} \
         AND TABLE_NAME = {table} AND NON_UNIQUE = 0 GROUP BY INDEX_NAME HAVING COUNT(*) = 1 \
         AND MAX(COLUMN_NAME) = {column} AND MAX(SUB_PART) IS NULL"
    )
}

fn id(schema: Option<&str>, table: &str) -> UniqueId {
    UniqueId {
        backend: "s1".into(),
        schema: schema.map(String::from),
        table: table.into(),
        column: "id".into(),
    }
}

#[test]
fn a_key_of_the_id_alone_is_found_and_none_is_not() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    c.answer_ints(
        &question("'app'", "'orders'", "'id'"),
        "INDEX_NAME",
        &[Some(1)],
    );
    c.answer_ints(&question("'app'", "'logs'", "'id'"), "INDEX_NAME", &[]);
    let found = block_on(is_unique_by_itself(&mut c, &id(Some("app"), "orders")));
    assert!(found.expect("goes on").expect("answered"));
    let found = block_on(is_unique_by_itself(&mut c, &id(Some("app"), "logs")));
    assert!(!found.expect("goes on").expect("answered"));
    // One row is enough to know: the fetch stops there.
    assert!(c.fetched.iter().all(|(_, l)| l.enough == Some(1)));
}

#[test]
fn names_are_literals_and_no_schema_means_the_session_database() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    c.answer_ints(
        &question("DATABASE()", "'it''s'", "'id'"),
        "INDEX_NAME",
        &[Some(1)],
    );
    let found = block_on(is_unique_by_itself(&mut c, &id(None, "it's")));
    assert!(found.expect("goes on").expect("answered"));
}

#[test]
fn the_backend_s_error_is_the_statement_s_answer() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let e = SqlError::new(1142, b"42000", "SELECT command denied");
    c.answer_error(&question("'app'", "'orders'", "'id'"), e);
    let got = block_on(is_unique_by_itself(&mut c, &id(Some("app"), "orders")));
    let e = got.expect("goes on").expect_err("the backend's error");
    assert_eq!(e.code, 1142);
}
