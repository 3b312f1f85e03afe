//! The admin HTTP listener, driven with curl against idgate in front of real MariaDB servers:
//! /health, /ready (503 naming a killed or frozen backend, 200 again once it is back),
//! /generators and /metrics (families present, values that move with SQL and HTTP traffic).

mod common;

use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use common::clients::require_tool;
use common::idgate_proc::{config_for, config_for_ports, APP_PASSWORD, APP_USER};
use common::prometheus::must_sample;
use common::{free_port, start_db, Idgate};
use mysql::prelude::Queryable;
use serde_json::Value;

const GENERATORS: &str = "generators:
  seq:
    kind: segment
    step: 100
  snow:
    kind: snowflake
  fixed:
    kind: snowflake
    worker_id: 7
";

/// (status, body) of a GET with curl.
fn curl(args: &[&str], url: &str) -> (u16, String) {
    let out = Command::new(require_tool("curl", "curl"))
        .args(["-sS", "--max-time", "20", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    let code = code.trim().parse().unwrap_or_else(|_| {
        panic!(
            "curl {url}: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, body.to_string())
}

fn get(port: u16, path: &str) -> (u16, String) {
    curl(&[], &format!("http://127.0.0.1:{port}{path}"))
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// Polls `f` until it is true or `limit` passes.
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn health_ready_and_a_killed_backend() {
    let db = start_db();
    let admin = free_port().unwrap();
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &db)],
            &format!("{GENERATORS}admin:\n  listen: 127.0.0.1:{admin}\n"),
        )
    });
    g.conn();
    assert_eq!(get(admin, "/health"), (200, "ok\n".into()));
    let (code, body) = get(admin, "/ready");
    assert_eq!(code, 200, "{body}");
    let r = json(&body);
    assert_eq!(r["ready"], true);
    for check in [
        "backend shard0",
        "generator seq",
        "generator snow",
        "generator fixed",
    ] {
        assert_eq!(r["checks"][check]["ok"], true, "{check}: {body}");
    }
    assert_eq!(
        r["checks"]["sequence store (on backend shard0)"]["ok"], true,
        "{body}"
    );

    db.kill();
    let t0 = Instant::now();
    let (code, body) = get(admin, "/ready");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(code, 503, "{body}");
    let r = json(&body);
    assert_eq!(r["ready"], false);
    assert_eq!(r["checks"]["backend shard0"]["ok"], false, "{body}");
    let down = r["down"].to_string();
    assert!(down.contains("backend shard0"), "{down}");
    assert!(down.contains("sequence store"), "{down}");
    // Liveness does not depend on the backends.
    assert_eq!(get(admin, "/health").0, 200);

    db.restart().unwrap();
    let mut last = String::new();
    let back = eventually(Duration::from_secs(20), || {
        let (code, body) = get(admin, "/ready");
        last = body;
        code == 200
    });
    assert!(back, "not ready again after the backend came back: {last}");
}

#[test]
fn ready_names_a_frozen_backend_within_the_check_timeout() {
    let db = start_db();
    // A server that accepts connections and never says a word.
    let frozen = TcpListener::bind("127.0.0.1:0").unwrap();
    let frozen_port = frozen.local_addr().unwrap().port();
    let admin = free_port().unwrap();
    let g = Idgate::start_with(|port| {
        config_for_ports(
            port,
            &[("main", db.port), ("frozen", frozen_port)],
            &format!("admin:\n  listen: 127.0.0.1:{admin}\n  check_timeout_ms: 500\n"),
        )
    });
    g.conn();
    let t0 = Instant::now();
    let (code, body) = get(admin, "/ready");
    let took = t0.elapsed();
    assert_eq!(code, 503, "{body}");
    assert!(took < Duration::from_secs(3), "/ready took {took:?}");
    let r = json(&body);
    assert_eq!(r["checks"]["backend main"]["ok"], true, "{body}");
    assert_eq!(r["checks"]["backend frozen"]["ok"], false, "{body}");
    assert!(
        r["checks"]["backend frozen"]["detail"]
            .as_str()
            .unwrap()
            .contains("no answer within 500 ms"),
        "{body}"
    );
    drop(frozen);
}

#[test]
fn generators_and_metrics_report_what_moved() {
    let db = start_db();
    let admin = free_port().unwrap();
    let http = free_port().unwrap();
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &db)],
            &format!(
                "{GENERATORS}admin:\n  listen: 127.0.0.1:{admin}\nid_service:\n  http: 127.0.0.1:{http}\n"
            ),
        )
    });
    let (code, body) = get(admin, "/generators");
    assert_eq!(code, 200, "{body}");
    let gens = json(&body);
    let seq = &gens["seq"];
    assert_eq!(seq["kind"], "segment");
    assert_eq!(seq["tag"], "seq");
    assert_eq!(seq["step"], 100);
    assert_eq!(seq["buffers"]["current_left"], 100, "{body}");
    assert!(seq["fetches"]["count"].as_u64().unwrap() >= 1, "{body}");
    assert!(seq["fetches"]["last_unix_ms"].as_u64().unwrap() > 1_600_000_000_000);
    assert!(
        seq["fetches"]["last_latency_us"].as_u64().is_some(),
        "{body}"
    );
    let snow = &gens["snow"];
    assert_eq!(snow["kind"], "snowflake");
    assert_eq!(snow["lease"]["fixed"], false, "{body}");
    assert!(
        snow["lease"]["valid_for_ms"].as_u64().unwrap() > 1_000,
        "{body}"
    );
    assert!(snow["worker_id"].as_u64().is_some(), "{body}");
    assert!(snow["clock"]["borrowed_ms"].as_u64().is_some(), "{body}");
    assert_eq!(gens["fixed"]["worker_id"], 7);
    assert_eq!(gens["fixed"]["lease"]["fixed"], true);

    let (code, before) = get(admin, "/metrics");
    assert_eq!(code, 200, "{before}");
    for family in [
        "# TYPE idgate_generator_ids_issued counter",
        "# TYPE idgate_generator_range_fetch_duration_seconds histogram",
        "# TYPE idgate_generator_empty_buffer_waits counter",
        "# TYPE idgate_generator_step gauge",
        "# TYPE idgate_generator_lease_renewals counter",
        "# TYPE idgate_generator_lease_losses counter",
        "# TYPE idgate_generator_clock_backwards counter",
        "# TYPE idgate_generator_borrowed_ticks counter",
        "# TYPE idgate_generator_lease_remaining_seconds gauge",
        "# TYPE idgate_backend_connections_idle gauge",
        "# TYPE idgate_backend_connections_in_use gauge",
        "# TYPE idgate_client_connections_accepted counter",
        "# TYPE idgate_client_connections_open gauge",
        "# TYPE idgate_id_service_requests counter",
    ] {
        assert!(before.contains(family), "{family} missing:\n{before}");
    }
    let issued = r#"idgate_generator_ids_issued_total{generator="seq",kind="segment"}"#;
    let accepted = "idgate_client_connections_accepted_total";
    let open = "idgate_client_connections_open";
    assert_eq!(
        must_sample(&before, r#"idgate_generator_step{generator="seq"}"#),
        100.0
    );
    let issued0 = must_sample(&before, issued);
    let accepted0 = must_sample(&before, accepted);

    // 3 ids over SQL, 250 over HTTP (more than a range: a dedicated fetch).
    let mut c = g.conn();
    // A statement the backend answers: the session now holds a pooled connection.
    let _: Option<u64> = c.query_first("SELECT 1").unwrap();
    for _ in 0..3 {
        let _: Option<u64> = c.query_first("SELECT NEXTVAL(seq)").unwrap();
    }
    let url = format!("http://127.0.0.1:{http}/ids/seq?count=250");
    let (code, body) = curl(&["-u", &format!("{APP_USER}:{APP_PASSWORD}")], &url);
    assert_eq!(code, 200, "{body}");

    let (_, after) = get(admin, "/metrics");
    assert_eq!(must_sample(&after, issued), issued0 + 253.0, "{after}");
    assert!(must_sample(&after, accepted) >= accepted0 + 1.0, "{after}");
    assert!(must_sample(&after, open) >= 1.0, "{after}");
    let ok = r#"idgate_id_service_requests_total{protocol="http",outcome="ok"}"#;
    assert_eq!(must_sample(&after, ok), 1.0, "{after}");
    let fetches =
        r#"idgate_generator_range_fetch_duration_seconds_count{generator="seq",kind="segment"}"#;
    assert!(
        must_sample(&after, fetches) > must_sample(&before, fetches),
        "{after}"
    );
    let inf = r#"idgate_generator_range_fetch_duration_seconds_bucket{le="+Inf",generator="seq",kind="segment"}"#;
    assert_eq!(
        must_sample(&after, inf),
        must_sample(&after, fetches),
        "{after}"
    );
    assert!(
        must_sample(
            &after,
            r#"idgate_backend_connections_in_use{backend="shard0"}"#
        ) >= 1.0
    );
    drop(c);
    let closed = eventually(Duration::from_secs(5), || {
        must_sample(&get(admin, "/metrics").1, open) == 0.0
    });
    assert!(closed, "client connection still counted as open");
}
