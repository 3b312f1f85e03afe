//! Statement metrics, client error and refusal counters, pool, XA and TLS families, read back
//! over HTTP from /metrics after known traffic through idgate in front of two real MariaDB
//! shards; the Grafana dashboard names only metrics a real scrape has, and the book's metrics
//! reference names exactly those the scrape describes; the slow statement log
//! as a JSON line in idgate's stderr.

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use common::clients::require_tool;
use common::idgate_proc::{config_for, APP_USER};
use common::prometheus::scrape;
use common::{direct, free_port, shared_db, start_db, Idgate, DATABASE, ORDERS_MOD_2};
use mysql::prelude::Queryable;
use serde_json::Value;

const DDL: &str = "CREATE TABLE orders (id BIGINT PRIMARY KEY, k INT NOT NULL)";

/// The value of `series`, 0 when absent (a family not touched yet).
fn sample(text: &str, series: &str) -> f64 {
    common::prometheus::sample(text, series).unwrap_or(0.0)
}

fn has_series(text: &str, series: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix(series)
            .is_some_and(|rest| rest.starts_with(' '))
    })
}

fn stmts(route: &str, kind: &str) -> String {
    format!(r#"idgate_statements_total{{route="{route}",kind="{kind}"}}"#)
}

fn duration_count(route: &str) -> String {
    format!(r#"idgate_statement_duration_seconds_count{{route="{route}"}}"#)
}

/// The mysql CLI through idgate: (success, stderr).
fn cli(port: u16, user: &str, password: &str, ssl: bool, sql: &str) -> (bool, String) {
    let mut cmd = Command::new(require_tool("mysql", "mariadb-client"));
    cmd.args(["-h", "127.0.0.1", "-P", &port.to_string()])
        .arg(format!("-u{user}"))
        .arg(format!("-p{password}"))
        .args(["--connect-timeout=10", "-N", "-e", sql]);
    cmd.arg(if ssl { "--ssl" } else { "--skip-ssl" });
    let out = cmd.output().expect("run mysql");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every `idgate_…` metric name a PromQL expression in the dashboard JSON queries.
fn dashboard_metrics(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "expr" {
                    let expr = v.as_str().expect("expr is a string");
                    let mut rest = expr;
                    while let Some(i) = rest.find("idgate_") {
                        let name: String = rest[i..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        rest = &rest[i + name.len()..];
                        out.insert(name);
                    }
                } else {
                    dashboard_metrics(v, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| dashboard_metrics(v, out)),
        _ => {}
    }
}

#[test]
fn known_traffic_moves_exactly_the_statement_error_and_commit_counters() {
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        direct(db).query_drop(DDL).unwrap();
    }
    let admin = free_port().unwrap();
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            &format!("{ORDERS_MOD_2}admin:\n  listen: 127.0.0.1:{admin}\ntls: auto\n"),
        )
        .replace(
            "users:\n",
            "users:\n  - name: secure\n    password: s3cure\n    require_tls: true\n",
        )
    });
    let mut c = g.conn();
    let before = scrape(admin);

    // relayed: 3 selects (one of them an error, one a prepared statement).
    let _: Option<u64> = c.query_first("SELECT 1").unwrap();
    let err = c.query_drop("SELECT * FROM no_such_table").unwrap_err();
    assert!(err.to_string().contains("1146"), "{err}");
    let seven: Option<u64> = c.exec_first("SELECT ?", (7,)).unwrap();
    assert_eq!(seven, Some(7));
    // insert_ids: ids generated, two rows per shard.
    c.query_drop("INSERT INTO orders (k) VALUES (1), (2), (3), (4)")
        .unwrap();
    let first = c.last_insert_id();
    // single_shard, scatter (concatenated), merged.
    let k: Option<i64> = c
        .query_first(format!("SELECT k FROM orders WHERE id = {first}"))
        .unwrap();
    assert_eq!(k, Some(1));
    let ids: Vec<u64> = c.query("SELECT id FROM orders WHERE k > 1").unwrap();
    assert_eq!(ids.len(), 3);
    let ks: Vec<i64> = c
        .query("SELECT k FROM orders ORDER BY k DESC LIMIT 3")
        .unwrap();
    assert_eq!(ks, vec![4, 3, 2]);
    // Prepared statements idgate runs itself count by the route their execution took.
    let k: Option<i64> = c
        .exec_first("SELECT k FROM orders WHERE id = ?", (first,))
        .unwrap();
    assert_eq!(k, Some(1));
    let ids: Vec<u64> = c.exec("SELECT id FROM orders WHERE k > ?", (1,)).unwrap();
    assert_eq!(ids.len(), 3);
    // idgate: NEXTVAL.
    let _: Option<u64> = c.query_first("SELECT NEXTVAL(seq)").unwrap();
    // transaction: an XA two-phase commit (rows on both shards).
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO orders (k) VALUES (10), (11)")
        .unwrap();
    c.query_drop("COMMIT").unwrap();
    // A refused login (wrong password), a refused user without TLS, a login over TLS.
    let refused = mysql::Conn::new(
        mysql::Opts::from_url(&format!(
            "mysql://{APP_USER}:wrong@127.0.0.1:{}/{DATABASE}",
            g.port
        ))
        .unwrap(),
    );
    assert!(refused.is_err());
    let (ok, stderr) = cli(g.port, "secure", "s3cure", false, "SELECT 1");
    assert!(!ok && stderr.contains("1045"), "{stderr}");
    let (ok, stderr) = cli(g.port, "secure", "s3cure", true, "SELECT 1");
    assert!(ok, "{stderr}");

    let after = scrape(admin);
    let delta = |series: &str| sample(&after, series) - sample(&before, series);
    let expected = [
        ("relayed", "select", 3.0),
        ("insert_ids", "insert", 2.0),
        ("single_shard", "select", 2.0),
        ("scatter", "select", 2.0),
        ("merged", "select", 1.0),
        ("idgate", "select", 1.0),
        ("transaction", "transaction", 2.0),
    ];
    // The TLS login's `SELECT 1` (and whatever the CLI sends first) is relayed too: counted
    // separately below; every other series stays as it was.
    let cli_relayed = delta(&stmts("relayed", "select")) - 3.0;
    let cli_other = delta(&stmts("relayed", "other"));
    assert!(cli_relayed >= 1.0, "{after}");
    for route in [
        "relayed",
        "single_shard",
        "scatter",
        "merged",
        "insert_ids",
        "idgate",
        "transaction",
    ] {
        for kind in [
            "select",
            "insert",
            "update",
            "delete",
            "ddl",
            "transaction",
            "other",
        ] {
            let want = expected
                .iter()
                .find(|(r, k, _)| *r == route && *k == kind)
                .map_or(0.0, |e| e.2);
            let want = match (route, kind) {
                ("relayed", "select") => want + cli_relayed,
                ("relayed", "other") => cli_other,
                _ => want,
            };
            let s = stmts(route, kind);
            assert!(has_series(&after, &s), "{s} missing:\n{after}");
            assert_eq!(delta(&s), want, "{s}");
        }
        // One latency observation per statement.
        let total: f64 = expected
            .iter()
            .filter(|(r, _, _)| *r == route)
            .map(|e| e.2)
            .sum();
        let total = if route == "relayed" {
            total + cli_relayed + cli_other
        } else {
            total
        };
        assert_eq!(delta(&duration_count(route)), total, "{route}");
        let inf =
            format!(r#"idgate_statement_duration_seconds_bucket{{le="+Inf",route="{route}"}}"#);
        assert_eq!(sample(&after, &inf), sample(&after, &duration_count(route)));
    }
    // The merge read min(3, rows there) from each shard.
    let mut merged_rows = 0;
    for db in &dbs {
        let n: Option<u64> = direct(db)
            .query_first("SELECT COUNT(*) FROM orders WHERE k <= 4")
            .unwrap();
        merged_rows += n.unwrap().min(3);
    }
    assert_eq!(
        delta("idgate_merged_rows_total"),
        merged_rows as f64,
        "{after}"
    );
    assert_eq!(delta(r#"idgate_client_errors_total{code="1146"}"#), 1.0);
    assert_eq!(delta(r#"idgate_client_errors_total{code="1045"}"#), 2.0);
    assert_eq!(delta(r#"idgate_client_errors_total{code="other"}"#), 0.0);
    let refused = |reason: &str| {
        delta(&format!(
            r#"idgate_client_connections_refused_total{{reason="{reason}"}}"#
        ))
    };
    assert_eq!(refused("auth_failed"), 1.0);
    assert_eq!(refused("tls_required"), 1.0);
    assert_eq!(refused("max_connections"), 0.0);
    // The autocommit INSERT of four rows wrote on both shards too: two two-phase commits.
    assert_eq!(
        delta(r#"idgate_xa_commits_total{phase="two",outcome="committed"}"#),
        2.0
    );
    assert_eq!(
        delta(r#"idgate_xa_commits_total{phase="two",outcome="failed"}"#),
        0.0
    );
    assert_eq!(delta(r#"idgate_tls_handshakes_total{outcome="ok"}"#), 1.0);
    assert_eq!(sample(&after, "idgate_xa_in_doubt_branches"), 0.0);
    assert!(
        has_series(&after, "idgate_xa_recovery_passes_total"),
        "{after}"
    );
    for b in ["shard0", "shard1"] {
        let acq = format!(r#"idgate_backend_acquire_duration_seconds_count{{backend="{b}"}}"#);
        assert!(sample(&after, &acq) >= 1.0, "{acq}:\n{after}");
        let waiting = format!(r#"idgate_backend_waiting_sessions{{backend="{b}"}}"#);
        assert!(has_series(&after, &waiting), "{waiting}");
        assert_eq!(sample(&after, &waiting), 0.0);
        let timeouts =
            format!(r#"idgate_backend_acquire_errors_total{{backend="{b}",reason="timeout"}}"#);
        assert!(has_series(&after, &timeouts), "{timeouts}");
        assert_eq!(sample(&after, &timeouts), 0.0);
    }

    // The dashboard queries only what this scrape exposes.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docker/grafana/dashboards/idgate.json");
    let text = std::fs::read_to_string(&path).expect("dashboard JSON");
    let dash: Value = serde_json::from_str(&text).expect("dashboard is JSON");
    let mut names = BTreeSet::new();
    dashboard_metrics(&dash, &mut names);
    assert!(names.len() >= 10, "{names:?}");
    for name in &names {
        let exposed = after.lines().any(|l| {
            l.strip_prefix(name.as_str())
                .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
        });
        assert!(
            exposed,
            "the dashboard queries {name}, which /metrics does not expose"
        );
    }

    // The book's metrics reference lists exactly the families this scrape describes: a
    // counter as its `_total` series, anything else by its name.
    let families: BTreeSet<String> = after
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| {
            let (name, kind) = l.split_once(' ')?;
            Some(if kind == "counter" {
                format!("{name}_total")
            } else {
                name.to_string()
            })
        })
        .collect();
    let reference = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/reference/metrics.md"),
    )
    .expect("the metrics reference");
    let documented: BTreeSet<String> = reference
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    let undocumented: Vec<&String> = families.difference(&documented).collect();
    let unknown: Vec<&String> = documented.difference(&families).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "docs/src/reference/metrics.md and /metrics disagree:\n  not documented: \
         {undocumented:?}\n  not exposed: {unknown:?}"
    );
}

#[test]
fn a_slow_statement_is_logged_as_json_without_its_literals() {
    let db = shared_db();
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", db)],
            "slow_statement_ms: 100\nlog_format: json\n",
        )
    });
    let mut c = g.conn();
    let _: Option<u64> = c.query_first("SELECT 1").unwrap();
    let _: Option<u64> = c.query_first("SELECT SLEEP(0.2) + 'secret'").unwrap();
    let t0 = Instant::now();
    let line = loop {
        let log = g.log();
        let found = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["fields"]["message"] == "slow statement");
        if let Some(v) = found {
            break v;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no slow statement line in:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(line["level"], "WARN", "{line}");
    let f = &line["fields"];
    assert_eq!(f["statement"], "SELECT SLEEP(?) + ?", "{line}");
    assert_eq!(f["user"], APP_USER, "{line}");
    assert_eq!(f["database"], DATABASE, "{line}");
    assert_eq!(f["route"], "relayed", "{line}");
    assert_eq!(f["kind"], "select", "{line}");
    assert_eq!(f["rows"], 1, "{line}");
    let ms = f["duration_ms"].as_f64().expect("duration_ms is a number");
    assert!((200.0..10_000.0).contains(&ms), "{line}");
    // Every line is JSON, and the fast statement was not logged.
    let log = g.log();
    for l in log.lines() {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert_ne!(v["fields"]["statement"], "SELECT ?", "{l}");
    }
    assert!(!log.contains("secret"), "{log}");
}
