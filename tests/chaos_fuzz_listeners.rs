//! Fault scenario: a black-box fuzzer drives the ID service's Redis-protocol and HTTP listeners
//! and the admin listener with random and mutated requests (frames cut short, lengths that claim
//! a lot, broken headers, pipelines), from several connections at once, while a canary keeps
//! taking ids over both protocols from the same host. idgate must not panic or exit, must answer
//! the canary promptly throughout, and must keep its memory bounded.
//!
//! `CHAOS_FUZZ_SECONDS` (default 8) sets the length.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::idgate_proc::{APP_PASSWORD, APP_USER};
use common::{free_port, scenario, shared_db, Idgate, PASSWORD, USER};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `app:app-secret` for HTTP Basic.
const BASIC: &str = "YXBwOmFwcC1zZWNyZXQ=";

fn resp_seeds() -> Vec<Vec<u8>> {
    [
        "AUTH app app-secret\r\n",
        "*3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$10\r\napp-secret\r\n",
        "*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$3\r\napp\r\n$10\r\napp-secret\r\n",
        "*2\r\n$4\r\nINCR\r\n$3\r\nseq\r\n",
        "*3\r\n$6\r\nINCRBY\r\n$3\r\nseq\r\n$2\r\n10\r\n",
        "INCR seq\r\nINCRBY seq 5\r\nGET seq\r\nPING\r\n",
        "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nPING\r\n$5\r\nhello\r\n",
        "*2\r\n$4\r\nINCR\r\n$999999999\r\n",
        "*-1\r\n*0\r\n*1\r\n*1\r\n$1\r\nx\r\n",
        "*1\r\n:5\r\n*1\r\n+OK\r\n",
        "HELLO 2\r\nQUIT\r\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn http_seeds() -> Vec<Vec<u8>> {
    [
        format!("GET /ids/seq?count=3 HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {BASIC}\r\n\r\n"),
        format!("GET /api/segment/get/seq HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {BASIC}\r\n\r\nGET /api/snowflake/get/seq HTTP/1.1\r\nHost: x\r\n\r\n"),
        "GET /health HTTP/1.0\r\n\r\n".to_string(),
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
        "POST /ids/seq HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_string(),
        "POST /ids/seq HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\nabc".to_string(),
        format!("GET /ids/seq?count=99999999999999999999 HTTP/1.1\r\nAuthorization: Basic {BASIC}\r\n\r\n"),
        "GET /ids/%ff%00 HTTP/1.1\r\nAuthorization: Basic !!!\r\n\r\n".to_string(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect()
}

fn mutate(rng: &mut StdRng, seed: &[u8]) -> Vec<u8> {
    let mut p = seed.to_vec();
    for _ in 0..rng.random_range(1..4) {
        match rng.random_range(0..7) {
            0 if !p.is_empty() => {
                let i = rng.random_range(0..p.len());
                p[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !p.is_empty() => {
                let i = rng.random_range(0..p.len());
                p[i] = rng.random();
            }
            2 => p.truncate(rng.random_range(0..=p.len())),
            3 => {
                let i = rng.random_range(0..=p.len());
                let junk: Vec<u8> = (0..rng.random_range(1..64)).map(|_| rng.random()).collect();
                p.splice(i..i, junk);
            }
            4 => {
                // Numbers that claim a lot: lengths, counts, ids.
                let i = rng.random_range(0..=p.len());
                let big: &[u8] = match rng.random_range(0..4) {
                    0 => b"99999999999999999999",
                    1 => b"-2",
                    2 => b"65537",
                    _ => b"\r\n",
                };
                p.splice(i..i, big.iter().copied());
            }
            5 => {
                let more = p.clone();
                p.extend_from_slice(&more);
            }
            _ => {
                let n = rng.random_range(0..48);
                p = (0..n).map(|_| rng.random()).collect();
            }
        }
    }
    p
}

/// Reads whatever comes back until the server goes quiet; false when the connection is over.
fn drain(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 65536];
    let _ = s.set_read_timeout(Some(Duration::from_millis(15)));
    loop {
        match s.read(&mut buf) {
            Ok(0) => return false,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return true
            }
            Err(_) => return false,
        }
    }
}

/// One id over HTTP on a fresh connection: the status line.
fn http_id(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect HTTP");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /ids/seq HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {BASIC}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut line = String::new();
    let _ = BufReader::new(s).read_line(&mut line);
    line.trim_end().to_string()
}

#[test]
fn random_and_mutated_requests_on_the_id_service_and_admin_listeners() {
    let seconds: u64 = std::env::var("CHAOS_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let db = shared_db();
    let (http, resp, admin) = (
        free_port().unwrap(),
        free_port().unwrap(),
        free_port().unwrap(),
    );
    let tag = format!("fuzz_{http}");
    // The login throttle has its own test; here every mangled AUTH would block the canary's host.
    let g = Idgate::start_with(|port| {
        format!(
            "listen: 127.0.0.1:{port}
allow_plaintext_passwords: true
max_auth_failures: 1000000000
users:
  - name: {APP_USER}
    password: {APP_PASSWORD}
backends:
  shard0:
    port: {}
    user: {USER}
    password: {PASSWORD}
default_backend: shard0
generators:
  seq:
    kind: segment
    tag: {tag}
    step: 1000
id_service:
  http: 127.0.0.1:{http}
  resp: 127.0.0.1:{resp}
  request_timeout_ms: 1000
  login_timeout_ms: 1000
admin:
  listen: 127.0.0.1:{admin}
",
            db.port
        )
    });
    let pid = g.pid();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let mut fuzzers = Vec::new();
    for t in 0..4u64 {
        let (stop, sent) = (stop.clone(), sent.clone());
        let (port, seeds) = match t {
            0 | 1 => (resp, resp_seeds()),
            2 => (http, http_seeds()),
            _ => (admin, http_seeds()),
        };
        fuzzers.push(std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(0x1d6a7e11 + t);
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                    continue;
                };
                for _ in 0..rng.random_range(1..20) {
                    let seed = &seeds[rng.random_range(0..seeds.len())];
                    let p = if rng.random_ratio(1, 4) {
                        seed.clone()
                    } else {
                        mutate(&mut rng, seed)
                    };
                    sent.fetch_add(1, Ordering::Relaxed);
                    if s.write_all(&p).is_err() || !drain(&mut s) {
                        break;
                    }
                }
            }
        }));
    }

    // The canary: a logged-in Redis-protocol connection and HTTP requests from the same host.
    let mut r = TcpStream::connect(("127.0.0.1", resp)).unwrap();
    r.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut lines = BufReader::new(r.try_clone().unwrap());
    let mut ask = |cmd: &str| {
        r.write_all(format!("{cmd}\r\n").as_bytes()).unwrap();
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        line.trim_end().to_string()
    };
    assert_eq!(ask("AUTH app app-secret"), "+OK");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut worst, mut max_rss, mut rounds) = (Duration::ZERO, 0, 0);
    while Instant::now() < deadline {
        let t = Instant::now();
        let id = ask("INCR seq");
        assert!(id.starts_with(':'), "{id}\nidgate log:\n{}", g.log());
        let status = http_id(http);
        assert_eq!(status, "HTTP/1.1 200 OK", "idgate log:\n{}", g.log());
        worst = worst.max(t.elapsed());
        max_rss = max_rss.max(scenario::rss_kib(pid));
        rounds += 1;
        std::thread::sleep(Duration::from_millis(40));
    }
    stop.store(true, Ordering::Relaxed);
    for f in fuzzers {
        f.join().expect("a fuzzer thread panicked");
    }
    let log = g.log();
    assert!(!log.contains("panicked"), "idgate panicked:\n{log}");
    assert_eq!(g.pid(), pid);
    println!(
        "fuzz: {} requests on 3 listeners in {seconds} s, canary {rounds} rounds, slowest {:?}, \
         idgate RSS at most {} MiB",
        sent.load(Ordering::Relaxed),
        worst,
        max_rss / 1024
    );
    assert!(
        worst < Duration::from_secs(1),
        "the canary waited {worst:?}"
    );
    assert!(
        max_rss < 256 * 1024,
        "idgate's RSS reached {} MiB",
        max_rss / 1024
    );
}
