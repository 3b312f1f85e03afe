//! idgate: a MySQL-wire proxy that fills id columns with globally unique 64-bit IDs and routes
//! every row and query to the shard that owns it.

pub mod admin;
pub mod config;
pub mod demo;
pub mod exec;
pub mod idgen;
pub mod limits;
pub mod live;
pub mod metrics;
pub mod migrate;
pub mod proxy;
pub mod reload;
pub mod route;
pub mod server;
pub mod session;
pub mod sql;
pub mod stop;
pub mod table_ids;
pub mod testbed;
pub mod tls;
pub mod unique;
pub mod wire;
pub mod xa;
