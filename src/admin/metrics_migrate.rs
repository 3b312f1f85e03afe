//! Metrics of the table moves this instance runs (`IDGATE MIGRATE`), read at scrape time: per
//! job and source backend, rows copied, row events applied and the lag; per table, how long
//! its last SWITCH held statements.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use crate::migrate::Migrations;

pub(super) fn encode(
    enc: &mut DescriptorEncoder,
    migrations: &Migrations,
) -> Result<(), fmt::Error> {
    let jobs: Vec<_> = migrations
        .running
        .iter()
        .map(|r| (r.key().clone(), r.value().clone()))
        .collect();
    let per_stream = |v: fn(&crate::migrate::progress::StreamProgress) -> i64| {
        let mut out = Vec::new();
        for (table, r) in &jobs {
            for (source, p) in &r.streams {
                out.push((table.clone(), source.clone(), v(p).max(0) as u64));
            }
        }
        out
    };
    for (name, help, kind, unit, values) in [
        (
            "migration_rows_copied",
            "Rows the copy of a moved table wrote to their new place, per source backend",
            MetricType::Counter,
            None,
            per_stream(|p| p.rows_copied.load(Relaxed)),
        ),
        (
            "migration_events_applied",
            "Row changes the catch-up applied from the source's binlog, per source backend",
            MetricType::Counter,
            None,
            per_stream(|p| p.events_applied.load(Relaxed)),
        ),
        (
            "migration_lag_events",
            "Event groups of the source not applied yet (as of the last measure)",
            MetricType::Gauge,
            None,
            per_stream(|p| p.lag_events.load(Relaxed)),
        ),
        (
            "migration_lag",
            "How far behind the source the new placement is",
            MetricType::Gauge,
            Some(Unit::Seconds),
            per_stream(|p| p.lag_seconds.load(Relaxed)),
        ),
    ] {
        let mut m = enc.encode_descriptor(name, help, unit.as_ref(), kind)?;
        for (table, source, v) in values {
            let labels = [("table", table.as_str()), ("source", source.as_str())];
            let mut f = m.encode_family(&labels)?;
            match kind {
                MetricType::Counter => f.encode_counter::<NoLabelSet, _, u64>(&v, None)?,
                _ => f.encode_gauge(&(v as i64))?,
            }
        }
    }
    let mut m = enc.encode_descriptor(
        "migration_switch_hold",
        "How long the table's last SWITCH on this instance held statements",
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?;
    for h in migrations.switch_holds.iter() {
        m.encode_family(&[("table", h.key().as_str())])?
            .encode_gauge(h.value())?;
    }
    Ok(())
}
