//! Migrations: each `IDGATE MIGRATE` job with its phase, rows copied against the estimate as a
//! bar, the catch-up's lag, the copy's ETA and the last error.

use std::fmt::Write;

use super::super::escape::esc;
use super::{duration, more};
use crate::migrate::status_rows::JobStatus;

/// Most jobs listed; IDGATE MIGRATE STATUS has them all.
pub const SHOWN: usize = 50;

pub struct View {
    /// The jobs, or why the store could not be read.
    pub jobs: Result<Vec<JobStatus>, String>,
}

pub fn render(v: &View, out: &mut String) {
    out.push_str("<h2>Migrations</h2>");
    let jobs = match &v.jobs {
        Err(e) => {
            let _ = write!(out, "<p class=\"err\">cannot read the jobs: {}</p>", esc(e));
            return;
        }
        Ok(j) if j.is_empty() => {
            out.push_str("<p class=\"none\">No IDGATE MIGRATE jobs.</p>");
            return;
        }
        Ok(j) => j,
    };
    out.push_str(
        "<table><thead><tr><th>Table</th><th>Phase</th><th>Copied</th><th>Catch-up lag</th>\
         <th>ETA</th><th>Last error</th></tr></thead><tbody>",
    );
    for j in jobs.iter().take(SHOWN) {
        job(j, out);
    }
    out.push_str("</tbody></table>");
    more(
        out,
        SHOWN.min(jobs.len()),
        jobs.len(),
        "jobs",
        " (IDGATE MIGRATE STATUS lists all)",
    );
}

fn job(j: &JobStatus, out: &mut String) {
    let failed = j.phase == "failed";
    let _ = write!(
        out,
        "<tr data-table=\"{}\"{}><td>{}<br><small>{} → {}</small></td><td class=\"phase\">{}</td>\
         <td class=\"copied\" data-rows=\"{}\">",
        esc(&j.table),
        if failed { " class=\"bad\"" } else { "" },
        esc(&j.table),
        esc(&j.sources.join(", ")),
        esc(&j.target),
        esc(&j.phase),
        j.rows_copied,
    );
    match j.percent {
        Some(p) => {
            let _ = write!(
                out,
                "<progress max=\"100\" value=\"{p}\">{p}%</progress> {p}% · "
            );
        }
        None => out.push_str("<progress max=\"100\"></progress> "),
    }
    let _ = write!(
        out,
        "{} of ~{} rows</td><td class=\"num\">",
        j.rows_copied, j.rows_estimated
    );
    match (j.lag_events, j.lag_seconds) {
        (Some(e), Some(s)) => {
            let _ = write!(out, "{e} events, {s} s");
        }
        (Some(e), None) => {
            let _ = write!(out, "{e} events");
        }
        _ => out.push('–'),
    }
    let eta = match j.eta_seconds {
        Some(0) => "copied".to_string(),
        Some(s) => duration(s),
        None => "–".into(),
    };
    let _ = write!(
        out,
        "</td><td class=\"eta num\">{}</td><td class=\"err\">{}</td></tr>",
        eta,
        esc(j.last_error.as_deref().unwrap_or(""))
    );
}
