//! `IDGATE SWITCHOVER`: a planned change of a backend's primary under load. Writers and
//! readers keep going through idgate while it holds their statements, moves the sessions to
//! the new primary and points the other nodes at it: no client error, every acknowledged
//! write on the new primary, the old primary read-only and replicating from it. Sessions with
//! state only their connection had, and transactions open across the change, are told so.
//! One group of three real MariaDB servers (GTID, semi-synchronous replication) serves the
//! whole file; the switchover carries the semi-sync roles to the new primary.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::idgate_proc::APP_PASSWORD;
use common::prometheus::{must_sample, scrape};
use common::replication::{eventually, Group};
use common::{direct, free_port, start_db, Idgate, MariaDb, DATABASE, PASSWORD, USER};
use mysql::prelude::Queryable;

const PLAIN_USER: &str = "plain";

fn config(port: u16, admin: u16, group: &Group, store: &MariaDb) -> String {
    format!(
        "listen: 127.0.0.1:{port}\nallow_plaintext_passwords: true\n\
         admin:\n  listen: 127.0.0.1:{admin}\n\
         users:\n  - name: {}\n    password: {APP_PASSWORD}\n    admin: true\n\
         \x20 - name: {PLAIN_USER}\n    password: {APP_PASSWORD}\n\
         backends:\n\
         \x20 db:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
         \x20   replicas: [\"{}\", \"{}\"]\n    poll_interval_ms: 100\n\
         \x20   max_replica_lag_ms: 5000\n    switchover_timeout_ms: 3000\n    switchover_drain_ms: 300\n\
         \x20 store:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
         default_backend: db\nsequence_store:\n  backend: store\n",
        common::idgate_proc::APP_USER,
        group.nodes[0].port,
        group.addr(1),
        group.addr(2),
        store.port
    )
}

/// `SHOW IDGATE BACKENDS` of backend `db`: each node's (address, role).
fn roles(c: &mut mysql::Conn) -> Vec<(String, String)> {
    let rows: Vec<mysql::Row> = c.query("SHOW IDGATE BACKENDS").unwrap();
    rows.into_iter()
        .filter(|r| r.get::<String, _>("Name").as_deref() == Some("db"))
        .map(|r| {
            let get = |c: &str| r.get::<Option<String>, _>(c).flatten().unwrap_or_default();
            (get("Address"), get("Role"))
        })
        .collect()
}

fn primary_is(c: &mut mysql::Conn, node: &str) -> Result<(), String> {
    let r = roles(c);
    match r.iter().find(|(_, role)| role == "primary") {
        Some((n, _))
            if n == node
                && r.iter()
                    .all(|(_, role)| role == "primary" || role == "replica") =>
        {
            Ok(())
        }
        _ => Err(format!("{r:?}")),
    }
}

/// The port of the server `c` runs its statements on.
fn server_port(c: &mut mysql::Conn) -> u16 {
    c.query_first::<u16, _>("SELECT @@port").unwrap().unwrap()
}

/// Node `i`'s replication: (source port, IO and SQL threads running).
fn replicates_from(group: &Group, i: usize) -> Option<(u16, bool)> {
    let row: Option<mysql::Row> = direct(&group.nodes[i])
        .query_first("SHOW SLAVE STATUS")
        .unwrap();
    row.map(|r| {
        let port = r.get::<u16, _>("Master_Port").unwrap_or(0);
        let yes = |c: &str| r.get::<String, _>(c).as_deref() == Some("Yes");
        (port, yes("Slave_IO_Running") && yes("Slave_SQL_Running"))
    })
}

fn read_only(group: &Group, i: usize) -> i64 {
    direct(&group.nodes[i])
        .query_first("SELECT @@read_only")
        .unwrap()
        .unwrap()
}

/// What the load saw: acknowledged writes (writer, seq), errors, the longest statement.
#[derive(Default)]
struct Seen {
    acked: Vec<(u32, u32)>,
    errors: Vec<String>,
    longest: Duration,
}

fn load(
    g: &Idgate,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..8u32)
        .map(|w| {
            let (stop, seen) = (stop.clone(), seen.clone());
            let mut c = g.conn();
            std::thread::spawn(move || {
                let mut seq = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    seq += 1;
                    let t0 = Instant::now();
                    let r = if w < 4 {
                        c.query_drop(format!(
                            "INSERT INTO acked (writer, seq) VALUES ({w}, {seq})"
                        ))
                    } else {
                        c.query_drop(format!(
                            "SELECT COUNT(*) FROM acked WHERE writer = {}",
                            w - 4
                        ))
                    };
                    let took = t0.elapsed();
                    let mut s = seen.lock().unwrap();
                    s.longest = s.longest.max(took);
                    match r {
                        Ok(()) if w < 4 => s.acked.push((w, seq)),
                        Ok(()) => {}
                        Err(e) => s.errors.push(format!("client {w}: {e}")),
                    }
                    drop(s);
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        })
        .collect()
}

#[test]
fn switchover_moves_writes_without_an_error_or_a_lost_write() {
    let group = Group::start_semi_sync(2);
    let store = start_db();
    let admin_port = free_port().unwrap();
    let g = Idgate::start_with(|port| config(port, admin_port, &group, &store));
    let mut admin = g.conn();
    let within = Duration::from_secs(10);
    eventually(within, || primary_is(&mut admin, &group.addr(0)));
    admin
        .query_drop("CREATE TABLE acked (writer INT, seq INT, PRIMARY KEY (writer, seq))")
        .unwrap();
    for i in 1..=2 {
        group.caught_up(i, 0);
    }

    // Refusals change nothing.
    let refused = |c: &mut mysql::Conn, sql: &str, code: u16, says: &str| match c.query_drop(sql) {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!(e.code, code, "{sql}: {e:?}");
            assert!(e.message.contains(says), "{sql}: {}", e.message);
        }
        other => panic!("{sql}: {other:?}"),
    };
    let to = |i: usize| format!("IDGATE SWITCHOVER db TO '{}'", group.addr(i));
    refused(&mut admin, &to(0), 1105, "is the primary already");
    refused(
        &mut admin,
        "IDGATE SWITCHOVER db TO '127.0.0.1:1'",
        1105,
        "is not a node of backend",
    );
    refused(
        &mut admin,
        "IDGATE SWITCHOVER store TO '127.0.0.1:1'",
        1105,
        "it is one server",
    );
    refused(
        &mut admin,
        "IDGATE SWITCHOVER nope TO '127.0.0.1:1'",
        1105,
        "no backend of that name",
    );
    refused(
        &mut admin,
        "IDGATE SWITCHOVER db",
        1064,
        "IDGATE SWITCHOVER <backend> TO",
    );
    let mut plain = mysql::Conn::new(
        mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(g.port)
            .user(Some(PLAIN_USER))
            .pass(Some(APP_PASSWORD))
            .db_name(Some(DATABASE)),
    )
    .unwrap();
    refused(&mut plain, &to(1), 1227, "admin");
    group.sql(2, "STOP SLAVE SQL_THREAD");
    eventually(within, || match roles(&mut admin).get(2) {
        Some((_, r)) if r == "excluded" => Ok(()),
        other => Err(format!("{other:?}")),
    });
    refused(&mut admin, &to(2), 1105, "is not a serving replica");
    group.sql(2, "START SLAVE SQL_THREAD");
    eventually(within, || primary_is(&mut admin, &group.addr(0)));
    assert_eq!(
        read_only(&group, 0),
        0,
        "the refusals left the primary writable"
    );

    // Sessions: one with a SET (moves with it), one with a user variable (cannot move), one
    // in a transaction across the change.
    let mut with_set = g.conn();
    with_set.query_drop("SET time_zone = '+03:00'").unwrap();
    assert_eq!(server_port(&mut with_set), group.nodes[0].port);
    let mut with_var = g.conn();
    with_var.query_drop("SET @kept = 5").unwrap();
    let mut in_txn = g.conn();
    in_txn.query_drop("BEGIN").unwrap();
    in_txn
        .query_drop("INSERT INTO acked VALUES (99, 1)")
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let clients = load(&g, stop.clone(), seen.clone());
    std::thread::sleep(Duration::from_millis(800));
    let info = admin
        .query_drop(to(1))
        .map(|()| admin.info_str().into_owned());
    std::thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let info = info.unwrap_or_else(|e| panic!("switchover: {e}; idgate's log:\n{}", g.log()));
    assert!(info.contains("the primary is now"), "{info}");
    assert!(!info.contains("not replicating"), "{info}");
    let seen = seen.lock().unwrap();
    println!(
        "switchover: {} acknowledged writes, longest statement {:?}; {info}",
        seen.acked.len(),
        seen.longest
    );
    assert!(seen.errors.is_empty(), "client errors: {:?}", seen.errors);

    // Every acknowledged write is on the new primary; the old one follows it, read-only.
    assert_eq!(read_only(&group, 1), 0);
    assert_eq!(read_only(&group, 0), 1);
    let semi: Option<(String, String)> = direct(&group.nodes[1])
        .query_first("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_status'")
        .unwrap();
    assert_eq!(
        semi.map(|(_, v)| v).as_deref(),
        Some("ON"),
        "the new primary waits for a replica"
    );
    let new = &group.nodes[1];
    let rows: Vec<(u32, u32)> = direct(new)
        .query(format!(
            "SELECT writer, seq FROM {DATABASE}.acked WHERE writer < 4"
        ))
        .unwrap();
    let on_new: std::collections::HashSet<(u32, u32)> = rows.into_iter().collect();
    let missing: Vec<_> = seen.acked.iter().filter(|w| !on_new.contains(w)).collect();
    assert!(
        missing.is_empty(),
        "acknowledged but not on the new primary: {missing:?}"
    );
    assert!(
        seen.acked.len() > 8,
        "the writers ran: {}",
        seen.acked.len()
    );
    for i in [0, 2] {
        eventually(within, || match replicates_from(&group, i) {
            Some((port, true)) if port == new.port => Ok(()),
            other => Err(format!("node {i}: {other:?}")),
        });
        group.caught_up(i, 1);
    }
    let on_old: u64 = direct(&group.nodes[0])
        .query_first(format!(
            "SELECT COUNT(*) FROM {DATABASE}.acked WHERE writer < 4"
        ))
        .unwrap()
        .unwrap();
    assert_eq!(
        on_old as usize,
        on_new.len(),
        "the old primary has what the new one has"
    );
    eventually(within, || primary_is(&mut admin, &group.addr(1)));

    // The session with a SET moved with it; the others were told their state is gone.
    assert_eq!(server_port(&mut with_set), new.port);
    let tz: String = with_set.query_first("SELECT @@time_zone").unwrap().unwrap();
    assert_eq!(tz, "+03:00");
    for (c, says) in [
        (&mut with_var, "user variables"),
        (&mut in_txn, "transaction"),
    ] {
        match c.query_drop("SELECT 1") {
            Err(mysql::Error::MySqlError(e)) => {
                assert_eq!(e.code, 1927, "{e:?}");
                assert!(e.message.contains(says), "{}", e.message);
            }
            other => panic!("expected 1927: {other:?}"),
        }
    }
    let txn_rows: u64 = direct(new)
        .query_first(format!(
            "SELECT COUNT(*) FROM {DATABASE}.acked WHERE writer = 99"
        ))
        .unwrap()
        .unwrap();
    assert_eq!(
        txn_rows, 0,
        "the open transaction was rolled back, not carried over"
    );

    let metrics = scrape(admin_port);
    assert_eq!(
        must_sample(&metrics, "idgate_backend_switchovers_total{backend=\"db\"}"),
        1.0
    );
    assert!(
        must_sample(
            &metrics,
            "idgate_backend_held_statements_total{backend=\"db\"}"
        ) >= 1.0
    );

    // And back, with a session that holds its connection through both.
    admin
        .query_drop(to(0))
        .unwrap_or_else(|e| panic!("switch back: {e}; {}", g.log()));
    eventually(within, || primary_is(&mut admin, &group.addr(0)));
    assert_eq!(server_port(&mut with_set), group.nodes[0].port);
    with_set
        .query_drop("INSERT INTO acked VALUES (98, 1)")
        .unwrap();
    for i in [1, 2] {
        eventually(within, || match replicates_from(&group, i) {
            Some((port, true)) if port == group.nodes[0].port => Ok(()),
            other => Err(format!("node {i}: {other:?}")),
        });
        group.caught_up(i, 0);
    }
}
