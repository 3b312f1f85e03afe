//! The page rendered from views as large as a busy idgate's (1,000 sessions, 100 generators,
//! many nodes, jobs and slow statements, every name hostile) stays under a byte bound, lists
//! what it cut as "and N more", and is balanced markup with nothing unescaped.

use std::time::{Duration, SystemTime};

use super::sections::{about, backends, generators, migrations, sessions, traffic};
use super::traffic_ring::{Point, Sample, KEEP};
use super::{page, Section};
use crate::admin::backend_nodes::NodeRow;
use crate::admin::backend_rows::BackendRow;
use crate::admin::ready::Readiness;
use crate::admin::slow_log::Kept;
use crate::idgen::segment::SlotView;
use crate::migrate::status_rows::JobStatus;
use crate::proxy::sessions::Row;

/// A name a client or backend could choose: markup, quotes and an ampersand.
fn hostile(i: usize) -> String {
    format!("t{i}<script>alert('x')</script>\"&amp;")
}

fn big_page() -> String {
    let slot = |current| SlotView {
        first: 1_000,
        end: 2_000,
        next: 1_337,
        preload_mark: 1_900,
        current,
        ready: true,
    };
    let gens = generators::View {
        rows: (0..generators::SHOWN)
            .map(|i| generators::Row {
                name: hostile(i),
                kind: if i.is_multiple_of(2) {
                    "segment"
                } else {
                    "snowflake"
                },
                ids_issued: 123_456_789,
                rate: Some(1234.5),
                detail: if i.is_multiple_of(2) {
                    generators::Detail::Segment(generators::Segment {
                        tag: hostile(i),
                        step: 1000,
                        slots: [slot(true), slot(false)],
                        fetching: false,
                        fetches: 99,
                        last_error: hostile(i),
                    })
                } else {
                    generators::Detail::Snowflake(generators::Snowflake {
                        worker_id: 7,
                        lease: Some((12_000, Some(hostile(i)))),
                        borrowed_ms: Some(3),
                        backwards: 1,
                    })
                },
            })
            .collect(),
        total: 100,
    };
    let node = |i: usize| NodeRow {
        address: format!("10.0.0.{i}:3306"),
        role: "replica",
        read_only: Some(true),
        lag_s: Some(3),
        gtid_position: "0-1-100".into(),
        why: hostile(i),
        writer: i.is_multiple_of(3),
        reads: Some(5),
    };
    let rows: Vec<BackendRow> = (0..200)
        .map(|i| BackendRow {
            name: hostile(i / 3),
            user: "idgate".into(),
            in_use: 3,
            idle: 2,
            max: 64,
            reachable: !i.is_multiple_of(5),
            detail: hostile(i),
            acquire_timeouts: 1,
            connect_errors: 2,
            node: node(i),
        })
        .collect();
    let ready = Readiness {
        checks: (0..300usize)
            .map(|i| {
                let r = if i.is_multiple_of(2) {
                    Ok(hostile(i))
                } else {
                    Err(hostile(i))
                };
                (format!("backend {}", hostile(i)), r)
            })
            .collect(),
    };
    let backends = backends::cap(rows, ready);
    let point = Point {
        per_s: 1500.0,
        p50_ms: Some(0.4),
        p95_ms: Some(2.0),
        p99_ms: Some(30.0),
    };
    let traffic = traffic::View {
        samples: (0..KEEP)
            .map(|i| Sample {
                at: SystemTime::now(),
                routes: [Point {
                    per_s: point.per_s + i as f64,
                    ..point
                }; 7],
            })
            .collect(),
    };
    let jobs = migrations::View {
        jobs: Ok((0..80)
            .map(|i| JobStatus {
                table: format!("db.{}", hostile(i)),
                phase: "copying".into(),
                rows_copied: 500_000,
                rows_estimated: 1_000_000,
                percent: Some(50),
                eta_seconds: Some(3_700),
                lag_events: Some(10),
                lag_seconds: Some(1),
                last_error: Some(hostile(i)),
                sources: vec![hostile(i)],
                target: hostile(i),
                owner: None,
            })
            .collect()),
    };
    let sessions = sessions::gather(
        (0..1000u32)
            .map(|i| Row {
                id: i,
                user: hostile(i as usize % 120),
                host: "10.1.1.1:5000".into(),
                db: None,
                command: if i.is_multiple_of(4) {
                    "Query"
                } else {
                    "Sleep"
                },
                time_s: 10,
                in_transaction: i.is_multiple_of(7),
                pinned: None,
            })
            .collect(),
        (0..crate::admin::slow_log::KEPT)
            .map(|i| Kept {
                at: SystemTime::now(),
                user: hostile(i),
                route: "scatter",
                kind: "select",
                took: Duration::from_millis(i as u64 * 10),
                rows: 1,
                text: format!("SELECT {} FROM `{}`", "x, ".repeat(300), hostile(i)),
            })
            .collect(),
        Some(100),
    );
    let about = about::View {
        version: "1.2.3",
        commit: "abcdef123456",
        uptime_s: 86_400 * 3 + 5,
        generation: 42,
        config_file: Some(hostile(0)),
        last_reload: Some((SystemTime::now(), "SIGHUP".into(), Err(hostile(1)))),
        connections: 99,
    };
    let mut parts = Vec::new();
    for s in Section::ALL {
        let mut out = String::new();
        match s {
            Section::Generators => generators::render(&gens, &mut out),
            Section::Backends => backends::render(&backends, &mut out),
            Section::Traffic => traffic::render(&traffic, &mut out),
            Section::Migrations => migrations::render(&jobs, &mut out),
            Section::Sessions => sessions::render(&sessions, &mut out),
            Section::About => about::render(&about, &mut out),
        }
        parts.push((s, out));
    }
    page::render(&parts)
}

/// Most bytes the page may take however much idgate has to show.
const MAX_PAGE_BYTES: usize = 256 << 10;

#[test]
fn a_large_idgate_renders_a_bounded_page() {
    let html = big_page();
    println!("page: {} bytes", html.len());
    assert!(
        html.len() < MAX_PAGE_BYTES,
        "the page is {} bytes, over {MAX_PAGE_BYTES}",
        html.len()
    );
    for cut in [
        "and 50 more generators",
        "and 136 more nodes",
        "and 236 more checks",
        "and 30 more jobs",
        "and 70 more user and state groups",
        "and 80 more slow statements",
    ] {
        assert!(html.contains(cut), "no `{cut}`");
    }
    // Slowest first.
    let first = html.find("<table class=\"slow\">").unwrap();
    assert!(html[first..].contains("990 ms"), "the slowest is listed");
    assert!(!html[first..].contains(">0.00 ms<"), "the fastest is cut");
}

#[test]
fn hostile_names_never_become_markup() {
    let html = big_page();
    assert!(!html.contains("<script>alert"), "an unescaped name");
    assert!(!html.contains("'x')"), "an unescaped quote");
    // One script element: the page's own.
    assert_eq!(html.matches("<script>").count(), 1);
    balanced(&html);
}

/// Every element the page opens is closed in order (void elements aside), outside the
/// stylesheet and the script.
fn balanced(html: &str) {
    const VOID: [&str; 5] = ["meta", "link", "br", "img", "input"];
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html.strip_prefix("<!DOCTYPE html>").expect("a doctype");
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let end = rest.find('>').expect("a tag closes");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        assert!(!name.is_empty(), "a stray `<` before `{tag}`");
        if closing {
            assert_eq!(stack.pop().as_deref(), Some(name.as_str()), "</{name}>");
        } else if tag.ends_with('/') || VOID.contains(&name.as_str()) {
        } else if name == "style" || name == "script" {
            let close = format!("</{name}>");
            let at = rest.find(&close).expect("closed");
            rest = &rest[at + close.len()..];
        } else {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "left open: {stack:?}");
}
