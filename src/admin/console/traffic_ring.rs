//! The console's memory of the last minutes: a background task reads the statement histograms
//! idgate keeps anyway (by route) and each generator's ids issued every `EVERY`, and keeps the
//! differences in a ring of `KEEP` samples. Nothing on the statement path writes here; with no
//! admin listener the task does not run.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use crate::metrics::histogram::LATENCY_BUCKETS;
use crate::metrics::statement_metrics::StmtRoute;
use crate::proxy::Proxy;

/// How often the task samples.
pub const EVERY: Duration = Duration::from_secs(2);
/// Samples kept: 5 minutes.
pub const KEEP: usize = 150;

const ROUTES: usize = StmtRoute::ALL.len();
type Buckets = [u64; LATENCY_BUCKETS.len() + 1];

/// One route over one sample's interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Point {
    pub per_s: f64,
    /// Latency percentiles (ms) of the statements in the interval; `None` when there were none.
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct Sample {
    pub at: SystemTime,
    pub routes: [Point; ROUTES],
}

#[derive(Default)]
struct Inner {
    samples: VecDeque<Sample>,
    /// The histograms and counters as last read, to take differences from.
    last: Option<(Instant, [Buckets; ROUTES])>,
    gen_last: HashMap<String, (Instant, u64)>,
    gen_rate: HashMap<String, f64>,
}

#[derive(Default)]
pub struct TrafficRing {
    inner: Mutex<Inner>,
}

impl TrafficRing {
    pub fn new() -> Arc<TrafficRing> {
        Arc::new(TrafficRing::default())
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.lock().samples.iter().cloned().collect()
    }

    /// Ids a second `generator` issued over the last interval (`None` before two samples).
    pub fn generator_rate(&self, generator: &str) -> Option<f64> {
        self.lock().gen_rate.get(generator).copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one sample of the route histograms `now`.
    pub fn record(&self, now: Instant, at: SystemTime, hist: [Buckets; ROUTES]) {
        let mut g = self.lock();
        if let Some((then, before)) = g.last {
            let secs = now.duration_since(then).as_secs_f64();
            if secs > 0.0 {
                let routes = std::array::from_fn(|r| point(&before[r], &hist[r], secs));
                if g.samples.len() >= KEEP {
                    g.samples.pop_front();
                }
                g.samples.push_back(Sample { at, routes });
            }
        }
        g.last = Some((now, hist));
    }

    /// Takes one sample of the generators' ids issued `now`; generators gone are forgotten.
    pub fn record_generators(&self, now: Instant, issued: &[(String, u64)]) {
        let mut g = self.lock();
        let mut last = HashMap::with_capacity(issued.len());
        let mut rate = HashMap::with_capacity(issued.len());
        for (name, n) in issued {
            if let Some(&(then, before)) = g.gen_last.get(name) {
                let secs = now.duration_since(then).as_secs_f64();
                if secs > 0.0 {
                    rate.insert(name.clone(), n.saturating_sub(before) as f64 / secs);
                }
            }
            last.insert(name.clone(), (now, *n));
        }
        g.gen_last = last;
        g.gen_rate = rate;
    }
}

/// The route's rate and percentiles between two readings of its histogram.
fn point(before: &Buckets, after: &Buckets, secs: f64) -> Point {
    let delta: Buckets = std::array::from_fn(|i| after[i].saturating_sub(before[i]));
    let n: u64 = delta.iter().sum();
    Point {
        per_s: n as f64 / secs,
        p50_ms: quantile(&delta, n, 0.50),
        p95_ms: quantile(&delta, n, 0.95),
        p99_ms: quantile(&delta, n, 0.99),
    }
}

/// The `q` quantile (ms) of `n` observations in `buckets`, interpolated within its bucket as
/// Prometheus' histogram_quantile does; the +Inf bucket answers with the highest bound.
fn quantile(buckets: &Buckets, n: u64, q: f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let rank = q * n as f64;
    let mut below = 0u64;
    for (i, &c) in buckets.iter().enumerate() {
        if c > 0 && (below + c) as f64 >= rank {
            let Some(&upper) = LATENCY_BUCKETS.get(i) else {
                return LATENCY_BUCKETS.last().map(|b| b * 1e3);
            };
            let lower = if i == 0 { 0.0 } else { LATENCY_BUCKETS[i - 1] };
            let within = ((rank - below as f64) / c as f64).clamp(0.0, 1.0);
            return Some((lower + (upper - lower) * within) * 1e3);
        }
        below += c;
    }
    LATENCY_BUCKETS.last().map(|b| b * 1e3)
}

/// Samples `proxy` into `ring` every `EVERY` until `stop` turns true or the proxy is gone.
pub async fn sample(ring: Arc<TrafficRing>, proxy: Weak<Proxy>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = crate::stop::stopped(&mut stop) => return,
        }
        let Some(proxy) = proxy.upgrade() else {
            return;
        };
        let now = Instant::now();
        let hist = std::array::from_fn(|r| proxy.metrics.statements.durations[r].counts());
        ring.record(now, SystemTime::now(), hist);
        let issued: Vec<(String, u64)> = proxy
            .idgen
            .iter()
            .map(|(name, g)| {
                let n = crate::idgen::metrics::Metrics::get(&g.metrics().ids_issued);
                (name.clone(), n)
            })
            .collect();
        ring.record_generators(now, &issued);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(counts: &[(usize, u64)]) -> Buckets {
        let mut b = [0; LATENCY_BUCKETS.len() + 1];
        for &(i, n) in counts {
            b[i] = n;
        }
        b
    }

    #[test]
    fn quantiles_interpolate_within_the_bucket() {
        // 100 observations in (0.5 ms, 1 ms]: the median halfway.
        let b = with(&[(4, 100)]);
        let p50 = quantile(&b, 100, 0.5).unwrap();
        assert!((p50 - 0.75).abs() < 1e-9, "{p50}");
        // 90 fast (≤ 50 µs), 10 slow (in (1 s, 2.5 s]): p99 is slow, p50 fast.
        let b = with(&[(0, 90), (14, 10)]);
        assert!(quantile(&b, 100, 0.5).unwrap() <= 0.05);
        let p99 = quantile(&b, 100, 0.99).unwrap();
        assert!((1000.0..=2500.0).contains(&p99), "{p99}");
        // Past the last bound: the last bound.
        let b = with(&[(LATENCY_BUCKETS.len(), 3)]);
        assert_eq!(quantile(&b, 3, 0.5), Some(10_000.0));
        assert_eq!(quantile(&with(&[]), 0, 0.5), None);
    }

    #[test]
    fn the_ring_keeps_differences_and_stays_bounded() {
        let ring = TrafficRing::default();
        let t0 = Instant::now();
        let mut hist = [with(&[]); ROUTES];
        ring.record(t0, SystemTime::now(), hist);
        assert!(
            ring.samples().is_empty(),
            "the first reading is only a base"
        );
        for i in 1..=(KEEP as u64 + 10) {
            hist[0][3] += 20;
            ring.record(t0 + EVERY * i as u32, SystemTime::now(), hist);
        }
        let s = ring.samples();
        assert_eq!(s.len(), KEEP);
        let p = s[KEEP - 1].routes[0];
        assert!((p.per_s - 10.0).abs() < 1e-9, "{p:?}");
        assert!(p.p50_ms.is_some());
        assert_eq!(s[KEEP - 1].routes[1], Point::default());

        ring.record_generators(t0, &[("g".into(), 100), ("old".into(), 1)]);
        ring.record_generators(t0 + EVERY, &[("g".into(), 300)]);
        assert_eq!(ring.generator_rate("g"), Some(100.0));
        assert_eq!(ring.generator_rate("old"), None);
    }
}
