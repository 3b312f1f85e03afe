//! idgate: a MySQL-wire proxy that fills id columns with globally unique 64-bit IDs and routes
//! every row and query to the shard that owns it.
pub mod idgen;
