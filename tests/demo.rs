//! `idgate demo` (what scripts/demo runs) does its job end to end: throwaway shards, idgate on
//! 127.0.0.1:3307, generated ids landing on the shards, and a client can connect afterwards.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

#[test]
fn demo_shows_ids_landing_on_shards_and_keeps_serving() {
    for port in [3307, 3316, 3317, 9307, 8307, 6307] {
        assert!(
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "port {port} is taken; the demo needs 3307, 3316, 3317, 9307, 8307 and 6307 free"
        );
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_idgate"))
        .arg("demo")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start idgate demo");
    let stdout = child.stdout.take().expect("demo stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut out = String::new();
    while !out.contains("Press Ctrl-C") {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                out.push_str(&line);
                out.push('\n');
            }
            Err(_) => {
                let _ = child.kill();
                panic!("the demo did not get ready; it printed:\n{out}");
            }
        }
    }
    let result = std::panic::catch_unwind(|| {
        for needle in [
            "Where the rows landed",
            "shard0:",
            "shard1:",
            "user_id=1000",
            "name=ada    orders=2",
            "mysql -h127.0.0.1 -P3307 -udemo -pdemo idgate_test",
        ] {
            assert!(out.contains(needle), "`{needle}` missing from:\n{out}");
        }
        let mut c = mysql::Conn::new(
            mysql::OptsBuilder::new()
                .ip_or_hostname(Some("127.0.0.1"))
                .tcp_port(3307)
                .user(Some("demo"))
                .pass(Some("demo"))
                .db_name(Some("idgate_test")),
        )
        .expect("connect to the demo");
        c.query_drop("INSERT INTO users (name) VALUES ('tester')")
            .expect("insert");
        let id = c.last_insert_id();
        let name: Option<String> = c
            .query_first(format!("SELECT name FROM users WHERE id = {id}"))
            .expect("read back");
        assert_eq!(name.as_deref(), Some("tester"));
        // The tour the demo prints: idgate's own statements (the demo user is an admin), the
        // admin listener's metrics and the ID service's Redis protocol.
        for needle in [
            "SHOW IDGATE GENERATORS",
            "http://127.0.0.1:9307/metrics",
            "redis-cli -p 6307 --user demo --pass demo INCR user_ids",
        ] {
            assert!(out.contains(needle), "`{needle}` missing from:\n{out}");
        }
        let generators: Vec<mysql::Row> =
            c.query("SHOW IDGATE GENERATORS").expect("admin statement");
        assert!(generators.len() >= 2, "{generators:?}");
        let route: Vec<mysql::Row> = c
            .query("EXPLAIN ROUTE SELECT * FROM orders WHERE user_id = 1000")
            .expect("EXPLAIN ROUTE");
        assert_eq!(route.len(), 1, "{route:?}");
        let metrics = exchange(9307, b"GET /metrics HTTP/1.0\r\n\r\n", "idgate_generator");
        assert!(metrics.starts_with("HTTP/1."), "{metrics}");
        let incr = exchange(
            6307,
            b"*3\r\n$4\r\nAUTH\r\n$4\r\ndemo\r\n$4\r\ndemo\r\n*2\r\n$4\r\nINCR\r\n$8\r\nuser_ids\r\n",
            "\r\n:",
        );
        assert!(incr.starts_with("+OK\r\n:"), "{incr}");
        let ready = exchange(9307, b"GET /ready HTTP/1.0\r\n\r\n", "\r\n\r\n");
        assert!(
            ready.starts_with("HTTP/1.1 200") || ready.starts_with("HTTP/1.0 200"),
            "{ready}"
        );
        let leaf = exchange(
            8307,
            b"GET /api/segment/get/user_ids HTTP/1.0\r\nAuthorization: Basic ZGVtbzpkZW1v\r\n\r\n",
            "\r\n\r\n",
        );
        assert!(leaf.contains(" 200 "), "{leaf}");
        // The README's tour runs as written.
        for sql in readme_tour() {
            c.query_drop(&sql)
                .unwrap_or_else(|e| panic!("the README's tour: {sql}: {e}"));
        }
        // conf/demo.yaml has `tls: auto`: the mysql CLI connects encrypted.
        let cli = Command::new("mysql")
            .args([
                "--no-defaults",
                "--protocol=TCP",
                "-h127.0.0.1",
                "-P3307",
                "-udemo",
                "-pdemo",
                "--ssl",
                "-e",
                "\\s",
            ])
            .output()
            .expect("run the mysql CLI (Debian package mariadb-client)");
        let status = String::from_utf8_lossy(&cli.stdout);
        assert!(
            status.contains("Cipher in use is"),
            "mysql --ssl to the demo is not encrypted:\n{status}{}",
            String::from_utf8_lossy(&cli.stderr)
        );
    });
    // SIGTERM: the demo stops idgate and removes its shards.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let stopped = Instant::now();
    while child.try_wait().ok().flatten().is_none() && stopped.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if child.try_wait().ok().flatten().is_none() {
        let _ = child.kill();
        panic!("the demo did not stop on SIGTERM");
    }
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// Sends `request` to 127.0.0.1:`port` and reads until `until` shows up (or the peer closes).
fn exchange(port: u16, request: &[u8], until: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request).expect("send");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(until) {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// The statements of the README's five-minute tour (its first `sql` block).
fn readme_tour() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read the README");
    let tour = readme
        .split("## A five-minute tour")
        .nth(1)
        .expect("the README has its tour");
    let block = tour
        .split("```sql\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the tour has SQL");
    let stmts: Vec<String> = block
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
        .split(';')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(stmts.len() >= 5, "{stmts:?}");
    stmts
}
