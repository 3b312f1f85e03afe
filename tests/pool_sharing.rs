//! `pool.mode: transaction`: many sessions share a few backend connections between their
//! transactions, and each sees exactly what it would see alone on its own connection to the
//! server: its SETs, its database, its LAST_INSERT_ID(), its temporary tables and locks; never
//! another session's. What cannot follow a session to another connection (ROW_COUNT() and
//! warnings of a statement whose connection served someone else since) is refused, never
//! answered from the wrong connection.

mod common;

use std::time::Duration;

use common::{Idgate, MariaDb, USER};
use mysql::prelude::Queryable;

/// idgate lending `max` connections to its sessions; a session waits `wait_ms` for one.
fn sharing_idgate(db: &MariaDb, max: usize, wait_ms: u64) -> Idgate {
    Idgate::start_with(|port| {
        common::migration::admin_config(port, &[("shard0", db)], "")
            .replace(
                "max_connections: 64\n",
                &format!("max_connections: {max}\n      mode: transaction\n"),
            )
            .replace(
                "acquire_timeout_ms: 10000",
                &format!("acquire_timeout_ms: {wait_ms}"),
            )
    })
}

/// Sessions' connections to the backend now: its account's threads, less this one and
/// idgate's own (its store, in database `idgate`).
fn backend_threads(root: &mut mysql::Conn) -> u64 {
    root.exec_first(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ? \
         AND ID <> CONNECTION_ID() AND COALESCE(DB, '') <> 'idgate'",
        (USER,),
    )
    .unwrap()
    .unwrap()
}

fn code(e: mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(e) => e.code,
        other => panic!("expected a server error, got {other}"),
    }
}

/// The SETs session `i` runs, each a kind of state that must follow it.
fn sets(i: usize) -> Vec<String> {
    let modes = ["ANSI_QUOTES", "NO_ZERO_DATE", "PIPES_AS_CONCAT", ""];
    let levels = ["READ-COMMITTED", "SERIALIZABLE", "REPEATABLE-READ"];
    vec![
        format!("SET SESSION sql_mode = '{}'", modes[i % modes.len()]),
        format!("SET time_zone = '+{:02}:00'", i % 12),
        format!(
            "SET SESSION TRANSACTION ISOLATION LEVEL {}",
            levels[i % levels.len()].replace('-', " ")
        ),
        format!("SET NAMES {}", ["utf8mb4", "latin1"][i % 2]),
        format!("SET @@session.group_concat_max_len = {}", 1024 + i),
    ]
}

const READ_BACK: &str = "SELECT @@session.sql_mode, @@session.time_zone, @@session.tx_isolation, \
     @@session.character_set_client, @@session.group_concat_max_len, DATABASE()";

type State = (String, String, String, String, u64, Option<String>);

#[test]
fn twenty_sessions_on_two_connections_each_keep_their_own_state() {
    let db = common::start_db();
    let g = sharing_idgate(&db, 2, 10_000);
    let mut root = common::direct(&db);
    root.query_drop("CREATE DATABASE other").unwrap();
    root.query_drop("CREATE TABLE ai (id INT AUTO_INCREMENT PRIMARY KEY, who INT)")
        .unwrap();
    root.query_drop("CREATE TABLE other.ai (id INT AUTO_INCREMENT PRIMARY KEY, who INT)")
        .unwrap();

    // What each session's state reads back on a connection of its own to the server.
    let mut want: Vec<State> = Vec::new();
    for i in 0..20 {
        let mut d = common::direct(&db);
        if i % 3 == 0 {
            d.query_drop("USE other").unwrap();
        }
        for s in sets(i) {
            d.query_drop(s).unwrap();
        }
        want.push(d.query_first(READ_BACK).unwrap().unwrap());
    }

    let mut sessions: Vec<mysql::Conn> = (0..20).map(|_| g.conn()).collect();
    for (i, s) in sessions.iter_mut().enumerate() {
        if i % 3 == 0 {
            s.query_drop("USE other").unwrap();
        }
        for stmt in sets(i) {
            s.query_drop(stmt).unwrap();
        }
    }
    let mut last_ids = [0u64; 20];
    let mut most_threads = 0;
    for round in 0..6 {
        for i in 0..20 {
            let s = &mut sessions[i];
            let got: State = s.query_first(READ_BACK).unwrap().unwrap();
            assert_eq!(got, want[i], "round {round}: session {i}");
            let lid: u64 = s.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
            assert_eq!(
                lid, last_ids[i],
                "round {round}: session {i}'s LAST_INSERT_ID()"
            );
            if (i + round) % 2 == 0 {
                // Text statements: a prepared one would keep the session on its connection.
                s.query_drop(format!("INSERT INTO ai (who) VALUES ({i})"))
                    .unwrap();
                last_ids[i] = s.last_insert_id();
                assert!(last_ids[i] > 0);
            }
            // The session's own row count, or a clear refusal when its connection served
            // another session in between; never another's count.
            match s.query_first::<i64, _>("SELECT ROW_COUNT()") {
                Ok(Some(n)) => assert!(n == -1 || n == 1, "round {round}: {n}"),
                Ok(None) => panic!("no row"),
                Err(e) => assert_eq!(code(e), 1235),
            }
            most_threads = most_threads.max(backend_threads(&mut root));
        }
    }
    assert!(
        most_threads <= 2,
        "{most_threads} backend connections for a pool of 2"
    );
    // Every insert landed once, in the session's database, under the session that made it.
    let rows: Vec<(String, u64, u64)> = root
        .query("SELECT 'test', id, who FROM ai UNION ALL SELECT 'other', id, who FROM other.ai")
        .unwrap();
    assert_eq!(rows.len(), 20 * 3);
    for (i, id) in last_ids.iter().enumerate() {
        let db = if i % 3 == 0 { "other" } else { "test" };
        assert!(
            rows.contains(&(db.to_string(), *id, i as u64)),
            "session {i}'s id {id} in {db}"
        );
    }
}

#[test]
fn state_that_cannot_move_keeps_its_connection() {
    let db = common::start_db();
    let g = sharing_idgate(&db, 2, 1500);
    let mut root = common::direct(&db);
    let mut pinned = g.conn();
    pinned
        .query_drop("CREATE TEMPORARY TABLE scratch (a INT)")
        .unwrap();
    pinned.query_drop("INSERT INTO scratch VALUES (7)").unwrap();
    let mut locker = g.conn();
    let got: i64 = locker
        .query_first("SELECT GET_LOCK('idgate-sharing', 5)")
        .unwrap()
        .unwrap();
    assert_eq!(got, 1);
    locker.query_drop("SET @mine = 'locker'").unwrap();
    // Both connections are pinned: a third session waits for one and gets a clear error.
    let started = std::time::Instant::now();
    let third = mysql::Conn::new(mysql::Opts::from_url(&g.url("")).expect("url"))
        .and_then(|mut c| c.query_drop("SELECT 1"));
    match third.unwrap_err() {
        mysql::Error::MySqlError(e) => {
            assert_eq!(e.code, 1040, "{}", e.message);
            assert!(e.message.contains("max_connections"), "{}", e.message);
        }
        other => panic!("{other}"),
    }
    assert!(started.elapsed() >= Duration::from_millis(1400));
    // The pinned sessions still have what they made.
    let a: i64 = pinned
        .query_first("SELECT a FROM scratch")
        .unwrap()
        .unwrap();
    assert_eq!(a, 7);
    let v: String = locker.query_first("SELECT @mine").unwrap().unwrap();
    assert_eq!(v, "locker");
    let free: i64 = root
        .query_first("SELECT IS_FREE_LOCK('idgate-sharing')")
        .unwrap()
        .unwrap();
    assert_eq!(free, 0, "the lock is still held");
    // Each says why it keeps its connection.
    let rows: Vec<(u32, Option<String>)> = pinned
        .query("SHOW IDGATE SESSIONS")
        .unwrap()
        .into_iter()
        .map(|r: mysql::Row| (r.get("Id").unwrap(), r.get("Pinned").unwrap()))
        .collect();
    let reason = |c: &mysql::Conn| {
        rows.iter()
            .find(|(id, _)| *id == c.connection_id())
            .and_then(|(_, p)| p.clone())
    };
    assert_eq!(
        reason(&pinned).as_deref(),
        Some("temporary table"),
        "{rows:?}"
    );
    assert_eq!(reason(&locker).as_deref(), Some("GET_LOCK"), "{rows:?}");
    assert_eq!(backend_threads(&mut root), 2);
}

#[test]
fn a_session_whose_connection_was_taken_goes_on_with_its_state() {
    let db = common::start_db();
    let g = sharing_idgate(&db, 1, 10_000);
    let mut root = common::direct(&db);
    root.query_drop("CREATE TABLE ai (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
        .unwrap();
    root.query_drop("INSERT INTO ai (n) VALUES (1), (1), (1)")
        .unwrap();
    let mut a = g.conn();
    let mut b = g.conn();
    a.query_drop("SET SESSION sql_mode = 'ANSI_QUOTES'")
        .unwrap();
    a.query_drop("INSERT INTO ai (n) VALUES (2)").unwrap();
    let a_id = a.last_insert_id();
    a.query_drop("UPDATE ai SET n = n + 1 WHERE n = 1").unwrap();
    // B runs on the one connection, which A parked: A's answers go, its LAST_INSERT_ID() is
    // carried, and B does not see A's.
    let b_lid: u64 = b.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
    assert_eq!(b_lid, 0);
    let mode: String = b.query_first("SELECT @@sql_mode").unwrap().unwrap();
    assert_ne!(mode, "ANSI_QUOTES", "B must not get A's sql_mode");
    let err = a.query_drop("SELECT ROW_COUNT()").unwrap_err();
    match err {
        mysql::Error::MySqlError(e) => {
            assert_eq!((e.code, e.state.as_str()), (1235, "42000"), "{}", e.message);
            assert!(e.message.contains("pool.mode"), "{}", e.message);
        }
        other => panic!("{other}"),
    }
    // Still refused: no statement of A's has run since.
    b.query_drop("SELECT 1").unwrap();
    let err = a.query_drop("SHOW WARNINGS").unwrap_err();
    assert_eq!(code(err), 1235);
    b.query_drop("SELECT 1").unwrap();
    let lid: u64 = a.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
    assert_eq!(lid, a_id, "A's LAST_INSERT_ID() follows it");
    let mode: String = a.query_first("SELECT @@sql_mode").unwrap().unwrap();
    assert_eq!(mode, "ANSI_QUOTES");
    // Right after its own statement the answer is A's own.
    let n: i64 = a.query_first("SELECT ROW_COUNT()").unwrap().unwrap();
    assert_eq!(n, -1);
    assert!(backend_threads(&mut root) <= 1);
}

#[test]
fn a_killed_parked_connection_is_replaced_with_the_sessions_state() {
    let db = common::start_db();
    let g = sharing_idgate(&db, 2, 10_000);
    let mut root = common::direct(&db);
    let mut a = g.conn();
    a.query_drop("SET SESSION sql_mode = 'PIPES_AS_CONCAT'")
        .unwrap();
    a.query_drop("SET time_zone = '+03:00'").unwrap();
    let threads: Vec<u64> = root
        .exec(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? \
             AND ID <> CONNECTION_ID() AND COALESCE(DB, '') <> 'idgate'",
            (USER,),
        )
        .unwrap();
    assert_eq!(threads.len(), 1, "{threads:?}");
    root.query_drop(format!("KILL {}", threads[0])).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let got: (String, String) = a
        .query_first("SELECT @@sql_mode, @@time_zone")
        .unwrap()
        .unwrap();
    assert_eq!(got, ("PIPES_AS_CONCAT".to_string(), "+03:00".to_string()));
    let s: String = a.query_first("SELECT 'a' || 'b'").unwrap().unwrap();
    assert_eq!(s, "ab");
}

#[test]
fn five_thousand_sessions_through_a_pool_of_sixteen() {
    let db = common::start_db();
    let g = sharing_idgate(&db, 16, 10_000);
    let mut root = common::direct(&db);
    root.query_drop("CREATE TABLE hits (id INT AUTO_INCREMENT PRIMARY KEY, who INT)")
        .unwrap();
    let url = g.url(common::DATABASE);
    const ROUNDS: usize = 40;
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let url = url.clone();
            std::thread::spawn(move || {
                // Each worker keeps 16 sessions open at once, 40 times over; each inserts,
                // and reads its own LAST_INSERT_ID() after all 16 have inserted.
                for round in 0..ROUNDS {
                    let mut open: Vec<(mysql::Conn, u64)> = (0..16)
                        .map(|_| {
                            let c = mysql::Conn::new(mysql::Opts::from_url(&url).unwrap());
                            (c.unwrap(), 0)
                        })
                        .collect();
                    for (i, (c, id)) in open.iter_mut().enumerate() {
                        let who = w * 1000 + round * 16 + i;
                        c.query_drop(format!("INSERT INTO hits (who) VALUES ({who})"))
                            .unwrap();
                        *id = c.last_insert_id();
                    }
                    for (c, id) in &mut open {
                        let lid: u64 = c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
                        assert_eq!(lid, *id);
                    }
                }
            })
        })
        .collect();
    let mut most = 0;
    while workers.iter().any(|w| !w.is_finished()) {
        most = most.max(backend_threads(&mut root));
        std::thread::sleep(Duration::from_millis(20));
    }
    for w in workers {
        w.join().unwrap();
    }
    let n: u64 = root
        .query_first("SELECT COUNT(*) FROM hits")
        .unwrap()
        .unwrap();
    assert_eq!(n, 8 * ROUNDS as u64 * 16);
    assert!(most <= 16, "{most} backend connections for a pool of 16");
}
