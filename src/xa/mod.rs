//! Two-phase commit for transactions that wrote on several backends: XA transaction ids, the
//! decision log in the sequence store, and recovery of prepared branches that were left undecided
//! (at startup and in the background after a commit could not reach a backend).
//! Must not: know about client sessions or SQL beyond the XA statements it sends.

pub mod commit;
pub mod log;
pub mod recover;
pub mod stats;
pub mod xid;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::config::{Backend, CommitMode, Config};

pub use log::DecisionLog;
pub use xid::{xid_sql, XidSource};

/// Shared by every session of one idgate process when transactions commit with XA.
pub struct Coordinator {
    pub xids: XidSource,
    pub log: DecisionLog,
    /// gtrids between their first XA PREPARE and the decision (or rollback): recovery must not
    /// roll these back.
    in_flight: Mutex<HashSet<Vec<u8>>>,
    /// Wakes the background recovery after a commit could not finish on some backend.
    pub wake: tokio::sync::Notify,
    pub backends: Vec<(String, Backend)>,
    /// What recovery did, for metrics.
    pub stats: stats::XaStats,
}

/// Whether this configuration commits multi-backend transactions with XA: `commit: xa` and at
/// least one sharded or broadcast table (a transaction on the default backend alone never needs
/// it, and runs exactly as on a direct connection).
pub fn enabled(config: &Config) -> bool {
    config.transactions.commit == CommitMode::Xa
        && config
            .tables
            .values()
            .any(|t| t.value.sharding.is_some() || t.value.broadcast)
}

impl Coordinator {
    pub fn new(config: &Config, log: DecisionLog) -> Arc<Coordinator> {
        let node = match &config.transactions.node_id {
            Some(n) => n.value.clone(),
            None => xid::default_node(&config.listen),
        };
        let incarnation = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Arc::new(Coordinator {
            xids: XidSource::new(node, incarnation),
            log,
            in_flight: Mutex::new(HashSet::new()),
            wake: tokio::sync::Notify::new(),
            backends: config
                .backends
                .iter()
                .map(|(n, b)| (n.clone(), b.value.clone()))
                .collect(),
            stats: Default::default(),
        })
    }

    pub fn begin_prepare(&self, gtrid: &[u8]) {
        if let Ok(mut s) = self.in_flight.lock() {
            s.insert(gtrid.to_vec());
        }
    }

    pub fn end_prepare(&self, gtrid: &[u8]) {
        if let Ok(mut s) = self.in_flight.lock() {
            s.remove(gtrid);
        }
    }

    pub fn is_in_flight(&self, gtrid: &[u8]) -> bool {
        self.in_flight.lock().map_or(true, |s| s.contains(gtrid))
    }
}
