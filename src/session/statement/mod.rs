//! One statement's execution for the session: [`StatementExec`] holds the session and the
//! statement's scope, is the cursor the `exec::primitives` run through, and turns their outcome
//! into the client's answer and the session's new state (LAST_INSERT_ID, status flags). The
//! session itself keeps state and dispatches commands; what runs a statement lives here.

mod cursor;
mod fetch;
mod fetch_charset;
mod insert;
mod insert_select;
mod join;
mod load_data;
mod plan;
mod prepared_execute;
mod routed;
mod shards;
mod subquery;
mod unique_insert;
mod unique_update;
mod upsert;

pub(super) use cursor::StatementExec;
