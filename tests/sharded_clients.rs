//! Real applications doing CRUD on a sharded schema: MariaDB Connector/J and the SQLAlchemy 2 ORM
//! create, read, update and delete users (sharded by id) and their orders (sharded by user_id),
//! in and out of transactions.
//!
//! Differential: each program runs once against one MariaDB directly, with AUTO_INCREMENT ids, and
//! once through idgate over two shards with ids from segment generators starting at 1; the
//! transcripts must be identical. Then every row is checked to sit on the shard that owns it.

mod common;

use common::clients::*;

use std::process::Command;
use std::time::Duration;

use common::idgate_proc::config_for;
use common::{Idgate, MariaDb};
use mysql::prelude::Queryable;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);

fn ddl(auto_increment: bool) -> [String; 2] {
    let ai = if auto_increment {
        " AUTO_INCREMENT"
    } else {
        ""
    };
    [
        format!(
            "CREATE TABLE sh_users (id BIGINT{ai} PRIMARY KEY, name VARCHAR(40) NOT NULL, score INT)"
        ),
        format!(
            "CREATE TABLE sh_orders (id BIGINT{ai} PRIMARY KEY, user_id BIGINT NOT NULL, \
             amount DECIMAL(10,2), note VARCHAR(40), KEY (user_id))"
        ),
    ]
}

struct Setup {
    direct: MariaDb,
    shards: Vec<MariaDb>,
    g: Idgate,
}

/// A direct server with AUTO_INCREMENT tables, two shards with plain ones and idgate over them.
fn setup(tag: &str) -> Setup {
    let direct = common::start_db();
    let shards = vec![common::start_db(), common::start_db()];
    for (db, ai) in [(&direct, true), (&shards[0], false), (&shards[1], false)] {
        let mut c = common::direct(db);
        for sql in ddl(ai) {
            c.query_drop(sql).unwrap();
        }
    }
    let pid = std::process::id();
    let yaml = format!(
        "generators:
  user_ids:
    kind: segment
    tag: {tag}_users_{pid}
    start: 1
    step: 1000
  order_ids:
    kind: segment
    tag: {tag}_orders_{pid}
    start: 1
    step: 1000
tables:
  sh_users:
    generator: user_ids
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  sh_orders:
    generator: order_ids
    sharding:
      columns: [user_id]
      algorithm: mod
      shards: [shard0, shard1]
"
    );
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &shards[0]), ("shard1", &shards[1])],
            &yaml,
        )
    });
    Setup { direct, shards, g }
}

/// Every row on the shard its sharding value maps to, and the union equal to the direct server's.
fn assert_placed(s: &Setup) {
    for (table, key, cols) in [
        ("sh_users", "id", "id, name, score"),
        ("sh_orders", "user_id", "id, user_id, amount, note"),
    ] {
        let mut union: Vec<(u64, String)> = Vec::new();
        for (i, db) in s.shards.iter().enumerate() {
            let rows: Vec<(u64, u64, String)> = common::direct(db)
                .query(format!(
                    "SELECT id, {key}, CONCAT_WS('|', {cols}) FROM {table}"
                ))
                .unwrap();
            for (id, k, all) in rows {
                assert_eq!(k % 2, i as u64, "{table} row {id} on shard{i}");
                union.push((id, all));
            }
        }
        union.sort();
        let want: Vec<(u64, String)> = common::direct(&s.direct)
            .query(format!(
                "SELECT id, CONCAT_WS('|', {cols}) FROM {table} ORDER BY id"
            ))
            .unwrap();
        assert_eq!(
            union, want,
            "{table} through idgate holds what the direct server holds"
        );
    }
}

#[test]
fn jdbc_crud_over_shards() {
    let (java, classpath) = compile_java("JdbcSharded.java");
    let s = setup("jdbc");
    let t = differential(
        "sharded_clients",
        "jdbc_sharded",
        &s.direct,
        &s.g,
        CLIENT_TIMEOUT,
        |t| {
            let mut cmd = Command::new(&java);
            cmd.arg("-Dfile.encoding=UTF-8")
                .arg("-cp")
                .arg(&classpath)
                .arg("JdbcSharded");
            client_args(&mut cmd, t);
            cmd
        },
    );
    assert_has(&t, "client-prep user ids: [1, 2, 3, 4, 5, 6]");
    assert_has(&t, "tx committed ids: [9, 10]");
    assert_has(&t, "done");
    assert_placed(&s);
}

#[test]
fn sqlalchemy_orm_crud_over_shards() {
    let python = require_tool("python3", "python3");
    require_python_modules("pymysql, sqlalchemy", "pymysql sqlalchemy");
    let s = setup("orm");
    let t = differential(
        "sharded_clients",
        "py_sharded",
        &s.direct,
        &s.g,
        CLIENT_TIMEOUT,
        |t| {
            let mut cmd = Command::new(&python);
            cmd.arg(source_dir().join("py_sharded.py"));
            client_args(&mut cmd, t);
            cmd
        },
    );
    assert_has(&t, "created users [1, 2, 3, 4, 5, 6, 7, 8]");
    assert_has(&t, "done");
    assert_placed(&s);
}
