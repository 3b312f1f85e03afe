//! Transactions across two shards with XA two-phase commit: what a separate connection sees on
//! each shard after COMMIT and ROLLBACK, savepoints, implicit commits, the client's status flags,
//! a failed PREPARE, and crashes of idgate or a shard between PREPARE and COMMIT followed by a
//! restart: the transaction ends committed on every shard or on none, with no branch left.

mod common;

use std::thread;

use common::idgate_proc::{config_for_ports, APP_PASSWORD, APP_USER};
use common::relay::Relay;
use common::{direct, start_db, Idgate, MariaDb, DATABASE};
use mysql::prelude::Queryable;

const TABLES: &str = "tables:
  acct:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  notes:
    broadcast: true
";

/// Two shards with `acct` (id mod 2: even ids on shard0, odd on shard1), shard1 behind a relay.
struct Setup {
    dbs: Vec<MariaDb>,
    relay: Relay,
    g: Idgate,
}

fn setup(extra: &str) -> Setup {
    let dbs = vec![start_db(), start_db()];
    for db in &dbs {
        let mut c = direct(db);
        c.query_drop("CREATE TABLE acct (id BIGINT PRIMARY KEY, v INT)")
            .unwrap();
        c.query_drop("CREATE TABLE notes (id INT PRIMARY KEY, t VARCHAR(20))")
            .unwrap();
        c.query_drop("CREATE TABLE plain (id INT PRIMARY KEY)")
            .unwrap();
    }
    let relay = Relay::start(dbs[1].port);
    let (p0, p1) = (dbs[0].port, relay.port);
    let extra = format!("{TABLES}{extra}");
    let g = Idgate::start_with(|port| {
        config_for_ports(port, &[("shard0", p0), ("shard1", p1)], &extra)
    });
    Setup { dbs, relay, g }
}

fn ids(db: &MariaDb, table: &str) -> Vec<i64> {
    direct(db)
        .query(format!("SELECT id FROM {table} ORDER BY id"))
        .unwrap()
}

/// Every shard: no prepared branch left, and the decision log (on shard0) is empty.
fn nothing_left(dbs: &[MariaDb]) {
    for (n, db) in dbs.iter().enumerate() {
        let left: Vec<(i64, i64, i64, Vec<u8>)> = direct(db).query("XA RECOVER").unwrap();
        assert!(
            left.is_empty(),
            "shard{n} still has prepared branches: {left:?}"
        );
    }
    let decisions: i64 = direct(&dbs[0])
        .query_first("SELECT COUNT(*) FROM idgate.idgate_xa_decisions")
        .unwrap()
        .unwrap();
    assert_eq!(decisions, 0, "the decision log is not empty");
}

#[test]
fn commit_and_rollback_across_two_shards_seen_from_another_connection() {
    let s = setup("");
    let mut c = s.g.conn();
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (2, 20), (1, 10)")
        .unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (3, 30)")
        .unwrap();
    c.query_drop("INSERT INTO plain VALUES (7)").unwrap();
    // Not visible anywhere before COMMIT.
    assert!(ids(&s.dbs[0], "acct").is_empty());
    assert!(ids(&s.dbs[1], "acct").is_empty());
    assert!(ids(&s.dbs[0], "plain").is_empty());
    c.query_drop("COMMIT").unwrap();
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2]);
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3]);
    assert_eq!(ids(&s.dbs[0], "plain"), vec![7]);

    // ROLLBACK undoes the writes on every shard.
    c.query_drop("START TRANSACTION").unwrap();
    c.query_drop("UPDATE acct SET v = v + 1").unwrap();
    c.query_drop("DELETE FROM acct WHERE id = 3").unwrap();
    c.query_drop("INSERT INTO notes VALUES (1, 'x')").unwrap();
    c.query_drop("ROLLBACK").unwrap();
    let vs: Vec<i64> = direct(&s.dbs[1])
        .query("SELECT v FROM acct ORDER BY id")
        .unwrap();
    assert_eq!(vs, vec![10, 30]);
    assert!(ids(&s.dbs[0], "notes").is_empty() && ids(&s.dbs[1], "notes").is_empty());

    // Savepoints reach every participant, also one that joins after the savepoint.
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (4, 0)")
        .unwrap();
    c.query_drop("SAVEPOINT sp1").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (6, 0), (5, 0)")
        .unwrap();
    c.query_drop("ROLLBACK TO SAVEPOINT sp1").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (7, 0)")
        .unwrap();
    c.query_drop("RELEASE SAVEPOINT sp1").unwrap();
    c.query_drop("COMMIT").unwrap();
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2, 4]);
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3, 7]);

    // autocommit=0: the transaction begins implicitly and ends with COMMIT or ROLLBACK.
    c.query_drop("SET autocommit = 0").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (8, 0), (9, 0)")
        .unwrap();
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3, 7]);
    c.query_drop("ROLLBACK").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (10, 0), (11, 0)")
        .unwrap();
    c.query_drop("COMMIT").unwrap();
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2, 4, 10]);
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3, 7, 11]);
    // DDL commits the open transaction first, as on MySQL.
    c.query_drop("INSERT INTO acct (id, v) VALUES (12, 0), (13, 0)")
        .unwrap();
    c.query_drop("CREATE TABLE ddl_commits (a INT)").unwrap();
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3, 7, 11, 13]);
    // SET autocommit = 1 commits too.
    c.query_drop("INSERT INTO acct (id, v) VALUES (14, 0), (15, 0)")
        .unwrap();
    c.query_drop("SET autocommit = 1").unwrap();
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2, 4, 10, 12, 14]);
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3, 7, 11, 13, 15]);

    // A multi-shard write in autocommit mode commits with 2PC too.
    c.query_drop("UPDATE acct SET v = 99").unwrap();
    let vs: Vec<i64> = direct(&s.dbs[0])
        .query("SELECT DISTINCT v FROM acct")
        .unwrap();
    assert_eq!(vs, vec![99]);
    nothing_left(&s.dbs);

    // A multi-statement batch with its own BEGIN and COMMIT.
    c.query_drop("BEGIN; INSERT INTO acct (id, v) VALUES (20, 0), (21, 0); COMMIT")
        .unwrap();
    assert_eq!(ids(&s.dbs[1], "acct").last(), Some(&21));
    nothing_left(&s.dbs);

    // READ ONLY transactions refuse writes on the backend, as on MySQL.
    c.query_drop("START TRANSACTION READ ONLY").unwrap();
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM acct WHERE id = 1")
        .unwrap()
        .unwrap();
    assert_eq!(n, 1);
    let e = c
        .query_drop("INSERT INTO acct (id, v) VALUES (17, 0)")
        .unwrap_err();
    assert!(e.to_string().contains("READ ONLY"), "{e}");
    c.query_drop("COMMIT").unwrap();
    // COMMIT AND CHAIN is refused clearly.
    c.query_drop("BEGIN").unwrap();
    let e = c.query_drop("COMMIT AND CHAIN").unwrap_err();
    assert!(e.to_string().contains("1235"), "{e}");
    c.query_drop("ROLLBACK").unwrap();
}

/// The status flags of every answer, compared (in-transaction, autocommit, read-only bits) with
/// what MariaDB itself reports for the same statements.
#[test]
fn status_flags_say_in_transaction_as_mariadb_does() {
    use common::raw::Raw;
    use idgate::wire::packets;
    let s = setup("");
    let status = |answer: Vec<Vec<u8>>| -> u16 {
        let last = answer.last().expect("an answer");
        let bits = match last[0] {
            0x00 => packets::parse_ok(last).expect("ok").status,
            0xfe => packets::parse_eof(last).1.bits(),
            _ => panic!("error: {}", String::from_utf8_lossy(last)),
        };
        bits & 0x2003
    };
    let mut via = Raw::connect(s.g.port, APP_USER, APP_PASSWORD, DATABASE);
    // MariaDB's own answers, on a copy of the table no one else writes.
    let mut d = direct(&s.dbs[0]);
    d.query_drop("CREATE DATABASE mirror").unwrap();
    d.query_drop("CREATE TABLE mirror.acct (id BIGINT PRIMARY KEY, v INT)")
        .unwrap();
    let mut own = Raw::connect(s.dbs[0].port, common::USER, common::PASSWORD, "mirror");
    let script: &[&str] = &[
        "SELECT 1",
        "BEGIN",
        "INSERT INTO acct (id, v) VALUES (2, 1), (1, 1)",
        "SELECT id FROM acct ORDER BY id",
        "SAVEPOINT a",
        "COMMIT",
        "START TRANSACTION",
        "SELECT id FROM acct WHERE id = 1",
        "ROLLBACK",
        "START TRANSACTION READ ONLY",
        "SELECT id FROM acct ORDER BY id",
        "COMMIT",
        "SET autocommit = 0",
        "INSERT INTO acct (id, v) VALUES (4, 1), (3, 1)",
        "UPDATE acct SET v = 2 WHERE id = 3",
        "COMMIT",
        "SELECT id FROM acct WHERE id = 4",
        "ROLLBACK",
        "SET autocommit = 1",
        "INSERT INTO acct (id, v) VALUES (6, 1), (5, 1)",
    ];
    for sql in script {
        let a = status(via.query(sql.as_bytes()));
        let b = status(own.query(sql.as_bytes()));
        assert_eq!(
            a, b,
            "status flags after `{sql}`: idgate {a:#06x}, MariaDB {b:#06x}"
        );
    }
}

#[test]
fn a_failed_prepare_rolls_back_every_shard() {
    let s = setup("");
    let mut c = s.g.conn();
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (2, 1), (1, 1)")
        .unwrap();
    s.relay.cut_at(b"XA PREPARE");
    let e = c.query_drop("COMMIT").unwrap_err();
    assert!(s.relay.tripped());
    let msg = e.to_string();
    assert!(
        msg.contains("shard1") && msg.contains("rolled back on every backend"),
        "{msg}"
    );
    assert!(ids(&s.dbs[0], "acct").is_empty());
    assert!(ids(&s.dbs[1], "acct").is_empty());
    nothing_left(&s.dbs);
    // The session goes on, on a fresh connection to shard1.
    c.query_drop("INSERT INTO acct (id, v) VALUES (4, 1), (3, 1)")
        .unwrap();
    assert_eq!(ids(&s.dbs[1], "acct"), vec![3]);
}

/// Sends COMMIT from another thread and stops shard1's traffic at `pattern`; returns the
/// client thread (its COMMIT answer) once the relay holds the pattern.
fn commit_held_at(
    s: &Setup,
    setup_sql: &'static [&'static str],
    last: &'static str,
    pattern: &[u8],
) -> thread::JoinHandle<Result<(), mysql::Error>> {
    let mut c = s.g.conn();
    for sql in setup_sql {
        c.query_drop(*sql).unwrap();
    }
    s.relay.hold_at(pattern);
    let h = thread::spawn(move || c.query_drop(last));
    s.relay.wait_tripped();
    h
}

const TXN: &[&str] = &["BEGIN", "INSERT INTO acct (id, v) VALUES (2, 1), (1, 1)"];

#[test]
fn idgate_killed_after_the_decision_commits_everywhere_on_restart() {
    let s = setup("");
    let h = commit_held_at(&s, TXN, "COMMIT", b"XA COMMIT");
    s.g.kill();
    s.relay.cut();
    assert!(h.join().unwrap().is_err(), "the client lost idgate");
    s.g.restart();
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2]);
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1]);
    nothing_left(&s.dbs);
    // An autocommit write over both shards, killed at the same point.
    let h = commit_held_at(
        &s,
        &[],
        "INSERT INTO acct (id, v) VALUES (4, 1), (3, 1)",
        b"XA COMMIT",
    );
    s.g.kill();
    s.relay.cut();
    assert!(h.join().unwrap().is_err());
    s.g.restart();
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2, 4]);
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3]);
    nothing_left(&s.dbs);
}

#[test]
fn idgate_killed_during_prepare_rolls_back_everywhere_on_restart() {
    let s = setup("");
    let h = commit_held_at(&s, TXN, "COMMIT", b"XA PREPARE");
    s.g.kill();
    s.relay.cut();
    assert!(h.join().unwrap().is_err());
    // shard0 prepared its branch before idgate died.
    let before: Vec<(i64, i64, i64, Vec<u8>)> = direct(&s.dbs[0]).query("XA RECOVER").unwrap();
    assert_eq!(before.len(), 1, "{before:?}");
    s.g.restart();
    assert!(ids(&s.dbs[0], "acct").is_empty());
    assert!(ids(&s.dbs[1], "acct").is_empty());
    nothing_left(&s.dbs);
    // The restarted idgate commits normally.
    let mut c = s.g.conn();
    for sql in TXN {
        c.query_drop(*sql).unwrap();
    }
    c.query_drop("COMMIT").unwrap();
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1]);
    nothing_left(&s.dbs);
}

/// Waits (a minute at most, as a guard against a hung test) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn a_shard_killed_before_its_commit_ends_committed_after_restart() {
    let s = setup("");
    let h = commit_held_at(&s, TXN, "COMMIT", b"XA COMMIT");
    s.dbs[1].kill();
    s.relay.cut();
    // The decision was logged: the client hears the commit succeeded.
    h.join()
        .unwrap()
        .expect("COMMIT after the decision is reported as committed");
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2]);
    s.dbs[1].restart().unwrap();
    // idgate keeps retrying in the background and commits shard1's branch once it is back.
    eventually("shard1's branch committed by the running idgate", || {
        ids(&s.dbs[1], "acct") == vec![1]
    });
    eventually("the decision log emptied", || {
        direct(&s.dbs[0])
            .query_first::<i64, _>("SELECT COUNT(*) FROM idgate.idgate_xa_decisions")
            .unwrap()
            == Some(0)
    });
    nothing_left(&s.dbs);

    // Again, with idgate restarted as soon as the shard is back.
    let h = commit_held_at(
        &s,
        &["BEGIN", "INSERT INTO acct (id, v) VALUES (4, 1), (3, 1)"],
        "COMMIT",
        b"XA COMMIT",
    );
    s.dbs[1].kill();
    s.relay.cut();
    h.join().unwrap().expect("reported as committed");
    s.dbs[1].restart().unwrap();
    s.g.restart();
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2, 4]);
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3]);
    nothing_left(&s.dbs);
}

/// A second idgate sharing the backends starts while the first has a branch prepared and no
/// decision yet: it must leave that branch to its owner.
#[test]
fn another_instance_leaves_a_live_instance_in_flight_branch_alone() {
    let s = setup("");
    let h = commit_held_at(&s, TXN, "COMMIT", b"XA PREPARE");
    let prepared = || -> usize {
        direct(&s.dbs[0])
            .query::<(i64, i64, i64, Vec<u8>), _>("XA RECOVER")
            .unwrap()
            .len()
    };
    // The held chunk carries shard1's XA END and XA PREPARE; shard0 got its own already.
    eventually("shard0 prepared", || prepared() == 1);
    let (p0, p1) = (s.dbs[0].port, s.relay.port);
    let other = Idgate::start_with(|port| {
        config_for_ports(port, &[("shard0", p0), ("shard1", p1)], TABLES)
    });
    // The other instance is serving, so its startup recovery has run.
    let mut oc = other.conn();
    let n: i64 = oc
        .query_first("SELECT COUNT(*) FROM plain")
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
    assert_eq!(
        prepared(),
        1,
        "the other instance must not decide a live branch"
    );
    // The owner loses shard1 during PREPARE and rolls back everywhere itself.
    s.relay.cut();
    let e = h.join().unwrap().unwrap_err();
    assert!(
        e.to_string().contains("rolled back on every backend"),
        "{e}"
    );
    assert!(ids(&s.dbs[0], "acct").is_empty() && ids(&s.dbs[1], "acct").is_empty());
    nothing_left(&s.dbs);
}

#[test]
fn best_effort_mode_commits_without_xa() {
    let s = setup("transactions:\n  commit: best_effort\n");
    // Any XA statement reaching shard1 would cut its connection and fail the test.
    s.relay.cut_at(b"XA ");
    let mut c = s.g.conn();
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (2, 1), (1, 1)")
        .unwrap();
    c.query_drop("COMMIT").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (4, 1), (3, 1)")
        .unwrap();
    // Savepoints reach the shards that joined, also one joining after the savepoint.
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (6, 1)")
        .unwrap();
    c.query_drop("SAVEPOINT s").unwrap();
    c.query_drop("INSERT INTO acct (id, v) VALUES (8, 1), (5, 1)")
        .unwrap();
    c.query_drop("ROLLBACK TO s").unwrap();
    c.query_drop("COMMIT").unwrap();
    assert!(!s.relay.tripped());
    assert_eq!(ids(&s.dbs[0], "acct"), vec![2, 4, 6]);
    assert_eq!(ids(&s.dbs[1], "acct"), vec![1, 3]);
}

/// A deadlock rolls back one shard's branch: COMMIT then rolls back every shard (as MySQL
/// rolls back the whole transaction) and the session keeps its connections.
#[test]
fn a_deadlock_on_one_shard_rolls_back_every_shard_at_commit() {
    let s = setup("");
    let mut a = s.g.conn();
    a.query_drop("INSERT INTO acct (id, v) VALUES (1, 0), (2, 0), (4, 0)")
        .unwrap();
    a.query_drop("CREATE TEMPORARY TABLE tmp_a (x INT)")
        .unwrap();
    a.query_drop("BEGIN").unwrap();
    a.query_drop("UPDATE acct SET v = 1 WHERE id = 1").unwrap();
    a.query_drop("UPDATE acct SET v = 1 WHERE id = 2").unwrap();
    let mut b = s.g.conn();
    b.query_drop("BEGIN").unwrap();
    // b has written more on shard0, so InnoDB picks a as the deadlock victim.
    b.query_drop("INSERT INTO acct (id, v) VALUES (6, 0), (8, 0), (10, 0)")
        .unwrap();
    b.query_drop("UPDATE acct SET v = 2 WHERE id = 4").unwrap();
    let h = thread::spawn(move || {
        let r = a.query_drop("UPDATE acct SET v = 1 WHERE id = 4");
        (a, r)
    });
    eventually("a waits for b's lock", || {
        let n: i64 = direct(&s.dbs[0])
            .query_first("SELECT COUNT(*) FROM information_schema.innodb_lock_waits")
            .unwrap()
            .unwrap();
        n > 0
    });
    let rb = b.query_drop("UPDATE acct SET v = 2 WHERE id = 2");
    let (mut a, ra) = h.join().unwrap();
    let e = ra.expect_err("a is the deadlock victim");
    assert!(e.to_string().contains("1213"), "{e}");
    rb.unwrap();
    b.query_drop("COMMIT").unwrap();
    let e = a.query_drop("COMMIT").unwrap_err();
    assert!(
        e.to_string().contains("rolled back on every backend"),
        "{e}"
    );
    let v1: i64 = direct(&s.dbs[1])
        .query_first("SELECT v FROM acct WHERE id = 1")
        .unwrap()
        .unwrap();
    assert_eq!(v1, 0, "a's write on shard1 was rolled back with the rest");
    // The session's connection to the default backend (and its temporary table) is kept.
    let n: i64 = a
        .query_first("SELECT COUNT(*) FROM tmp_a")
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
    nothing_left(&s.dbs);
}

/// A statement that fails on one shard inside a transaction leaves nothing on the others, as
/// one MariaDB rolls back a failed statement and keeps the transaction: the other shards'
/// part of a multi-shard INSERT, and a broadcast table's copies on every backend.
#[test]
fn a_statement_failing_on_one_shard_in_a_transaction_leaves_nothing_elsewhere() {
    for mode in ["", "transactions:\n  commit: best_effort\n"] {
        let s = setup(mode);
        // id 2 is on shard0 already: the INSERT below fails there with 1062.
        direct(&s.dbs[0])
            .query_drop("INSERT INTO acct (id, v) VALUES (2, 0)")
            .unwrap();
        // A note only shard1 holds: the broadcast UPDATE fails there with 1062.
        for (db, rows) in s.dbs.iter().zip(["(1, 'a')", "(1, 'a'), (2, 'b')"]) {
            direct(db)
                .query_drop(format!("INSERT INTO notes (id, t) VALUES {rows}"))
                .unwrap();
        }
        let mut c = s.g.conn();
        c.query_drop("BEGIN").unwrap();
        c.query_drop("INSERT INTO acct (id, v) VALUES (4, 1)")
            .unwrap();
        let e = c
            .query_drop("INSERT INTO acct (id, v) VALUES (3, 1), (2, 1)")
            .unwrap_err();
        assert!(e.to_string().contains("1062"), "{mode}: {e}");
        let e = c
            .query_drop("UPDATE notes SET id = 2, t = 'c' WHERE id = 1")
            .unwrap_err();
        assert!(e.to_string().contains("1062"), "{mode}: {e}");
        c.query_drop("INSERT INTO acct (id, v) VALUES (5, 1)")
            .unwrap();
        c.query_drop("COMMIT").unwrap();
        assert_eq!(ids(&s.dbs[0], "acct"), vec![2, 4], "{mode}");
        assert_eq!(ids(&s.dbs[1], "acct"), vec![5], "{mode}");
        for db in &s.dbs {
            let notes: Vec<(i64, String)> = direct(db)
                .query("SELECT id, t FROM notes WHERE id = 1")
                .unwrap();
            assert_eq!(notes, vec![(1, "a".to_string())], "{mode}");
        }
    }
}
