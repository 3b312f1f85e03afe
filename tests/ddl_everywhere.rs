//! DDL over two shards answers as one MariaDB would: CREATE/ALTER/DROP DATABASE reach every
//! backend (the client sees one OK with one server's counts and warnings, or the error one
//! server gives, the other backends untouched); table rules are matched by the schema the
//! statement or the session names; foreign keys the shards cannot hold are refused with 1235,
//! colocated ones are created on every shard. A third server is the reference.

mod common;

use mysql::prelude::Queryable;

const TABLES: &str = "tables:
  orders:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  items:
    unique: per_shard
    sharding:
      columns: [order_id]
      algorithm: mod
      shards: [shard0, shard1]
  away:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard1]
  countries:
    broadcast: true
  otherdb.events:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

/// What a statement answers: OK (affected rows, warnings) or the error code.
fn answer(c: &mut mysql::Conn, sql: &str) -> Result<(u64, u16), u16> {
    match c.query_drop(sql) {
        Ok(()) => Ok((c.affected_rows(), c.warnings())),
        Err(mysql::Error::MySqlError(e)) => Err(e.code),
        Err(e) => panic!("{sql}: {e}"),
    }
}

fn has_database(c: &mut mysql::Conn, name: &str) -> bool {
    let n: Option<String> = c
        .exec_first(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
            (name,),
        )
        .unwrap();
    n.is_some()
}

fn has_table(c: &mut mysql::Conn, schema: &str, table: &str) -> bool {
    let n: Option<String> = c
        .exec_first(
            "SELECT TABLE_NAME FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
            (schema, table),
        )
        .unwrap();
    n.is_some()
}

#[test]
fn databases_are_created_altered_and_dropped_on_every_backend_as_on_one_server() {
    let s = common::two_shards(TABLES, &[]);
    let reference_db = common::start_db();
    let mut r = common::direct(&reference_db);
    let mut c = s.g.conn();
    let mut shards = [common::direct(&s.dbs[0]), common::direct(&s.dbs[1])];

    // The same statements, the same answers.
    for sql in [
        "CREATE DATABASE shop2",
        "CREATE DATABASE shop2",
        "CREATE DATABASE IF NOT EXISTS shop2",
        "CREATE SCHEMA IF NOT EXISTS shop3 CHARACTER SET latin1",
        "ALTER DATABASE shop3 CHARACTER SET utf8mb4",
        "DROP SCHEMA shop3",
        "DROP DATABASE shop3",
        "DROP DATABASE IF EXISTS shop3",
    ] {
        assert_eq!(answer(&mut c, sql), answer(&mut r, sql), "{sql}");
    }
    for sh in shards.iter_mut() {
        assert!(has_database(sh, "shop2"));
        assert!(!has_database(sh, "shop3"));
    }

    // EXPLAIN ROUTE shows the order: the default backend first, then the others.
    let rows: Vec<(String, String, String)> = c
        .query("EXPLAIN ROUTE DROP DATABASE IF EXISTS shop2")
        .unwrap();
    let backends: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(backends, ["shard0", "shard1"], "{rows:?}");
    assert!(rows[0].2.contains("first"), "{rows:?}");

    // Prepared (server-side), the same: every backend.
    c.exec_drop("CREATE DATABASE prepared_db", ()).unwrap();
    for sh in shards.iter_mut() {
        assert!(has_database(sh, "prepared_db"));
    }
    c.exec_drop("DROP DATABASE prepared_db", ()).unwrap();
    for sh in shards.iter_mut() {
        assert!(!has_database(sh, "prepared_db"));
    }

    // A database only a shard has (an earlier failure): CREATE makes it everywhere; only the
    // default backend has it: CREATE answers 1007 as that server does and touches no other.
    shards[1].query_drop("CREATE DATABASE partial").unwrap();
    assert_eq!(answer(&mut c, "CREATE DATABASE partial"), Ok((1, 0)));
    assert!(has_database(&mut shards[0], "partial"));
    shards[0].query_drop("CREATE DATABASE onlydefault").unwrap();
    assert_eq!(answer(&mut c, "CREATE DATABASE onlydefault"), Err(1007));
    assert!(!has_database(&mut shards[1], "onlydefault"));
    assert_eq!(
        answer(&mut c, "CREATE DATABASE IF NOT EXISTS onlydefault"),
        Ok((0, 1))
    );
    assert!(has_database(&mut shards[1], "onlydefault"));
    let warning: (String, u16, String) = c.query_first("SHOW WARNINGS").unwrap().unwrap();
    assert_eq!(warning.1, 1007, "{warning:?}");

    // Another backend fails after the default one ran it (a stray file keeps its directory):
    // its error, named, with what completes it; that completes it.
    c.query_drop("CREATE DATABASE blocked").unwrap();
    let stray = s.dbs[1].dir.join("data").join("blocked").join("stray.txt");
    std::fs::write(&stray, b"x").unwrap();
    match c.query_drop("DROP DATABASE blocked") {
        Err(mysql::Error::MySqlError(e)) => assert!(
            e.message.contains("on backend `shard1`") && e.message.contains("IF EXISTS"),
            "{}",
            e.message
        ),
        other => panic!("{other:?}"),
    }
    assert!(!has_database(&mut shards[0], "blocked"));
    std::fs::remove_file(&stray).unwrap();
    assert_eq!(
        answer(&mut c, "DROP DATABASE IF EXISTS blocked"),
        Ok((0, 1))
    );
    assert!(!has_database(&mut shards[1], "blocked"));

    // Tables in the new database, each where its rule puts it; ALTER reaches every backend.
    c.query_drop("USE shop2").unwrap();
    r.query_drop("CREATE DATABASE IF NOT EXISTS shop2").unwrap();
    r.query_drop("USE shop2").unwrap();
    for sql in [
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, v INT)",
        "CREATE TABLE notes (id INT PRIMARY KEY)",
        "CREATE TABLE away (id INT PRIMARY KEY)",
        "INSERT INTO orders VALUES (1, 10), (2, 20), (3, 30)",
        "ALTER DATABASE shop2 CHARACTER SET latin1",
    ] {
        assert_eq!(answer(&mut c, sql), answer(&mut r, sql), "{sql}");
    }
    let sum: i64 = c.query_first("SELECT SUM(v) FROM orders").unwrap().unwrap();
    assert_eq!(sum, 60);
    assert!(!has_table(&mut shards[0], "shop2", "away"));
    assert!(has_table(&mut shards[1], "shop2", "away"));
    assert!(!has_table(&mut shards[1], "shop2", "notes"));
    for sh in shards.iter_mut() {
        let cs: String = sh
            .query_first(
                "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA \
                 WHERE SCHEMA_NAME = 'shop2'",
            )
            .unwrap()
            .unwrap();
        assert_eq!(cs, "latin1");
    }

    // DROP counts every table once, as one server holding them all (orders, notes, away).
    let dropped = answer(&mut c, "DROP DATABASE shop2");
    assert_eq!(dropped, answer(&mut r, "DROP DATABASE shop2"));
    assert_eq!(dropped, Ok((3, 0)));
    for sh in shards.iter_mut() {
        assert!(!has_database(sh, "shop2"));
    }
    // The session's database went with it, as on MariaDB.
    let db: Option<String> = c.query_first("SELECT DATABASE()").unwrap().unwrap();
    let want: Option<String> = r.query_first("SELECT DATABASE()").unwrap().unwrap();
    assert_eq!((db.clone(), want), (None, None));
    assert_eq!(
        answer(&mut c, "CREATE DATABASE shop2"),
        answer(&mut r, "CREATE DATABASE shop2")
    );
    assert_eq!(
        answer(&mut c, "DROP DATABASE shop2"),
        answer(&mut r, "DROP DATABASE shop2")
    );
}

#[test]
fn table_rules_follow_the_schema_and_foreign_keys_hold_only_where_shards_can_keep_them() {
    let s = common::two_shards(TABLES, &[]);
    let mut c = s.g.conn();
    let mut shards = [common::direct(&s.dbs[0]), common::direct(&s.dbs[1])];
    c.query_drop("CREATE DATABASE otherdb").unwrap();
    c.query_drop("CREATE DATABASE mydb").unwrap();

    // `otherdb.events` is sharded; `events` of another database is not.
    c.query_drop("USE mydb").unwrap();
    c.query_drop("CREATE TABLE events (id INT PRIMARY KEY)")
        .unwrap();
    assert!(has_table(&mut shards[0], "mydb", "events"));
    assert!(!has_table(&mut shards[1], "mydb", "events"));
    c.query_drop("CREATE TABLE otherdb.events (id INT PRIMARY KEY)")
        .unwrap();
    for sh in shards.iter_mut() {
        assert!(has_table(sh, "otherdb", "events"));
    }

    // Colocated by the same key: the foreign key is on every shard and holds there.
    for sql in [
        "CREATE TABLE orders (id BIGINT PRIMARY KEY)",
        "CREATE TABLE countries (id INT PRIMARY KEY)",
        "CREATE TABLE items (iid INT PRIMARY KEY, order_id BIGINT, KEY (order_id))",
        "ALTER TABLE items ADD FOREIGN KEY (order_id) REFERENCES orders (id)",
        "ALTER TABLE orders ADD COLUMN country INT, ADD FOREIGN KEY (country) REFERENCES countries (id)",
        "CREATE TABLE notes (id INT PRIMARY KEY, order_id BIGINT)",
        "INSERT INTO orders (id) VALUES (1), (2)",
    ] {
        c.query_drop(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    for sh in shards.iter_mut() {
        let keys: u64 = sh
            .query_first(
                "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS \
                 WHERE CONSTRAINT_SCHEMA = 'mydb'",
            )
            .unwrap()
            .unwrap();
        assert_eq!(keys, 2);
    }
    c.query_drop("INSERT INTO items VALUES (1, 1), (2, 2)")
        .unwrap();
    let code = match c.query_drop("INSERT INTO items VALUES (3, 5)") {
        Err(mysql::Error::MySqlError(e)) => e.code,
        other => panic!("a dangling item: {other:?}"),
    };
    assert_eq!(code, 1452);

    // Not kept together: refused with what to do, nothing created anywhere.
    for sql in [
        "ALTER TABLE notes ADD FOREIGN KEY (order_id) REFERENCES orders (id)",
        "CREATE TABLE lines (id INT PRIMARY KEY, order_id BIGINT REFERENCES orders (id))",
        "ALTER TABLE items ADD FOREIGN KEY (iid) REFERENCES orders (id)",
        "ALTER TABLE orders ADD FOREIGN KEY (id) REFERENCES notes (id)",
    ] {
        match c.query_drop(sql) {
            Err(mysql::Error::MySqlError(e)) => {
                assert_eq!(e.code, 1235, "{sql}: {}", e.message);
                assert!(e.message.contains("Vitess"), "{sql}: {}", e.message);
            }
            other => panic!("{sql}: {other:?}"),
        }
    }
    // A copy made by each backend from its own rows would hold one shard's rows: refused.
    match c.query_drop("CREATE TABLE order_copy AS SELECT * FROM orders") {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!(e.code, 1235, "{}", e.message);
            assert!(e.message.contains("INSERT … SELECT"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    assert!(!has_table(&mut shards[0], "mydb", "order_copy"));

    // One DROP over tables placed differently would fail half-way: refused, both kept.
    match c.query_drop("DROP TABLE IF EXISTS items, notes") {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1235, "{}", e.message),
        other => panic!("{other:?}"),
    }
    assert!(has_table(&mut shards[0], "mydb", "notes"));
    assert!(has_table(&mut shards[1], "mydb", "items"));
    for sh in shards.iter_mut() {
        assert!(!has_table(sh, "mydb", "lines"));
        let keys: u64 = sh
            .query_first(
                "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS \
                 WHERE CONSTRAINT_SCHEMA = 'mydb'",
            )
            .unwrap()
            .unwrap();
        assert_eq!(keys, 2);
    }
}
