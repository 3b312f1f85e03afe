//! Limits that protect idgate from its clients: how many sessions may be logged in (in all and per
//! user), how often a host may fail to log in, and the process's own file-descriptor limit.
//! The ID-service and admin listeners' connection table ([`ConnTable`]).
//! Also the per-connection timer every bounded wait uses ([`Deadline`]).
//! Must not: know about SQL or backends.

pub mod admission;
pub mod conn_table;
pub mod deadline;
pub mod rlimit;
pub mod throttle;

pub use admission::{Admission, Slot};
pub use conn_table::ConnTable;
pub use deadline::Deadline;
pub use throttle::AuthThrottle;
