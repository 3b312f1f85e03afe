//! Where rows and statements go: the placement of each configured table (sharded by an algorithm,
//! broadcast to every shard, or single on the default backend) and the choice of shard for a
//! row's sharding value. No I/O here.

pub mod algorithm;
pub mod tables;

pub use algorithm::{Algorithm, ShardValue};
pub use tables::{Placement, TableRule, Tables};
