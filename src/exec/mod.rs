//! Backend connections and pools, and running a client's command on them: relaying the answer
//! (and, later, merging answers from several shards).

pub mod aggregate;
pub mod backend;
pub mod collect;
pub mod merge_sorted;
pub mod metadata;
pub mod pool;
pub mod relay;
pub mod scatter;

pub use backend::{BackendConn, BackendError};
pub use pool::{BackendPool, Lease};
