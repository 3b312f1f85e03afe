//! SHOW, DESCRIBE and information_schema statements about a sharded table whose shards do not
//! include the default backend answer as if the table were one table on the default backend.

mod common;

use mysql::prelude::Queryable;

const TABLES: &str = "generators:
  seq:
    kind: segment
    step: 100
tables:
  orders:
    generator: seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

#[test]
fn metadata_of_tables_placed_away_from_the_default_backend() {
    let dbs = [common::start_db(), common::start_db(), common::start_db()];
    let g = common::Idgate::start_with(|port| {
        common::idgate_proc::config_for(
            port,
            &[("main", &dbs[0]), ("shard0", &dbs[1]), ("shard1", &dbs[2])],
            TABLES,
        )
    });
    let mut c = g.conn();
    c.query_drop("CREATE TABLE notes (id INT PRIMARY KEY, body TEXT)")
        .unwrap();
    c.query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20), KEY (item))")
        .unwrap();
    c.query_drop("CREATE TABLE zebras (id INT PRIMARY KEY)")
        .unwrap();
    c.query_drop("INSERT INTO orders (item) VALUES ('a'), ('b')")
        .unwrap();
    // The reference: the same tables side by side on one server.
    let mut r = common::direct(&dbs[1]);
    r.query_drop("CREATE DATABASE ref").unwrap();
    for t in [
        "notes (id INT PRIMARY KEY, body TEXT)",
        "orders (id BIGINT PRIMARY KEY, item VARCHAR(20), KEY (item))",
        "zebras (id INT PRIMARY KEY)",
    ] {
        r.query_drop(format!("CREATE TABLE ref.{t}")).unwrap();
    }

    let tables: Vec<String> = c.query("SHOW TABLES").unwrap();
    let want: Vec<String> = r.query("SHOW TABLES FROM ref").unwrap();
    assert_eq!(tables, want);
    assert_eq!(tables, ["notes", "orders", "zebras"]);
    let full: Vec<(String, String)> = c.query("SHOW FULL TABLES LIKE 'o%'").unwrap();
    assert_eq!(full, [("orders".to_string(), "BASE TABLE".to_string())]);
    let status: Vec<mysql::Row> = c.query("SHOW TABLE STATUS").unwrap();
    assert_eq!(status.len(), 3);

    let (name, create): (String, String) =
        c.query_first("SHOW CREATE TABLE orders").unwrap().unwrap();
    let (_, want): (String, String) = r
        .query_first("SHOW CREATE TABLE ref.orders")
        .unwrap()
        .unwrap();
    assert_eq!((name.as_str(), create.as_str()), ("orders", want.as_str()));
    for (through, direct) in [
        ("DESCRIBE orders", "DESCRIBE ref.orders"),
        ("SHOW COLUMNS FROM `orders`", "SHOW COLUMNS FROM ref.orders"),
    ] {
        let a: Vec<(String, String)> = c
            .query_map(through, |row: mysql::Row| {
                (row.get(0).unwrap(), row.get(1).unwrap())
            })
            .unwrap();
        let b: Vec<(String, String)> = r
            .query_map(direct, |row: mysql::Row| {
                (row.get(0).unwrap(), row.get(1).unwrap())
            })
            .unwrap();
        assert_eq!(a, b, "{through}");
    }
    let idx: Vec<mysql::Row> = c.query("SHOW INDEX FROM orders").unwrap();
    assert_eq!(idx.len(), 2);
    let cols: Vec<String> = c
        .query(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = 'orders' ORDER BY ORDINAL_POSITION",
        )
        .unwrap();
    assert_eq!(cols, ["id", "item"]);
    let plan: Vec<mysql::Row> = c
        .query("EXPLAIN SELECT * FROM orders WHERE item = 'a'")
        .unwrap();
    assert!(!plan.is_empty());
    // Tables of the default backend still answer from it.
    let notes: Vec<(String, String)> = c
        .query_map("DESCRIBE notes", |row: mysql::Row| {
            (row.get(0).unwrap(), row.get(1).unwrap())
        })
        .unwrap();
    assert_eq!(notes[1], ("body".to_string(), "text".to_string()));
    // And the default backend really does not hold the sharded table.
    let n: u64 = common::direct(&dbs[0])
        .query_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = 'orders'")
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
}
