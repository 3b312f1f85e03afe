//! Helpers for tests of `IDGATE MIGRATE`: servers with binlogs, an admin idgate, the job's
//! status, and a table's rows as text for comparing placements.

use std::time::{Duration, Instant};

use idgate::testbed::MariaDb;
use mysql::prelude::Queryable;

use super::idgate_proc::{config_for, Idgate, APP_PASSWORD};

/// A server whose binlog a move can read.
pub fn binlog_db() -> MariaDb {
    MariaDb::start_with_binlog().unwrap_or_else(|e| panic!("{e}"))
}

/// idgate over `backends` (the first is the default) with `app` as an admin user.
pub fn admin_idgate(backends: &[(&str, &MariaDb)], extra: &str) -> Idgate {
    Idgate::start_with(|port| admin_config(port, backends, extra))
}

pub fn admin_config(port: u16, backends: &[(&str, &MariaDb)], extra: &str) -> String {
    config_for(port, backends, extra).replacen(
        &format!("    password: {APP_PASSWORD}\n"),
        &format!("    password: {APP_PASSWORD}\n    admin: true\n"),
        1,
    )
}

/// One row of `IDGATE MIGRATE STATUS`.
#[derive(Debug, Clone)]
pub struct Status {
    pub phase: String,
    pub rows_copied: u64,
    pub lag_events: Option<u64>,
    pub last_error: Option<String>,
    /// Share of the estimated rows copied (100 once copied).
    pub percent: Option<u64>,
    /// Seconds left of the copy at its pace (0 once copied).
    pub eta_seconds: Option<u64>,
}

pub fn status(c: &mut mysql::Conn, table: &str) -> Option<Status> {
    let rows: Vec<mysql::Row> = c.query(format!("IDGATE MIGRATE STATUS {table}")).unwrap();
    rows.into_iter().next().map(|r| Status {
        phase: r.get::<String, _>("phase").unwrap(),
        rows_copied: r.get::<u64, _>("rows_copied").unwrap(),
        lag_events: r.get::<Option<u64>, _>("lag_events").unwrap(),
        last_error: r.get::<Option<String>, _>("last_error").unwrap(),
        percent: r.get::<Option<u64>, _>("percent").unwrap(),
        eta_seconds: r.get::<Option<u64>, _>("eta_seconds").unwrap(),
    })
}

/// Waits until the job is `ready` with nothing left to apply, measured after every write made
/// before this call.
pub fn wait_caught_up(g: &Idgate, c: &mut mysql::Conn, table: &str, within: Duration) -> Status {
    let deadline = Instant::now() + within;
    // The lag is measured once a second: two measures after this call.
    let mut zero_since: Option<Instant> = None;
    loop {
        let s = status(c, table).expect("the job is listed");
        let zero = s.phase == "ready" && s.lag_events == Some(0);
        match (zero, zero_since) {
            (true, Some(t)) if t.elapsed() > Duration::from_millis(2500) => return s,
            (true, None) => zero_since = Some(Instant::now()),
            (false, _) => zero_since = None,
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "not caught up within {within:?}: {s:?}; idgate's log:\n{}",
            g.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every row of `sql`'s answer, each value as SQL text.
pub fn dump(c: &mut mysql::Conn, sql: &str) -> Vec<Vec<String>> {
    let rows: Vec<mysql::Row> = c.query(sql).unwrap();
    rows.into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    mysql::Value::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
                    v => v.as_sql(false),
                })
                .collect()
        })
        .collect()
}
