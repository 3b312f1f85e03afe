//! This idgate: version, commit, uptime, configuration generation and the last reload's outcome.

use std::fmt::Write;
use std::time::SystemTime;

use super::super::escape::esc;
use super::duration;
use crate::exec::result_set::datetime;

pub struct View {
    pub version: &'static str,
    pub commit: &'static str,
    pub uptime_s: u64,
    pub generation: u64,
    pub config_file: Option<String>,
    /// When, what asked for it, and the generation applied or why it was refused.
    pub last_reload: Option<(SystemTime, String, Result<u64, String>)>,
    pub connections: u64,
}

pub fn gather(control: &crate::admin::Control) -> View {
    let proxy = &control.proxy;
    let reloads = &control.reloads;
    View {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("IDGATE_COMMIT"),
        uptime_s: proxy.started.elapsed().as_secs(),
        generation: proxy.plan_generation(),
        config_file: reloads.path().map(|p| p.display().to_string()),
        last_reload: reloads.last().map(|o| {
            let r = match &o.result {
                Ok(g) => Ok(*g),
                Err(e) => Err(e.to_string()),
            };
            (o.at, o.trigger.to_string(), r)
        }),
        connections: proxy.connections_accepted(),
    }
}

pub fn render(v: &View, out: &mut String) {
    let _ = write!(
        out,
        "<h2>idgate</h2><dl><dt>Version</dt><dd id=\"version\">{}</dd><dt>Commit</dt>\
         <dd><code>{}</code></dd><dt>Uptime</dt><dd>{}</dd><dt>Connections accepted</dt>\
         <dd>{}</dd><dt>Configuration generation</dt><dd id=\"generation\">{}</dd>\
         <dt>Configuration file</dt><dd>{}</dd><dt>Last reload</dt>",
        esc(v.version),
        esc(v.commit),
        duration(v.uptime_s),
        v.connections,
        v.generation,
        esc(v
            .config_file
            .as_deref()
            .unwrap_or("none (not run from a file)")),
    );
    match &v.last_reload {
        None => out.push_str("<dd>none since start</dd>"),
        Some((at, trigger, r)) => {
            let when = datetime(*at).unwrap_or_default();
            let (class, what) = match r {
                Ok(g) => ("ok", format!("applied generation {g}")),
                Err(e) => ("bad", format!("refused: {e}")),
            };
            let _ = write!(
                out,
                "<dd id=\"last-reload\" class=\"{class}\">{} UTC by {}: {}</dd>",
                esc(&when),
                esc(trigger),
                esc(&what)
            );
        }
    }
    out.push_str("</dl>");
}
