//! Per-user backend accounts: a user may log in to the backends with an account of its own (for
//! every backend, or per backend), so the servers' GRANTs apply per application; secrets come
//! from the environment or a file; the generators a user may call directly can be limited.

mod common;

use common::idgate_proc::{config_for, Idgate, APP_PASSWORD, APP_USER};
use common::{start_db, DATABASE, PASSWORD, USER};
use mysql::prelude::Queryable;
use mysql::{ChangeUserOpts, Conn, Opts, OptsBuilder};

const TABLES: &str = "generators:
  seq:
    kind: segment
  other:
    kind: segment
tables:
  orders:
    generator: seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

fn login(g: &Idgate, user: &str, password: &str) -> Conn {
    let opts = OptsBuilder::default()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(g.port)
        .user(Some(user))
        .pass(Some(password))
        .db_name(Some(DATABASE));
    Conn::new(Opts::from(opts)).unwrap_or_else(|e| panic!("login as {user}: {e}"))
}

fn current_user(c: &mut Conn, sql: &str) -> String {
    c.query_first::<String, _>(sql).unwrap().unwrap_or_default()
}

#[test]
fn users_reach_the_backends_with_their_own_accounts_and_grants() {
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        let mut c = common::direct(db);
        for sql in [
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, note VARCHAR(20))",
            "CREATE TABLE plain (v INT)",
            "CREATE USER 'ro_acct'@'%' IDENTIFIED BY 'ro-pw'",
            "GRANT SELECT ON *.* TO 'ro_acct'@'%'",
        ] {
            c.query_drop(sql).unwrap();
        }
    }
    // A row on shard1 (odd id), to be read through a routed SELECT.
    common::direct(&dbs[1])
        .query_drop("INSERT INTO orders VALUES (100001, 'one')")
        .unwrap();
    let dir = std::env::temp_dir().join(format!("idgate-accounts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ro_file = dir.join("ro-pw");
    std::fs::write(&ro_file, "ro-pw\n").unwrap();
    let shared_file = dir.join("shared-pw");
    std::fs::write(&shared_file, format!("{PASSWORD}\n")).unwrap();
    std::env::set_var("IDGATE_TEST_ACCOUNTS_RO_PW", "ro-pw");
    let users = format!(
        "users:\n  - name: reader\n    password: reader-pw\n    backend_account:\n      user: ro_acct\n      \
         password_env: IDGATE_TEST_ACCOUNTS_RO_PW\n  - name: mixed\n    password: mixed-pw\n    \
         generators: [seq]\n    backend_accounts:\n      shard1:\n        user: ro_acct\n        \
         password_file: {}\n",
        ro_file.display()
    );
    let g = Idgate::start_with(|port| {
        // Shard1's shared password comes from a file too.
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], TABLES)
            .replacen("users:\n", &users, 1)
            .replace(
                &format!(
                    "port: {}\n    user: {USER}\n    password: {PASSWORD}\n",
                    dbs[1].port
                ),
                &format!(
                    "port: {}\n    user: {USER}\n    password_file: {}\n",
                    dbs[1].port,
                    shared_file.display()
                ),
            )
    });
    assert!(
        std::fs::read_to_string(&g.config_path)
            .unwrap()
            .contains("password_file"),
        "the shared password of shard1 comes from a file"
    );

    // The shared account: writes everywhere.
    let mut app = login(&g, APP_USER, APP_PASSWORD);
    assert_eq!(
        current_user(&mut app, "SELECT CURRENT_USER()"),
        format!("{USER}@%")
    );
    app.query_drop("INSERT INTO plain VALUES (1)").unwrap();
    app.query_drop("INSERT INTO orders (note) VALUES ('a'), ('b')")
        .unwrap();

    // reader: its own read-only account on every backend; MariaDB's GRANTs answer.
    let mut reader = login(&g, "reader", "reader-pw");
    assert_eq!(
        current_user(&mut reader, "SELECT CURRENT_USER()"),
        "ro_acct@%"
    );
    let n: u64 = reader
        .query_first("SELECT COUNT(*) FROM orders")
        .unwrap()
        .unwrap();
    assert_eq!(n, 3, "reads reach both shards");
    let e = reader
        .query_drop("INSERT INTO plain VALUES (2)")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("1142") && e.contains("INSERT command denied to user 'ro_acct'"),
        "{e}"
    );
    let e = reader
        .query_drop("INSERT INTO orders (note) VALUES ('c')")
        .unwrap_err()
        .to_string();
    assert!(e.contains("INSERT command denied to user 'ro_acct'"), "{e}");

    // mixed: the shared account on shard0, its own on shard1.
    let mut mixed = login(&g, "mixed", "mixed-pw");
    assert_eq!(
        current_user(&mut mixed, "SELECT CURRENT_USER()"),
        format!("{USER}@%")
    );
    assert_eq!(
        current_user(
            &mut mixed,
            "SELECT CURRENT_USER() FROM orders WHERE id = 100001"
        ),
        "ro_acct@%",
        "a routed statement on shard1 runs as the user's shard1 account"
    );
    mixed.query_drop("INSERT INTO plain VALUES (3)").unwrap();

    // Generators: mixed may call seq only.
    let id: u64 = mixed.query_first("SELECT NEXTVAL(seq)").unwrap().unwrap();
    assert!(id > 0);
    let e = mixed
        .query_drop("SELECT NEXTVAL(other)")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("1142")
            && e.contains("INSERT command denied to user 'mixed'")
            && e.contains("generator `other`"),
        "{e}"
    );
    let e = mixed
        .query_drop("SELECT NEXT 5 VALUES FROM other")
        .unwrap_err()
        .to_string();
    assert!(e.contains("generator `other`"), "{e}");
    let id: u64 = app.query_first("SELECT NEXTVAL(other)").unwrap().unwrap();
    assert!(id > 0, "users without a list call every generator");

    // COM_CHANGE_USER from app to reader: the session's connections change accounts.
    app.change_user(
        ChangeUserOpts::default()
            .with_user(Some("reader".into()))
            .with_pass(Some("reader-pw".into()))
            .with_db_name(Some(DATABASE.into())),
    )
    .unwrap();
    assert_eq!(current_user(&mut app, "SELECT CURRENT_USER()"), "ro_acct@%");
    assert_eq!(
        current_user(
            &mut app,
            "SELECT CURRENT_USER() FROM orders WHERE id = 100001"
        ),
        "ro_acct@%"
    );
    assert!(app.query_drop("INSERT INTO plain VALUES (4)").is_err());
    // And back.
    app.change_user(
        ChangeUserOpts::default()
            .with_user(Some(APP_USER.into()))
            .with_pass(Some(APP_PASSWORD.into()))
            .with_db_name(Some(DATABASE.into())),
    )
    .unwrap();
    assert_eq!(
        current_user(
            &mut app,
            "SELECT CURRENT_USER() FROM orders WHERE id = 100001"
        ),
        format!("{USER}@%")
    );
    app.query_drop("INSERT INTO plain VALUES (5)").unwrap();
    let n: u64 = common::direct(&dbs[0])
        .query_first("SELECT COUNT(*) FROM plain")
        .unwrap()
        .unwrap();
    assert_eq!(n, 3, "rows 1, 3 and 5 written, 2 and 4 refused");
}

#[test]
fn a_missing_secret_stops_startup_with_its_line() {
    let db = common::shared_db();
    let cfg = config_for(3399, &[("shard0", db)], "").replace(
        &format!("password: {PASSWORD}\n"),
        "password_env: IDGATE_TEST_UNSET_SECRET\n",
    );
    let e = idgate::config::Config::from_yaml(&cfg)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("line ") && e.contains("IDGATE_TEST_UNSET_SECRET"),
        "{e}"
    );
}
