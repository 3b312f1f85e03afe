//! What a backend's pools count for metrics (shared by the backend's own pool and the pools of
//! users' accounts on it): sessions waiting for a connection, how long taking one took, and
//! why taking one failed. Plain atomics, read at scrape time.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicI64, AtomicU64};

use crate::metrics::histogram::AtomicHistogram;

#[derive(Debug, Default)]
pub struct PoolStats {
    waiting: AtomicI64,
    /// Time from asking for a connection to holding one (a fresh login included).
    pub acquire: AtomicHistogram,
    /// No free connection within `acquire_timeout_ms`.
    pub acquire_timeouts: AtomicU64,
    /// A new connection could not be opened (refused, login failed, no answer).
    pub connect_errors: AtomicU64,
    /// Connections taken over from a session that had parked them (`pool.mode: transaction`).
    pub takeovers: AtomicU64,
}

impl PoolStats {
    /// Counts a session as waiting until the returned guard drops.
    pub fn waiting(&self) -> Waiting<'_> {
        self.waiting.fetch_add(1, Relaxed);
        Waiting(self)
    }

    pub fn waiting_now(&self) -> i64 {
        self.waiting.load(Relaxed)
    }

    pub fn acquire_timeouts(&self) -> u64 {
        self.acquire_timeouts.load(Relaxed)
    }

    pub fn connect_errors(&self) -> u64 {
        self.connect_errors.load(Relaxed)
    }

    pub fn takeovers(&self) -> u64 {
        self.takeovers.load(Relaxed)
    }
}

pub struct Waiting<'a>(&'a PoolStats);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Relaxed);
    }
}
