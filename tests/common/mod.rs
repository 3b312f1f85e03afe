//! Shared test support: real MariaDB servers and idgate processes started by the tests themselves.
#![allow(dead_code)]

pub mod mariadb;
pub mod reaper;

use std::sync::OnceLock;

pub use mariadb::MariaDb;

/// One MariaDB server shared by all tests of a test binary.
pub fn shared_db() -> &'static MariaDb {
    static DB: OnceLock<MariaDb> = OnceLock::new();
    DB.get_or_init(MariaDb::start)
}
