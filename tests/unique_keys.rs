//! Unique keys of sharded tables: a key that does not contain what picks the shard is checked
//! by each shard for its own rows only, so duplicates across shards would pass silently
//! (INSERT IGNORE storing twice, ON DUPLICATE KEY UPDATE inserting). idgate refuses to start
//! with such a key, and refuses DDL creating one, unless the table's rule says
//! `unique: per_shard`; keys that contain the sharding column, or the generated id, are fine.

mod common;

use common::{idgate_proc, Idgate};
use mysql::prelude::Queryable;

fn sharded(table: &str, by: &str, extra: &str) -> String {
    format!(
        "generators:\n  seq:\n    kind: segment\n    step: 100\ntables:\n  {table}:\n    \
         generator: seq\n{extra}    sharding:\n      columns: [{by}]\n      algorithm: mod\n      \
         shards: [shard0, shard1]\n"
    )
}

const FRIENDS: &str = "CREATE TABLE author_friends (id BIGINT PRIMARY KEY, from_author_id INT, \
                       to_author_id INT, UNIQUE KEY pair (from_author_id, to_author_id))";

#[test]
fn a_table_whose_unique_key_would_hold_per_shard_only_keeps_idgate_from_starting() {
    let dbs = [common::start_db(), common::start_db()];
    for db in &dbs {
        common::direct(db).query_drop(FRIENDS).unwrap();
    }
    let backends = [("shard0", &dbs[0]), ("shard1", &dbs[1])];
    let said = idgate_proc::refused_start(&backends, &sharded("author_friends", "id", ""));
    assert!(
        said.contains("unique key `pair` (from_author_id, to_author_id)")
            && said.contains("under tables.author_friends either `unique: global`")
            && said.contains("or `unique: per_shard`"),
        "{said}"
    );
    // Accepted knowingly, it starts.
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &backends,
            &sharded("author_friends", "id", "    unique: per_shard\n"),
        )
    });
    g.conn()
        .query_drop("INSERT INTO author_friends (from_author_id, to_author_id) VALUES (1, 2)")
        .unwrap();
}

#[test]
fn keys_with_the_sharding_column_or_the_generated_id_hold_across_shards() {
    let dbs = [common::start_db(), common::start_db()];
    for db in &dbs {
        common::direct(db)
            .query_drop(
                "CREATE TABLE accounts (id BIGINT PRIMARY KEY, user_id INT, email VARCHAR(40), \
                 UNIQUE KEY (user_id, email))",
            )
            .unwrap();
    }
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            &sharded("accounts", "user_id", ""),
        )
    });
    let mut c = g.conn();
    c.query_drop("INSERT INTO accounts (user_id, email) VALUES (7, 'a@x')")
        .unwrap();
    // The duplicate meets the first row on its shard: MariaDB's own 1062.
    match c.query_drop("INSERT INTO accounts (user_id, email) VALUES (7, 'a@x')") {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1062, "{}", e.message),
        other => panic!("{other:?}"),
    }
}

#[test]
fn ddl_creating_a_per_shard_unique_key_is_refused_through_idgate() {
    let ts = common::two_shards(&sharded("tags", "id", ""), &[]);
    let mut c = ts.g.conn();
    let refused = |c: &mut mysql::Conn, sql: &str| match c.query_drop(sql) {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!(e.code, 1235, "{sql}: {}", e.message);
            assert!(e.message.contains("unique: per_shard"), "{}", e.message);
        }
        other => panic!("{sql}: {other:?}"),
    };
    refused(
        &mut c,
        "CREATE TABLE tags (id BIGINT PRIMARY KEY, name VARCHAR(20), UNIQUE KEY (name))",
    );
    refused(
        &mut c,
        "CREATE TABLE tags (id BIGINT PRIMARY KEY, name VARCHAR(20) UNIQUE)",
    );
    for db in &ts.dbs {
        let n: u64 = common::direct(db)
            .query_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = 'tags'")
            .unwrap()
            .unwrap();
        assert_eq!(n, 0, "a refused CREATE TABLE left a table behind");
    }
    c.query_drop(
        "CREATE TABLE tags (id BIGINT PRIMARY KEY, name VARCHAR(20), UNIQUE KEY (id, name))",
    )
    .unwrap();
    refused(&mut c, "ALTER TABLE tags ADD UNIQUE KEY by_name (name)");
    refused(&mut c, "CREATE UNIQUE INDEX by_name ON tags (name)");
    c.query_drop("CREATE INDEX by_name ON tags (name)").unwrap();
}
