//! Every command a client can send, through idgate, answered as MariaDB answers it.

mod common;

use common::raw::Raw;
use idgate::exec::relay::Reply;
use mysql::prelude::Queryable;
use mysql::{ChangeUserOpts, Conn, OptsBuilder};

fn opts(port: u16, user: &str, pass: &str) -> OptsBuilder {
    OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(pass))
        .db_name(Some(common::DATABASE))
}

#[test]
fn init_db_ping_reset_and_session_state() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let mut c = g.conn();
    common::direct(db)
        .query_drop("CREATE DATABASE IF NOT EXISTS cmd_other")
        .unwrap();
    c.select_db("cmd_other").unwrap();
    let cur: String = c.query_first("SELECT DATABASE()").unwrap().unwrap();
    assert_eq!(cur, "cmd_other");
    assert!(c.select_db("cmd_missing").is_err());
    let cur: String = c.query_first("SELECT DATABASE()").unwrap().unwrap();
    assert_eq!(cur, "cmd_other", "a failed COM_INIT_DB keeps the database");
    c.ping().unwrap();

    c.query_drop("SET @v = 'kept'").unwrap();
    c.query_drop("CREATE TEMPORARY TABLE cmd_tmp (x INT)")
        .unwrap();
    c.query_drop("SET NAMES latin1").unwrap();
    let v: Option<String> = c.query_first("SELECT @v").unwrap().unwrap();
    assert_eq!(v.as_deref(), Some("kept"));
    c.reset().unwrap();
    let v: Option<String> = c.query_first("SELECT @v").unwrap().unwrap();
    assert_eq!(v, None, "COM_RESET_CONNECTION clears user variables");
    assert!(
        c.query_drop("SELECT * FROM cmd_tmp").is_err(),
        "and temporary tables"
    );
    let cs: String = c
        .query_first("SELECT @@character_set_client")
        .unwrap()
        .unwrap();
    assert_eq!(cs, "utf8mb4", "and restores the login character set");
    let cur: String = c.query_first("SELECT DATABASE()").unwrap().unwrap();
    assert_eq!(cur, "cmd_other", "and keeps the database");
}

#[test]
fn change_user_reauthenticates() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let mut c = g.conn();
    c.query_drop("SET @v = 1").unwrap();
    let bad = c.change_user(
        ChangeUserOpts::default()
            .with_user(Some("app".into()))
            .with_pass(Some("wrong".into())),
    );
    match bad {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1045, "{e}"),
        other => panic!("wrong password accepted by COM_CHANGE_USER: {other:?}"),
    }
    let mut c = g.conn();
    c.query_drop("SET @v = 1").unwrap();
    c.change_user(
        ChangeUserOpts::default()
            .with_user(Some("nopw".into()))
            .with_pass(Some(String::new()))
            .with_db_name(Some(common::DATABASE.into())),
    )
    .unwrap();
    let v: Option<i64> = c.query_first("SELECT @v").unwrap().unwrap();
    assert_eq!(v, None, "a changed user starts with a clean session");
    let one: i64 = c.query_first("SELECT 1").unwrap().unwrap();
    assert_eq!(one, 1);
}

#[test]
fn field_list_statistics_set_option_and_statements_match_direct() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let mut setup = common::direct(db);
    setup
        .query_drop("CREATE TABLE IF NOT EXISTS cmd_fields (id INT PRIMARY KEY, name VARCHAR(20) DEFAULT 'n', b BLOB)")
        .unwrap();
    let mut d = Raw::connect(db.port, common::USER, common::PASSWORD, common::DATABASE);
    let mut p = Raw::connect(g.port, "app", "app-secret", common::DATABASE);

    let field_list = b"\x04cmd_fields\x00";
    assert_eq!(
        d.command(field_list, Reply::Fields),
        p.command(field_list, Reply::Fields)
    );

    let stats = p.command(b"\x09", Reply::Single);
    assert!(
        stats[0].starts_with(b"Uptime: "),
        "{:?}",
        String::from_utf8_lossy(&stats[0])
    );

    // COM_SET_OPTION MULTI_STATEMENTS_OFF: multi-statements then fail as on MariaDB.
    let off = b"\x1b\x01\x00";
    assert_eq!(d.command(off, Reply::Eof), p.command(off, Reply::Eof));
    let multi = b"SELECT 1; SELECT 2";
    let (dm, pm) = (d.query(multi), p.query(multi));
    assert_eq!(dm, pm);
    assert_eq!(u16::from_le_bytes([pm[0][1], pm[0][2]]), 1064);

    // Long data in three pieces, then execute, reset and close.
    let (did, _) = d.prepare(b"SELECT LENGTH(?), MD5(?)");
    let (pid, _) = p.prepare(b"SELECT LENGTH(?), MD5(?)");
    for (raw, id) in [(&mut d, did), (&mut p, pid)] {
        for param in 0u16..2 {
            for chunk in [&b"first "[..], b"second ", b"third"] {
                let mut pkt = vec![0x18];
                pkt.extend_from_slice(&id.to_le_bytes());
                pkt.extend_from_slice(&param.to_le_bytes());
                pkt.extend_from_slice(chunk);
                raw.send_only(&pkt);
            }
        }
    }
    let exec = |id: u32| {
        let mut e = vec![0x17];
        e.extend_from_slice(&id.to_le_bytes());
        e.extend_from_slice(&[0, 1, 0, 0, 0, 0, 1, 0xfc, 0, 0xfc, 0]);
        e
    };
    let (de, pe) = (
        d.command(&exec(did), Reply::Results),
        p.command(&exec(pid), Reply::Results),
    );
    assert_eq!(de, pe);
    // Binary row: header, NULL bitmap, then LENGTH(?) as a little-endian INT: all three pieces.
    let row = &pe[pe.len() - 2];
    assert_eq!(
        u32::from_le_bytes(row[2..6].try_into().unwrap()),
        18,
        "{pe:?}"
    );
    let reset = |id: u32| [&[0x1a][..], &id.to_le_bytes()].concat();
    assert_eq!(
        d.command(&reset(did), Reply::Single),
        p.command(&reset(pid), Reply::Single)
    );
    let close = |id: u32| [&[0x19][..], &id.to_le_bytes()].concat();
    d.send_only(&close(did));
    p.send_only(&close(pid));
    let (de, pe) = (
        d.command(&exec(did), Reply::Results),
        p.command(&exec(pid), Reply::Results),
    );
    assert_eq!(u16::from_le_bytes([pe[0][1], pe[0][2]]), 1243, "{pe:?}");
    // The same error, each naming the id its server handed out (MariaDB's statement ids go on
    // counting across connections, so the direct one need not be 1).
    let named = |packets: &[Vec<u8>], id: u32| {
        String::from_utf8_lossy(&packets[0]).replace(&format!("handler ({id})"), "handler (N)")
    };
    assert_eq!(named(&de, did), named(&pe, pid), "unknown statement error");
    assert_eq!(de.len(), pe.len());

    // An unknown command gets ER_UNKNOWN_COM_ERROR and the session goes on.
    let unknown = p.command(b"\xee", Reply::Single);
    assert_eq!(u16::from_le_bytes([unknown[0][1], unknown[0][2]]), 1047);
    assert_eq!(d.query(b"SELECT 42"), p.query(b"SELECT 42"));
}

#[test]
fn client_found_rows_is_honored() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    common::direct(db)
        .query_drop("CREATE TABLE IF NOT EXISTS cmd_found (id INT PRIMARY KEY, v INT); REPLACE INTO cmd_found VALUES (1, 5)")
        .unwrap();
    for found in [false, true] {
        let mut direct = Conn::new(
            opts(db.port, common::USER, common::PASSWORD).additional_capabilities(if found {
                mysql::consts::CapabilityFlags::CLIENT_FOUND_ROWS
            } else {
                mysql::consts::CapabilityFlags::empty()
            }),
        )
        .unwrap();
        let mut via = Conn::new(opts(g.port, "app", "app-secret").additional_capabilities(
            if found {
                mysql::consts::CapabilityFlags::CLIENT_FOUND_ROWS
            } else {
                mysql::consts::CapabilityFlags::empty()
            },
        ))
        .unwrap();
        direct
            .query_drop("UPDATE cmd_found SET v = 5 WHERE id = 1")
            .unwrap();
        via.query_drop("UPDATE cmd_found SET v = 5 WHERE id = 1")
            .unwrap();
        assert_eq!(direct.affected_rows(), found as u64);
        assert_eq!(
            via.affected_rows(),
            direct.affected_rows(),
            "CLIENT_FOUND_ROWS={found}"
        );
    }
}

#[test]
fn multi_statements_and_call_return_every_result() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let mut c = g.conn();
    c.query_drop("DROP PROCEDURE IF EXISTS cmd_two").unwrap();
    c.query_drop("CREATE PROCEDURE cmd_two() BEGIN SELECT 1 AS a; SELECT 2 AS b, 3 AS c; END")
        .unwrap();
    let mut sets = Vec::new();
    let mut r = c.query_iter("CALL cmd_two(); SELECT 'x'; DO 1").unwrap();
    while let Some(set) = r.iter() {
        let rows: Vec<mysql::Row> = set.map(|row| row.unwrap()).collect();
        sets.push(rows.len());
    }
    drop(r);
    // Two sets from CALL, its closing OK, the SELECT, and DO's OK.
    assert_eq!(sets, vec![1, 1, 0, 1, 0]);
    let after: i64 = c.query_first("SELECT 7").unwrap().unwrap();
    assert_eq!(
        after, 7,
        "the connection is in step after the multi-result answer"
    );
}

#[test]
fn a_pooled_connection_never_leaks_the_previous_sessions_database() {
    let db = common::shared_db();
    // One pooled connection, so every session gets the same backend connection.
    let g = common::Idgate::start_with(|port| {
        common::idgate_proc::config_for(port, &[("shard0", db)], "")
            .replace("max_connections: 64", "max_connections: 1")
    });
    let database =
        |c: &mut Conn| -> Option<String> { c.query_first("SELECT DATABASE()").unwrap().unwrap() };
    let no_db = || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match Conn::new(
                OptsBuilder::new()
                    .ip_or_hostname(Some("127.0.0.1"))
                    .tcp_port(g.port)
                    .user(Some("app"))
                    .pass(Some("app-secret")),
            ) {
                Ok(c) => return c,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Err(e) => panic!("{e}"),
            }
        }
    };
    let mut a = g.conn();
    a.query_drop("USE mysql").unwrap();
    assert_eq!(database(&mut a).as_deref(), Some("mysql"));
    drop(a);
    let mut b = no_db();
    assert_eq!(
        database(&mut b),
        None,
        "a session without a database sees none"
    );
    drop(b);
    let mut c = g.conn();
    assert_eq!(database(&mut c).as_deref(), Some(common::DATABASE));
    c.query_drop("USE mysql").unwrap();
    c.reset().unwrap();
    assert_eq!(
        database(&mut c).as_deref(),
        Some("mysql"),
        "COM_RESET_CONNECTION keeps the database"
    );
    c.change_user(ChangeUserOpts::default().with_db_name(Some(common::DATABASE.into())))
        .unwrap();
    assert_eq!(
        database(&mut c).as_deref(),
        Some(common::DATABASE),
        "COM_CHANGE_USER sets the one asked for"
    );
}

/// What one connection sees across failed and good COM_CHANGE_USERs, as lines to compare.
fn change_user_story(mut c: mysql::Conn, user: &str, password: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let to = |u: &str, p: &str| {
        ChangeUserOpts::default()
            .with_user(Some(u.into()))
            .with_pass(Some(p.into()))
            .with_db_name(Some(common::DATABASE.into()))
    };
    let outcome = |r: mysql::Result<()>| match r {
        Ok(()) => "ok".to_string(),
        Err(mysql::Error::MySqlError(e)) => format!("error {} {}", e.code, e.state),
        Err(e) => format!("failed: {e}"),
    };
    c.query_drop("SET @v = 1").unwrap();
    c.query_drop("CREATE TEMPORARY TABLE cu_tmp (a INT)")
        .unwrap();
    seen.push(outcome(c.change_user(to(user, "wrong"))));
    // The connection goes on, as the user it had, with its session reset.
    let v: Option<Option<i64>> = c.query_first("SELECT @v").unwrap();
    seen.push(format!("after a failed change: @v={v:?}"));
    let tmp = c.query_drop("SELECT * FROM cu_tmp").is_ok();
    seen.push(format!("temporary table kept: {tmp}"));
    seen.push(format!(
        "database: {:?}",
        c.query_first::<Option<String>, _>("SELECT DATABASE()")
            .unwrap()
    ));
    // A right password afterwards is accepted.
    seen.push(outcome(c.change_user(to(user, password))));
    let one: Option<i64> = c.query_first("SELECT 1").unwrap();
    seen.push(format!("usable: {one:?}"));
    // Two more refusals make three on this connection: then even a right password is refused.
    for _ in 0..2 {
        seen.push(outcome(c.change_user(to(user, "wrong"))));
    }
    seen.push(outcome(c.change_user(to(user, password))));
    seen
}

#[test]
fn a_failed_change_user_leaves_the_connection_open_as_mariadb_does() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let direct = change_user_story(common::direct(db), common::USER, common::PASSWORD);
    let through = change_user_story(
        g.conn(),
        common::idgate_proc::APP_USER,
        common::idgate_proc::APP_PASSWORD,
    );
    assert_eq!(direct, through, "idgate log:\n{}", g.log());
    assert_eq!(direct[0], "error 1045 28000");
    assert_eq!(direct[4], "ok");
    assert_eq!(direct.last().map(String::as_str), Some("error 1047 08S01"));
}
