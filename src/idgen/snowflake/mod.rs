//! Snowflake-style generators: layout, worker-id leases, the per-tick sequencer.

pub mod layout;
