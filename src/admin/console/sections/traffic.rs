//! Traffic: statements a second and latency percentiles over the last minutes, by route, as
//! small SVG charts drawn from the traffic ring.

use std::fmt::Write;

use super::super::svg;
use super::super::traffic_ring::{Sample, EVERY};
use super::{ms, rate};
use crate::metrics::statement_metrics::StmtRoute;

pub struct View {
    pub samples: Vec<Sample>,
}

pub fn render(v: &View, out: &mut String) {
    let minutes = v.samples.len() as f64 * EVERY.as_secs_f64() / 60.0;
    let _ = write!(
        out,
        "<h2>Traffic</h2><p>Statements by how idgate ran them, the last {minutes:.1} minutes \
         (a sample every {} s).</p>",
        EVERY.as_secs()
    );
    if v.samples.len() < 2 {
        out.push_str("<p class=\"none\">Not enough samples yet.</p>");
        return;
    }
    let total: Vec<Option<f64>> = v
        .samples
        .iter()
        .map(|s| Some(s.routes.iter().map(|p| p.per_s).sum()))
        .collect();
    out.push_str(
        "<table><thead><tr><th>Route</th><th>Now</th><th>Statements a second</th>\
         <th>p50 / p95 / p99 now</th><th>p99 latency</th></tr></thead><tbody>",
    );
    let now_total = total.last().copied().flatten().unwrap_or(0.0);
    let _ = write!(
        out,
        "<tr data-route=\"all\"><td>all</td><td class=\"num rate\">{}</td><td>",
        rate(now_total)
    );
    svg::line(out, &total, "all statements a second", rate);
    out.push_str("</td><td></td><td></td></tr>");
    let mut idle = Vec::new();
    for r in StmtRoute::ALL {
        let i = r as usize;
        let per_s: Vec<Option<f64>> = v.samples.iter().map(|s| Some(s.routes[i].per_s)).collect();
        if per_s.iter().flatten().all(|v| *v == 0.0) {
            idle.push(r.label());
            continue;
        }
        let p99: Vec<Option<f64>> = v.samples.iter().map(|s| s.routes[i].p99_ms).collect();
        let last = v
            .samples
            .iter()
            .rev()
            .map(|s| s.routes[i])
            .find(|p| p.p50_ms.is_some());
        let pct = |p: Option<f64>| p.map_or("–".into(), ms);
        let percentiles = last.map_or("–".into(), |p| {
            format!("{} / {} / {}", pct(p.p50_ms), pct(p.p95_ms), pct(p.p99_ms))
        });
        let now = v.samples.last().map_or(0.0, |s| s.routes[i].per_s);
        let _ = write!(
            out,
            "<tr data-route=\"{}\"><td>{}</td><td class=\"num rate\">{}</td><td>",
            r.label(),
            r.label(),
            rate(now)
        );
        svg::line(
            out,
            &per_s,
            &format!("{} statements a second", r.label()),
            rate,
        );
        let _ = write!(out, "</td><td class=\"num\">{percentiles}</td><td>");
        svg::line(out, &p99, &format!("{} p99 latency", r.label()), ms);
        out.push_str("</td></tr>");
    }
    out.push_str("</tbody></table>");
    if !idle.is_empty() {
        let _ = write!(
            out,
            "<p class=\"none\">No statements on: {}.</p>",
            idle.join(", ")
        );
    }
}
