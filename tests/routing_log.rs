//! Point statements reach only the shard that owns the row, seen from each backend's own general
//! log: a statement tagged with a unique comment must appear on exactly the owning shard, and a
//! statement idgate cannot pin must appear on every shard.

mod common;

use mysql::prelude::Queryable;

const TABLES: &str = "generators:
  user_ids:
    kind: segment
    step: 100
  order_ids:
    kind: biased
    worker_id: 3
    slot_bits: 4
    bias_column: user_id
tables:
  users:
    id_column: user_id
    generator: user_ids
    sharding:
      columns: [user_id]
      algorithm: mod
      shards: [shard0, shard1]
  orders:
    generator: order_ids
    sharding:
      columns: [id, user_id]
      algorithm: slot
      shards: [shard0, shard1]
";

const DDL: &[&str] = &[
    "CREATE TABLE users (user_id BIGINT PRIMARY KEY, name VARCHAR(20))",
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT, item VARCHAR(20))",
    "SET GLOBAL log_output = 'TABLE'",
    "SET GLOBAL general_log = ON",
];

/// How many statements carrying `tag` each shard received (the lookup itself is left out).
fn seen(s: &common::TwoShards, tag: &str) -> Vec<u64> {
    s.dbs
        .iter()
        .map(|db| {
            let mut c = common::direct(db);
            c.query_first(format!(
                "SELECT COUNT(*) FROM mysql.general_log WHERE argument LIKE '%/* {tag} */%' \
                 AND argument NOT LIKE '%general_log%'"
            ))
            .unwrap()
            .unwrap()
        })
        .collect()
}

/// The shard index `user_id` lives on under `mod` (and, for orders, under `slot`).
fn shard_of(user_id: u64) -> usize {
    (user_id % 2) as usize
}

#[test]
fn point_statements_reach_only_the_owning_shard() {
    let s = common::two_shards(TABLES, DDL);
    let mut c = s.g.conn();
    c.query_drop("INSERT INTO users (name) VALUES ('a'), ('b'), ('c'), ('d')")
        .unwrap();
    let first = c.last_insert_id();
    let users: Vec<u64> = (first..first + 4).collect();
    for &u in &users {
        c.exec_drop(
            "INSERT INTO orders (user_id, item) VALUES (?, 'x'), (?, 'y')",
            (u, u),
        )
        .unwrap();
    }
    let mut n = 0;
    let mut expect_one = |c: &mut mysql::Conn, sql: String, owner: usize| {
        n += 1;
        let tag = format!("q{n}");
        let tagged = sql.replacen(' ', &format!(" /* {tag} */ "), 1);
        c.query_drop(&tagged).unwrap();
        let mut want = vec![0, 0];
        want[owner] = 1;
        assert_eq!(seen(&s, &tag), want, "{tagged}");
    };
    for &u in &users {
        let owner = shard_of(u);
        expect_one(
            &mut c,
            format!("SELECT * FROM users WHERE user_id = {u}"),
            owner,
        );
        expect_one(
            &mut c,
            format!("SELECT * FROM users WHERE user_id IN ({u}, {})", u + 2),
            owner,
        );
        expect_one(
            &mut c,
            format!(
                "SELECT name FROM users WHERE user_id = {u} OR user_id = {}",
                u + 4
            ),
            owner,
        );
        expect_one(
            &mut c,
            format!("UPDATE users SET name = 'z' WHERE user_id = {u}"),
            owner,
        );
        // Orders: by the bias column or by the order's own biased id, one shard either way.
        expect_one(
            &mut c,
            format!("SELECT id FROM orders WHERE user_id = {u}"),
            owner,
        );
        let ids: Vec<u64> = common::direct(&s.dbs[owner])
            .query(format!("SELECT id FROM orders WHERE user_id = {u}"))
            .unwrap();
        assert_eq!(ids.len(), 2, "both orders of user {u} on shard{owner}");
        for id in ids {
            expect_one(
                &mut c,
                format!("SELECT item FROM orders WHERE id = {id}"),
                owner,
            );
            expect_one(
                &mut c,
                format!("UPDATE orders SET item = 'w' WHERE id = {id}"),
                owner,
            );
        }
        expect_one(
            &mut c,
            format!("DELETE FROM orders WHERE user_id = {u} AND item = 'none'"),
            owner,
        );
    }
    // A prepared point lookup is routed by its parameter: only the owner prepares and runs it.
    let stmt = c
        .prep("SELECT /* prepared */ name FROM users WHERE user_id = ?")
        .unwrap();
    let u = users[1];
    let name: Option<String> = c.exec_first(&stmt, (u,)).unwrap();
    assert_eq!(name.as_deref(), Some("z"));
    let counts = seen(&s, "prepared");
    assert_eq!(
        counts[1 - shard_of(u)],
        0,
        "the other shard never saw it: {counts:?}"
    );
    assert!(counts[shard_of(u)] >= 1, "{counts:?}");

    // Unpinned statements reach every shard.
    c.query_drop("SELECT /* scan */ * FROM users WHERE name = 'a'")
        .unwrap();
    assert_eq!(seen(&s, "scan"), vec![1, 1]);
    c.query_drop(format!(
        "SELECT /* spread */ * FROM users WHERE user_id IN ({}, {})",
        users[0], users[1]
    ))
    .unwrap();
    assert_eq!(seen(&s, "spread"), vec![1, 1]);
    // A key that is not plainly an integer is compared by MariaDB's own conversion on every shard.
    let names: Vec<String> = c
        .query(format!(
            "SELECT /* loose */ name FROM users WHERE user_id = '{}abc'",
            users[2]
        ))
        .unwrap();
    assert_eq!(names, ["z"]);
    assert_eq!(seen(&s, "loose"), vec![1, 1]);
}
