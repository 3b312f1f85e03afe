//! Bad logins, oversized packets and clients that vanish get clean errors, and idgate keeps
//! serving everyone else.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

fn login(port: u16, user: &str, pass: &str) -> Result<Conn, mysql::Error> {
    Conn::new(
        OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(port)
            .user(Some(user))
            .pass(Some(pass)),
    )
}

fn code(e: mysql::Error) -> (u16, String, String) {
    match e {
        mysql::Error::MySqlError(e) => (e.code, e.state, e.message),
        other => panic!("expected a server error, got {other:?}"),
    }
}

#[test]
fn wrong_password_and_unknown_user_are_denied() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let (c, state, msg) = code(login(g.port, "app", "nope").unwrap_err());
    assert_eq!((c, state.as_str()), (1045, "28000"));
    assert_eq!(
        msg,
        "Access denied for user 'app'@'127.0.0.1' (using password: YES)"
    );
    let (c, _, msg) = code(login(g.port, "ghost", "").unwrap_err());
    assert_eq!(c, 1045);
    assert!(msg.contains("(using password: NO)"), "{msg}");
    let (c, _, _) = code(login(g.port, "nopw", "something").unwrap_err());
    assert_eq!(c, 1045);
    let mut ok = login(g.port, "nopw", "").unwrap();
    assert_eq!(ok.query_first::<i64, _>("SELECT 1").unwrap(), Some(1));
    let (c, _, msg) =
        code(Conn::new(mysql::Opts::from_url(&g.url("no_such_db")).unwrap()).unwrap_err());
    assert_eq!(c, 1049, "{msg}");
    assert_eq!(g.conn().query_first::<i64, _>("SELECT 2").unwrap(), Some(2));
}

#[test]
fn backend_errors_keep_code_state_and_message() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let mut c = g.conn();
    c.query_drop("CREATE TABLE IF NOT EXISTS err_dup (id INT PRIMARY KEY)")
        .unwrap();
    c.query_drop("INSERT IGNORE INTO err_dup VALUES (1)")
        .unwrap();
    let cases = [
        ("INSERT INTO err_dup VALUES (1)", 1062, "23000"),
        ("SELEC 1", 1064, "42000"),
        ("SELECT * FROM err_missing", 1146, "42S02"),
        (
            "SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 4025, MESSAGE_TEXT = 'big code'",
            4025,
            "45000",
        ),
    ];
    let mut d = common::direct(db);
    for (sql, want, state) in cases {
        let via = code(c.query_drop(sql).unwrap_err());
        let direct = code(d.query_drop(sql).unwrap_err());
        assert_eq!(via, direct, "{sql}");
        assert_eq!((via.0, via.1.as_str()), (want, state), "{sql}");
    }
    assert_eq!(c.query_first::<i64, _>("SELECT 3").unwrap(), Some(3));
}

#[test]
fn packet_over_the_limit_gets_1153_and_idgate_goes_on() {
    let db = common::shared_db();
    let g = common::Idgate::start_with(|port| {
        common::idgate_proc::config_for(port, &[("shard0", db)], "max_packet_size: 1048576\n")
    });
    let mut c = g.conn();
    let big = format!("SELECT '{}'", "x".repeat(2 << 20));
    let (c1153, state, msg) = code(c.query_drop(&big).unwrap_err());
    assert_eq!((c1153, state.as_str()), (1153, "08S01"), "{msg}");
    assert!(msg.contains("max_packet_size"), "{msg}");
    // Just under the limit still works, on a new connection.
    let mut c = g.conn();
    let fits = format!("SELECT LENGTH('{}')", "y".repeat(1 << 19));
    assert_eq!(c.query_first::<i64, _>(&fits).unwrap(), Some(1 << 19));
}

#[test]
fn packets_of_16_mib_and_more_cross_both_ways() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let mut c = g.conn();
    c.query_drop("CREATE TABLE IF NOT EXISTS err_big (id INT PRIMARY KEY, b LONGBLOB)")
        .unwrap();
    c.query_drop("DELETE FROM err_big").unwrap();
    // Client to backend: a 20 MiB statement, split into 16 MiB packets.
    let blob: Vec<u8> = (0..20 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    c.exec_drop("INSERT INTO err_big VALUES (1, ?)", (blob.clone(),))
        .unwrap();
    let mut sql = b"INSERT INTO err_big VALUES (2, x'".to_vec();
    sql.extend(
        blob[..(17 << 20) / 2]
            .iter()
            .flat_map(|b| format!("{b:02x}").into_bytes()),
    );
    sql.extend_from_slice(b"')");
    assert!(sql.len() > 16 << 20);
    c.query_drop(String::from_utf8(sql).unwrap()).unwrap();
    // Backend to client: rows of exactly 16 MiB - 1 and larger, text and binary protocol.
    let back: Vec<u8> = c
        .query_first("SELECT b FROM err_big WHERE id = 1")
        .unwrap()
        .unwrap();
    assert!(back == blob, "20 MiB blob came back changed");
    let back: Vec<u8> = c
        .exec_first("SELECT b FROM err_big WHERE id = ?", (1,))
        .unwrap()
        .unwrap();
    assert!(back == blob);
    let exact: Vec<u8> = c
        .query_first("SELECT REPEAT('z', 16777215 - 4)")
        .unwrap()
        .unwrap();
    assert_eq!(exact.len(), 16777215 - 4);
    let half: i64 = c
        .query_first("SELECT LENGTH(b) FROM err_big WHERE id = 2")
        .unwrap()
        .unwrap();
    assert_eq!(half, (17 << 20) / 2);
}

#[test]
fn client_vanishing_mid_result_leaves_idgate_serving() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    for _ in 0..3 {
        // Log in with the real driver, then read a few bytes of a big result and hang up.
        let mut c = g.conn();
        let mut raw = TcpStream::connect(("127.0.0.1", g.port)).unwrap();
        let mut greet = [0u8; 4];
        raw.read_exact(&mut greet).unwrap();
        drop(raw); // a client that leaves during the handshake
        let mut it = c
            .query_iter("SELECT seq, REPEAT('r', 200) FROM seq_1_to_500000")
            .unwrap();
        let first = it.iter().unwrap().next().unwrap().unwrap();
        assert_eq!(first.get::<i64, _>(0), Some(1));
        // Dropping the connection mid-result closes the socket.
        std::mem::forget(it);
        drop(c);
    }
    // Half-open garbage: a "client" that sends junk instead of a handshake response.
    let mut junk = TcpStream::connect(("127.0.0.1", g.port)).unwrap();
    let mut greet = [0u8; 128];
    let _ = junk.read(&mut greet).unwrap();
    junk.write_all(&[5, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff])
        .unwrap();
    let mut answer = Vec::new();
    let _ = junk.read_to_end(&mut answer);
    assert_eq!(
        answer.get(4),
        Some(&0xff),
        "junk handshake gets an ERR packet"
    );
    let mut c = g.conn();
    assert_eq!(
        c.query_first::<i64, _>("SELECT COUNT(*) FROM seq_1_to_10")
            .unwrap(),
        Some(10)
    );
}
