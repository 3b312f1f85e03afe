//! The one error type of the ID generators. Every message says what happened and what to do.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum IdGenError {
    #[error("idgen config for generator `{name}` is invalid: {reason}")]
    Config { name: String, reason: String },

    #[error("no ID generator named `{0}` is configured; add it under `generators:` in the idgate config")]
    UnknownGenerator(String),

    #[error("generator `{name}` is of kind {kind}, which does not support {op}; use the matching call for its kind")]
    WrongKind {
        name: String,
        kind: &'static str,
        op: &'static str,
    },

    #[error("generator `{name}` needs a sequence store, but no store pool was given; configure `sequence_store` or use a fixed `worker_id`")]
    NoStore { name: String },

    #[error("sequence store error for generator `{name}` while {during}: {source}; check that the sequence store is reachable and the idgate user may create and update the `idgate_segments`/`idgate_workers` tables")]
    Store {
        name: String,
        during: &'static str,
        #[source]
        source: mysql_async::Error,
    },

    #[error("sequence store did not answer generator `{name}` within {timeout:?} while {during}; check the store's health and network")]
    StoreTimeout {
        name: String,
        during: &'static str,
        timeout: Duration,
    },

    #[error("sequence store returned an unexpected answer to generator `{name}`: {detail}; check that nothing else writes the idgen tables")]
    StoreProtocol { name: String, detail: String },

    #[error("generator `{name}` has no buffered IDs left and could not reserve a new range within {waited:?} (last store error: {last_error}); the INSERT was not executed, retry later; idgate keeps retrying the store by itself")]
    Exhausted {
        name: String,
        waited: Duration,
        last_error: String,
    },

    #[error("a block of {requested} IDs is more than generator `{name}` can hand out at once (at most {max}); split the INSERT into smaller statements")]
    BlockTooLarge {
        name: String,
        requested: u64,
        max: u64,
    },

    #[error("generator `{name}`: all {capacity} worker ids are leased by live nodes; stop a node, wait for a lease to expire, or widen `worker_bits`")]
    WorkerIdsExhausted { name: String, capacity: u64 },

    #[error("generator `{name}` stopped issuing IDs: its worker-id lease could not be renewed in time (worker {worker_id}); check the sequence store; issuing resumes after a successful renewal, or under a new worker id if another node took this one over")]
    LeaseExpired { name: String, worker_id: u64 },

    #[error("generator `{name}` lost worker id {worker_id} to another node (its lease lapsed, e.g. while the sequence store was out of reach) and has not claimed a new worker id yet (last attempt: {last_error}); the statement was not executed, retry it; idgate keeps claiming by itself")]
    LeaseLost {
        name: String,
        worker_id: u64,
        last_error: String,
    },

    #[error("generator `{name}`: the clock is {behind:?} behind the last issued timestamp, more than `max_borrow` allows; IDs resume when the clock catches up (fix the host's time sync)")]
    ClockBehind { name: String, behind: Duration },

    #[error("generator `{name}`: the timestamp field of the layout has run out (the layout ended at {ends}); configure a later `epoch` or more `timestamp_bits`")]
    LayoutExhausted { name: String, ends: String },

    #[error("generator `{name}` was shut down")]
    ShutDown { name: String },
}

pub type Result<T, E = IdGenError> = std::result::Result<T, E>;
