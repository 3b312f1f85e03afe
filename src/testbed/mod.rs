//! Throwaway MariaDB servers that `idgate demo` and the test suite start for themselves.

pub mod galera;
pub mod mariadb;
pub mod reaper;

pub use mariadb::MariaDb;
