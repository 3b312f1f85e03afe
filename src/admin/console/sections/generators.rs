//! Generators: kind, ids issued and rate; a segment generator's two buffers as bars (range,
//! fill, step, where the next range is fetched), as Meituan Leaf's `/cache` page shows them; a
//! snowflake kind's worker id, lease and clock.

use std::fmt::Write;

use super::super::escape::esc;
use super::super::traffic_ring::TrafficRing;
use super::{bar, more, rate};
use crate::admin::generators::{borrowed_ms, lease_status, worker_id};
use crate::idgen::metrics::Metrics as GenMetrics;
use crate::idgen::segment::SlotView;
use crate::idgen::IdGen;

/// Most generators listed (by name); `/generators` has them all.
pub const SHOWN: usize = 50;

pub struct View {
    pub rows: Vec<Row>,
    pub total: usize,
}

pub struct Row {
    pub name: String,
    pub kind: &'static str,
    pub ids_issued: u64,
    pub rate: Option<f64>,
    pub detail: Detail,
}

pub enum Detail {
    Segment(Segment),
    Snowflake(Snowflake),
    Other,
}

pub struct Segment {
    pub tag: String,
    pub step: u64,
    /// The current buffer first.
    pub slots: [SlotView; 2],
    pub fetching: bool,
    pub fetches: u64,
    pub last_error: String,
}

pub struct Snowflake {
    pub worker_id: u64,
    /// ms of lease left and the problem, if any; `None`: a fixed worker id.
    pub lease: Option<(u64, Option<String>)>,
    pub borrowed_ms: Option<u64>,
    pub backwards: u64,
}

pub fn gather(idgen: &IdGen, ring: &TrafficRing) -> View {
    let mut all: Vec<_> = idgen.iter().collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    let total = all.len();
    let rows = all
        .into_iter()
        .take(SHOWN)
        .map(|(name, g)| {
            let m = g.metrics();
            let detail = if let Some(s) = g.as_segment() {
                let (slots, fetching) = s.slots();
                Detail::Segment(Segment {
                    tag: s.tag().to_string(),
                    step: s.current_step(),
                    slots,
                    fetching,
                    fetches: GenMetrics::get(&m.ranges_fetched),
                    last_error: s.last_error(),
                })
            } else if let Some(w) = worker_id(g) {
                Detail::Snowflake(Snowflake {
                    worker_id: w,
                    lease: lease_status(g),
                    borrowed_ms: borrowed_ms(g),
                    backwards: GenMetrics::get(&m.clock_backwards),
                })
            } else {
                Detail::Other
            };
            Row {
                name: name.clone(),
                kind: g.kind(),
                ids_issued: GenMetrics::get(&m.ids_issued),
                rate: ring.generator_rate(name),
                detail,
            }
        })
        .collect();
    View { rows, total }
}

pub fn render(v: &View, out: &mut String) {
    out.push_str("<h2>Generators</h2>");
    if v.rows.is_empty() {
        out.push_str("<p class=\"none\">No generators are configured.</p>");
        return;
    }
    out.push_str(
        "<table><thead><tr><th>Generator</th><th>Kind</th><th>Ids issued</th><th>Rate</th>\
         <th>State</th></tr></thead><tbody>",
    );
    for r in &v.rows {
        let bad = match &r.detail {
            Detail::Segment(s) => !s.last_error.is_empty(),
            Detail::Snowflake(s) => s.lease.as_ref().is_some_and(|(_, why)| why.is_some()),
            Detail::Other => false,
        };
        let _ = write!(
            out,
            "<tr data-generator=\"{}\"{}><td>{}</td><td>{}</td><td class=\"ids num\">{}</td>\
             <td class=\"rate num\">{}</td><td>",
            esc(&r.name),
            if bad { " class=\"bad\"" } else { "" },
            esc(&r.name),
            r.kind,
            r.ids_issued,
            r.rate.map_or("–".into(), rate),
        );
        match &r.detail {
            Detail::Segment(s) => segment(s, out),
            Detail::Snowflake(s) => snowflake(s, out),
            Detail::Other => out.push_str("no state kept"),
        }
        out.push_str("</td></tr>");
    }
    out.push_str("</tbody></table>");
    more(
        out,
        v.rows.len(),
        v.total,
        "generators",
        " (GET /generators lists all)",
    );
}

fn segment(s: &Segment, out: &mut String) {
    let _ = write!(
        out,
        "<div class=\"seg\">tag <code>{}</code> · step {} · {} ranges fetched",
        esc(&s.tag),
        s.step,
        s.fetches
    );
    let standby_ready = s.slots[1].ready;
    for slot in &s.slots {
        buffer(slot, s.fetching, standby_ready, out);
    }
    if !s.last_error.is_empty() {
        let _ = write!(
            out,
            "<div class=\"err\">last fetch failed: {}</div>",
            esc(&s.last_error)
        );
    }
    out.push_str("</div>");
}

/// One buffer: the share of its range used, and on the current one where the standby range is
/// fetched.
fn buffer(slot: &SlotView, fetching: bool, standby_ready: bool, out: &mut String) {
    let which = if slot.current { "current" } else { "standby" };
    let _ = write!(
        out,
        "<div class=\"buf {which}\"><span class=\"lbl\">{which}</span>"
    );
    if !slot.ready || slot.end <= slot.first {
        bar(out, 0.0, None, "no range");
        let what = if fetching { "fetching…" } else { "empty" };
        let _ = write!(out, "<span class=\"nums\">{what}</span></div>");
        return;
    }
    let size = (slot.end - slot.first) as f64;
    let used = slot
        .next
        .saturating_sub(slot.first)
        .min(slot.end - slot.first) as f64
        / size;
    let left = slot.end.saturating_sub(slot.next);
    let mark = slot
        .current
        .then(|| slot.preload_mark.saturating_sub(slot.first) as f64 / size);
    let title = format!(
        "range [{}, {}): next id {}, {} left",
        slot.first, slot.end, slot.next, left
    );
    bar(out, used, mark, &title);
    let _ = write!(
        out,
        "<span class=\"nums\">{} … {} · next {} · {} left",
        slot.first,
        slot.end - 1,
        slot.next.min(slot.end),
        left
    );
    if slot.current {
        if standby_ready {
            out.push_str(" · next range ready");
        } else if fetching {
            out.push_str(" · fetching the next range");
        } else {
            let _ = write!(out, " · next fetch at {}", slot.preload_mark);
        }
    }
    out.push_str("</span></div>");
}

fn snowflake(s: &Snowflake, out: &mut String) {
    let _ = write!(out, "worker id {} · ", s.worker_id);
    match &s.lease {
        None => out.push_str("fixed worker id"),
        Some((left, None)) => {
            let _ = write!(out, "lease valid for {:.1} s", *left as f64 / 1e3);
        }
        Some((_, Some(why))) => {
            let _ = write!(out, "<span class=\"err\">{}</span>", esc(why));
        }
    }
    match s.borrowed_ms {
        Some(b) if b > 0 => {
            let _ = write!(out, " · clock: {b} ms ahead (borrowed)");
        }
        _ => out.push_str(" · clock: in step"),
    }
    if s.backwards > 0 {
        let _ = write!(out, " · went backwards {} times", s.backwards);
    }
}
