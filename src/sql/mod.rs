//! SQL text handling for idgate: splitting a multi-statement query, cheap classification,
//! the SELECTs the session answers itself, and the INSERT analysis and rewrite that fills the
//! id column. Pure functions: no I/O, no global state.
//!
//! A COM_QUERY flows as: [`split_statements`] → per statement [`classify`] and
//! [`identifiers_mention`] (statements about unconfigured tables are forwarded untouched) →
//! [`session_query`] for the SELECTs the session answers → [`analyze_insert`] → the caller
//! decides per row (NULL / 0 / DEFAULT / absent generate; see [`ValueKind`]) and per shard →
//! [`render_insert`] with the rows of one shard. For a prepared statement, render with
//! [`IdValue::Placeholder`] and bind in the order [`placeholder_order`] gives: the client keeps
//! its own parameter count, idgate adds the id parameters.
//! Must not: do I/O, know about backends or sessions.

mod admin;
pub mod admin_migrate;
pub mod admin_switchover;
pub(crate) mod aggregates;
mod bound_names;
mod classify;
mod connection_state;
mod ddl_tables;
pub(crate) mod dml;
mod duplicate_update;
mod error;
mod from_tree;
pub(crate) mod insert;
mod insert_fast;
mod join_keys;
pub(crate) mod lex;
mod literal;
mod load;
mod load_data;
mod params;
pub(crate) mod parse;
mod pseudo_thread_id;
mod render;
mod replica_read;
mod scan;
pub(crate) mod select_tokens;
mod session_query;
mod shape;
mod split;
pub(crate) mod subquery;
mod subquery_bind;
mod update_parts;
mod words;

pub use admin::{admin_statement, AdminStatement, KillUserName};
pub use bound_names::bound_item_aliases;
pub use classify::{classify, identifiers_mention, mentions_sql_mode, StatementKind, TableNames};
pub use connection_state::{binds_connection, pin_reason, set_reach, SetReach, PIN_REASONS};
pub use ddl_tables::{ddl_tables, DdlAction, DdlTables, ForeignKey, UniqueKey};
pub use dml::{
    analyze_dml, asks_row_counts, placeholder_offsets, DmlAnalysis, DmlKind, KeyTerm, KeyValue,
};
pub use duplicate_update::{
    duplicate_update_assignments, duplicate_update_changed_columns,
    with_duplicate_update_assignment,
};
pub use error::{SqlParseError, ER_NOT_SUPPORTED_YET, ER_PARSE_ERROR, ER_WRONG_VALUE_COUNT_ON_ROW};
pub use from_tree::{FromTree, Outer};
pub use insert::{
    analyze_insert, analyze_insert_parsed, Assignment, Column, InsertAnalysis, InsertBody, Row,
    TableRef, Value,
};
pub use join_keys::{and_parts, QualifiedColumn, SubqueryTables, TopTable};
pub use literal::ValueKind;
pub use load::{first_word, is_load_local};
pub use load_data::{
    analyze_load_data, Field, FieldReader, FileError, FileFormat, LoadData, OnDuplicate, Target,
};
pub use params::{bind_insert, bind_placeholders, push_literal};
pub use pseudo_thread_id::with_session_pseudo_thread_id;
pub use render::{placeholder_order, render_insert, IdFill, IdValue, ParamSource};
pub use replica_read::{pins_to_primary, reads_last_answer, replica_safe};
pub use session_query::{session_query, SessionQuery};
pub use shape::{shape, Shape};
pub use split::split_statements;
pub use subquery::{
    find_subqueries, has_own_limit, is_multi_table_write, is_sort_item, splice, union_members,
    Subquery, SubqueryUse,
};
pub use subquery_bind::{
    render_derived, render_exists, render_in_list, render_quantified, render_scalar, render_value,
    BindError, BoundColumn, BoundRow, ER_SUBQUERY_NO_1_ROW,
};
pub use update_parts::{update_parts, Assigned, UpdateParts};
pub use words::{
    chain_or_release, connection_id_calls, database_ddl, explain_route_target, expression_reach,
    is_temporary_ddl, lists_tables, mentions, names_outside, push_name, savepoint,
    sets_autocommit_on, starts_read_only, string_literal_is, use_target, with_session_id,
    DatabaseDdl, DatabaseVerb, ExpressionReach, SavepointAction,
};

#[cfg(test)]
mod admin_docs_tests;
#[cfg(test)]
mod insert_fast_tests;
#[cfg(test)]
mod insert_tests;
#[cfg(test)]
mod subquery_tests;
