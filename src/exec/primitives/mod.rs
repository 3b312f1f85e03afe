//! Gateway operations as primitives: each takes what `route` planned and a [`super::Cursor`],
//! does its work through the cursor only, and gives back a value (rows, a rewritten statement)
//! for the session to run or answer. One file each.

pub mod bulk_write;
pub mod concatenated_answer;
pub mod database_ddl;
pub mod ddl_everywhere;
pub mod generated_ids;
pub mod insert_select;
pub mod insert_source;
pub mod join_batch_relay;
pub mod join_bind;
pub mod join_stream;
pub mod key_expressions;
pub mod key_owner_answer;
pub mod load_data;
pub mod load_rows;
pub mod merged_answer;
pub mod ordered_write_check;
pub mod prepared_select;
pub mod sharded_write;
pub mod subquery_bind;
pub mod table_list;
pub mod unique_insert_rows;
pub mod unique_key_update;
pub mod unique_write;
pub mod upsert_rows;

/// The session's bounds on what a primitive may read into memory.
#[derive(Debug, Clone, Copy)]
pub struct GatewayLimits {
    /// Rows of one fetched table or subquery (`max_subquery_rows`).
    pub max_rows: u64,
    /// Bytes held at once (`merge_memory_limit`).
    pub max_bytes: u64,
}

impl From<&crate::config::Config> for GatewayLimits {
    fn from(c: &crate::config::Config) -> Self {
        GatewayLimits {
            max_rows: c.max_subquery_rows,
            max_bytes: c.merge_memory_limit,
        }
    }
}

#[cfg(test)]
mod bulk_write_tests;
#[cfg(test)]
mod fake_cursor;
#[cfg(test)]
mod insert_select_tests;
#[cfg(test)]
mod join_bind_tests;
#[cfg(test)]
mod load_rows_tests;
#[cfg(test)]
mod ordered_write_check_tests;
#[cfg(test)]
mod sharded_write_tests;
#[cfg(test)]
mod subquery_bind_tests;
#[cfg(test)]
mod unique_fixtures;
#[cfg(test)]
mod unique_insert_rows_tests;
#[cfg(test)]
mod unique_key_update_tests;
#[cfg(test)]
mod unique_write_tests;
#[cfg(test)]
mod upsert_rows_tests;
