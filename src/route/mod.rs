//! Where rows and statements go. This module owns the placement of each configured table
//! (sharded by an algorithm, broadcast to every shard, or single on the default backend), the
//! choice of shard for a row's sharding value, and the plan of every statement: `statement`
//! decides what to do with one (forward, idgate's own answer, routed, INSERT with ids, LOAD
//! DATA, subqueries first, a join in the gateway, metadata from other backends, or a refusal)
//! from a [`StatementContext`]; `planner` turns an analysed SELECT/UPDATE/DELETE/DDL and a [`PlanContext`] into a
//! [`ShapePlan`] (colocation checks, pinned shards, merge and per-shard SQL), `cache` keeps
//! plans by statement shape and binds each execution's literals to them; `insert` decides which
//! rows of an INSERT get a generated id (AUTO_INCREMENT's rules, `explicit_ids`) and, given the
//! ids, makes an [`InsertPlan`]: each row's shard, the per-shard SQL with the ids spliced in and
//! `LAST_INSERT_ID(id)` on the first generated one, and the insert id the client is told;
//! `insert_ids` turns what a generator hands out into those ids (UUID literals by column type,
//! the bias values a biased generator needs from each row). The planners of what idgate runs
//! in the gateway live here too: `join_plan` and `join_plan_correlated` take apart joins and
//! correlated subqueries, `merge_plan`/`merge_rewrite` plan merging several shards' answers,
//! and `aggregate_lift`, `window_lift` and `ordered_write` rewrite statements whose answer
//! would otherwise depend on how rows are spread. `sql` gives them scanned and parsed text.
//!
//! It must not do I/O or know about sessions: everything here is a function of the statement,
//! the configuration and the context passed in (for an INSERT: the table's columns, sql_mode's
//! NO_AUTO_VALUE_ON_ZERO and the generated ids, which the session fetches), so plans can be
//! cached and tested without a server. Running a plan belongs to `session`/`exec`.

mod aggregate_lift;
pub mod algorithm;
pub mod cache;
pub mod colocate;
mod ddl;
pub mod explain;
pub mod hold;
pub mod insert;
pub mod insert_ids;
mod insert_place;
mod join_plan;
mod join_plan_correlated;
pub mod join_steps;
mod merge_plan;
mod merge_rewrite;
pub mod moving;
mod multi_table_update;
mod ordered_write;
pub mod pinned;
pub mod plan;
pub mod planner;
pub mod prepared;
pub mod row_shards;
pub mod statement;
mod statement_gateway;
mod statement_load;
mod statement_meta;
pub mod tables;
pub mod unique_keys;
mod window_lift;

pub use aggregate_lift::lift_aggregates;
pub use algorithm::{Algorithm, ShardValue};
pub use cache::{CacheStats, PlanCache};
pub use insert::{InsertPlan, RowId};
pub use join_plan::{
    analyze_join, batch_condition, bind_tables, quote_ident, side_select, FetchStep, JoinKey,
    JoinKind, JoinRefusal, JoinShape, JoinSide,
};
pub use join_plan_correlated::analyze_correlated;
pub use merge_plan::{
    limit_value, merge_plan, AggCol, AggFn, ColRef, Having, HavingOp, KeyTypes, LimitForm,
    MergeMode, MergePlan, SortKey, Weight, Window,
};
pub use merge_rewrite::MERGE_REFUSED;
pub use ordered_write::{ordered_write, OrderedWrite};
pub use plan::{BoundMerge, PlanContext, Route, ShapePlan};
pub use statement::{lift, refused_when_prepared, Caller, Plan, StatementContext, UniqueId};
pub use statement_gateway::{
    correlated_later, insert_subqueries, join_plan, nested_subqueries, placed_subqueries,
    sharding_columns, subquery_plan,
};
pub use statement_load::{local_infile_disabled, ER_LOAD_INFILE_CAPABILITY_DISABLED};
pub use tables::{Placement, TableRule, Tables};
pub use window_lift::lift_windows;

#[cfg(test)]
mod cache_tests;
#[cfg(test)]
mod insert_ids_tests;
#[cfg(test)]
mod insert_tests;
#[cfg(test)]
mod join_plan_correlated_tests;
#[cfg(test)]
mod join_plan_tests;
#[cfg(test)]
mod key_probe_tests;
#[cfg(test)]
mod placement_invariant_tests;
#[cfg(test)]
mod planner_tests;
#[cfg(test)]
mod statement_tests;
#[cfg(test)]
pub(crate) mod test_rules;
