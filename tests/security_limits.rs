//! Limits and timeouts against real MariaDB servers: silent sockets, connection caps, idle
//! sessions, failed-login backoff, garbage on the wire, backend query timeouts, long data,
//! prepared-statement counts and merge memory. Each scenario takes a few seconds.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::idgate_proc::{config_for, APP_PASSWORD, APP_USER};
use common::*;
use mysql::prelude::Queryable;

/// A config for one backend (`db`) with `extra` top-level keys.
fn config(port: u16, db: &MariaDb, extra: &str) -> String {
    config_for(port, &[("shard0", db)], extra)
}

fn opts(port: u16, user: &str, password: &str) -> mysql::OptsBuilder {
    mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .db_name(Some(DATABASE))
        .tcp_connect_timeout(Some(Duration::from_secs(5)))
        .read_timeout(Some(Duration::from_secs(20)))
}

fn connect(o: mysql::OptsBuilder) -> Result<mysql::Conn, mysql::Error> {
    mysql::Conn::new(o)
}

/// (code, SQLSTATE, message) of a server error; panics on anything else.
fn server_error(e: mysql::Error) -> (u16, String, String) {
    match e {
        mysql::Error::MySqlError(e) => (e.code, e.state, e.message),
        other => panic!("expected a server error, got {other:?}"),
    }
}

fn one(c: &mut mysql::Conn, sql: &str) -> i64 {
    c.query_first::<i64, _>(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .expect("a row")
}

fn assert_alive(g: &Idgate) {
    // SAFETY: signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(g.pid() as i32, 0) } == 0;
    assert!(alive, "idgate died; its log:\n{}", g.log());
    assert!(
        !g.log().contains("panicked"),
        "idgate panicked; its log:\n{}",
        g.log()
    );
}

/// Reads until EOF; `Err` with what arrived if nothing ended the stream within `limit`.
fn read_to_eof(s: &mut TcpStream, limit: Duration) -> Result<Vec<u8>, String> {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "no EOF within {limit:?} ({} bytes read)",
                got.len()
            ));
        }
        s.set_read_timeout(Some(left)).expect("read timeout");
        match s.read(&mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(got),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(format!("read failed: {e}")),
        }
    }
}

/// Raises this process's soft RLIMIT_NOFILE to its hard limit; returns the new soft limit.
fn raise_own_nofile() -> u64 {
    idgate::limits::rlimit::raise_nofile()
        .expect("raise RLIMIT_NOFILE")
        .0
}

#[test]
fn silent_sockets_are_closed_after_connect_timeout_while_clients_log_in() {
    let db = shared_db();
    let g = Idgate::start_with(|port| config(port, db, "connect_timeout: 1\n"));
    let fds = raise_own_nofile();
    let n = 5000.min(fds.saturating_sub(200) as usize);
    assert!(
        n >= 2000,
        "RLIMIT_NOFILE hard limit {fds} is too low for this test"
    );
    let started = Instant::now();
    let mut silent = Vec::with_capacity(n);
    for i in 0..n {
        let s = TcpStream::connect(("127.0.0.1", g.port))
            .unwrap_or_else(|e| panic!("silent socket {i}: {e}"));
        silent.push(s);
    }
    // A legitimate client logs in and works while the silent ones are open.
    let mut c = g.conn();
    assert_eq!(one(&mut c, "SELECT 7"), 7);
    // Each silent socket got the greeting and then nothing but the end, after connect_timeout.
    let mut closed = 0;
    for (i, s) in silent.iter_mut().enumerate() {
        let got = read_to_eof(s, Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("silent socket {i}: {e}; idgate log:\n{}", g.log()));
        assert!(
            got.len() > 4 && got[4] == 10,
            "socket {i}: expected only the greeting, got {got:?}"
        );
        let len = u32::from_le_bytes([got[0], got[1], got[2], 0]) as usize;
        assert_eq!(got.len(), 4 + len, "socket {i}: bytes after the greeting");
        closed += 1;
    }
    assert_eq!(closed, n);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "sockets closed before connect_timeout"
    );
    // The logged-in session was not disturbed by the closing.
    assert_eq!(one(&mut c, "SELECT 8"), 8);
    assert!(
        g.log().contains("RLIMIT_NOFILE"),
        "the raised open file limit is logged:\n{}",
        g.log()
    );
    assert_alive(&g);
}

#[test]
fn connection_caps_give_1040_and_1226_and_free_on_disconnect() {
    let db = shared_db();
    let g = Idgate::start_with(|port| {
        config(port, db, "max_connections: 4\n").replace(
            "  - name: nopw\n    password: \"\"\n",
            "  - name: nopw\n    password: \"\"\n    max_connections: 1\n",
        )
    });
    let nopw = || connect(opts(g.port, "nopw", ""));
    let app = || connect(opts(g.port, APP_USER, APP_PASSWORD));
    let mut first_nopw = nopw().expect("first nopw session");
    let (code, state, msg) = server_error(nopw().expect_err("per-user cap"));
    assert_eq!((code, state.as_str()), (1226, "42000"), "{msg}");
    assert!(
        msg.starts_with(
            "User 'nopw' has exceeded the 'max_user_connections' resource (current value: 1)"
        ),
        "{msg}"
    );
    let mut sessions: Vec<mysql::Conn> = (0..3).map(|_| app().expect("app session")).collect();
    let (code, state, msg) = server_error(app().expect_err("global cap"));
    assert_eq!((code, state.as_str()), (1040, "08004"), "{msg}");
    assert!(msg.starts_with("Too many connections"), "{msg}");
    // Sessions already in keep working.
    for (i, s) in sessions.iter_mut().enumerate() {
        assert_eq!(one(s, &format!("SELECT {i}")), i as i64);
    }
    assert_eq!(one(&mut first_nopw, "SELECT 1"), 1);
    // A session ending frees its slot (and its user's).
    drop(first_nopw);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut again = loop {
        match nopw() {
            Ok(c) => break c,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("slot not freed: {e}"),
        }
    };
    assert_eq!(one(&mut again, "SELECT 2"), 2);
    let (code, ..) = server_error(app().expect_err("still full"));
    assert_eq!(code, 1040);
    sessions.pop();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match app() {
            Ok(mut c) => {
                assert_eq!(one(&mut c, "SELECT 3"), 3);
                break;
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("app slot not freed: {e}"),
        }
    }
    assert_alive(&g);
}

/// Whether the session was closed: a query fails (the connection is gone).
fn closed(c: &mut mysql::Conn) -> bool {
    c.query_drop("SELECT 1").is_err()
}

#[test]
fn wait_timeout_from_config_and_from_set_closes_idle_sessions_only() {
    let db = shared_db();
    let g = Idgate::start_with(|port| {
        config(
            port,
            db,
            "wait_timeout: 3\ninteractive_timeout: 1\nconnect_timeout: 2\n",
        )
    });
    let spellings = [
        "SET SESSION wait_timeout=1",
        "SET @@wait_timeout=1",
        "SET @@session.wait_timeout = 1",
        "SET wait_timeout = 1, sql_mode = DEFAULT",
    ];
    let mut set: Vec<mysql::Conn> = spellings
        .iter()
        .map(|sql| {
            let mut c = g.conn();
            c.query_drop(*sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            c
        })
        .collect();
    let mut plain = g.conn();
    let mut interactive = connect(
        opts(g.port, APP_USER, APP_PASSWORD)
            .additional_capabilities(mysql::consts::CapabilityFlags::CLIENT_INTERACTIVE),
    )
    .expect("interactive client");
    // A session that keeps talking is never idle long enough.
    let mut busy = g.conn();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(1800) {
        assert_eq!(one(&mut busy, "SELECT 1"), 1);
        std::thread::sleep(Duration::from_millis(200));
    }
    for (c, sql) in set.iter_mut().zip(spellings) {
        assert!(closed(c), "after `{sql}` the session outlived 1 s idle");
    }
    assert!(
        closed(&mut interactive),
        "interactive_timeout: 1 not applied"
    );
    assert_eq!(
        one(&mut plain, "SELECT 2"),
        2,
        "the config's wait_timeout (3 s) closed a session after 1.8 s"
    );
    // Now idle past the configured 3 s.
    std::thread::sleep(Duration::from_millis(3600));
    assert!(
        closed(&mut plain),
        "wait_timeout: 3 from the config not applied"
    );
    // As on MariaDB, nothing is sent before the close: a raw session sees only EOF.
    let mut raw = raw_login(g.port);
    let t = Instant::now();
    let got = read_to_eof(&mut raw, Duration::from_secs(10)).expect("closed when idle");
    assert!(
        got.is_empty(),
        "idgate sent {got:?} before closing an idle session"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(2500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(one(&mut g.conn(), "SELECT 3"), 3);
    drop(busy);
    assert_alive(&g);
}

/// Logs in as `nopw` (empty password) by hand and returns the socket after the OK.
fn raw_login(port: u16) -> TcpStream {
    raw_login_with(port, 0)
}

/// As [`raw_login`], announcing `extra` capabilities too and selecting the test database.
fn raw_login_with(port: u16, extra: u32) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let greeting = read_packet(&mut s);
    assert_eq!(greeting[0], 10, "greeting");
    // PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, CONNECT_WITH_DB
    let caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0000_0008 | extra;
    let mut p = Vec::new();
    p.extend_from_slice(&caps.to_le_bytes());
    p.extend_from_slice(&(1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(b"nopw\0");
    p.push(0); // no auth data
    p.extend_from_slice(DATABASE.as_bytes());
    p.push(0);
    p.extend_from_slice(b"mysql_native_password\0");
    write_packet(&mut s, 1, &p);
    let ok = read_packet(&mut s);
    assert_eq!(ok[0], 0, "login answer {ok:?}");
    s
}

fn read_packet(s: &mut TcpStream) -> Vec<u8> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).expect("packet header");
    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    let mut p = vec![0; len];
    s.read_exact(&mut p).expect("packet body");
    p
}

fn write_packet(s: &mut TcpStream, seq: u8, payload: &[u8]) {
    let mut b = (payload.len() as u32).to_le_bytes();
    b[3] = seq;
    s.write_all(&b).unwrap();
    s.write_all(payload).unwrap();
}

#[test]
fn failed_logins_back_off_per_host_and_a_good_login_resets() {
    let db = shared_db();
    let g = Idgate::start_with(|port| {
        config(port, db, "max_auth_failures: 10\nauth_backoff_ms: 1500\n")
    });
    let from = |ip: [u8; 4], password: &str| {
        let addr = SocketAddr::from((ip, 0));
        connect(opts(g.port, APP_USER, password).bind_address(Some(addr)))
    };
    let mut codes = Vec::new();
    let t0 = Instant::now();
    for _ in 0..100 {
        let (code, state, msg) =
            server_error(from([127, 0, 0, 1], "wrong").expect_err("wrong password"));
        if code == 1129 {
            // Sent in place of the greeting, so without a SQLSTATE, as MariaDB does.
            let _ = state;
            assert!(
                msg.starts_with("Host '127.0.0.1' is blocked because of many connection errors"),
                "{msg}"
            );
        }
        codes.push(code);
    }
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "the loop took {:?}",
        t0.elapsed()
    );
    assert_eq!(&codes[..10], &[1045; 10], "{codes:?}");
    assert!(codes[10..].iter().all(|&c| c == 1129), "{codes:?}");
    // Another host is not affected.
    let mut other = from([127, 0, 0, 2], APP_PASSWORD).expect("127.0.0.2 logs in");
    assert_eq!(one(&mut other, "SELECT 1"), 1);
    // Even the right password waits out the backoff.
    let (code, ..) = server_error(from([127, 0, 0, 1], APP_PASSWORD).expect_err("blocked"));
    assert_eq!(code, 1129);
    std::thread::sleep(Duration::from_millis(1700));
    let mut good = from([127, 0, 0, 1], APP_PASSWORD).expect("a good login after the backoff");
    assert_eq!(one(&mut good, "SELECT 2"), 2);
    // The good login cleared the count: a new failure is an ordinary one.
    for _ in 0..9 {
        let (code, ..) = server_error(from([127, 0, 0, 1], "wrong").expect_err("wrong"));
        assert_eq!(code, 1045);
    }
    from([127, 0, 0, 1], APP_PASSWORD).expect("not blocked after 9 failures");
    assert_alive(&g);
}

#[test]
fn random_bytes_before_and_after_login_never_panic_or_hang() {
    use rand::{Rng, SeedableRng};
    let db = shared_db();
    let g = Idgate::start_with(|port| config(port, db, "connect_timeout: 2\nwait_timeout: 2\n"));
    let mut steady = g.conn();
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x1d6a7e);
    let mut sockets = Vec::new();
    for i in 0..300 {
        let mut s = if i % 2 == 0 {
            let mut s = TcpStream::connect(("127.0.0.1", g.port)).expect("connect");
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let _ = read_packet(&mut s);
            s
        } else {
            raw_login(g.port)
        };
        let mut junk = vec![0u8; rng.random_range(1..3000)];
        rng.fill(&mut junk[..]);
        if i % 3 == 0 && junk.len() > 4 {
            // A well-framed packet of random content (a random command after login).
            let len = (junk.len() - 4) as u32;
            junk[..3].copy_from_slice(&len.to_le_bytes()[..3]);
            junk[3] = if i % 2 == 0 { 1 } else { 0 };
        }
        let _ = s.write_all(&junk);
        if i % 4 == 0 {
            let _ = s.shutdown(Shutdown::Write);
        }
        sockets.push(s);
        if i % 50 == 0 {
            assert_eq!(one(&mut steady, "SELECT 5"), 5);
        }
    }
    assert_eq!(one(&mut steady, "SELECT 6"), 6);
    // Every socket ends: at once, or after connect_timeout / wait_timeout for those that left a
    // packet unfinished.
    for (i, s) in sockets.iter_mut().enumerate() {
        read_to_eof(s, Duration::from_secs(15))
            .unwrap_or_else(|e| panic!("socket {i} hangs: {e}; idgate log:\n{}", g.log()));
    }
    assert_eq!(one(&mut g.conn(), "SELECT 7"), 7);
    assert_alive(&g);
}

#[test]
fn backend_query_timeout_errors_in_time_and_the_session_goes_on() {
    let db = shared_db();
    let g = Idgate::start_with(|port| {
        config(port, db, "").replace("    pool:\n", "    query_timeout_ms: 1000\n    pool:\n")
    });
    let mut c = g.conn();
    c.query_drop("SET @marker = 1").unwrap();
    let t = Instant::now();
    let e = c
        .query_drop("SELECT SLEEP(5) AS stuck_statement")
        .expect_err("a statement longer than query_timeout_ms");
    let took = t.elapsed();
    let (code, state, msg) = server_error(e);
    assert_eq!((code, state.as_str()), (2013, "HY000"), "{msg}");
    assert!(
        msg.contains("`shard0`") && msg.contains("query_timeout_ms (1000 ms)"),
        "{msg}"
    );
    assert!(
        took < Duration::from_millis(2500),
        "the error took {took:?}"
    );
    // The session goes on, on a fresh connection (the abandoned one is not reused).
    assert_eq!(one(&mut c, "SELECT 41 + 1"), 42);
    assert_eq!(
        c.query_first::<Option<i64>, _>("SELECT @marker").unwrap(),
        Some(None),
        "session variables went with the abandoned connection"
    );
    // The abandoned statement was killed on the backend.
    let mut direct = direct(db);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let running: Vec<String> = direct
            .query("SELECT COALESCE(info, '') FROM information_schema.processlist WHERE info LIKE '%stuck_statement%' AND info NOT LIKE '%processlist%'")
            .unwrap();
        if running.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still running: {running:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Inside a transaction the session cannot go on: it ends with the error.
    c.query_drop("BEGIN").unwrap();
    let (code, _, msg) = server_error(c.query_drop("SELECT SLEEP(5)").expect_err("timeout"));
    assert_eq!(code, 2013, "{msg}");
    assert!(msg.contains("rolled back"), "{msg}");
    assert!(closed(&mut c));
    let mut again = g.conn();
    assert_eq!(one(&mut again, "SELECT 1"), 1);
    assert_alive(&g);
}

fn long_data(id: u32, param: u16, data: &[u8]) -> Vec<u8> {
    let mut p = vec![0x18];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&param.to_le_bytes());
    p.extend_from_slice(data);
    p
}

/// COM_STMT_EXECUTE of a one-parameter statement whose parameter came as long data.
fn execute_long(id: u32) -> Vec<u8> {
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0);
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(0); // NULL bitmap
    p.push(1); // types follow
    p.extend_from_slice(&[0xfc, 0]); // BLOB
    p
}

fn err_of(packet: &[u8]) -> (u16, String, String) {
    assert_eq!(packet[0], 0xff, "expected an error, got {packet:?}");
    (
        u16::from_le_bytes([packet[1], packet[2]]),
        String::from_utf8_lossy(&packet[4..9]).into_owned(),
        String::from_utf8_lossy(&packet[9..]).into_owned(),
    )
}

const LONG_DATA_TEXT: &str = "Parameter of prepared statement which is set through mysql_send_long_data() is longer than 'max_allowed_packet' bytes";

/// MariaDB's own answer to long data past max_allowed_packet (4096).
fn mariadb_long_data_error() -> (u16, String, String) {
    let db = start_db();
    direct(&db)
        .query_drop("SET GLOBAL max_allowed_packet = 4096")
        .unwrap();
    let mut r = raw::Raw::connect(db.port, USER, PASSWORD, DATABASE);
    let (id, _) = r.prepare(b"SELECT LENGTH(?)");
    for _ in 0..3 {
        r.send_only(&long_data(id, 0, &[b'x'; 2000]));
    }
    let answer = r.command(&execute_long(id), idgate::exec::relay::Reply::Results);
    err_of(&answer[0])
}

#[test]
fn long_data_past_max_packet_size_fails_at_execute_as_on_mariadb() {
    let db = shared_db();
    {
        let mut c = direct(db);
        c.query_drop("CREATE TABLE IF NOT EXISTS long_gen (id BIGINT PRIMARY KEY, b LONGBLOB)")
            .unwrap();
    }
    let g = Idgate::start_with(|port| {
        config(
            port,
            db,
            "max_packet_size: 4096\nmax_prepared_stmt_count: 3\n\
             generators:\n  seq:\n    kind: segment\n\
             tables:\n  long_gen:\n    generator: seq\n",
        )
    });
    let mariadb = mariadb_long_data_error();
    assert_eq!((mariadb.0, mariadb.1.as_str()), (1105, "HY000"));
    assert_eq!(mariadb.2, LONG_DATA_TEXT);
    let mut r = raw::Raw::connect(g.port, APP_USER, APP_PASSWORD, DATABASE);
    // A relayed statement and one idgate executes itself (an INSERT with a generated id).
    let (relayed, _) = r.prepare(b"SELECT LENGTH(?)");
    let (emulated, _) = r.prepare(b"INSERT INTO long_gen (b) VALUES (?)");
    for id in [relayed, emulated] {
        for _ in 0..3 {
            r.send_only(&long_data(id, 0, &[b'x'; 2000]));
        }
        let answer = r.command(&execute_long(id), idgate::exec::relay::Reply::Results);
        let (code, state, msg) = err_of(&answer[0]);
        assert_eq!((code, state.as_str()), (mariadb.0, mariadb.1.as_str()));
        assert!(msg.starts_with(LONG_DATA_TEXT), "{msg}");
        // The statement is usable again, with data under the cap.
        r.send_only(&long_data(id, 0, &[b'y'; 1000]));
        let answer = r.command(&execute_long(id), idgate::exec::relay::Reply::Results);
        assert_ne!(
            answer[0][0],
            0xff,
            "{:?}",
            String::from_utf8_lossy(&answer[0])
        );
    }
    let rows: Vec<i64> = direct(db).query("SELECT LENGTH(b) FROM long_gen").unwrap();
    assert!(rows.contains(&1000), "{rows:?}");
    assert!(!rows.iter().any(|&n| n > 4096), "{rows:?}");

    // Prepared statements per session: a third fits, a fourth gets MariaDB's 1461.
    let (third, _) = r.prepare(b"SELECT 3");
    let mut p = vec![0x16];
    p.extend_from_slice(b"SELECT 4");
    let answer = r.command(&p, idgate::exec::relay::Reply::Prepare);
    let (code, state, msg) = err_of(&answer[0]);
    assert_eq!((code, state.as_str()), (1461, "42000"));
    assert!(
        msg.starts_with(
            "Can't create more than max_prepared_stmt_count statements (current value: 3)"
        ),
        "{msg}"
    );
    let mut close = vec![0x19];
    close.extend_from_slice(&third.to_le_bytes());
    r.send_only(&close);
    r.prepare(b"SELECT 4");
    assert_alive(&g);
}

#[test]
fn group_by_past_merge_memory_limit_fails_clearly_and_the_session_goes_on() {
    let extra = format!("merge_memory_limit: 65536\n{ORDERS_MOD_2}");
    let s = two_shards(
        &extra,
        &["CREATE TABLE orders (id BIGINT PRIMARY KEY, k INT, pad VARCHAR(40))"],
    );
    let mut c = s.g.conn();
    for batch in 0..10 {
        let values: Vec<String> = (0..300)
            .map(|i| format!("({}, 'padding-{i}')", batch * 300 + i))
            .collect();
        c.query_drop(format!(
            "INSERT INTO orders (k, pad) VALUES {}",
            values.join(",")
        ))
        .unwrap();
    }
    // Both shards hold rows.
    for db in &s.dbs {
        let n = one(&mut direct(db), "SELECT COUNT(*) FROM orders");
        assert!(n > 100, "a shard holds {n} rows");
    }
    let e = c
        .query::<(i64, i64), _>("SELECT k, COUNT(*) FROM orders GROUP BY k")
        .expect_err("3000 groups exceed 64 KiB");
    let (code, state, msg) = server_error(e);
    assert_eq!((code, state.as_str()), (1037, "HY001"), "{msg}");
    assert!(msg.contains("merge_memory_limit (65536 bytes)"), "{msg}");
    let e = c
        .query::<String, _>("SELECT DISTINCT pad FROM orders")
        .expect_err("3000 distinct values exceed 64 KiB");
    assert_eq!(server_error(e).0, 1037);
    // A merge within the limit still works on the same session.
    let small: Vec<(i64, i64)> = c
        .query("SELECT k, COUNT(*) FROM orders WHERE k < 10 GROUP BY k")
        .unwrap();
    assert_eq!(small, (0..10).map(|k| (k, 1)).collect::<Vec<_>>());
    assert_eq!(one(&mut c, "SELECT COUNT(*) FROM orders"), 3000);
    assert_alive(&s.g);
}

#[test]
fn clients_that_stop_reading_or_sending_mid_command_are_given_up() {
    let db = shared_db();
    direct(db)
        .query_drop("CREATE TABLE IF NOT EXISTS stalled_load (v VARCHAR(10))")
        .unwrap();
    let g =
        Idgate::start_with(|port| config(port, db, "net_read_timeout: 1\nnet_write_timeout: 1\n"));
    // A client that asks for about 200 MB and reads none of it.
    let mut reader_gone = raw_login(g.port);
    let mut q = vec![0x03];
    q.extend_from_slice(b"SELECT REPEAT('x', 1000000) AS unread_answer FROM seq_1_to_200");
    write_packet(&mut reader_gone, 0, &q);
    // A client that starts LOAD DATA LOCAL and never sends the file.
    let mut sender_gone = raw_login_with(g.port, 0x0000_0080); // LOCAL_FILES
    let mut q = vec![0x03];
    q.extend_from_slice(b"LOAD DATA LOCAL INFILE 'never.txt' INTO TABLE stalled_load");
    write_packet(&mut sender_gone, 0, &q);
    let request = read_packet(&mut sender_gone);
    assert_eq!(request[0], 0xfb, "file request {request:?}");
    std::thread::sleep(Duration::from_millis(3000));
    let got = read_to_eof(&mut reader_gone, Duration::from_secs(20))
        .expect("a client that stopped reading is closed");
    assert!(got.len() < 100_000_000, "{} bytes were sent", got.len());
    read_to_eof(&mut sender_gone, Duration::from_secs(5))
        .expect("a client that stopped sending is closed");
    // Their backend connections were given up: nothing of theirs runs any more.
    let mut direct = direct(db);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let running: Vec<String> = direct
            .query("SELECT COALESCE(info, '') FROM information_schema.processlist WHERE (info LIKE '%unread_answer%' OR info LIKE '%stalled_load%') AND info NOT LIKE '%processlist%'")
            .unwrap();
        if running.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still running: {running:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(one(&mut g.conn(), "SELECT 1"), 1);
    assert_alive(&g);
}

#[test]
fn backend_sockets_use_tcp_keepalive() {
    let ss = common::clients::require_tool("ss", "iproute2");
    let db = shared_db();
    let g = Idgate::start(db);
    let mut c = g.conn();
    assert_eq!(one(&mut c, "SELECT 1"), 1);
    let out = std::process::Command::new(ss)
        .args(["-tnpo", "state", "established"])
        .arg(format!("( dport = :{} )", db.port))
        .output()
        .expect("run ss");
    let text = String::from_utf8_lossy(&out.stdout);
    let pid = format!("pid={},", g.pid());
    let idgate_lines: Vec<&str> = text.lines().filter(|l| l.contains(&pid)).collect();
    assert!(
        !idgate_lines.is_empty(),
        "no backend socket of idgate in:\n{text}"
    );
    for l in &idgate_lines {
        assert!(l.contains("timer:(keepalive"), "no keepalive: {l}");
    }
    assert_alive(&g);
}
