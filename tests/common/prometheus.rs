//! Reading idgate's `/metrics` in tests: one scrape over HTTP with curl, and single samples.

use std::process::Command;

use super::clients::require_tool;

/// The Prometheus text of the admin listener on `port`.
pub fn scrape(port: u16) -> String {
    let out = Command::new(require_tool("curl", "curl"))
        .args(["-sS", "--max-time", "20", "-f"])
        .arg(format!("http://127.0.0.1:{port}/metrics"))
        .output()
        .expect("run curl");
    assert!(
        out.status.success(),
        "GET /metrics: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("metrics are UTF-8")
}

/// The value of the sample `series` (name and labels exactly as exposed), if present.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .split(' ')
            .next()?
            .parse()
            .ok()
    })
}

/// [`sample`], which must be there.
pub fn must_sample(text: &str, series: &str) -> f64 {
    sample(text, series).unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
}
