//! Backends: every node of every backend with its role and lag (the rows of SHOW IDGATE
//! BACKENDS), the pool's use, its errors and ping; and what `/ready` says, failing checks red.

use std::fmt::Write;

use super::super::escape::esc;
use super::{bar, more};
use crate::admin::backend_nodes::NodeRow;
use crate::admin::backend_rows::BackendRow;
use crate::admin::ready::Readiness;

/// Most node rows listed.
pub const SHOWN: usize = 64;

pub struct View {
    pub rows: Vec<BackendRow>,
    pub total: usize,
    pub ready: Readiness,
}

pub fn cap(mut rows: Vec<BackendRow>, ready: Readiness) -> View {
    let total = rows.len();
    rows.truncate(SHOWN);
    View { rows, total, ready }
}

pub fn render(v: &View, out: &mut String) {
    out.push_str("<h2>Backends</h2>");
    out.push_str(
        "<table><thead><tr><th>Backend</th><th>Node</th><th>Role</th><th>Lag</th>\
         <th>Pool (in use / idle / max)</th><th>Errors</th><th>Ping</th></tr></thead><tbody>",
    );
    for r in &v.rows {
        row(r, out);
    }
    out.push_str("</tbody></table>");
    more(
        out,
        v.rows.len(),
        v.total,
        "nodes",
        " (SHOW IDGATE BACKENDS lists all)",
    );
    let ready = v.ready.ready();
    let _ = write!(
        out,
        "<h3>/ready: <span id=\"ready-state\" class=\"{}\">{}</span></h3><ul class=\"checks\">",
        if ready { "ok" } else { "bad" },
        if ready { "ready" } else { "not ready" }
    );
    for (name, r) in v.ready.checks.iter().take(SHOWN) {
        let (class, detail) = match r {
            Ok(d) => ("ok", d),
            Err(e) => ("bad", e),
        };
        let _ = write!(
            out,
            "<li class=\"{class}\" data-check=\"{}\"><b>{}</b>: {}</li>",
            esc(name),
            esc(name),
            esc(detail)
        );
    }
    out.push_str("</ul>");
    more(
        out,
        SHOWN.min(v.ready.checks.len()),
        v.ready.checks.len(),
        "checks",
        " (GET /ready lists all)",
    );
}

fn row(r: &BackendRow, out: &mut String) {
    let n: &NodeRow = &r.node;
    let _ = write!(
        out,
        "<tr data-backend=\"{}\" data-node=\"{}\" class=\"{}\"><td>{}</td><td>{}{}</td>\
         <td class=\"role\">{}{}</td><td class=\"num\">{}</td><td class=\"pool\">",
        esc(&r.name),
        esc(&n.address),
        if r.reachable { "ok" } else { "bad" },
        esc(&r.name),
        esc(&n.address),
        if n.writer {
            " <small>(writes)</small>"
        } else {
            ""
        },
        esc(n.role),
        if n.why.is_empty() {
            String::new()
        } else {
            format!(" <small>{}</small>", esc(&n.why))
        },
        n.lag_s.map_or("–".into(), |s| format!("{s} s")),
    );
    if n.writer {
        let used = r.in_use as f64 / r.max.max(1) as f64;
        bar(
            out,
            used,
            None,
            &format!("{} of {} connections in use", r.in_use, r.max),
        );
        let _ = write!(out, " {} / {} / {}", r.in_use, r.idle, r.max);
    } else {
        out.push('–');
    }
    let errors = r.acquire_timeouts + r.connect_errors;
    let _ = write!(
        out,
        "</td><td class=\"num{}\" title=\"acquire timeouts {}, connect errors {}\">{}</td>\
         <td class=\"ping\">{}</td></tr>",
        if errors > 0 { " warn" } else { "" },
        r.acquire_timeouts,
        r.connect_errors,
        errors,
        esc(&r.detail)
    );
}
