//! Live reload: idgate runs from a config file; the file changes (a password, a new user, a pool
//! size, a timeout, the log level) and SIGHUP or `IDGATE RELOAD` applies it to new sessions while
//! open sessions keep working; a bad file (YAML syntax, a table's sharding, the listen address) is
//! refused with the key named and the running configuration keeps serving.

mod common;

use std::time::{Duration, Instant};

use common::idgate_proc::{config_for, APP_PASSWORD, APP_USER};
use common::{direct, start_db, Idgate, MariaDb, DATABASE};
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

fn with_admin(config: String) -> String {
    config.replacen(
        &format!("    password: {APP_PASSWORD}\n"),
        &format!("    password: {APP_PASSWORD}\n    admin: true\n"),
        1,
    )
}

fn try_login(g: &Idgate, user: &str, pw: &str) -> Result<Conn, mysql::Error> {
    Conn::new(
        OptsBuilder::default()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(g.port)
            .user(Some(user))
            .pass(Some(pw))
            .db_name(Some(DATABASE)),
    )
}

fn login(g: &Idgate, user: &str, pw: &str) -> Conn {
    try_login(g, user, pw).unwrap_or_else(|e| panic!("login {user}: {e}\n{}", g.log()))
}

fn error_code(r: Result<Conn, mysql::Error>) -> Option<u16> {
    match r {
        Err(mysql::Error::MySqlError(e)) => Some(e.code),
        Err(e) => panic!("not a server error: {e}"),
        Ok(_) => None,
    }
}

/// Rewrites the config file with `edit`.
fn edit(g: &Idgate, edit: impl FnOnce(String) -> String) {
    let old = std::fs::read_to_string(&g.config_path).unwrap();
    let new = edit(old.clone());
    assert_ne!(old, new, "the edit changed nothing");
    std::fs::write(&g.config_path, new).unwrap();
}

fn replace(from: &str, to: &str) -> impl FnOnce(String) -> String {
    let (from, to) = (from.to_string(), to.to_string());
    move |s: String| {
        assert!(s.contains(&from), "`{from}` not in the config:\n{s}");
        s.replacen(&from, &to, 1)
    }
}

/// Sends SIGHUP and waits for the `n`th logged reload outcome.
fn sighup(g: &Idgate, n: usize) -> String {
    // SAFETY: kill(2) on our own child process.
    unsafe { libc::kill(g.pid() as i32, libc::SIGHUP) };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = g.log();
        let outcomes: Vec<&str> = log
            .lines()
            .filter(|l| {
                l.contains("configuration reloaded") || l.contains("configuration reload refused")
            })
            .collect();
        if outcomes.len() >= n {
            return outcomes[n - 1].to_string();
        }
        assert!(Instant::now() < deadline, "no reload logged:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One row of a SHOW IDGATE statement as (column, value) pairs.
fn show(c: &mut Conn, stmt: &str) -> Vec<Vec<(String, Option<String>)>> {
    let rows: Vec<mysql::Row> = c.query(stmt).unwrap();
    rows.into_iter()
        .map(|r| {
            let cols: Vec<String> = r
                .columns_ref()
                .iter()
                .map(|c| c.name_str().into())
                .collect();
            cols.into_iter()
                .enumerate()
                .map(|(i, name)| (name, r.get::<Option<String>, _>(i).flatten()))
                .collect()
        })
        .collect()
}

fn field(row: &[(String, Option<String>)], name: &str) -> Option<String> {
    row.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .1
        .clone()
}

#[test]
fn sighup_applies_users_pool_timeouts_and_log_level_to_new_sessions() {
    let db = start_db();
    let g = Idgate::start_with(|port| with_admin(config_for(port, &[("shard0", &db)], "")));
    let mut old = login(&g, APP_USER, APP_PASSWORD);
    assert!(!g.log().contains("DEBUG"), "starts at info:\n{}", g.log());
    edit(&g, |s| {
        let s = replace(
            &format!("password: {APP_PASSWORD}\n"),
            "password: new-secret\n",
        )(s);
        let s = replace(
            "users:\n",
            "users:\n  - name: added\n    password: added-pw\n",
        )(s);
        let s = replace("max_connections: 64\n", "max_connections: 5\n")(s);
        format!("{s}wait_timeout: 2\nlog_level: debug\n")
    });
    let line = sighup(&g, 1);
    assert!(line.contains("configuration reloaded"), "{line}");
    assert!(
        line.contains("wait_timeout") && line.contains("backends.shard0.pool.max_connections"),
        "{line}"
    );

    // New logins see the new users and passwords.
    assert_eq!(
        error_code(try_login(&g, APP_USER, APP_PASSWORD)),
        Some(1045)
    );
    let mut admin = login(&g, APP_USER, "new-secret");
    let mut added = login(&g, "added", "added-pw");
    assert_eq!(added.query_first::<u32, _>("SELECT 5").unwrap(), Some(5));
    // The session opened before goes on.
    assert_eq!(old.query_first::<u32, _>("SELECT 1").unwrap(), Some(1));

    let backends = show(&mut admin, "SHOW IDGATE BACKENDS");
    assert_eq!(field(&backends[0], "Pool_max").as_deref(), Some("5"));
    let status = show(&mut admin, "SHOW IDGATE STATUS");
    assert_eq!(field(&status[0], "Config_generation").as_deref(), Some("2"));
    assert_eq!(
        field(&status[0], "Last_reload_trigger").as_deref(),
        Some("SIGHUP")
    );
    assert_eq!(
        field(&status[0], "Last_reload_outcome").as_deref(),
        Some("applied generation 2")
    );
    assert!(field(&status[0], "Last_reload").is_some());

    // wait_timeout 2 binds sessions that log in now, not the one from before.
    let mut fresh = login(&g, "added", "added-pw");
    std::thread::sleep(Duration::from_millis(3500));
    assert!(
        fresh.query_drop("SELECT 1").is_err(),
        "idle past the new wait_timeout"
    );
    assert_eq!(old.query_first::<u32, _>("SELECT 2").unwrap(), Some(2));

    // The log level is debug now: the logins above were logged at debug.
    let log = g.log();
    let after = log.split("configuration reloaded").nth(1).unwrap_or("");
    assert!(after.contains("DEBUG"), "{log}");
}

fn two_dbs() -> Vec<MariaDb> {
    let dbs = vec![start_db(), start_db()];
    for db in &dbs {
        direct(db)
            .query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, v INT)")
            .unwrap();
    }
    dbs
}

/// Inserts `n` rows through idgate; every row must be on the shard its id mod 2 names.
fn inserts_route_by_mod(g: &Idgate, dbs: &[MariaDb], n: usize) {
    let mut c = login(g, APP_USER, APP_PASSWORD);
    for v in 0..n {
        c.exec_drop("INSERT INTO orders (v) VALUES (?)", (v,))
            .unwrap();
    }
    let mut total = 0;
    for (i, db) in dbs.iter().enumerate() {
        let ids: Vec<u64> = direct(db).query("SELECT id FROM orders").unwrap();
        assert!(ids.iter().all(|id| id % 2 == i as u64), "shard{i}: {ids:?}");
        total += ids.len();
    }
    let read: Vec<u64> = c.query("SELECT id FROM orders").unwrap();
    assert_eq!(read.len(), total);
}

fn reload_error(c: &mut Conn) -> String {
    match c.query_drop("IDGATE RELOAD") {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!((e.code, e.state.as_str()), (1105, "HY000"), "{e:?}");
            e.message
        }
        other => panic!("reload should be refused: {other:?}"),
    }
}

#[test]
fn idgate_reload_applies_and_bad_files_are_refused_whole() {
    let dbs = two_dbs();
    let g = Idgate::start_with(|port| {
        with_admin(config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            common::ORDERS_MOD_2,
        ))
    });
    let mut admin = login(&g, APP_USER, APP_PASSWORD);
    let good = std::fs::read_to_string(&g.config_path).unwrap();

    // A password changed through the statement: OK with what changed.
    edit(&g, replace("password: \"\"\n", "password: pw2\n"));
    admin.query_drop("IDGATE RELOAD").unwrap();
    let info = admin.info_str().into_owned();
    assert!(
        info.contains("generation 2") && info.contains("users"),
        "{info}"
    );
    login(&g, "nopw", "pw2");
    assert_eq!(error_code(try_login(&g, "nopw", "")), Some(1045));
    let applied = std::fs::read_to_string(&g.config_path).unwrap();

    // The same file again: nothing to apply, the generation stays.
    admin.query_drop("IDGATE RELOAD").unwrap();
    assert!(
        admin.info_str().contains("generation 2 kept"),
        "{}",
        admin.info_str()
    );

    // A YAML syntax error.
    edit(
        &g,
        replace("default_backend: shard0", "default_backend: [shard0"),
    );
    let msg = reload_error(&mut admin);
    assert!(
        msg.contains("line") && msg.contains("running configuration is kept"),
        "{msg}"
    );
    login(&g, "nopw", "pw2");

    // A table's sharding changed, next to a password: nothing of it applies.
    std::fs::write(
        &g.config_path,
        applied
            .replacen("algorithm: mod", "algorithm: hash", 1)
            .replacen("password: pw2\n", "password: pw3\n", 1),
    )
    .unwrap();
    let msg = reload_error(&mut admin);
    assert!(msg.contains("tables.orders.sharding.algorithm"), "{msg}");
    assert!(
        !msg.contains("users"),
        "only the fixed keys are named: {msg}"
    );
    assert_eq!(error_code(try_login(&g, "nopw", "pw3")), Some(1045));
    login(&g, "nopw", "pw2");
    inserts_route_by_mod(&g, &dbs, 6);

    // The listen address changed, by SIGHUP: refused and logged with the key.
    std::fs::write(
        &g.config_path,
        applied.replacen(
            &format!("listen: 127.0.0.1:{}", g.port),
            "listen: 127.0.0.1:1",
            1,
        ),
    )
    .unwrap();
    let line = sighup(&g, 5);
    assert!(
        line.contains("refused") && line.contains("listen"),
        "{line}"
    );
    let status = show(&mut admin, "SHOW IDGATE STATUS");
    assert_eq!(field(&status[0], "Config_generation").as_deref(), Some("2"));
    let outcome = field(&status[0], "Last_reload_outcome").unwrap_or_default();
    assert!(
        outcome.starts_with("refused") && outcome.contains("listen"),
        "{outcome}"
    );
    assert_eq!(
        field(&status[0], "Last_reload_trigger").as_deref(),
        Some("SIGHUP")
    );
    let msg = reload_error(&mut admin);
    assert!(msg.contains("listen"), "{msg}");
    // Still serving as before.
    login(&g, "nopw", "pw2");
    inserts_route_by_mod(&g, &dbs, 4);
    assert_ne!(good, applied);
}

/// (status, body) of `curl -X POST`.
fn post(port: u16, path: &str) -> (u16, serde_json::Value) {
    let out = std::process::Command::new(common::clients::require_tool("curl", "curl"))
        .args([
            "-sS",
            "--max-time",
            "20",
            "-X",
            "POST",
            "-w",
            "\n%{http_code}",
        ])
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    let json = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"));
    (code.trim().parse().expect("status"), json)
}

#[test]
fn post_reload_on_the_admin_listener() {
    let db = start_db();
    let admin_port = common::free_port().expect("port");
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &db)],
            &format!("admin:\n  listen: 127.0.0.1:{admin_port}\n"),
        )
    });
    edit(&g, replace("password: \"\"\n", "password: via-http\n"));
    let (code, body) = post(admin_port, "/reload");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["generation"], 2, "{body}");
    assert_eq!(body["changed"], serde_json::json!(["users"]), "{body}");
    login(&g, "nopw", "via-http");
    // The admin listener itself cannot move live.
    edit(
        &g,
        replace(&format!("127.0.0.1:{admin_port}"), "127.0.0.1:1"),
    );
    let (code, body) = post(admin_port, "/reload");
    assert_eq!(code, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("admin.listen"),
        "{body}"
    );
    login(&g, "nopw", "via-http");
}
