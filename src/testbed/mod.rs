//! Throwaway MariaDB servers that `idgate demo` and the test suite start for themselves.
//! Must not: be used by the proxy's serving path.

pub mod galera;
pub mod mariadb;
pub mod reaper;

pub use mariadb::MariaDb;
