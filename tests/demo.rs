//! `idgate demo` (what scripts/demo runs) does its job end to end: throwaway shards, idgate on
//! 127.0.0.1:3307, generated ids landing on the shards, and a client can connect afterwards.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

#[test]
fn demo_shows_ids_landing_on_shards_and_keeps_serving() {
    for port in [3307, 3316, 3317] {
        assert!(
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
            "port {port} is taken; the demo needs 3307, 3316 and 3317 free"
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
