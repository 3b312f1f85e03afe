//! Backend connections and pools, and running a client's command on them: the connections a
//! session holds, joining them to the client's transaction and ending it there (`conns`),
//! relaying the answer and merging answers from several shards.
//! Must not: parse SQL or decide routes; it runs what it is given (a statement's transaction
//! scope is decided from the kind `sql` reads), and bounds every wait on a backend
//! (query_timeout_ms). It knows no client session: what the client must hear comes back as values.

pub mod backend;
pub mod backend_accounts;
pub mod backend_auth;
pub mod backend_setup;
pub mod capture;
pub mod client_watch;
pub mod collect;
pub mod conns;
pub mod cursor;
pub mod merge;
pub mod metadata;
mod pending_answers;
pub mod pool;
pub mod pool_limits;
pub mod pool_parking;
pub mod pool_stats;
pub mod primitives;
pub mod relay;
pub mod relay_direct;
mod relay_whole;
pub mod result_set;
pub mod scatter;
pub mod topology;

pub use backend::{BackendConn, BackendError};
pub use conns::{SessionConns, StatementScope};
pub use cursor::{Cursor, FetchLimits, Fetched, LoadCursor, RelayCursor, WriteCursor};
pub use pool::{BackendPool, Came, Lease};
