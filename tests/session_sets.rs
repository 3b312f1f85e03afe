//! A session's SETs reach the other backend connections it holds or takes later only as far as
//! MariaDB keeps them: session variables follow it to every shard; `SET STATEMENT … FOR stmt`
//! runs `stmt` once, and `SET GLOBAL` / `SET PASSWORD` change the default backend once, never
//! again on a shard connection taken later.

mod common;

use mysql::prelude::Queryable;

#[test]
fn sets_reach_shards_as_far_as_mariadb_keeps_them() {
    let s = common::two_shards(
        common::ORDERS_MOD_2,
        &[
            "CREATE TABLE plain (v INT)",
            "SET GLOBAL max_connections = 500",
        ],
    );
    let mut c = s.g.conn();
    c.query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20), qty INT)")
        .unwrap();
    // Only the default backend's connection is held so far.
    c.query_drop("SET STATEMENT max_statement_time = 10 FOR INSERT INTO plain VALUES (1)")
        .unwrap();
    c.query_drop("SET GLOBAL max_connections = 321").unwrap();
    c.query_drop("SET SESSION sql_mode = 'PIPES_AS_CONCAT'")
        .unwrap();
    // A statement on both shards takes the second shard's connection, with the session's SETs.
    c.query_drop("INSERT INTO orders (item, qty) VALUES ('a' || 'b', 1), ('c' || 'd', 2)")
        .unwrap();
    let items: Vec<String> = c.query("SELECT item FROM orders ORDER BY item").unwrap();
    assert_eq!(
        items,
        ["ab", "cd"],
        "sql_mode followed the session to both shards"
    );
    let mut shard0 = common::direct(&s.dbs[0]);
    let mut shard1 = common::direct(&s.dbs[1]);
    let rows = |c: &mut mysql::Conn| -> u64 {
        c.query_first("SELECT COUNT(*) FROM plain")
            .unwrap()
            .unwrap()
    };
    assert_eq!(rows(&mut shard0), 1, "SET STATEMENT ran its INSERT once");
    assert_eq!(
        rows(&mut shard1),
        0,
        "and not again on the shard taken later"
    );
    let max = |c: &mut mysql::Conn| -> u64 {
        c.query_first("SELECT @@GLOBAL.max_connections")
            .unwrap()
            .unwrap()
    };
    assert_eq!(max(&mut shard0), 321);
    assert_eq!(
        max(&mut shard1),
        500,
        "SET GLOBAL is not replayed on a shard"
    );
    // Later SETs still reach every connection held.
    c.query_drop("SET SESSION sql_mode = ''").unwrap();
    c.query_drop("INSERT INTO orders (item, qty) VALUES ('x' || 'y', 3), ('z' || 'w', 4)")
        .unwrap();
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM orders WHERE item = '1'")
        .unwrap()
        .unwrap();
    assert_eq!(
        n, 0,
        "'x' || 'y' is 0 OR 0 without PIPES_AS_CONCAT, stored as '0'"
    );
    let zeros: u64 = c
        .query_first("SELECT COUNT(*) FROM orders WHERE item = '0'")
        .unwrap()
        .unwrap();
    assert_eq!(zeros, 2);
}
