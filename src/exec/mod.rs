//! Backend connections and pools, and running a client's command on them: relaying the answer
//! and merging answers from several shards.
//! Must not: parse SQL or decide routes; it runs what it is given, and bounds every wait on a
//! backend (query_timeout_ms).

pub mod backend;
pub mod backend_auth;
pub mod collect;
pub mod merge;
pub mod metadata;
pub mod pool;
pub mod pool_limits;
pub mod pool_stats;
pub mod relay;
pub mod scatter;

pub use backend::{BackendConn, BackendError};
pub use pool::{BackendPool, Lease};
