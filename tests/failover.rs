//! An unplanned failover: the primary of a semi-synchronous group is killed (SIGKILL) under
//! writers inserting rows with generated ids, and the test promotes the most advanced replica
//! by hand, as an operator or a failover manager would. idgate holds the statements that
//! arrive meanwhile and sends them to the promoted node: writes resume within seconds of the
//! promotion, no acknowledged write is lost, no id is handed out twice, and nothing is
//! written to a read-only node; the same with the sequence store on that group, where a
//! store without semi-synchronous replication is refused at startup.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::prometheus::{must_sample, scrape};
use common::replication::{eventually, Group};
use common::{direct, free_port, start_db, Idgate, MariaDb, DATABASE, PASSWORD, USER};
use mysql::prelude::Queryable;

/// idgate on `group`, its sequence store on `store` or (without one) on the group itself.
fn config(port: u16, admin: u16, group: &Group, store: Option<&MariaDb>, extra: &str) -> String {
    let store = match store {
        Some(s) => format!(
            "\x20 store:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: \
             {PASSWORD}\nsequence_store:\n  backend: store\n",
            s.port
        ),
        None => "sequence_store:\n  backend: db\n".to_string(),
    };
    format!(
        "listen: 127.0.0.1:{port}\nallow_plaintext_passwords: true\n\
         admin:\n  listen: 127.0.0.1:{admin}\n\
         users:\n  - name: {}\n    password: {}\n    admin: true\n\
         backends:\n\
         \x20 db:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
         \x20   replicas: [\"{}\", \"{}\"]\n    poll_interval_ms: 100\n\
         \x20   max_replica_lag_ms: 5000\n    failover_hold_ms: 20000\n\
         {store}default_backend: db\n\
         generators:\n  seq:\n    kind: segment\n    step: 20\n    max_step: 20\n\
         tables:\n  gen:\n    generator: seq\n{extra}",
        common::idgate_proc::APP_USER,
        common::idgate_proc::APP_PASSWORD,
        group.nodes[0].port,
        group.addr(1),
        group.addr(2),
    )
}

/// What the writers saw.
#[derive(Default)]
struct Seen {
    /// (id, writer, seq) of each acknowledged INSERT, and when it was acknowledged.
    acked: Vec<((u64, u32, u32), Instant)>,
    errors: Vec<(String, Instant)>,
}

/// Node `i`'s received position in domain 0 (`Gtid_IO_Pos`'s sequence number).
fn received(group: &Group, i: usize) -> (u64, String) {
    let row: mysql::Row = direct(&group.nodes[i])
        .query_first("SHOW SLAVE STATUS")
        .unwrap()
        .expect("a replica");
    let pos: String = row
        .get::<Option<String>, _>("Gtid_IO_Pos")
        .flatten()
        .unwrap_or_default();
    let seq = pos
        .split(',')
        .find(|g| g.starts_with("0-"))
        .and_then(|g| g.rsplit('-').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (seq, pos)
}

#[test]
fn a_killed_primary_is_followed_without_a_lost_write_or_a_reused_id() {
    let store = start_db();
    killed_primary(Some(&store));
}

#[test]
fn the_sequence_store_on_the_group_reuses_no_id_across_the_failover() {
    killed_primary(None);
}

#[test]
fn the_sequence_store_on_a_group_without_semi_sync_is_refused_unless_allowed() {
    let group = Group::start(2);
    let port = free_port().unwrap();
    let path = std::env::temp_dir().join(format!("idgate-failover-{}.yaml", std::process::id()));
    std::fs::write(&path, config(port, free_port().unwrap(), &group, None, "")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_idgate"))
        .args(["run", "--config"])
        .arg(&path)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("idgate started with an asynchronous sequence store");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success());
    assert!(
        err.contains("rpl_semi_sync_master_wait_point = AFTER_SYNC"),
        "{err}"
    );
    assert!(err.contains("allow_async_failover"), "{err}");
    let _ = std::fs::remove_file(&path);
    // Accepted when asked for.
    let g = Idgate::start_with(|port| {
        config(port, free_port().unwrap(), &group, None, "").replace(
            "sequence_store:\n  backend: db\n",
            "sequence_store:\n  backend: db\n  allow_async_failover: true\n",
        )
    });
    let mut c = g.conn();
    c.query_drop("CREATE TABLE gen (id BIGINT PRIMARY KEY, writer INT, seq INT)")
        .unwrap();
    for i in 1..=2 {
        group.caught_up(i, 0);
    }
    // The ranges reserved from now on reach only the primary, which then dies: the promoted
    // replica's store is behind what this instance handed out. Its next range must start
    // above all of it.
    for i in 1..=2 {
        group.sql(i, "STOP SLAVE SQL_THREAD");
    }
    let insert = |c: &mut mysql::Conn, writer: u32, n: u32, ids: &mut Vec<u64>| {
        for seq in 0..n {
            c.query_drop(format!(
                "INSERT INTO gen (writer, seq) VALUES ({writer}, {seq})"
            ))?;
            ids.push(c.last_insert_id());
        }
        Ok::<(), mysql::Error>(())
    };
    let mut ids = Vec::new();
    insert(&mut c, 1, 70, &mut ids).unwrap();
    group.nodes[0].kill();
    group.promote(1);
    group.replicate(2, 1);
    // The session on the dead primary is gone; new ones go to the new primary.
    let t0 = Instant::now();
    loop {
        let done = mysql::Conn::new(mysql::Opts::from_url(&g.url(DATABASE)).unwrap())
            .and_then(|mut c| insert(&mut c, 2, 70, &mut ids));
        match done {
            Ok(()) => break,
            Err(e) if t0.elapsed() > Duration::from_secs(20) => panic!("{e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let unique: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "an id was handed out twice: {ids:?}"
    );
    assert!(
        g.log().contains("sequence store: moved to another node"),
        "{}",
        g.log()
    );
}

/// The primary killed under writers, the most advanced replica promoted by hand.
fn killed_primary(store: Option<&MariaDb>) {
    let group = Group::start_semi_sync(2);
    let admin_port = free_port().unwrap();
    let g = Idgate::start_with(|port| config(port, admin_port, &group, store, ""));
    let mut admin = g.conn();
    admin
        .query_drop("CREATE TABLE gen (id BIGINT PRIMARY KEY, writer INT, seq INT)")
        .unwrap();
    for i in 1..=2 {
        group.caught_up(i, 0);
    }
    let within = Duration::from_secs(15);
    eventually(within, || {
        let clients: Option<(String, u64)> = direct(&group.nodes[0])
            .query_first("SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'")
            .unwrap();
        match clients {
            Some((_, n)) if n >= 1 => Ok(()),
            other => Err(format!("semi-sync replicas: {other:?}")),
        }
    });

    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let writers: Vec<_> = (0..4u32)
        .map(|w| {
            let (stop, seen, url) = (stop.clone(), seen.clone(), g.url(DATABASE));
            std::thread::spawn(move || {
                let connect = || mysql::Conn::new(mysql::Opts::from_url(&url).unwrap());
                let mut c = connect().ok();
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    let Some(conn) = c.as_mut() else {
                        std::thread::sleep(Duration::from_millis(20));
                        c = connect().ok();
                        continue;
                    };
                    seq += 1;
                    let r = conn
                        .query_drop(format!("INSERT INTO gen (writer, seq) VALUES ({w}, {seq})"))
                        .map(|()| conn.last_insert_id());
                    let mut s = seen.lock().unwrap();
                    match r {
                        Ok(id) => s.acked.push(((id, w, seq), Instant::now())),
                        Err(e) => {
                            s.errors.push((format!("writer {w}: {e}"), Instant::now()));
                            c = None; // a new session, as a pool would open
                        }
                    }
                    drop(s);
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(800));
    group.nodes[0].kill();
    let killed = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    // The operator promotes the replica that received the most, once it applied all of it.
    let (a, b) = (received(&group, 1), received(&group, 2));
    let (new, other, pos) = if a.0 >= b.0 { (1, 2, a.1) } else { (2, 1, b.1) };
    let applied: Option<i64> = direct(&group.nodes[new])
        .query_first(format!("SELECT MASTER_GTID_WAIT('{pos}', 20)"))
        .unwrap();
    assert_eq!(applied, Some(0), "node {new} applied what it received");
    group.promote(new);
    group.semi_sync_primary(new);
    let promoted = Instant::now();
    group.replicate(other, new);

    // Writes resume on the new primary.
    eventually(within, || {
        let s = seen.lock().unwrap();
        match s.acked.iter().any(|(_, t)| *t > promoted) {
            true => Ok(()),
            false => Err("no write since the promotion".into()),
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    let first_after = seen
        .acked
        .iter()
        .filter(|(_, t)| *t > promoted)
        .map(|(_, t)| t.duration_since(promoted))
        .min()
        .unwrap();
    println!(
        "failover: {} acknowledged writes, {} errors (all before {:?} after the kill), first \
         write {first_after:?} after the promotion",
        seen.acked.len(),
        seen.errors.len(),
        seen.errors
            .iter()
            .map(|(_, t)| t.duration_since(killed))
            .max()
    );
    assert!(first_after < Duration::from_secs(5), "{first_after:?}");
    // Only statements sent before idgate saw the primary gone fail; the rest were held.
    let late: Vec<_> = seen
        .errors
        .iter()
        .filter(|(_, t)| *t > killed + Duration::from_millis(1500))
        .map(|(e, _)| e.as_str())
        .collect();
    assert!(late.is_empty(), "errors after the hold began: {late:?}");

    // Every acknowledged write is on the new primary, and no id was given twice.
    let ids: HashSet<u64> = seen.acked.iter().map(|((id, _, _), _)| *id).collect();
    assert_eq!(ids.len(), seen.acked.len(), "an id was handed out twice");
    let rows: Vec<(u64, u32, u32)> = direct(&group.nodes[new])
        .query(format!("SELECT id, writer, seq FROM {DATABASE}.gen"))
        .unwrap();
    let on_new: HashSet<(u64, u32, u32)> = rows.into_iter().collect();
    let lost: Vec<_> = seen
        .acked
        .iter()
        .filter(|(w, _)| !on_new.contains(w))
        .map(|(w, _)| w)
        .collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");

    // Nothing was written to the replica that stayed read-only: its binary log holds no
    // transaction of its own, and it replicates the new primary without an error.
    let own: String = direct(&group.nodes[other])
        .query_first("SELECT @@gtid_binlog_pos")
        .unwrap()
        .unwrap();
    assert!(
        !own.contains(&format!("-{}-", group.nodes[other].port)),
        "node {other} wrote on its own: {own}"
    );
    group.caught_up(other, new);
    let count = |i: usize| -> u64 {
        direct(&group.nodes[i])
            .query_first(format!("SELECT COUNT(*) FROM {DATABASE}.gen"))
            .unwrap()
            .unwrap()
    };
    assert_eq!(count(other), count(new));

    if store.is_none() {
        assert!(
            g.log().contains("sequence store: moved to another node"),
            "{}",
            g.log()
        );
    }
    let metrics = scrape(admin_port);
    assert_eq!(
        must_sample(&metrics, "idgate_backend_failovers_total{backend=\"db\"}"),
        1.0
    );
    assert!(
        g.log().contains("the primary stopped answering"),
        "{}",
        g.log()
    );
}
