//! `reads: replica`: a lone SELECT outside a transaction goes to a replica of the default
//! backend; everything else goes to the primary; a session reads its own writes; statements
//! about the last answer go where it came from; the session's SETs hold on the replica; an
//! excluded replica serves nothing. One group of three real MariaDB servers (GTID
//! replication) serves the whole file: each node holds a row of its own in `marker`, written
//! there without the binary log, so an answer says which node gave it.

mod common;

use std::time::Duration;

use common::idgate_proc::{APP_PASSWORD, APP_USER};
use common::prometheus::{must_sample, scrape};
use common::replication::{eventually, Group};
use common::{free_port, start_db, Idgate, MariaDb, DATABASE, PASSWORD, USER};
use mysql::prelude::Queryable;

const PRIMARY_ONLY: &str = "tracker";

fn config(port: u16, admin: u16, group: &Group, store: &MariaDb) -> String {
    format!(
        "listen: 127.0.0.1:{port}\nallow_plaintext_passwords: true\n\
         admin:\n  listen: 127.0.0.1:{admin}\n\
         users:\n  - name: {APP_USER}\n    password: {APP_PASSWORD}\n    admin: true\n\
         \x20 - name: {PRIMARY_ONLY}\n    password: {APP_PASSWORD}\n    reads: primary\n\
         backends:\n\
         \x20 db:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
         \x20   replicas: [\"{}\", \"{}\"]\n    poll_interval_ms: 100\n\
         \x20   reads: replica\n    max_replica_lag_ms: 5000\n    causal_read_timeout_ms: 3000\n\
         \x20 store:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
         default_backend: db\nsequence_store:\n  backend: store\n",
        group.nodes[0].port,
        group.addr(1),
        group.addr(2),
        store.port
    )
}

/// The node that answered `sql` (which reads `marker`'s `name` first).
fn who(c: &mut mysql::Conn, sql: &str) -> String {
    let row: Option<mysql::Row> = c.query_first(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    row.and_then(|r| r.get::<Option<String>, _>(0).flatten())
        .unwrap_or_default()
}

fn is_replica(node: &str) -> bool {
    node == "replica1" || node == "replica2"
}

/// `SHOW IDGATE BACKENDS` of backend `db`: (role, reads served).
fn nodes(c: &mut mysql::Conn) -> Vec<(String, Option<u64>)> {
    let rows: Vec<mysql::Row> = c.query("SHOW IDGATE BACKENDS").unwrap();
    rows.into_iter()
        .filter(|r| r.get::<String, _>("Name").as_deref() == Some("db"))
        .map(|r| {
            let role = r
                .get::<Option<String>, _>("Role")
                .flatten()
                .unwrap_or_default();
            (role, r.get::<Option<u64>, _>("Reads").flatten())
        })
        .collect()
}

#[test]
fn reads_go_to_replicas_and_a_session_reads_its_own_writes() {
    let group = Group::start(2);
    let store = start_db();
    let admin_port = free_port().unwrap();
    let g = Idgate::start_with(|port| config(port, admin_port, &group, &store));
    let mut admin = g.conn();
    let within = Duration::from_secs(10);
    eventually(within, || match nodes(&mut admin).as_slice() {
        [(p, _), (r1, _), (r2, _)] if p == "primary" && r1 == "replica" && r2 == "replica" => {
            Ok(())
        }
        other => Err(format!("{other:?}")),
    });

    let mut app = g.conn();
    app.query_drop("CREATE TABLE marker (name VARCHAR(16))")
        .unwrap();
    app.query_drop("CREATE TABLE many (id INT PRIMARY KEY)")
        .unwrap();
    app.query_drop("INSERT INTO many VALUES (1), (2), (3), (4), (5)")
        .unwrap();
    app.query_drop("CREATE TABLE own (id INT PRIMARY KEY, v INT)")
        .unwrap();
    for i in 1..=2 {
        group.caught_up(i, 0);
    }
    for (i, name) in ["primary", "replica1", "replica2"].iter().enumerate() {
        group.sql(
            i,
            &format!(
                "SET SESSION sql_log_bin = 0; INSERT INTO {DATABASE}.marker VALUES ('{name}')"
            ),
        );
    }

    // A plain read goes to a replica, and a session keeps reading the same one.
    let mut reader = g.conn();
    let first = who(&mut reader, "SELECT name FROM marker");
    assert!(is_replica(&first), "{first}");
    for _ in 0..5 {
        assert_eq!(
            who(&mut reader, "select name from marker where 1 = 1"),
            first
        );
    }

    // Statements a replica would not answer as the primary does go to the primary.
    let primary_only = [
        "SELECT name FROM marker FOR UPDATE",
        "SELECT name FROM marker LOCK IN SHARE MODE",
        "SELECT name, @v FROM marker",
        "SELECT name, CONNECTION_ID() FROM marker",
        "SELECT name, LAST_INSERT_ID() FROM marker",
        "SELECT name FROM marker; SELECT 1",
    ];
    for sql in primary_only {
        assert_eq!(who(&mut reader, sql), "primary", "{sql}");
    }
    let mut tx = g.conn();
    tx.query_drop("BEGIN").unwrap();
    assert_eq!(
        who(&mut tx, "SELECT name FROM marker"),
        "primary",
        "in a transaction"
    );
    tx.query_drop("COMMIT").unwrap();
    tx.query_drop("SET autocommit = 0").unwrap();
    assert_eq!(
        who(&mut tx, "SELECT name FROM marker"),
        "primary",
        "autocommit off"
    );
    tx.query_drop("ROLLBACK").unwrap();
    tx.query_drop("SET autocommit = 1").unwrap();
    assert!(
        is_replica(&who(&mut tx, "SELECT name FROM marker")),
        "autocommit on again"
    );
    tx.query_drop("CREATE TEMPORARY TABLE scratch (a INT)")
        .unwrap();
    assert_eq!(
        who(&mut tx, "SELECT name FROM marker"),
        "primary",
        "a session with a temporary table reads the primary"
    );
    // A temporary table made in a batch shadows `marker` for this session only: one server
    // answers from it (empty), and so must idgate.
    let mut shadow = g.conn();
    assert!(is_replica(&who(&mut shadow, "SELECT name FROM marker")));
    shadow
        .query_drop("DO 1; CREATE TEMPORARY TABLE marker (name VARCHAR(16))")
        .unwrap();
    assert_eq!(
        who(&mut shadow, "SELECT name FROM marker"),
        "",
        "the shadowing table"
    );
    let mut tracker = mysql::Conn::new(
        mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(g.port)
            .user(Some(PRIMARY_ONLY))
            .pass(Some(APP_PASSWORD))
            .db_name(Some(DATABASE)),
    )
    .unwrap();
    assert_eq!(
        who(&mut tracker, "SELECT name FROM marker"),
        "primary",
        "a user with reads: primary"
    );

    // What the last answer left behind is read where it came from.
    let mut diag = g.conn();
    let rows: Vec<u64> = diag
        .query("SELECT SQL_CALC_FOUND_ROWS id FROM many ORDER BY id LIMIT 1")
        .unwrap();
    assert_eq!(rows, [1]);
    let found: Option<u64> = diag.query_first("SELECT FOUND_ROWS()").unwrap();
    assert_eq!(found, Some(5));
    let _: Vec<String> = diag
        .query("SELECT name FROM marker WHERE CAST('1x' AS SIGNED) = 1")
        .unwrap();
    let warnings: Vec<(String, u32, String)> = diag.query("SHOW WARNINGS").unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].1, 1292, "{warnings:?}");

    // The session's settings hold on the replica.
    let mut tz = g.conn();
    tz.query_drop("SET time_zone = '+05:00'").unwrap();
    let (at, node): (String, String) = tz
        .query_first("SELECT FROM_UNIXTIME(0), name FROM marker")
        .unwrap()
        .unwrap();
    assert!(is_replica(&node), "{node}");
    assert_eq!(at, "1970-01-01 05:00:00");

    // Read-your-writes, with one replica applying everything two seconds late.
    group.sql(
        2,
        "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 2; START SLAVE",
    );
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let url = g.url(DATABASE);
            std::thread::spawn(move || {
                let mut c = mysql::Conn::new(mysql::Opts::from_url(&url).unwrap()).unwrap();
                let mut misses = Vec::new();
                for k in 0..15 {
                    let id = w * 100 + k;
                    c.query_drop(format!("INSERT INTO own VALUES ({id}, {k})"))
                        .unwrap();
                    let v: Option<i64> = c
                        .query_first(format!("SELECT v FROM own WHERE id = {id}"))
                        .unwrap();
                    if v != Some(k as i64) {
                        misses.push(id);
                    }
                }
                misses
            })
        })
        .collect();
    for w in workers {
        assert_eq!(
            w.join().unwrap(),
            Vec::<i32>::new(),
            "reads that missed their own write"
        );
    }
    let served = nodes(&mut admin);
    assert!(
        served[1].1.unwrap_or(0) + served[2].1.unwrap_or(0) > 0,
        "replicas served reads: {served:?}"
    );
    group.sql(
        2,
        "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE",
    );
    // The metrics say the same: each node's role, the reads replicas served, and that reads
    // after a write waited for a replica (none had it at its last poll right after the write).
    let text = scrape(admin_port);
    let series = |name: &str, i: usize, extra: &str| {
        format!(
            "idgate_{name}{{backend=\"db\",node=\"{}\"{extra}}}",
            group.addr(i)
        )
    };
    let role = |i: usize, r: &str| {
        must_sample(
            &text,
            &series("backend_node_role", i, &format!(",role=\"{r}\"")),
        )
    };
    assert_eq!(
        (role(0, "primary"), role(0, "replica"), role(1, "replica")),
        (1.0, 0.0, 1.0)
    );
    let reads: f64 = (1..=2)
        .map(|i| must_sample(&text, &series("backend_node_reads_total", i, "")))
        .sum();
    assert_eq!(
        reads as u64,
        served[1].1.unwrap_or(0) + served[2].1.unwrap_or(0),
        "{text}"
    );
    assert!(must_sample(&text, "idgate_causal_read_waits_total{backend=\"db\"}") > 0.0);

    // Replicas that stop applying serve nothing until they catch up again.
    for i in 1..=2 {
        group.sql(i, "STOP SLAVE SQL_THREAD");
    }
    eventually(within, || match nodes(&mut admin).as_slice() {
        [_, (a, _), (b, _)] if a == "excluded" && b == "excluded" => Ok(()),
        other => Err(format!("{other:?}")),
    });
    assert_eq!(who(&mut g.conn(), "SELECT name FROM marker"), "primary");
    for i in 1..=2 {
        group.sql(i, "START SLAVE SQL_THREAD");
    }
    eventually(within, || {
        let n = who(&mut g.conn(), "SELECT name FROM marker");
        if is_replica(&n) {
            Ok(())
        } else {
            Err(n)
        }
    });
}

#[test]
fn reads_of_a_sharded_table_go_to_the_shards_replicas() {
    let group = Group::start(1);
    let solo = start_db();
    let store = start_db();
    let g = Idgate::start_with(|port| {
        format!(
            "listen: 127.0.0.1:{port}\nallow_plaintext_passwords: true\n\
             users:\n  - name: {APP_USER}\n    password: {APP_PASSWORD}\n    admin: true\n\
             backends:\n\
             \x20 db:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
             \x20   replicas: [\"{}\"]\n    poll_interval_ms: 100\n    reads: replica\n\
             \x20 solo:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
             \x20 store:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
             default_backend: db\nsequence_store:\n  backend: store\n\
             tables:\n  accounts:\n    sharding:\n      columns: [id]\n      algorithm: mod\n\
             \x20     shards: [db, solo]\n",
            group.nodes[0].port,
            group.addr(1),
            solo.port,
            store.port
        )
    });
    let ddl = format!("CREATE TABLE {DATABASE}.accounts (id BIGINT PRIMARY KEY, node VARCHAR(16))");
    group.sql(0, &ddl);
    common::direct(&solo).query_drop(&ddl).unwrap();
    group.caught_up(1, 0);
    // Row 2 lives on `db` (a different `node` on each of its nodes), row 1 on `solo`.
    for (i, name) in ["primary", "replica1"].iter().enumerate() {
        group.sql(
            i,
            &format!(
                "SET SESSION sql_log_bin = 0; INSERT INTO {DATABASE}.accounts VALUES (2, '{name}')"
            ),
        );
    }
    common::direct(&solo)
        .query_drop(format!(
            "INSERT INTO {DATABASE}.accounts VALUES (1, 'solo')"
        ))
        .unwrap();
    let mut admin = g.conn();
    eventually(Duration::from_secs(10), || {
        match nodes(&mut admin).as_slice() {
            [(p, _), (r, _)] if p == "primary" && r == "replica" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });

    let mut app = g.conn();
    assert_eq!(
        who(&mut app, "SELECT node FROM accounts WHERE id = 2"),
        "replica1"
    );
    let all: Vec<String> = app.query("SELECT node FROM accounts ORDER BY id").unwrap();
    assert_eq!(all, ["solo", "replica1"], "a merged read of both shards");
    assert_eq!(
        who(
            &mut app,
            "SELECT node FROM accounts WHERE id = 2 FOR UPDATE"
        ),
        "primary"
    );
    app.query_drop("BEGIN").unwrap();
    assert_eq!(
        who(&mut app, "SELECT node FROM accounts WHERE id = 2"),
        "primary"
    );
    app.query_drop("COMMIT").unwrap();

    // A write through idgate, then its read: the session sees it on the replica.
    group.sql(
        1,
        "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 1; START SLAVE",
    );
    for id in [4, 6, 8] {
        app.query_drop(format!("INSERT INTO accounts VALUES ({id}, 'new')"))
            .unwrap();
        assert_eq!(
            who(
                &mut app,
                &format!("SELECT node FROM accounts WHERE id = {id}")
            ),
            "new",
            "the session's own write"
        );
    }
    group.sql(
        1,
        "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE",
    );
    let served = nodes(&mut admin);
    assert!(served[1].1.unwrap_or(0) >= 2, "{served:?}");
}
