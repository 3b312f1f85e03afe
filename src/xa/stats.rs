//! What XA recovery did, for metrics: branches it finished and branches still in doubt after
//! its last pass. Atomics, read at scrape time.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use super::recover::Outcome;

#[derive(Debug, Default)]
pub struct XaStats {
    pub passes: AtomicU64,
    pub committed: AtomicU64,
    pub rolled_back: AtomicU64,
    /// Prepared branches the last pass left (another node's undecided ones, or unfinishable now).
    pub in_doubt: AtomicU64,
}

impl XaStats {
    pub fn record(&self, out: &Outcome) {
        self.passes.fetch_add(1, Relaxed);
        self.committed.fetch_add(out.committed as u64, Relaxed);
        self.rolled_back.fetch_add(out.rolled_back as u64, Relaxed);
        self.in_doubt.store(out.left as u64, Relaxed);
    }
}
