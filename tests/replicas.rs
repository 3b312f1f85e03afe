//! A backend that is a replication group (`backends.NAME.replicas`): idgate polls every node,
//! writes only to the one writable node, follows a promotion made outside it, refuses writes
//! while two nodes are writable, ends sessions' connections to a former primary, and shows each
//! node's role in `SHOW IDGATE BACKENDS`. One group
//! of three real MariaDB servers (GTID replication) serves the whole file.

mod common;

use std::time::Duration;

use common::idgate_proc::{APP_PASSWORD, APP_USER};
use common::replication::{eventually, Group};
use common::{start_db, Idgate, MariaDb, DATABASE, PASSWORD, USER};
use mysql::prelude::Queryable;

fn config(port: u16, group: &Group, store: &MariaDb) -> String {
    format!(
        "listen: 127.0.0.1:{port}\nallow_plaintext_passwords: true\n\
         users:\n  - name: {APP_USER}\n    password: {APP_PASSWORD}\n    admin: true\n\
         backends:\n\
         \x20 db:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
         \x20   replicas: [\"{}\", \"{}\"]\n    poll_interval_ms: 100\n\
         \x20 store:\n    host: 127.0.0.1\n    port: {}\n    user: {USER}\n    password: {PASSWORD}\n\
         default_backend: db\nsequence_store:\n  backend: store\n",
        group.nodes[0].port,
        group.addr(1),
        group.addr(2),
        store.port
    )
}

/// `SHOW IDGATE BACKENDS` rows of backend `db`: (address, role, read_only, why).
fn nodes(c: &mut mysql::Conn) -> Vec<(String, String, String, String)> {
    let rows: Vec<mysql::Row> = c.query("SHOW IDGATE BACKENDS").unwrap();
    rows.into_iter()
        .filter(|r| r.get::<String, _>("Name").as_deref() == Some("db"))
        .map(|r| {
            let s = |n: &str| r.get::<Option<String>, _>(n).flatten().unwrap_or_default();
            (s("Address"), s("Role"), s("Read_only"), s("Why"))
        })
        .collect()
}

fn roles(c: &mut mysql::Conn) -> Vec<String> {
    nodes(c).into_iter().map(|n| n.1).collect()
}

fn port_of_writes(g: &Idgate) -> Result<u16, String> {
    let mut c = mysql::Conn::new(mysql::Opts::from_url(&g.url(DATABASE)).unwrap())
        .map_err(|e| e.to_string())?;
    c.query_first::<u16, _>("SELECT @@port")
        .map_err(|e| e.to_string())
        .map(|p| p.unwrap_or(0))
}

#[test]
fn writes_follow_the_one_writable_node_of_a_replication_group() {
    let group = Group::start(2);
    let store = start_db();
    let g = Idgate::start_with(|port| config(port, &group, &store));
    let mut admin = g.conn();
    let within = Duration::from_secs(10);

    // Every node polled, with its role.
    eventually(within, || match roles(&mut admin).as_slice() {
        [p, r1, r2] if p == "primary" && r1 == "replica" && r2 == "replica" => Ok(()),
        other => Err(format!("{other:?}")),
    });
    let all = nodes(&mut admin);
    assert_eq!(all[0].0, group.addr(0));
    assert_eq!(
        all.iter().map(|n| n.2.as_str()).collect::<Vec<_>>(),
        ["No", "Yes", "Yes"]
    );

    // Writes go to the primary and replicate.
    let mut app = g.conn();
    app.query_drop("CREATE TABLE notes (id INT PRIMARY KEY, v VARCHAR(10))")
        .unwrap();
    app.query_drop("INSERT INTO notes VALUES (1, 'a')").unwrap();
    assert_eq!(port_of_writes(&g), Ok(group.nodes[0].port));
    group.caught_up(2, 0);

    // A replica whose SQL thread stops is excluded, and back once it runs again.
    group.sql(2, "STOP SLAVE SQL_THREAD");
    eventually(within, || {
        let n = nodes(&mut admin);
        match n[2].1.as_str() {
            "excluded" if n[2].3.contains("SQL thread") => Ok(()),
            _ => Err(format!("{n:?}")),
        }
    });
    assert_eq!(
        nodes(&mut admin)[0].1,
        "primary",
        "a replica never marks the primary"
    );
    group.sql(2, "START SLAVE SQL_THREAD");
    eventually(within, || match roles(&mut admin)[2].as_str() {
        "replica" => Ok(()),
        r => Err(r.to_string()),
    });

    // A session that holds its connection to the primary across the promotion below.
    let mut held = g.conn();
    held.query_drop("INSERT INTO notes VALUES (10, 'held')")
        .unwrap();

    // A promotion done outside idgate: the old primary read-only, node 1 writable, node 2
    // replicating from it. New sessions write to node 1 within a few polls.
    group.sql(0, "SET GLOBAL read_only = 1");
    group.caught_up(1, 0);
    group.promote(1);
    group.replicate(2, 1);
    group.replicate(0, 1);
    eventually(within, || match port_of_writes(&g) {
        Ok(p) if p == group.nodes[1].port => Ok(()),
        other => Err(format!("{other:?}")),
    });
    // The held session's connection to the former primary was ended (idgate's account could
    // write there past read_only); the session's next statement runs on the new primary.
    std::thread::sleep(Duration::from_millis(500));
    held.query_drop("INSERT INTO notes VALUES (11, 'moved')")
        .unwrap();
    let at: Option<u16> = held.query_first("SELECT @@port").unwrap();
    assert_eq!(at, Some(group.nodes[1].port), "the session moved");
    assert!(g
        .log()
        .contains("ended a session's connection to the former primary"));
    let mut after = g.conn();
    after
        .query_drop("INSERT INTO notes VALUES (2, 'b')")
        .unwrap();
    let on_new: Option<String> = common::direct(&group.nodes[1])
        .query_first(format!("SELECT v FROM {DATABASE}.notes WHERE id = 2"))
        .unwrap();
    assert_eq!(on_new.as_deref(), Some("b"));
    eventually(within, || match roles(&mut admin).as_slice() {
        [o, p, r] if o == "replica" && p == "primary" && r == "replica" => Ok(()),
        other => Err(format!("{other:?}")),
    });

    // Two writable nodes: nothing new is sent to either, with an error naming both.
    group.sql(0, "STOP SLAVE; SET GLOBAL read_only = 0");
    eventually(within, || match port_of_writes(&g) {
        Err(e) if e.contains("more than one writable node") => Ok(()),
        other => Err(format!("{other:?}")),
    });
    let e = port_of_writes(&g).unwrap_err();
    assert!(
        e.contains(&group.addr(0)) && e.contains(&group.addr(1)),
        "{e}"
    );
    let split = nodes(&mut admin);
    assert!(split[0].3.contains("split brain"), "{split:?}");
    // The operator fences the old primary: writes resume on node 1.
    group.sql(0, "SET GLOBAL read_only = 1");
    eventually(within, || match port_of_writes(&g) {
        Ok(p) if p == group.nodes[1].port => Ok(()),
        other => Err(format!("{other:?}")),
    });
}

#[test]
fn replicas_must_be_host_port_and_not_beside_failover_addresses() {
    let db = start_db();
    let bad = |extra: &str| {
        let dir = std::env::temp_dir().join(format!("idgate-replicas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.yaml");
        std::fs::write(
            &path,
            format!(
                "listen: 127.0.0.1:1\nallow_plaintext_passwords: true\n\
                 users:\n  - name: a\n    password: b\n\
                 backends:\n  db:\n    host: 127.0.0.1\n    port: {}\n    user: u\n{extra}\
                 default_backend: db\n",
                db.port
            ),
        )
        .unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_idgate"))
            .args(["check-config", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = bad("    replicas: [\"127.0.0.1:9\"]\n    failover_addresses: [\"127.0.0.1:8\"]\n");
    assert!(e.contains("not both"), "{e}");
    let e = bad("    replicas: [\"nowhere\"]\n");
    assert!(e.contains("is not host:port"), "{e}");
    let e = bad(&format!("    replicas: [\"127.0.0.1:{}\"]\n", db.port));
    assert!(e.contains("listed twice"), "{e}");
}
