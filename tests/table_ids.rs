//! A generator never hands out an id at or below what a table it fills already holds: a segment
//! generator starts above the rows (and the AUTO_INCREMENT counter) of every backend holding the
//! table; a generator that cannot (a time-based one behind the table's ids) or whose ids do not
//! fit the id column's type keeps idgate from starting, with a message saying what to set.

mod common;

use common::{idgate_proc, Idgate};
use mysql::prelude::Queryable;

fn segment_on(table_yaml: &str) -> String {
    format!("generators:\n  seq:\n    kind: segment\n    step: 100\ntables:\n{table_yaml}")
}

#[test]
fn an_adopted_auto_increment_table_gets_ids_above_its_rows_and_counter() {
    let db = common::start_db();
    let mut c = common::direct(&db);
    c.query_drop("CREATE TABLE accounts (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .unwrap();
    for v in 0..50 {
        c.query_drop(format!("INSERT INTO accounts (v) VALUES ({v})"))
            .unwrap();
    }
    // The counter has handed out more than the rows show (rows deleted, a raised counter).
    c.query_drop("DELETE FROM accounts WHERE id > 40").unwrap();
    c.query_drop("ALTER TABLE accounts AUTO_INCREMENT = 777")
        .unwrap();
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &[("shard0", &db)],
            &segment_on("  accounts:\n    generator: seq\n"),
        )
    });
    let mut app = g.conn();
    app.query_drop("INSERT INTO accounts (v) VALUES (100), (101)")
        .unwrap();
    let first = app.last_insert_id();
    assert_eq!(
        first, 777,
        "the generator continues where AUTO_INCREMENT stopped"
    );
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM accounts")
        .unwrap()
        .unwrap();
    assert_eq!(n, 42);
    assert!(
        g.log().contains("the generator starts above them"),
        "{}",
        g.log()
    );
}

#[test]
fn a_sharded_table_gets_ids_above_the_highest_row_of_any_shard() {
    let dbs = [common::start_db(), common::start_db()];
    for (db, top) in dbs.iter().zip([300, 5000]) {
        let mut c = common::direct(db);
        c.query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, v INT)")
            .unwrap();
        c.query_drop(format!("INSERT INTO orders VALUES (2, 0), ({top}, 1)"))
            .unwrap();
    }
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            &segment_on(
                "  orders:\n    generator: seq\n    sharding:\n      columns: [id]\n      \
                 algorithm: mod\n      shards: [shard0, shard1]\n",
            ),
        )
    });
    let mut app = g.conn();
    for v in 0..20 {
        app.query_drop(format!("INSERT INTO orders (v) VALUES ({v})"))
            .unwrap();
        assert!(app.last_insert_id() > 5000, "{}", app.last_insert_id());
    }
}

#[test]
fn a_snowflake_behind_the_table_or_too_wide_for_its_column_refuses_to_start() {
    let db = common::start_db();
    let mut c = common::direct(&db);
    // Ids far above any snowflake id of today.
    c.query_drop("CREATE TABLE events (id BIGINT UNSIGNED PRIMARY KEY)")
        .unwrap();
    c.query_drop("INSERT INTO events VALUES (18000000000000000000)")
        .unwrap();
    let said = idgate_proc::refused_start(
        &[("shard0", &db)],
        "generators:\n  flake:\n    kind: snowflake\n    worker_id: 3\n\
         tables:\n  events:\n    generator: flake\n",
    );
    assert!(
        said.contains("generator `flake` (snowflake) would hand out ids at or below what")
            && said.contains("18000000000000000000"),
        "{said}"
    );

    // A snowflake's ids never fit an INT key.
    c.query_drop("CREATE TABLE small (id INT PRIMARY KEY)")
        .unwrap();
    let said = idgate_proc::refused_start(
        &[("shard0", &db)],
        "generators:\n  flake:\n    kind: snowflake\n    worker_id: 3\n\
         tables:\n  small:\n    generator: flake\n",
    );
    assert!(
        said.contains("does not fit column `id`") && said.contains("int(11), at most 2147483647"),
        "{said}"
    );

    // Nor does a segment past a SMALLINT's range.
    c.query_drop("CREATE TABLE tiny (id SMALLINT PRIMARY KEY)")
        .unwrap();
    c.query_drop("INSERT INTO tiny VALUES (32767)").unwrap();
    let said = idgate_proc::refused_start(
        &[("shard0", &db)],
        &segment_on("  tiny:\n    generator: seq\n"),
    );
    assert!(said.contains("does not fit column `id`"), "{said}");
}

/// The generator is the id column's AUTO_INCREMENT whatever the backend's column says: an
/// explicit 0 asks for an id in a plain `BIGINT` key as in an AUTO_INCREMENT one (VALUES and
/// INSERT … SELECT), and is stored only under NO_AUTO_VALUE_ON_ZERO.
#[test]
fn an_explicit_zero_asks_for_an_id_whatever_the_backend_column_is() {
    let db = common::start_db();
    let mut c = common::direct(&db);
    c.query_drop("CREATE TABLE plain (id BIGINT PRIMARY KEY, v VARCHAR(5))")
        .unwrap();
    c.query_drop("CREATE TABLE counted (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(5))")
        .unwrap();
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &[("shard0", &db)],
            &segment_on("  plain:\n    generator: seq\n  counted:\n    generator: seq\n"),
        )
    });
    let mut app = g.conn();
    let mut ids = Vec::new();
    for table in ["plain", "counted"] {
        for (sql, v) in [
            (
                format!("INSERT INTO {table} (id, v) VALUES (0, 'zero')"),
                "zero",
            ),
            (
                format!("INSERT INTO {table} (id, v) VALUES (0, 'again')"),
                "again",
            ),
            (
                format!("INSERT INTO {table} (id, v) SELECT 0, 'sel'"),
                "sel",
            ),
        ] {
            app.query_drop(&sql).unwrap();
            let id = app.last_insert_id();
            assert!(id > 0, "{sql}: insert id {id}");
            let stored: Option<String> = c
                .query_first(format!("SELECT v FROM {table} WHERE id = {id}"))
                .unwrap();
            assert_eq!(stored.as_deref(), Some(v), "{sql}");
            ids.push(id);
        }
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6, "every 0 got an id of its own: {ids:?}");
    // NO_AUTO_VALUE_ON_ZERO: 0 is a value, and a second one a duplicate.
    app.query_drop("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
        .unwrap();
    app.query_drop("INSERT INTO plain (id, v) VALUES (0, 'kept')")
        .unwrap();
    assert_eq!(app.last_insert_id(), 0);
    match app.query_drop("INSERT INTO plain (id, v) VALUES (0, 'dup')") {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1062, "{e}"),
        other => panic!("a second 0 under NO_AUTO_VALUE_ON_ZERO: {other:?}"),
    }
    let kept: Option<String> = c.query_first("SELECT v FROM plain WHERE id = 0").unwrap();
    assert_eq!(kept.as_deref(), Some("kept"));
}
