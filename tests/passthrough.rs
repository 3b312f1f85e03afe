//! Statements through idgate behave as on a direct connection to the same MariaDB.

mod common;

use mysql::prelude::Queryable;

#[test]
fn select_insert_and_session_state() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let mut c = g.conn();
    let v: String = c.query_first("SELECT VERSION()").unwrap().unwrap();
    assert!(v.contains("MariaDB"), "{v}");
    c.query_drop(
        "CREATE TABLE IF NOT EXISTS t_pass (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))",
    )
    .unwrap();
    c.query_drop("INSERT INTO t_pass (v) VALUES ('a'),('b')")
        .unwrap();
    assert_eq!(c.affected_rows(), 2);
    let first = c.last_insert_id();
    let lid: u64 = c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
    assert_eq!(lid, first);
    c.query_drop("SET @x = 42").unwrap();
    let x: i64 = c.query_first("SELECT @x").unwrap().unwrap();
    assert_eq!(x, 42);
    let stmt = c.prep("SELECT v FROM t_pass WHERE id = ?").unwrap();
    let got: Option<String> = c.exec_first(&stmt, (first,)).unwrap();
    assert_eq!(got.as_deref(), Some("a"));
    let err = c.query_drop("SELECT * FROM no_such_table").unwrap_err();
    match err {
        mysql::Error::MySqlError(e) => assert_eq!(e.code, 1146),
        other => panic!("{other}"),
    }
}
