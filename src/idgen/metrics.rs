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
    /// Range fetches per latency bucket (upper bounds in [`FETCH_BUCKETS_US`], last = +Inf).
    pub fetch_latency_buckets: [AtomicU64; FETCH_BUCKETS_US.len() + 1],
    /// Latency (µs) and wall-clock time (Unix ms) of the last range fetch (segment).
    pub last_fetch_us: AtomicU64,
    pub last_fetch_unix_ms: AtomicU64,
}

/// Upper bounds (µs) of the range-fetch latency histogram: 0.5 ms to 2.5 s.
pub const FETCH_BUCKETS_US: [u64; 10] = [
    500, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000, 250_000, 1_000_000, 2_500_000,
];

impl Metrics {
    pub(crate) fn add(c: &AtomicU64, v: u64) {
        c.fetch_add(v, Relaxed);
    }
    pub(crate) fn record_fetch(&self, us: u64) {
        self.ranges_fetched.fetch_add(1, Relaxed);
        self.fetch_latency_us_sum.fetch_add(us, Relaxed);
        self.fetch_latency_us_max.fetch_max(us, Relaxed);
        let bucket = FETCH_BUCKETS_US
            .iter()
            .position(|&b| us <= b)
            .unwrap_or(FETCH_BUCKETS_US.len());
        self.fetch_latency_buckets[bucket].fetch_add(1, Relaxed);
        self.last_fetch_us.store(us, Relaxed);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.last_fetch_unix_ms.store(now, Relaxed);
    }
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Relaxed)
    }
}
