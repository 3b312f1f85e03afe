//! A latency histogram of plain atomics: observing is one bucket search over a short constant
//! array and two `fetch_add`s, with no lock (prometheus-client's histogram takes a lock per
//! observation). Encoded at scrape time by the collectors in `admin::live`.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, MetricEncoder, NoLabelSet};

/// Upper bounds in seconds, 50 µs to 10 s: a relayed point select takes tens of microseconds
/// of idgate's time, a scatter over slow shards seconds.
pub const LATENCY_BUCKETS: [f64; 17] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];

pub struct AtomicHistogram {
    /// One count per bucket of `LATENCY_BUCKETS`, then the +Inf bucket (not cumulative).
    counts: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        AtomicHistogram {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }
}

impl fmt::Debug for AtomicHistogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicHistogram")
            .field("count", &self.count())
            .finish()
    }
}

impl AtomicHistogram {
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = LATENCY_BUCKETS.partition_point(|&b| b < secs);
        self.counts[i].fetch_add(1, Relaxed);
        self.sum_ns
            .fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    /// Each bucket's count (not cumulative), the +Inf bucket last.
    pub fn counts(&self) -> [u64; LATENCY_BUCKETS.len() + 1] {
        std::array::from_fn(|i| self.counts[i].load(Relaxed))
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Relaxed)).sum()
    }

    /// Writes this histogram as one series of `enc`'s family.
    pub fn encode(&self, enc: &mut MetricEncoder, labels: &impl EncodeLabelSet) -> fmt::Result {
        let mut count = 0;
        let buckets: Vec<(f64, u64)> = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let n = c.load(Relaxed);
                count += n;
                (LATENCY_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY), n)
            })
            .collect();
        let sum = self.sum_ns.load(Relaxed) as f64 / 1e9;
        enc.encode_family(labels)?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_lands_in_the_first_bucket_at_or_above_it() {
        let h = AtomicHistogram::default();
        h.observe(Duration::from_micros(50)); // on the bound: that bucket (le is inclusive)
        h.observe(Duration::from_micros(51));
        h.observe(Duration::from_secs(11));
        assert_eq!(h.counts[0].load(Relaxed), 1);
        assert_eq!(h.counts[1].load(Relaxed), 1);
        assert_eq!(h.counts[LATENCY_BUCKETS.len()].load(Relaxed), 1);
        assert_eq!(h.count(), 3);
        assert_eq!(h.sum_ns.load(Relaxed), 11_000_101_000);
    }
}
