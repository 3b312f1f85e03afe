//! The Prometheus registry of one idgate process, built when the admin listener starts. The
//! counters the statement path or the listeners bump live in `crate::metrics::Metrics`;
//! figures other modules already keep (generator counters, pool sizes) are read at scrape time
//! by [`ProxyCollector`], so serving an id or a statement never touches the registry.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::metrics_live::LiveCollector;
use crate::idgen::metrics::{Metrics as GenMetrics, FETCH_BUCKETS_US};
use crate::idgen::Generator;
use crate::proxy::Proxy;

/// The registry of every metric: `proxy`'s counters, and collectors reading the rest at scrape
/// time (they hold `proxy` weakly).
pub fn registry(proxy: &Arc<Proxy>, migrations: &Arc<crate::migrate::Migrations>) -> Registry {
    let m = &proxy.metrics;
    let mut registry = Registry::with_prefix("idgate");
    registry.register(
        "client_connections_accepted",
        "MySQL client connections accepted",
        m.client_connections_accepted.clone(),
    );
    registry.register(
        "client_connections_open",
        "MySQL client connections open now",
        m.client_connections_open.clone(),
    );
    registry.register(
        "id_service_requests",
        "ID-service requests (HTTP and Redis protocol) by outcome",
        m.id_service_requests.clone(),
    );
    registry.register(
        "id_service_connections_open",
        "Redis-protocol ID-service connections open now",
        m.id_service_connections_open.clone(),
    );
    registry.register(
        "listener_connections_closed",
        "Connections the ID-service and admin listeners closed to admit a new one (made_room) or refused because every one was working (full)",
        m.listener_connections_closed.clone(),
    );
    registry.register(
        "statements",
        "Statements by how idgate ran them (route) and what they are (kind)",
        m.statements.family.clone(),
    );
    registry.register(
        "merged_rows",
        "Rows read from shards to merge into one answer (ORDER BY/LIMIT, GROUP BY, DISTINCT)",
        m.merged_rows.clone(),
    );
    registry.register(
        "client_connections_refused",
        "Client connections refused before they became sessions, by reason",
        m.refusals.family.clone(),
    );
    registry.register(
        "xa_commits",
        "Transactions committed over XA branches, by phase and outcome",
        m.xa_commits.family.clone(),
    );
    registry.register_collector(Box::new(LiveCollector {
        statements: m.statements.clone(),
        errors: m.client_errors.clone(),
        proxy: Arc::downgrade(proxy),
        migrations: Arc::downgrade(migrations),
    }));
    registry.register_collector(Box::new(ProxyCollector {
        proxy: Arc::downgrade(proxy),
    }));
    registry
}

/// Prometheus text exposition of every metric.
pub fn render(registry: &Registry) -> Result<String, fmt::Error> {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry)?;
    Ok(out)
}

/// Reads what the generators and pools already count, at scrape time.
struct ProxyCollector {
    proxy: Weak<Proxy>,
}

impl fmt::Debug for ProxyCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProxyCollector")
    }
}

type Read = fn(&GenMetrics) -> u64;

/// Generator counters: name (without `_total`), help, field.
const GEN_COUNTERS: [(&str, &str, Read); 9] = [
    ("generator_ids_issued", "IDs handed out", |m| {
        GenMetrics::get(&m.ids_issued)
    }),
    (
        "generator_range_fetches",
        "Ranges reserved in the sequence store (segment)",
        |m| GenMetrics::get(&m.ranges_fetched),
    ),
    (
        "generator_store_errors",
        "Failed range reservations or lease renewals",
        |m| GenMetrics::get(&m.store_errors),
    ),
    (
        "generator_empty_buffer_waits",
        "Requests that found both buffers empty and waited (segment)",
        |m| GenMetrics::get(&m.empty_buffer_waits),
    ),
    (
        "generator_wasted_ids",
        "IDs reserved but skipped (range or tick tails)",
        |m| GenMetrics::get(&m.wasted_ids),
    ),
    (
        "generator_clock_backwards",
        "Times the clock was found behind the last issued timestamp",
        |m| GenMetrics::get(&m.clock_backwards),
    ),
    (
        "generator_borrowed_ticks",
        "Timestamps issued ahead of the clock",
        |m| GenMetrics::get(&m.borrowed_ticks),
    ),
    (
        "generator_lease_renewals",
        "Worker-id lease renewals",
        |m| GenMetrics::get(&m.lease_renewals),
    ),
    (
        "generator_lease_losses",
        "Worker-id leases taken over by another node and replaced",
        |m| GenMetrics::get(&m.lease_reacquisitions),
    ),
];

impl Collector for ProxyCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), fmt::Error> {
        let Some(proxy) = self.proxy.upgrade() else {
            return Ok(());
        };
        let gens: Vec<(&str, &Arc<Generator>)> =
            proxy.idgen.iter().map(|(n, g)| (n.as_str(), g)).collect();
        for (name, help, read) in GEN_COUNTERS {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (gname, g) in &gens {
                let labels = [("generator", *gname), ("kind", g.kind())];
                m.encode_family(&labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&read(g.metrics()), None)?;
            }
        }
        encode_fetch_histogram(&mut enc, &gens)?;
        encode_generator_gauges(&mut enc, &gens)?;
        encode_pool_gauges(&mut enc, &proxy)?;
        super::metrics_nodes::encode(&mut enc, &proxy)?;
        encode_plan_cache(&mut enc, &proxy)?;
        Ok(())
    }
}

fn encode_fetch_histogram(
    enc: &mut DescriptorEncoder,
    gens: &[(&str, &Arc<Generator>)],
) -> Result<(), fmt::Error> {
    let mut m = enc.encode_descriptor(
        "generator_range_fetch_duration",
        "Time to reserve a range in the sequence store (segment)",
        Some(&Unit::Seconds),
        MetricType::Histogram,
    )?;
    for (gname, g) in gens.iter().filter(|(_, g)| g.kind() == "segment") {
        let gm = g.metrics();
        // Per-bucket counts: the encoder accumulates them.
        let mut count = 0;
        let mut buckets = Vec::with_capacity(FETCH_BUCKETS_US.len() + 1);
        for (i, b) in gm.fetch_latency_buckets.iter().enumerate() {
            let n = b.load(Relaxed);
            count += n;
            let upper = FETCH_BUCKETS_US
                .get(i)
                .map_or(f64::INFINITY, |&us| us as f64 / 1e6);
            buckets.push((upper, n));
        }
        let sum = GenMetrics::get(&gm.fetch_latency_us_sum) as f64 / 1e6;
        let labels = [("generator", *gname), ("kind", g.kind())];
        m.encode_family(&labels)?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
    }
    Ok(())
}

fn encode_generator_gauges(
    enc: &mut DescriptorEncoder,
    gens: &[(&str, &Arc<Generator>)],
) -> Result<(), fmt::Error> {
    let mut m = enc.encode_descriptor(
        "generator_step",
        "Size of the last range reserved (segment)",
        None,
        MetricType::Gauge,
    )?;
    for (gname, g) in gens {
        if let Some(s) = g.as_segment() {
            m.encode_family(&[("generator", *gname)])?
                .encode_gauge(&s.current_step())?;
        }
    }
    let mut m = enc.encode_descriptor(
        "generator_buffered_ids",
        "IDs left in the current and standby ranges (segment)",
        None,
        MetricType::Gauge,
    )?;
    for (gname, g) in gens {
        if let Some(s) = g.as_segment() {
            let (cur, standby) = s.buffered();
            m.encode_family(&[("generator", *gname)])?
                .encode_gauge(&(cur + standby.unwrap_or(0)))?;
        }
    }
    let mut m = enc.encode_descriptor(
        "generator_worker_id",
        "Worker id the generator issues under (snowflake kinds)",
        None,
        MetricType::Gauge,
    )?;
    for (gname, g) in gens {
        if let Some(w) = super::generators::worker_id(g) {
            m.encode_family(&[("generator", *gname)])?
                .encode_gauge(&w)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "generator_lease_remaining",
        "Time left on the worker-id lease before the node must stop issuing",
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?;
    for (gname, g) in gens {
        if let Some((left_ms, _)) = super::generators::lease_status(g) {
            m.encode_family(&[("generator", *gname)])?
                .encode_gauge(&(left_ms as f64 / 1e3))?;
        }
    }
    let mut m = enc.encode_descriptor(
        "generator_clock_borrow",
        "How far issued timestamps run ahead of the clock",
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?;
    for (gname, g) in gens {
        if let Some(ms) = super::generators::borrowed_ms(g) {
            m.encode_family(&[("generator", *gname)])?
                .encode_gauge(&(ms as f64 / 1e3))?;
        }
    }
    Ok(())
}

fn encode_pool_gauges(enc: &mut DescriptorEncoder, proxy: &Proxy) -> Result<(), fmt::Error> {
    let mut pools: Vec<_> = proxy.pools.iter().collect();
    pools.sort_by(|a, b| a.0.cmp(b.0));
    let mut m = enc.encode_descriptor(
        "backend_connections_in_use",
        "Backend connections leased to sessions now",
        None,
        MetricType::Gauge,
    )?;
    for (name, p) in &pools {
        m.encode_family(&[("backend", name.as_str())])?
            .encode_gauge(&p.in_use_count())?;
    }
    let mut m = enc.encode_descriptor(
        "backend_connections_idle",
        "Backend connections idle in the pool now",
        None,
        MetricType::Gauge,
    )?;
    for (name, p) in &pools {
        let idle = p.idle_count()
            + proxy
                .account_pools(name)
                .map(|a| a.idle_count())
                .sum::<usize>();
        m.encode_family(&[("backend", name.as_str())])?
            .encode_gauge(&idle)?;
    }
    let mut m = enc.encode_descriptor(
        "backend_connections_parked",
        "Backend connections sessions lent out between transactions (pool.mode: transaction)",
        None,
        MetricType::Gauge,
    )?;
    for (name, p) in &pools {
        m.encode_family(&[("backend", name.as_str())])?
            .encode_gauge(&p.parked_count())?;
    }
    // Sessions are pinned only where they share connections: elsewhere nothing is read.
    let rows = match proxy.shares_connections {
        true => proxy.sessions.rows(),
        false => Vec::new(),
    };
    let mut m = enc.encode_descriptor(
        "sessions_pinned",
        "Sessions keeping their backend connections (pool.mode: transaction), by why",
        None,
        MetricType::Gauge,
    )?;
    for reason in crate::sql::PIN_REASONS {
        let n = rows.iter().filter(|r| r.pinned == Some(reason)).count();
        m.encode_family(&[("reason", *reason)])?.encode_gauge(&n)?;
    }
    let mut m = enc.encode_descriptor(
        "backend_connections_max",
        "The backend's pool.max_connections",
        None,
        MetricType::Gauge,
    )?;
    for (name, p) in &pools {
        m.encode_family(&[("backend", name.as_str())])?
            .encode_gauge(&p.max_connections())?;
    }
    Ok(())
}

/// The statement plan cache's counters (`route::cache`).
fn encode_plan_cache(enc: &mut DescriptorEncoder, proxy: &Proxy) -> Result<(), fmt::Error> {
    let st = proxy.plans.stats();
    for (name, help, v) in [
        (
            "plan_cache_hits",
            "Statements bound to a plan kept for their shape",
            st.hits,
        ),
        (
            "plan_cache_misses",
            "Statements planned because no plan for their shape was kept",
            st.misses,
        ),
    ] {
        enc.encode_descriptor(name, help, None, MetricType::Counter)?
            .encode_counter::<NoLabelSet, _, u64>(&v, None)?;
    }
    enc.encode_descriptor(
        "plan_cache_entries",
        "Statement plans kept now (at most plan_cache_size)",
        None,
        MetricType::Gauge,
    )?
    .encode_gauge(&st.entries)?;
    Ok(())
}
