//! SQL text handling for idgate: splitting a multi-statement query, cheap classification,
//! the SELECTs the session answers itself, and the INSERT analysis and rewrite that fills the
//! id column. Pure functions: no I/O, no global state.

mod classify;
mod lex;
mod session_query;
mod split;

pub use classify::{classify, identifiers_mention, mentions_sql_mode, StatementKind, TableNames};
pub use session_query::{session_query, SessionQuery};
pub use split::split_statements;
