//! Plain atomic counters and gauges per generator, read by the admin module.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Debug, Default)]
pub struct Metrics {
    /// IDs handed out (counter).
    pub ids_issued: AtomicU64,
    /// Ranges reserved in the sequence store (counter, segment).
    pub ranges_fetched: AtomicU64,
    /// Failed attempts to reserve a range or renew a lease (counter).
    pub store_errors: AtomicU64,
    /// Sum and maximum of range-fetch latency in microseconds (segment).
    pub fetch_latency_us_sum: AtomicU64,
    pub fetch_latency_us_max: AtomicU64,
    /// Requests that found no buffered range and had to wait (counter, segment).
    pub empty_buffer_waits: AtomicU64,
    /// IDs reserved but never handed out: skipped range tails, skipped sequence tails (counter).
    pub wasted_ids: AtomicU64,
    /// Step of the last range reserved (gauge, segment).
    pub current_step: AtomicU64,
    /// Times the clock was found behind the last issued timestamp (counter, snowflake kinds).
    pub clock_backwards: AtomicU64,
    /// Ticks issued ahead of the clock (counter, snowflake kinds).
    pub borrowed_ticks: AtomicU64,
    /// Successful worker-id lease renewals (counter).
    pub lease_renewals: AtomicU64,
    /// New worker ids claimed after the lease was taken over by another node (counter).
    pub lease_reacquisitions: AtomicU64,
    /// Worker id currently leased (gauge; u64::MAX when none).
    pub worker_id: AtomicU64,
}

impl Metrics {
    pub(crate) fn add(c: &AtomicU64, v: u64) {
        c.fetch_add(v, Relaxed);
    }
    pub(crate) fn record_fetch(&self, us: u64) {
        self.ranges_fetched.fetch_add(1, Relaxed);
        self.fetch_latency_us_sum.fetch_add(us, Relaxed);
        self.fetch_latency_us_max.fetch_max(us, Relaxed);
    }
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Relaxed)
    }
}
