//! The console's sections: each gathers a plain view of what idgate already publishes (so a
//! test can build a large one without a proxy) and renders it as an HTML fragment.

pub mod about;
pub mod backends;
pub mod generators;
pub mod migrations;
pub mod sessions;
pub mod traffic;

use std::fmt::Write;

use super::escape::esc;

/// `n` ms as the console prints a latency.
pub fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.2} ms")
    }
}

/// Seconds as `1h 02m 03s`.
pub fn duration(s: u64) -> String {
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}h {m:02}m {s:02}s")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}

/// A rate to one decimal.
pub fn rate(r: f64) -> String {
    format!("{r:.1}/s")
}

/// The "and N more" line under a list cut at `shown` of `total`.
pub fn more(out: &mut String, shown: usize, total: usize, what: &str, where_all: &str) {
    if total > shown {
        let _ = write!(
            out,
            "<p class=\"more\">and {} more {}{}</p>",
            total - shown,
            esc(what),
            esc(where_all)
        );
    }
}

/// A horizontal bar `fraction` full (clamped to 0..=1), with an optional marker at `mark`.
pub fn bar(out: &mut String, fraction: f64, mark: Option<f64>, title: &str) {
    let pct = |f: f64| (f.clamp(0.0, 1.0) * 1000.0).round() / 10.0;
    let _ = write!(
        out,
        "<span class=\"bar\" title=\"{}\"><span class=\"fill\" style=\"width:{}%\"></span>",
        esc(title),
        pct(fraction)
    );
    if let Some(m) = mark {
        let _ = write!(
            out,
            "<span class=\"mark\" style=\"left:{}%\"></span>",
            pct(m)
        );
    }
    out.push_str("</span>");
}
