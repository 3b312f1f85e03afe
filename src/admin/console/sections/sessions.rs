//! Sessions: how many per user and state, and the slowest of the recent slow statements (the
//! slow log's, literals already replaced).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::SystemTime;

use super::super::escape::esc;
use super::{more, ms};
use crate::admin::slow_log::Kept;
use crate::proxy::sessions::Row;

/// Most (user, state) groups listed.
pub const GROUPS_SHOWN: usize = 50;
/// Slow statements listed, slowest first.
pub const SLOW_SHOWN: usize = 20;

pub struct Group {
    pub user: String,
    pub state: &'static str,
    pub count: usize,
    pub in_transaction: usize,
}

pub struct View {
    pub total: usize,
    pub groups: Vec<Group>,
    pub groups_total: usize,
    pub slow: Vec<Kept>,
    pub slow_total: usize,
    /// `slow_statement_ms`, when slow statements are logged at all.
    pub slow_ms: Option<u64>,
}

/// Groups `rows` by user and state (the most populous first) and picks the slowest of `slow`.
pub fn gather(rows: Vec<Row>, mut slow: Vec<Kept>, slow_ms: Option<u64>) -> View {
    let total = rows.len();
    let mut by: BTreeMap<(String, &'static str), (usize, usize)> = BTreeMap::new();
    for r in rows {
        let e = by.entry((r.user, r.command)).or_default();
        e.0 += 1;
        e.1 += usize::from(r.in_transaction);
    }
    let mut groups: Vec<Group> = by
        .into_iter()
        .map(|((user, state), (count, in_transaction))| Group {
            user,
            state,
            count,
            in_transaction,
        })
        .collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.count));
    let groups_total = groups.len();
    groups.truncate(GROUPS_SHOWN);
    let slow_total = slow.len();
    slow.sort_by_key(|s| std::cmp::Reverse(s.took));
    slow.truncate(SLOW_SHOWN);
    View {
        total,
        groups,
        groups_total,
        slow,
        slow_total,
        slow_ms,
    }
}

pub fn render(v: &View, out: &mut String) {
    let _ = write!(
        out,
        "<h2>Sessions</h2><p><span id=\"sessions-total\">{}</span> sessions</p>",
        v.total
    );
    if !v.groups.is_empty() {
        out.push_str(
            "<table><thead><tr><th>User</th><th>State</th><th>Sessions</th>\
             <th>In a transaction</th></tr></thead><tbody>",
        );
        for g in &v.groups {
            let _ = write!(
                out,
                "<tr data-user=\"{}\" data-state=\"{}\"><td>{}</td><td>{}</td>\
                 <td class=\"count num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(&g.user),
                g.state,
                esc(&g.user),
                g.state,
                g.count,
                g.in_transaction
            );
        }
        out.push_str("</tbody></table>");
        more(
            out,
            v.groups.len(),
            v.groups_total,
            "user and state groups",
            " (SHOW PROCESSLIST lists every session)",
        );
    }
    out.push_str("<h3>Slowest recent statements</h3>");
    let Some(limit) = v.slow_ms else {
        out.push_str(
            "<p class=\"none\">Slow statements are not logged: set <code>slow_statement_ms</code>.</p>",
        );
        return;
    };
    if v.slow.is_empty() {
        let _ = write!(out, "<p class=\"none\">None slower than {limit} ms.</p>");
        return;
    }
    out.push_str(
        "<table class=\"slow\"><thead><tr><th>Took</th><th>When</th><th>User</th><th>Route</th>\
         <th>Rows</th><th>Statement</th></tr></thead><tbody>",
    );
    let now = SystemTime::now();
    for s in &v.slow {
        let ago = now.duration_since(s.at).map_or(0, |d| d.as_secs());
        let _ = write!(
            out,
            "<tr><td class=\"num\">{}</td><td>{} ago</td><td>{}</td><td>{} {}</td>\
             <td class=\"num\">{}</td><td><code>{}</code></td></tr>",
            ms(s.took.as_secs_f64() * 1e3),
            super::duration(ago),
            esc(&s.user),
            s.route,
            s.kind,
            s.rows,
            esc(&s.text)
        );
    }
    out.push_str("</tbody></table>");
    more(
        out,
        v.slow.len(),
        v.slow_total,
        "slow statements",
        " (in the log at WARN)",
    );
}
