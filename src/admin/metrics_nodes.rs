//! The nodes of backends with replicas, read at scrape time: each node's role and lag, the
//! reads replicas served, primary changes, and how reads after a session's own write fared.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::backend_nodes::node_rows;
use crate::exec::topology::Topology;
use crate::proxy::Proxy;

const ROLES: [&str; 4] = ["primary", "replica", "excluded", "down"];

pub fn encode(enc: &mut DescriptorEncoder, proxy: &Proxy) -> Result<(), fmt::Error> {
    let mut groups: Vec<(&String, &Topology)> = proxy
        .pools
        .iter()
        .filter_map(|(n, p)| p.topology().map(|t| (n, &**t)))
        .collect();
    groups.sort_by(|a, b| a.0.cmp(b.0));
    let rows: Vec<_> = groups
        .iter()
        .map(|(n, t)| (n.as_str(), node_rows(Some(t), "")))
        .collect();
    let mut m = enc.encode_descriptor(
        "backend_node_role",
        "1 for the role each node of a replication group has now (primary, replica, excluded, down)",
        None,
        MetricType::Gauge,
    )?;
    for (backend, nodes) in &rows {
        for n in nodes {
            for role in ROLES {
                let labels = [
                    ("backend", *backend),
                    ("node", n.address.as_str()),
                    ("role", role),
                ];
                m.encode_family(&labels)?
                    .encode_gauge(&i64::from(n.role == role))?;
            }
        }
    }
    let mut m = enc.encode_descriptor(
        "backend_node_lag",
        "A replica's Seconds_Behind_Master at its last poll",
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?;
    for (backend, nodes) in &rows {
        for n in nodes {
            if let Some(lag) = n.lag_s {
                let labels = [("backend", *backend), ("node", n.address.as_str())];
                m.encode_family(&labels)?.encode_gauge(&(lag as i64))?;
            }
        }
    }
    let mut m = enc.encode_descriptor(
        "backend_node_reads",
        "Reads of reads: replica sessions each node served",
        None,
        MetricType::Counter,
    )?;
    for (backend, nodes) in &rows {
        for n in nodes {
            // The primary's reads are not counted apart: 0.
            let labels = [("backend", *backend), ("node", n.address.as_str())];
            m.encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&n.reads.unwrap_or(0), None)?;
        }
    }
    for (name, help, read) in COUNTS {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (backend, t) in &groups {
            m.encode_family(&[("backend", backend.as_str())])?
                .encode_counter::<NoLabelSet, _, u64>(&read(t).load(Relaxed), None)?;
        }
    }
    Ok(())
}

type Count = fn(&Topology) -> &std::sync::atomic::AtomicU64;

const COUNTS: [(&str, &str, Count); 6] = [
    (
        "backend_primary_changes",
        "Times another node of the group became the writable one",
        |t| &t.counts.primary_changes,
    ),
    (
        "causal_read_waits",
        "Reads that waited on a replica for the session's last write and got it in time",
        |t| &t.counts.causal_waits,
    ),
    (
        "causal_read_fallbacks",
        "Reads sent to the primary because no replica applied the session's last write in time",
        |t| &t.counts.causal_fallbacks,
    ),
    (
        "backend_switchovers",
        "IDGATE SWITCHOVERs of the group this instance completed",
        |t| &t.counts.switchovers,
    ),
    (
        "backend_failovers",
        "Times the primary stopped answering and statements were held until another node became writable",
        |t| &t.counts.failovers,
    ),
    (
        "backend_held_statements",
        "Statements and connection requests that waited while the group's primary changed",
        |t| &t.gate.waited,
    ),
];
