//! Where rows and statements go. This module owns the placement of each configured table
//! (sharded by an algorithm, broadcast to every shard, or single on the default backend), the
//! choice of shard for a row's sharding value, and the plans of SELECT/UPDATE/DELETE/DDL over
//! placed tables: `planner` turns an analysed statement and a [`PlanContext`] into a
//! [`ShapePlan`] (colocation checks, pinned shards, merge and per-shard SQL), `cache` keeps
//! plans by statement shape and binds each execution's literals to them.
//!
//! It must not do I/O or know about sessions: everything here is a function of the statement,
//! the configuration and the context passed in, so plans can be cached and tested without a
//! server. Running a plan belongs to `session`/`exec`.

pub mod algorithm;
pub mod cache;
pub mod colocate;
pub mod pinned;
pub mod plan;
pub mod planner;
pub mod tables;

pub use algorithm::{Algorithm, ShardValue};
pub use cache::{CacheStats, PlanCache};
pub use plan::{BoundMerge, PlanContext, Route, ShapePlan};
pub use tables::{Placement, TableRule, Tables};

#[cfg(test)]
mod cache_tests;
#[cfg(test)]
mod planner_tests;
