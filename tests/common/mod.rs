//! Shared test support: real MariaDB servers and idgate processes started by the tests themselves.
#![allow(dead_code, unused_imports)]

pub mod answers;
pub mod clients;
pub mod fake_auth;
pub mod fault_relay;
pub mod history;
pub mod idgate_proc;
pub mod join_rows;
pub mod migration;
pub mod prometheus;
pub mod raw;
pub mod relay;
pub mod replication;
pub mod rng;
pub mod scenario;
pub mod writers;

use std::sync::OnceLock;

#[allow(unused_imports)]
pub use idgate::testbed::mariadb::{free_port, DATABASE, PASSWORD, USER};
pub use idgate::testbed::MariaDb;
pub use idgate_proc::Idgate;

/// Starts a private MariaDB server, for a test that will kill or restart it.
pub fn start_db() -> MariaDb {
    MariaDb::start().unwrap_or_else(|e| panic!("{e}"))
}

/// One MariaDB server shared by all tests of a test binary.
pub fn shared_db() -> &'static MariaDb {
    static DB: OnceLock<MariaDb> = OnceLock::new();
    DB.get_or_init(start_db)
}

/// A direct (no idgate) connection to `db`'s test database.
pub fn direct(db: &MariaDb) -> mysql::Conn {
    mysql::Conn::new(mysql::Opts::from_url(&db.url()).expect("url")).expect("direct connection")
}

/// Tables for two-shard tests: `orders` sharded by a segment-generated id mod 2 over `shard0` and
/// `shard1`, `countries` on both (broadcast).
pub const ORDERS_MOD_2: &str = "generators:
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
  countries:
    broadcast: true
";

/// Two fresh MariaDB shards (`shard0`, `shard1`; `ddl` run on both directly) and idgate in
/// front of them with `tables_yaml` appended to its config.
pub struct TwoShards {
    pub dbs: Vec<MariaDb>,
    pub g: Idgate,
}

/// Three fresh MariaDB servers (`shard0`, the default backend, `shard1`, `shard2`) and idgate in
/// front of them with `tables_yaml` appended to its config.
pub fn three_shards(tables_yaml: &str) -> (Vec<MariaDb>, Idgate) {
    let dbs = vec![start_db(), start_db(), start_db()];
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &[
                ("shard0", &dbs[0]),
                ("shard1", &dbs[1]),
                ("shard2", &dbs[2]),
            ],
            tables_yaml,
        )
    });
    (dbs, g)
}

pub fn two_shards(tables_yaml: &str, ddl: &[&str]) -> TwoShards {
    use mysql::prelude::Queryable;
    let dbs = vec![start_db(), start_db()];
    for db in &dbs {
        let mut c = direct(db);
        for sql in ddl {
            c.query_drop(*sql).unwrap();
        }
    }
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            tables_yaml,
        )
    });
    TwoShards { dbs, g }
}
