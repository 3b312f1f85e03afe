//! `users_from_backend`: a client logs in with an account that exists only on the backends;
//! idgate checks the password against the backend's own hash and logs in to every shard as that
//! account, so the backends' GRANTs, password changes and new accounts apply as if the client
//! had connected directly.

#[path = "tls/certs.rs"]
mod certs;
#[path = "tls/cli.rs"]
mod cli;
mod common;

use std::process::Command;
use std::time::Duration;

use common::clients::{require_tool, run};
use common::idgate_proc::{config_for, Idgate, APP_PASSWORD, APP_USER};
use common::{free_port, start_db, MariaDb, DATABASE, USER};
use mysql::prelude::Queryable;
use mysql::{ChangeUserOpts, Conn, Opts, OptsBuilder};

const TABLES: &str = "users_from_backend: {}
generators:
  seq:
    kind: segment
tables:
  orders:
    generator: seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

/// Long enough for a session's connections to be back in their pool, idle, after it quit.
const SETTLE: Duration = Duration::from_millis(400);

fn login(g: &Idgate, user: &str, password: &str) -> Result<Conn, mysql::Error> {
    login_at(g.port, user, password)
}

fn login_at(port: u16, user: &str, password: &str) -> Result<Conn, mysql::Error> {
    login_to(port, user, password, DATABASE)
}

fn login_to(port: u16, user: &str, password: &str, db: &str) -> Result<Conn, mysql::Error> {
    let opts = OptsBuilder::default()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .db_name(Some(db))
        // The account exists on the backend: the client must not switch to the backend's
        // Unix socket (which `SELECT @@socket` through idgate names) and bypass idgate.
        .prefer_socket(false);
    Conn::new(Opts::from(opts))
}

/// The login's outcome as a client sees it: 0 when it got in, else the error code.
fn outcome(r: Result<Conn, mysql::Error>) -> u16 {
    match r {
        Ok(_) => 0,
        Err(mysql::Error::MySqlError(e)) => e.code,
        Err(e) => panic!("refused without a MySQL error: {e}"),
    }
}

fn refused_code(r: Result<Conn, mysql::Error>) -> u16 {
    match r {
        Err(mysql::Error::MySqlError(e)) => e.code,
        Err(e) => panic!("refused without a MySQL error: {e}"),
        Ok(_) => panic!("logged in"),
    }
}

fn one(c: &mut Conn, sql: &str) -> String {
    c.query_first::<String, _>(sql).unwrap().unwrap_or_default()
}

fn on_both(dbs: &[common::MariaDb], sqls: &[&str]) {
    for db in dbs {
        let mut c = common::direct(db);
        for sql in sqls {
            c.query_drop(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }
}

#[test]
fn accounts_of_the_backends_log_in_through_idgate_with_their_own_rights() {
    let dbs = [start_db(), start_db()];
    let grant = format!("GRANT SELECT, INSERT ON {DATABASE}.* TO 'shop'@'%'");
    on_both(
        &dbs,
        &[
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, note VARCHAR(20))",
            "CREATE DATABASE private",
            "CREATE TABLE private.t (v INT)",
            "CREATE USER 'shop'@'%' IDENTIFIED BY 'shop-pw'",
            &grant,
            "CREATE USER 'faraway'@'10.9.%' IDENTIFIED BY 'far-pw'",
            "CREATE USER 'sock'@'%' IDENTIFIED VIA unix_socket",
            "CREATE USER 'locked'@'%' IDENTIFIED BY 'locked-pw' ACCOUNT LOCK",
        ],
    );
    // An account only the default backend knows.
    on_both(
        &dbs[..1],
        &[
            "CREATE USER 'half'@'%' IDENTIFIED BY 'half-pw'",
            &format!("GRANT SELECT ON {DATABASE}.* TO 'half'@'%'"),
        ],
    );
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], TABLES)
    });

    // The account logs in and runs as itself on both shards.
    let mut shop = login(&g, "shop", "shop-pw").expect("shop logs in");
    assert_eq!(one(&mut shop, "SELECT CURRENT_USER()"), "shop@%");
    shop.query_drop("INSERT INTO orders (note) VALUES ('a'), ('b'), ('c'), ('d')")
        .unwrap();
    let per_shard: Vec<u64> = dbs
        .iter()
        .map(|db| {
            common::direct(db)
                .query_first("SELECT COUNT(*) FROM orders")
                .unwrap()
                .unwrap()
        })
        .collect();
    assert_eq!(per_shard.iter().sum::<u64>(), 4, "{per_shard:?}");
    assert!(per_shard.iter().all(|n| *n > 0), "{per_shard:?}");
    let odd: u64 = common::direct(&dbs[1])
        .query_first("SELECT id FROM orders LIMIT 1")
        .unwrap()
        .unwrap();
    assert_eq!(
        one(
            &mut shop,
            &format!("SELECT CURRENT_USER() FROM orders WHERE id = {odd}")
        ),
        "shop@%",
        "shard1 is reached as the account too"
    );
    // The backends' GRANTs answer, not idgate's own account's.
    let e = shop
        .query_drop("SELECT * FROM private.t")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("1142") && e.contains("denied to user 'shop'"),
        "{e}"
    );
    let e = shop
        .query_drop("DELETE FROM orders")
        .unwrap_err()
        .to_string();
    assert!(e.contains("DELETE command denied to user 'shop'"), "{e}");

    // Refusals as MariaDB answers them.
    assert_eq!(refused_code(login(&g, "shop", "wrong")), 1045);
    assert_eq!(refused_code(login(&g, "nobody", "x")), 1045);
    assert_eq!(
        refused_code(login(&g, "faraway", "far-pw")),
        1045,
        "the account's hosts do not include the client's"
    );
    assert_eq!(
        refused_code(login(&g, "sock", "")),
        1045,
        "a plugin idgate cannot check is refused"
    );
    assert!(g.log().contains("uses plugin `unix_socket`"), "{}", g.log());
    assert_eq!(
        refused_code(login(&g, "locked", "locked-pw")),
        4151,
        "the backend's own refusal reaches the client at login"
    );

    // An account on the default backend only: in, until a statement needs the other shard.
    let mut half = login(&g, "half", "half-pw").expect("half logs in");
    assert_eq!(one(&mut half, "SELECT CURRENT_USER()"), "half@%");
    let e = half
        .query_drop(format!("SELECT * FROM orders WHERE id = {odd}"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("1045") && e.contains("Access denied for user 'half'"),
        "{e}"
    );

    // The configured user keeps idgate's shared account.
    let mut app = login(&g, APP_USER, APP_PASSWORD).expect("app logs in");
    assert_eq!(one(&mut app, "SELECT CURRENT_USER()"), format!("{USER}@%"));

    // COM_CHANGE_USER to the account and back.
    app.change_user(
        ChangeUserOpts::default()
            .with_user(Some("shop".into()))
            .with_pass(Some("shop-pw".into()))
            .with_db_name(Some(DATABASE.into())),
    )
    .unwrap();
    assert_eq!(
        one(
            &mut app,
            &format!("SELECT CURRENT_USER() FROM orders WHERE id = {odd}")
        ),
        "shop@%"
    );
    assert!(app.query_drop("DELETE FROM orders").is_err());
    app.change_user(
        ChangeUserOpts::default()
            .with_user(Some(APP_USER.into()))
            .with_pass(Some(APP_PASSWORD.into()))
            .with_db_name(Some(DATABASE.into())),
    )
    .unwrap();
    assert_eq!(
        one(
            &mut app,
            &format!("SELECT CURRENT_USER() FROM orders WHERE id = {odd}")
        ),
        format!("{USER}@%")
    );

    // A new password on the backends: the old one stops working, the new one works everywhere
    // (idle connections logged in with the old one are not reused).
    drop(shop);
    on_both(&dbs, &["ALTER USER 'shop'@'%' IDENTIFIED BY 'shop-pw-2'"]);
    std::thread::sleep(SETTLE);
    assert_eq!(refused_code(login(&g, "shop", "shop-pw")), 1045);
    let mut shop = login(&g, "shop", "shop-pw-2").expect("the new password logs in");
    assert_eq!(
        one(
            &mut shop,
            &format!("SELECT CURRENT_USER() FROM orders WHERE id = {odd}")
        ),
        "shop@%"
    );

    // An account made after idgate started, and one dropped.
    on_both(
        &dbs,
        &[
            "CREATE USER 'late'@'%' IDENTIFIED BY 'late-pw'",
            &format!("GRANT SELECT ON {DATABASE}.* TO 'late'@'%'"),
            "DROP USER 'shop'@'%'",
        ],
    );
    std::thread::sleep(SETTLE);
    let mut late = login(&g, "late", "late-pw").expect("a new account logs in");
    assert_eq!(one(&mut late, "SELECT CURRENT_USER()"), "late@%");
    assert_eq!(refused_code(login(&g, "shop", "shop-pw-2")), 1045);

    // The mysql command-line client, as an application would log in.
    let mysql = require_tool("mysql", "mariadb-client");
    let mut cmd = Command::new(mysql);
    cmd.args([
        "--protocol=TCP",
        "-h127.0.0.1",
        "-ulate",
        "-plate-pw",
        "-N",
        "-B",
    ])
    .arg(format!("-P{}", g.port))
    .arg(DATABASE)
    .args(["-e", "SELECT CURRENT_USER()"]);
    let out = run(cmd, "mysql as late", Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "late@%");
}

#[test]
fn without_the_setting_a_backend_account_cannot_log_in() {
    let db = start_db();
    common::direct(&db)
        .query_drop("CREATE USER 'shop'@'%' IDENTIFIED BY 'shop-pw'")
        .unwrap();
    let g = Idgate::start(&db);
    assert_eq!(refused_code(login(&g, "shop", "shop-pw")), 1045);
}

/// The same login, directly and through idgate, right after each change to the account: the
/// outcomes match, with no wait for anything to expire. Each change follows a login through idgate
/// whose connection went back to the pool idle, so the next login would reuse it.
#[test]
fn an_account_change_counts_at_the_next_login_as_on_one_server() {
    let db = start_db();
    common::direct(&db)
        .query_drop(format!(
            "CREATE TABLE t (v INT); INSERT INTO t VALUES (1); \
             CREATE USER 'u1'@'%' IDENTIFIED BY 'pw'; GRANT SELECT ON {DATABASE}.* TO 'u1'@'%'; \
             CREATE USER 'viewer'@'%' IDENTIFIED BY 'pw'; \
             GRANT SELECT, CREATE VIEW, DROP ON {DATABASE}.* TO 'viewer'@'%'; \
             CREATE DEFINER = 'viewer'@'%' VIEW v1 AS SELECT 1 AS a"
        ))
        .unwrap();
    let g =
        Idgate::start_with(|port| config_for(port, &[("shard0", &db)], "users_from_backend: {}\n"));
    let both = |user: &str, password: &str| {
        let through = outcome(login(&g, user, password).map(|mut c| {
            // The session runs a statement, so its connection is a used one when it goes back.
            let _ = c.query_drop("SELECT 1");
            c
        }));
        (outcome(login_at(db.port, user, password)), through)
    };
    let change = |sql: &str| {
        std::thread::sleep(SETTLE);
        common::direct(&db)
            .query_drop(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    };
    assert_eq!(both("u1", "pw"), (0, 0));
    // A database the account may not use: MariaDB's 1044, not a failed login.
    let private = |port| outcome(login_to(port, "u1", "pw", "mysql"));
    assert_eq!((private(db.port), private(g.port)), (1044, 1044));

    change("ALTER USER 'u1'@'%' ACCOUNT LOCK");
    assert_eq!(both("u1", "pw"), (4151, 4151), "a locked account stays out");
    change("ALTER USER 'u1'@'%' ACCOUNT UNLOCK");
    assert_eq!(both("u1", "pw"), (0, 0));

    // A session already in keeps running, as on one server.
    let mut open = login(&g, "u1", "pw").unwrap();
    let mut open_direct = login_at(db.port, "u1", "pw").unwrap();
    change("ALTER USER 'u1'@'%' ACCOUNT LOCK");
    assert_eq!(one(&mut open, "SELECT CURRENT_USER()"), "u1@%");
    assert_eq!(one(&mut open_direct, "SELECT CURRENT_USER()"), "u1@%");
    // Its own COM_CHANGE_USER back to the account is a new login, refused as on one server.
    let relogin = |c: &mut Conn| {
        let r = c.change_user(
            ChangeUserOpts::default()
                .with_user(Some("u1".into()))
                .with_pass(Some("pw".into()))
                .with_db_name(Some(DATABASE.into())),
        );
        match r {
            Ok(()) => 0,
            Err(mysql::Error::MySqlError(e)) => e.code,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(
        (relogin(&mut open_direct), relogin(&mut open)),
        (4151, 4151)
    );
    // Refused, each connection goes on as the account it was.
    assert_eq!(one(&mut open_direct, "SELECT CURRENT_USER()"), "u1@%");
    assert_eq!(one(&mut open, "SELECT CURRENT_USER()"), "u1@%");
    drop((open, open_direct));
    change("ALTER USER 'u1'@'%' ACCOUNT UNLOCK");
    assert_eq!(both("u1", "pw"), (0, 0));

    // An expired password where the server disconnects such logins.
    change("SET GLOBAL disconnect_on_expired_password = ON");
    change("ALTER USER 'u1'@'%' PASSWORD EXPIRE");
    let (direct, through) = both("u1", "pw");
    assert_eq!(
        through, direct,
        "expired: directly {direct}, through idgate {through}"
    );
    assert_ne!(through, 0, "an expired password does not log in");
    change("ALTER USER 'u1'@'%' IDENTIFIED BY 'pw2'");
    assert_eq!(both("u1", "pw2"), (0, 0), "a new password logs in at once");
    assert_eq!(both("u1", "pw"), (1045, 1045), "the old one does not");

    // Renamed, then dropped.
    change("RENAME USER 'u1'@'%' TO 'u2'@'%'");
    assert_eq!(both("u1", "pw2"), (1045, 1045));
    assert_eq!(both("u2", "pw2"), (0, 0));
    change("DROP USER 'u2'@'%'");
    assert_eq!(both("u2", "pw2"), (1045, 1045));

    // Privileges are the account's as they are at the login, not as they were when a pooled
    // connection first logged in: without DROP, ALTER VIEW is refused.
    let alter = |port: u16| {
        let mut c = login_at(port, "viewer", "pw").unwrap();
        match c.query_drop("ALTER VIEW v1 AS SELECT 2 AS a") {
            Ok(()) => 0,
            Err(mysql::Error::MySqlError(e)) => e.code,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!((alter(db.port), alter(g.port)), (0, 0));
    change(&format!("REVOKE DROP ON {DATABASE}.* FROM 'viewer'@'%'"));
    assert_eq!((alter(db.port), alter(g.port)), (1142, 1142));

    // A running session keeps or loses a revoked privilege at its next statement as on one server.
    let mut running = login(&g, "viewer", "pw").unwrap();
    let mut running_direct = login_at(db.port, "viewer", "pw").unwrap();
    assert_eq!(one(&mut running, "SELECT CAST(v AS CHAR) FROM t"), "1");
    change(&format!("REVOKE SELECT ON {DATABASE}.* FROM 'viewer'@'%'"));
    let code = |c: &mut Conn| match c.query_drop("SELECT v FROM t") {
        Ok(()) => 0,
        Err(mysql::Error::MySqlError(e)) => e.code,
        Err(e) => panic!("{e}"),
    };
    // (MariaDB keeps a running session's database-level rights until it changes database.)
    let (direct, through) = (code(&mut running_direct), code(&mut running));
    assert_eq!(
        through, direct,
        "directly {direct}, through idgate {through}"
    );
}

/// A COM_CHANGE_USER: `None` when it was accepted, else the error code and SQLSTATE.
fn change_to(c: &mut Conn, user: &str, password: &str, db: &str) -> Option<(u16, String)> {
    let r = c.change_user(
        ChangeUserOpts::default()
            .with_user(Some(user.into()))
            .with_pass(Some(password.into()))
            .with_db_name(Some(db.into())),
    );
    match r {
        Ok(()) => None,
        Err(mysql::Error::MySqlError(e)) => Some((e.code, e.state)),
        Err(e) => panic!("COM_CHANGE_USER to {user} failed without a MySQL error: {e}"),
    }
}

/// Who the connection is, in which database, and whether the session was reset (`@v`).
fn whoami(c: &mut Conn) -> Result<(String, String, String), mysql::Error> {
    let row: Option<(String, String, String)> = c.query_first(
        "SELECT CURRENT_USER(), IFNULL(DATABASE(), '-'), IFNULL(CAST(@v AS CHAR), 'reset')",
    )?;
    Ok(row.unwrap_or_default())
}

/// The same refused COM_CHANGE_USERs directly and through idgate: the same code and SQLSTATE, and
/// the connection goes on as the user it was, in the database it had, its session reset, as
/// MariaDB keeps it; the fourth on one connection is refused outright on both.
#[test]
fn a_refused_change_user_keeps_the_connection_as_on_one_server() {
    let db = start_db();
    common::direct(&db)
        .query_drop(format!(
            "CREATE DATABASE other; \
             CREATE USER 'keeper'@'%' IDENTIFIED BY 'pw'; \
             GRANT SELECT ON {DATABASE}.* TO 'keeper'@'%'; GRANT SELECT ON other.* TO 'keeper'@'%'; \
             CREATE USER 'shut'@'%' IDENTIFIED BY 'pw' ACCOUNT LOCK; \
             GRANT SELECT ON {DATABASE}.* TO 'shut'@'%'; \
             CREATE USER 'old'@'%' IDENTIFIED BY 'pw' PASSWORD EXPIRE; \
             GRANT SELECT ON {DATABASE}.* TO 'old'@'%'; \
             SET GLOBAL disconnect_on_expired_password = ON"
        ))
        .unwrap();
    let g =
        Idgate::start_with(|port| config_for(port, &[("shard0", &db)], "users_from_backend: {}\n"));
    let mut pair = [
        login_to(db.port, "keeper", "pw", "other").expect("keeper logs in directly"),
        login_to(g.port, "keeper", "pw", "other").expect("keeper logs in through idgate"),
    ];
    let kept = (
        "keeper@%".to_string(),
        "other".to_string(),
        "reset".to_string(),
    );
    let cases: [(&str, &str, &str, u16); 4] = [
        ("keeper", "wrong", DATABASE, 1045),
        ("shut", "pw", DATABASE, 4151),
        ("old", "pw", DATABASE, 1862),
        // A fourth attempt on the connection, even a right one, is not heard any more.
        ("keeper", "pw", DATABASE, 1047),
    ];
    for (user, password, to_db, code) in cases {
        let answers: Vec<_> = pair
            .iter_mut()
            .map(|c| {
                c.query_drop("SET @v = 1").unwrap();
                change_to(c, user, password, to_db)
            })
            .collect();
        assert_eq!(
            answers[1], answers[0],
            "COM_CHANGE_USER to {user}: through idgate (right) as directly (left)"
        );
        assert_eq!(answers[0].as_ref().map(|a| a.0), Some(code), "to {user}");
        for (c, way) in pair.iter_mut().zip(["directly", "through idgate"]) {
            let me = whoami(c).unwrap_or_else(|e| panic!("{way}, after {user}'s refusal: {e}"));
            assert_eq!(me, kept, "{way}, after {user}'s refusal");
        }
    }

    // The same account again, to a database it may not use: judged on the connection the
    // session holds, which goes on as it was.
    let mut pair = [
        login_to(db.port, "keeper", "pw", "other").unwrap(),
        login_to(g.port, "keeper", "pw", "other").unwrap(),
    ];
    let answers: Vec<_> = pair
        .iter_mut()
        .map(|c| change_to(c, "keeper", "pw", "mysql"))
        .collect();
    assert_eq!(answers[1], answers[0], "keeper to mysql");
    assert_eq!(answers[0].as_ref().map(|a| a.0), Some(1044));
    for c in &mut pair {
        assert_eq!(whoami(c).unwrap(), kept);
    }

    // A database the new account may not use, and one that does not exist; from idgate's own
    // configured user, which stays itself.
    let mut app = login_to(g.port, APP_USER, APP_PASSWORD, DATABASE).unwrap();
    let mut root = login_to(db.port, USER, common::PASSWORD, DATABASE).unwrap();
    root.query_drop("SET @v = 1").unwrap();
    for to_db in ["mysql", "nowhere"] {
        let answers: Vec<_> = [&mut root, &mut app]
            .into_iter()
            .map(|c| change_to(c, "keeper", "pw", to_db))
            .collect();
        assert_eq!(answers[1], answers[0], "to database {to_db}");
        assert!(answers[0].is_some(), "to {to_db}");
    }
    assert_eq!(whoami(&mut app).unwrap().0, format!("{USER}@%"));
    assert_eq!(whoami(&mut root).unwrap().0, format!("{USER}@%"));
    // A right one after refusals (two, below MariaDB's three) still goes through.
    assert_eq!(change_to(&mut app, "keeper", "pw", DATABASE), None);
    assert_eq!(whoami(&mut app).unwrap().0, "keeper@%");
}

/// A login's outcome with the error's code, SQLSTATE and text (`None`: it got in, kept in `held`).
fn try_login(port: u16, user: &str, held: &mut Vec<Conn>) -> Option<(u16, String, String)> {
    match login_at(port, user, "pw") {
        Ok(c) => {
            held.push(c);
            None
        }
        Err(mysql::Error::MySqlError(e)) => Some((e.code, e.state, e.message)),
        Err(e) => panic!("refused without a MySQL error: {e}"),
    }
}

/// The same logins of a limited account directly and through idgate, one after the other (both
/// count on the same server): what each login and COM_CHANGE_USER answered.
fn limited_logins(port: u16, other: impl Fn() -> Conn, user: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut held = Vec::new();
    std::thread::sleep(SETTLE);
    for _ in 0..3 {
        seen.push(format!("login: {:?}", try_login(port, user, &mut held)));
    }
    // A session that ended makes room for the next login.
    held.remove(0);
    std::thread::sleep(SETTLE);
    seen.push(format!(
        "after one left: {:?}",
        try_login(port, user, &mut held)
    ));
    seen.push(format!("one more: {:?}", try_login(port, user, &mut held)));
    // Another user's COM_CHANGE_USER to the account at its limit; that connection stays itself.
    let mut o = other();
    let before = whoami(&mut o).unwrap().0;
    seen.push(format!(
        "change_user: {:?}",
        change_to(&mut o, user, "pw", DATABASE)
    ));
    assert_eq!(whoami(&mut o).unwrap().0, before, "stays itself");
    // A refused COM_CHANGE_USER and a COM_RESET_CONNECTION in a session of the account count
    // as MariaDB counts them (it no longer counts such a session).
    let refused = change_to(&mut held[0], user, "wrong", DATABASE).map(|(c, s)| (c, s.len()));
    seen.push(format!("refused change_user: {refused:?}"));
    seen.push(format!("then: {:?}", try_login(port, user, &mut held)));
    held[0].reset().unwrap();
    seen.push(format!(
        "after a reset: {:?}",
        try_login(port, user, &mut held)
    ));
    seen
}

/// An account `WITH MAX_USER_CONNECTIONS 2`, and one under the server's global
/// `max_user_connections`: logins, sessions that end, COM_CHANGE_USER to the account at its limit
/// and the sessions MariaDB stops counting answer through idgate as directly, because the backend
/// counts idgate's connections as the account's (one a session). Through idgate the connections it
/// keeps idle for the account do not hold up the account's logins elsewhere.
#[test]
fn an_account_s_max_user_connections_holds_as_on_one_server() {
    // Started with a global limit, so one can be set while it runs.
    let db = (0..5)
        .find_map(|_| {
            let port = free_port().expect("free port");
            MariaDb::start_with_args(port, &["--max-user-connections=1000".to_string()]).ok()
        })
        .expect("a MariaDB with max_user_connections");
    common::direct(&db)
        .query_drop(format!(
            "CREATE USER 'capped'@'%' IDENTIFIED BY 'pw' WITH MAX_USER_CONNECTIONS 2; \
             GRANT SELECT ON {DATABASE}.* TO 'capped'@'%'; \
             CREATE USER 'many'@'%' IDENTIFIED BY 'pw'; GRANT SELECT ON {DATABASE}.* TO 'many'@'%'"
        ))
        .unwrap();
    let g =
        Idgate::start_with(|port| config_for(port, &[("shard0", &db)], "users_from_backend: {}\n"));
    let root = || login_to(db.port, USER, common::PASSWORD, DATABASE).unwrap();
    let app = || login(&g, APP_USER, APP_PASSWORD).unwrap();
    let direct = limited_logins(db.port, root, "capped");
    let through = limited_logins(g.port, app, "capped");
    assert_eq!(through, direct, "through idgate (right) as directly");
    assert!(
        direct[2].contains("1226") && direct[2].contains("42000"),
        "{direct:?}"
    );

    std::thread::sleep(SETTLE);
    let mut elsewhere = Vec::new();
    for _ in 0..2 {
        assert_eq!(
            try_login(db.port, "capped", &mut elsewhere),
            None,
            "logs in directly"
        );
    }
    drop(elsewhere);

    // The server's own limit, for an account without one of its own: ERROR 1203.
    common::direct(&db)
        .query_drop("SET GLOBAL max_user_connections = 2")
        .unwrap();
    let direct = limited_logins(db.port, root, "many");
    let through = limited_logins(g.port, app, "many");
    common::direct(&db)
        .query_drop("SET GLOBAL max_user_connections = 0")
        .unwrap();
    assert_eq!(through, direct, "through idgate (right) as directly");
    assert!(
        direct[2].contains("1203") && direct[2].contains("42000"),
        "{direct:?}"
    );
}

/// A MariaDB server that offers TLS (with the localhost certificate) and does not demand it.
fn tls_offering_db(p: &certs::Pki) -> MariaDb {
    let args = [
        format!("--ssl-cert={}", p.server.display()),
        format!("--ssl-key={}", p.server_key.display()),
        format!("--ssl-ca={}", p.ca.display()),
    ];
    (0..5)
        .find_map(|_| MariaDb::start_with_args(free_port().expect("free port"), &args).ok())
        .expect("a MariaDB with TLS")
}

/// What the mysql CLI got: the account it is, or the error's code and SQLSTATE.
fn cli_login(port: u16, user: &str, tls: &[&str]) -> String {
    let r = cli::mysql_cli(port, user, "pw", tls, "SELECT CURRENT_USER()");
    match r.code {
        Some(0) => r
            .stdout
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .to_string(),
        _ => r
            .stderr
            .lines()
            .find(|l| l.starts_with("ERROR "))
            .and_then(|l| l.split(':').next())
            .unwrap_or_else(|| panic!("no error from the mysql CLI: {}", r.stderr))
            .to_string(),
    }
}

/// Accounts with REQUIRE SSL, X509 and SUBJECT, logging in with the mysql CLI without TLS, with
/// TLS, and with a client certificate: refused (1045) or let in through idgate as directly. idgate
/// checks the client's connection against the account's REQUIRE; it reaches the backend over TLS
/// with a client certificate of its own, so the account's logins there pass (the backend cannot
/// see the client's connection).
#[test]
fn an_account_s_require_ssl_holds_as_on_one_server() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("users-from-backend-certs-{}", std::process::id()));
    let p = certs::make(&dir);
    let db = tls_offering_db(&p);
    common::direct(&db)
        .query_drop(format!(
            "CREATE USER 'sec'@'%' IDENTIFIED BY 'pw' REQUIRE SSL; \
             CREATE USER 'cert'@'%' IDENTIFIED BY 'pw' REQUIRE X509; \
             CREATE USER 'named'@'%' IDENTIFIED BY 'pw' REQUIRE SUBJECT '/CN=someone-else'; \
             CREATE USER 'open'@'%' IDENTIFIED BY 'pw'; \
             GRANT SELECT ON {DATABASE}.* TO 'sec'@'%', 'cert'@'%', 'named'@'%', 'open'@'%'"
        ))
        .unwrap();
    let ca = p.ca.display().to_string();
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &db)],
            &format!(
                "users_from_backend: {{}}\ntls:\n  cert: {}\n  key: {}\n  ca: {ca}\n",
                p.server.display(),
                p.server_key.display()
            ),
        )
        .replacen(
            "    pool:\n",
            &format!(
                "    tls: {{mode: verify_identity, ca: {ca}, cert: {}, key: {}}}\n    pool:\n",
                p.client.display(),
                p.client_key.display()
            ),
            1,
        )
    });
    let plain: &[&str] = &["--skip-ssl"];
    let ca_arg = format!("--ssl-ca={ca}");
    let tls: &[&str] = &["--ssl", &ca_arg];
    let cert_arg = format!("--ssl-cert={}", p.client.display());
    let key_arg = format!("--ssl-key={}", p.client_key.display());
    let with_cert: &[&str] = &["--ssl", &ca_arg, &cert_arg, &key_arg];
    let mut seen = Vec::new();
    for user in ["open", "sec", "cert", "named"] {
        for (how, args) in [("plain", plain), ("tls", tls), ("cert", with_cert)] {
            let direct = cli_login(db.port, user, args);
            let through = cli_login(g.port, user, args);
            seen.push(format!("{user} {how}: {direct} / {through}"));
            assert_eq!(
                through,
                direct,
                "{user} over {how}: through idgate (left) as directly\n{}",
                g.log()
            );
        }
    }
    let at = |user: &str, how: &str| {
        seen.iter()
            .find(|l| l.starts_with(&format!("{user} {how}:")))
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        at("sec", "plain").contains("ERROR 1045 (28000)"),
        "{seen:?}"
    );
    assert!(at("sec", "tls").contains("sec@%"), "{seen:?}");
    assert!(at("cert", "tls").contains("ERROR 1045"), "{seen:?}");
    assert!(at("cert", "cert").contains("cert@%"), "{seen:?}");
    assert!(at("named", "cert").contains("ERROR 1045"), "{seen:?}");

    // COM_CHANGE_USER to the account over a connection without TLS: refused alike, the
    // connection going on as the user it was.
    let answers: Vec<_> = [db.port, g.port]
        .into_iter()
        .map(|port| {
            let mut c = login_at(port, "open", "pw").unwrap();
            let refused = change_to(&mut c, "sec", "pw", DATABASE);
            (refused, whoami(&mut c).unwrap().0)
        })
        .collect();
    assert_eq!(answers[1], answers[0], "through idgate (right) as directly");
    assert_eq!(answers[0].0.as_ref().map(|r| r.0), Some(1045));
}

/// With one connection to the backend in all, a session moves between idgate's own user and an
/// account read from the backend by COM_CHANGE_USER: the connection it holds makes room for
/// the new account's.
#[test]
fn a_change_user_between_accounts_fits_a_pool_of_one() {
    let db = start_db();
    common::direct(&db)
        .query_drop(format!(
            "CREATE USER 'keeper'@'%' IDENTIFIED BY 'pw'; GRANT SELECT ON {DATABASE}.* TO 'keeper'@'%'"
        ))
        .unwrap();
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &db)], "users_from_backend: {}\n")
            .replace("max_connections: 64", "max_connections: 1")
            .replace("acquire_timeout_ms: 10000", "acquire_timeout_ms: 1000")
    });
    let mut c = login(&g, APP_USER, APP_PASSWORD).unwrap();
    assert_eq!(whoami(&mut c).unwrap().0, format!("{USER}@%"));
    assert_eq!(change_to(&mut c, "keeper", "pw", DATABASE), None);
    assert_eq!(whoami(&mut c).unwrap().0, "keeper@%");
    assert_eq!(change_to(&mut c, APP_USER, APP_PASSWORD, DATABASE), None);
    assert_eq!(whoami(&mut c).unwrap().0, format!("{USER}@%"));
    // Refused, the session goes on as it was on a connection of its own account.
    assert_eq!(
        change_to(&mut c, "keeper", "pw", "mysql").map(|e| e.0),
        Some(1044)
    );
    assert_eq!(whoami(&mut c).unwrap().0, format!("{USER}@%"));
}
