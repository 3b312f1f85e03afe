//! `KILL [CONNECTION | QUERY] id` through idgate takes the ids idgate gives its sessions (the
//! connection id a client got at login, which `mysql` and Connector/J send when a statement is
//! cancelled) and stops that session's work on every backend it holds, over one backend and over
//! two shards; never a backend thread that happens to carry the same number.

mod common;

use std::time::{Duration, Instant};

use common::idgate_proc::{config_for, APP_PASSWORD, APP_USER};
use common::{Idgate, MariaDb, ORDERS_MOD_2};
use mysql::prelude::Queryable;

fn error_code(r: mysql::Result<()>) -> Option<u16> {
    match r {
        Err(mysql::Error::MySqlError(e)) => Some(e.code),
        _ => None,
    }
}

/// Runs `sql` on a session of its own in a thread; returns the session's id, and the thread's
/// answer (an error code, or none) with how long it took.
fn running(
    g: &Idgate,
    sql: &'static str,
) -> (u32, std::thread::JoinHandle<(Option<u16>, Duration)>) {
    let mut c = g.conn();
    let id = c.connection_id();
    let h = std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = c.query_drop(sql);
        let code = error_code(r);
        // The session is still usable after its statement was killed.
        if code == Some(1317) {
            let one: Option<i64> = c.query_first("SELECT 1").unwrap();
            assert_eq!(one, Some(1));
        }
        (code, t0.elapsed())
    });
    (id, h)
}

/// Waits until `sql`'s statement runs on some backend of `dbs`.
fn wait_running(dbs: &[&MariaDb], marker: &str) {
    let t0 = Instant::now();
    loop {
        let n: u64 = dbs
            .iter()
            .map(|db| {
                common::direct(db)
                    .query_first::<u64, _>(format!(
                        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%{marker}%' AND INFO NOT LIKE '%PROCESSLIST%'"
                    ))
                    .unwrap()
                    .unwrap_or(0)
            })
            .sum();
        if n > 0 {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{marker} never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_query_stops_the_sessions_statement_over_one_backend() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let (id, h) = running(&g, "SELECT SLEEP(60) AS kill_one_backend");
    wait_running(&[db], "kill_one_backend");
    let mut killer = g.conn();
    killer.query_drop(format!("KILL QUERY {id}")).unwrap();
    let (_, took) = h.join().unwrap();
    assert!(
        took < Duration::from_secs(30),
        "the statement ran on for {took:?}"
    );

    // KILL CONNECTION ends the session: its next statement finds no connection.
    let mut victim = g.conn();
    let vid = victim.connection_id();
    killer.query_drop(format!("KILL CONNECTION {vid}")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(victim.query_drop("SELECT 1").is_err());

    // Unknown ids and other users' sessions get MariaDB's errors.
    assert_eq!(error_code(killer.query_drop("KILL 4000000")), Some(1094));
    let other = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(g.port)
        .user(Some("nopw"))
        .pass(Some(""));
    let mut stranger = mysql::Conn::new(other).unwrap();
    let mine = g.conn();
    assert_eq!(
        error_code(stranger.query_drop(format!("KILL QUERY {}", mine.connection_id()))),
        Some(1095)
    );
    assert_eq!(error_code(killer.query_drop("KILL USER app")), Some(1235));
    let _ = (APP_USER, APP_PASSWORD);
}

#[test]
fn kill_query_reaches_every_shard_of_the_session() {
    let dbs = [common::start_db(), common::start_db()];
    for db in &dbs {
        common::direct(db)
            .query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, v INT)")
            .unwrap();
        common::direct(db)
            .query_drop("INSERT INTO orders VALUES (1, 1), (2, 2)")
            .unwrap();
    }
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            ORDERS_MOD_2,
        )
    });
    // A scatter that sleeps on both shards.
    let (id, h) = running(&g, "SELECT v, SLEEP(30) AS kill_shards FROM orders");
    wait_running(&[&dbs[0], &dbs[1]], "kill_shards");
    g.conn().query_drop(format!("KILL QUERY {id}")).unwrap();
    let (_, took) = h.join().unwrap();
    assert!(
        took < Duration::from_secs(20),
        "the scatter ran on for {took:?}"
    );
    for db in &dbs {
        let n: u64 = common::direct(db)
            .query_first("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%kill_shards%' AND INFO NOT LIKE '%PROCESSLIST%'")
            .unwrap()
            .unwrap();
        assert_eq!(n, 0, "a shard still runs the killed statement");
    }
}

#[test]
fn connector_j_statement_cancel_kills_through_idgate_as_directly() {
    use common::clients::*;
    let (java, classpath) = compile_java("JdbcCancel.java");
    let g = Idgate::start(common::shared_db());
    let t = differential(
        "kill",
        "jdbc_cancel",
        common::shared_db(),
        &g,
        Duration::from_secs(120),
        |t| {
            let mut cmd = std::process::Command::new(&java);
            cmd.arg("-cp").arg(&classpath).arg("JdbcCancel");
            client_args(&mut cmd, t);
            cmd
        },
    );
    assert_has(&t, "cancelled within 20 s: true");
    assert_has(&t, "connection still usable: 42");
    assert_has(&t, "done");
}
