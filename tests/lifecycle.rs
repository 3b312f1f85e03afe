//! Backends that go away, pools that run dry, bounded memory while streaming, and a clean
//! shutdown on SIGTERM.

mod common;

use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

fn error_code(e: mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(e) => e.code,
        other => panic!("expected a server error, got {other:?}"),
    }
}

#[test]
fn backend_going_away_fails_the_session_and_the_next_session_reconnects() {
    let db = common::start_db();
    let g = common::Idgate::start(&db);
    let mut c = g.conn();
    assert_eq!(c.query_first::<i64, _>("SELECT 1").unwrap(), Some(1));
    db.kill();
    let err = c.query_drop("SELECT 2").unwrap_err();
    match err {
        mysql::Error::MySqlError(e) => {
            assert_eq!(e.code, 2013, "{e}");
            assert!(e.message.contains("shard0"), "{}", e.message);
        }
        // The driver may see the close that follows the error first.
        mysql::Error::IoError(_) | mysql::Error::DriverError(_) => {}
        other => panic!("{other:?}"),
    }
    // While the backend is down, new sessions get a clear error, not a hang.
    let t = Instant::now();
    let e = mysql::Conn::new(mysql::Opts::from_url(&g.url(common::DATABASE)).unwrap()).unwrap_err();
    assert_eq!(error_code(e), 1105);
    assert!(t.elapsed() < Duration::from_secs(10));
    db.restart().unwrap();
    let mut c = g.conn();
    assert_eq!(c.query_first::<i64, _>("SELECT 3").unwrap(), Some(3));
}

#[test]
fn pool_exhaustion_is_a_clear_error_then_recovers() {
    let db = common::shared_db();
    let g = common::Idgate::start_with(|port| {
        common::idgate_proc::config_for(port, &[("shard0", db)], "")
            .replace("max_connections: 64", "max_connections: 2")
            .replace("acquire_timeout_ms: 10000", "acquire_timeout_ms: 300")
    });
    let a = g.conn();
    let b = g.conn();
    let e = mysql::Conn::new(mysql::Opts::from_url(&g.url(common::DATABASE)).unwrap()).unwrap_err();
    match e {
        mysql::Error::MySqlError(e) => {
            assert_eq!(e.code, 1040);
            assert!(e.message.contains("max_connections"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    drop(a);
    // The freed connection is reset and offered again.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut c = loop {
        match mysql::Conn::new(mysql::Opts::from_url(&g.url(common::DATABASE)).unwrap()) {
            Ok(c) => break c,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("pool did not recover: {e}"),
        }
    };
    assert_eq!(c.query_first::<i64, _>("SELECT 1").unwrap(), Some(1));
    drop(b);
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
fn a_million_row_select_streams_in_bounded_memory() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let pid = g.pid();
    let mut c = g.conn();
    assert_eq!(c.query_first::<i64, _>("SELECT 1").unwrap(), Some(1));
    let before = rss_kib(pid, "VmRSS:");
    let mut rows = 0u64;
    let mut bytes = 0u64;
    for row in c
        .query_iter("SELECT seq, REPEAT('m', 100) FROM seq_1_to_1000000")
        .unwrap()
    {
        let row = row.unwrap();
        bytes += row.get::<Vec<u8>, _>(1).unwrap().len() as u64;
        rows += 1;
    }
    assert_eq!(rows, 1_000_000);
    assert_eq!(bytes, 100_000_000);
    let peak = rss_kib(pid, "VmHWM:");
    let grown_mib = peak.saturating_sub(before) / 1024;
    eprintln!("idgate RSS before {before} KiB, peak {peak} KiB while relaying 1,000,000 rows");
    // ~110 MB went through; a streaming relay holds a few buffers of 64 KiB.
    assert!(
        grown_mib < 16,
        "idgate's RSS grew by {grown_mib} MiB relaying 1,000,000 rows"
    );
}

#[test]
fn sigterm_lets_running_statements_finish_then_exits() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let mut busy = g.conn();
    let idle = g.conn();
    let worker = std::thread::spawn(move || busy.query_first::<i64, _>("SELECT SLEEP(1.5) + 5"));
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let status = g.terminate().expect("idgate was running");
    assert!(status.success(), "exit status {status}");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "shutdown took {:?}",
        t.elapsed()
    );
    assert_eq!(
        worker.join().unwrap().unwrap(),
        Some(5),
        "the running statement finished"
    );
    drop(idle);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", g.port)).is_err(),
        "no longer listening"
    );
}

#[test]
fn a_client_that_leaves_mid_statement_stops_its_statement_on_the_backend() {
    let db = common::start_db();
    let g = common::Idgate::start(&db);
    let mut root = common::direct(&db);
    let held: Option<i64> = root
        .query_first("SELECT GET_LOCK('lifecycle_gl', 10)")
        .unwrap();
    assert_eq!(held, Some(1));
    let waiting = |root: &mut mysql::Conn| -> u64 {
        root.query_first(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE INFO LIKE 'SELECT GET_LOCK(''lifecycle_gl'', 300)%'",
        )
        .unwrap()
        .unwrap()
    };
    // The mysql CLI waits for the lock through idgate, then is killed outright.
    let mut cli = std::process::Command::new("mysql")
        .arg("--no-defaults")
        .arg("-h127.0.0.1")
        .arg(format!("-P{}", g.port))
        .arg(format!("-u{}", common::idgate_proc::APP_USER))
        .arg(format!("-p{}", common::idgate_proc::APP_PASSWORD))
        .arg("-e")
        .arg("SELECT GET_LOCK('lifecycle_gl', 300)")
        .spawn()
        .expect("start the mysql CLI");
    let t0 = Instant::now();
    while waiting(&mut root) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the wait never began"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    cli.kill().unwrap();
    cli.wait().unwrap();
    // The backend's statement stops with its client, as it would on a direct connection.
    let t0 = Instant::now();
    while waiting(&mut root) != 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the backend still waits for the lock of a client that left\n{}",
            g.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // idgate goes on serving.
    let one: Option<i64> = g.conn().query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}
