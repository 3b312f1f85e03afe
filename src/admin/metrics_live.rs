//! Families read at scrape time from atomics other modules keep: statement latencies, errors
//! sent to clients, backend pool waits and failures, XA recovery and TLS handshakes.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use crate::metrics::client_errors::ClientErrors;
use crate::metrics::statement_metrics::{Statements, StmtRoute};
use crate::proxy::Proxy;

pub(super) struct LiveCollector {
    pub statements: Arc<Statements>,
    pub errors: Arc<ClientErrors>,
    pub proxy: Weak<Proxy>,
    pub migrations: Weak<crate::migrate::Migrations>,
}

impl fmt::Debug for LiveCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LiveCollector")
    }
}

impl Collector for LiveCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), fmt::Error> {
        let mut m = enc.encode_descriptor(
            "statement_duration",
            "Time from a statement's arrival to its last answer packet, by route",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for r in StmtRoute::ALL {
            self.statements.durations[r as usize].encode(&mut m, &[("route", r.label())])?;
        }
        let (codes, other) = self.errors.snapshot();
        let mut m = enc.encode_descriptor(
            "client_errors",
            "Error packets sent to clients, by MySQL error code (idgate's own and relayed)",
            None,
            MetricType::Counter,
        )?;
        for (code, n) in codes {
            let code = code.to_string();
            m.encode_family(&[("code", code.as_str())])?
                .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
        }
        m.encode_family(&[("code", "other")])?
            .encode_counter::<NoLabelSet, _, u64>(&other, None)?;
        let mut m = enc.encode_descriptor(
            "tls_handshakes",
            "TLS handshakes with clients, by outcome",
            None,
            MetricType::Counter,
        )?;
        for (outcome, n) in crate::tls::outcomes::CLIENT_HANDSHAKES.snapshot() {
            m.encode_family(&[("outcome", outcome)])?
                .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
        }
        if let Some(proxy) = self.proxy.upgrade() {
            encode_pools(&mut enc, &proxy)?;
            encode_xa(&mut enc, &proxy)?;
        }
        if let Some(migrations) = self.migrations.upgrade() {
            super::metrics_migrate::encode(&mut enc, &migrations)?;
        }
        Ok(())
    }
}

fn encode_pools(enc: &mut DescriptorEncoder, proxy: &Proxy) -> Result<(), fmt::Error> {
    let mut pools: Vec<_> = proxy.pools.iter().collect();
    pools.sort_by(|a, b| a.0.cmp(b.0));
    let mut m = enc.encode_descriptor(
        "backend_waiting_sessions",
        "Sessions waiting for a free connection to the backend now",
        None,
        MetricType::Gauge,
    )?;
    for (name, p) in &pools {
        m.encode_family(&[("backend", name.as_str())])?
            .encode_gauge(&p.stats.waiting_now())?;
    }
    let mut m = enc.encode_descriptor(
        "backend_acquire_duration",
        "Time a session took to get a backend connection (waiting and a fresh login included)",
        Some(&Unit::Seconds),
        MetricType::Histogram,
    )?;
    for (name, p) in &pools {
        p.stats
            .acquire
            .encode(&mut m, &[("backend", name.as_str())])?;
    }
    let mut m = enc.encode_descriptor(
        "backend_acquire_errors",
        "Failures to get a backend connection: `timeout` (none free within acquire_timeout_ms) or `connect` (a new one could not be opened)",
        None,
        MetricType::Counter,
    )?;
    for (name, p) in &pools {
        for (reason, n) in [
            ("timeout", p.stats.acquire_timeouts()),
            ("connect", p.stats.connect_errors()),
        ] {
            m.encode_family(&[("backend", name.as_str()), ("reason", reason)])?
                .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "backend_takeovers",
        "Parked connections a session took over from the session that lent them \
         (pool.mode: transaction)",
        None,
        MetricType::Counter,
    )?;
    for (name, p) in &pools {
        m.encode_family(&[("backend", name.as_str())])?
            .encode_counter::<NoLabelSet, _, u64>(&p.stats.takeovers(), None)?;
    }
    Ok(())
}

fn encode_xa(enc: &mut DescriptorEncoder, proxy: &Proxy) -> Result<(), fmt::Error> {
    let Some(xa) = &proxy.xa else {
        return Ok(());
    };
    let s = &xa.stats;
    let mut m = enc.encode_descriptor(
        "xa_recovery_passes",
        "XA recovery passes over the backends (at startup and after unfinished commits)",
        None,
        MetricType::Counter,
    )?;
    m.encode_counter::<NoLabelSet, _, u64>(&s.passes.load(Relaxed), None)?;
    let mut m = enc.encode_descriptor(
        "xa_recovered_branches",
        "Prepared XA branches recovery finished, by action",
        None,
        MetricType::Counter,
    )?;
    for (action, n) in [
        ("committed", s.committed.load(Relaxed)),
        ("rolled_back", s.rolled_back.load(Relaxed)),
    ] {
        m.encode_family(&[("action", action)])?
            .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
    }
    let mut m = enc.encode_descriptor(
        "xa_in_doubt_branches",
        "Prepared XA branches the last recovery pass left undecided",
        None,
        MetricType::Gauge,
    )?;
    m.encode_gauge(&(s.in_doubt.load(Relaxed) as i64))?;
    Ok(())
}
