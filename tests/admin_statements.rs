//! idgate's admin statements on the MySQL port (`SHOW IDGATE STATUS | BACKENDS | GENERATORS |
//! SESSIONS | TABLES`), read by the mysql CLI and PyMySQL: column names, one row per backend,
//! generator, table and session, values that match the configuration and the traffic; ERROR 1227
//! for a user without `admin: true`, 1295 for a prepared one.

mod common;

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use common::clients::{require_python_modules, require_tool, run, source_dir};
use common::idgate_proc::{config_for, APP_PASSWORD, APP_USER};
use common::{direct, start_db, Idgate, MariaDb, DATABASE};
use mysql::prelude::Queryable;
use serde_json::Value;

const TABLES: &str = "generators:
  seq:
    kind: segment
    step: 100
  snow:
    kind: snowflake
    worker_id: 7
tables:
  orders:
    generator: seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  countries:
    broadcast: true
  notes:
    generator: snow
";

/// `app` is an admin; `nopw` is not.
fn admin_config(port: u16, dbs: &[MariaDb]) -> String {
    config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], TABLES).replacen(
        &format!("    password: {APP_PASSWORD}\n"),
        &format!("    password: {APP_PASSWORD}\n    admin: true\n"),
        1,
    )
}

fn setup() -> (Vec<MariaDb>, Idgate) {
    let dbs = vec![start_db(), start_db()];
    for db in &dbs {
        let mut c = direct(db);
        c.query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, v INT)")
            .unwrap();
        c.query_drop("CREATE TABLE countries (id INT PRIMARY KEY)")
            .unwrap();
        c.query_drop("CREATE TABLE notes (id BIGINT PRIMARY KEY, v INT)")
            .unwrap();
    }
    let g = Idgate::start_with(|port| admin_config(port, &dbs));
    // Traffic the answers must reflect: three ids from `seq`.
    let mut c = g.conn();
    c.query_drop("INSERT INTO orders (v) VALUES (1), (2), (3)")
        .unwrap();
    (dbs, g)
}

/// The mysql CLI in batch mode: per statement, the header line then tab-separated rows.
fn mysql_cli(g: &Idgate, user: &str, pw: &str, sql: &str) -> (Option<i32>, String) {
    let mut cmd = Command::new(require_tool("mysql", "mariadb-client"));
    cmd.args(["-h", "127.0.0.1", "-P", &g.port.to_string(), "-u", user])
        .arg(format!("-p{pw}"))
        .args(["--ssl=0", "--batch", DATABASE, "-e", sql]);
    let r = run(cmd, "mysql cli admin", Duration::from_secs(60));
    (r.code, format!("{}{}", r.stdout, r.stderr))
}

/// The batch output of one statement as maps column → value.
fn cli_rows(out: &str, header_starts: &str) -> Vec<HashMap<String, String>> {
    let mut lines = out.lines().skip_while(|l| !l.starts_with(header_starts));
    let header: Vec<String> = lines
        .next()
        .unwrap_or_else(|| panic!("no header `{header_starts}` in:\n{out}"))
        .split('\t')
        .map(String::from)
        .collect();
    lines
        // Up to the next statement's header (their first columns are these).
        .take_while(|l| {
            let first = l.split('\t').next().unwrap_or("");
            l.split('\t').count() == header.len() && !["Version", "Name", "Id"].contains(&first)
        })
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split('\t').map(String::from))
                .collect()
        })
        .collect()
}

#[test]
fn every_show_idgate_statement_through_the_mysql_cli() {
    let (_dbs, g) = setup();
    // A second session, in a transaction, in the test database.
    let mut other = g.conn();
    other.query_drop("BEGIN").unwrap();
    other.query_drop("SELECT 1").unwrap();
    let other_id = other.connection_id();
    let (code, out) = mysql_cli(
        &g,
        APP_USER,
        APP_PASSWORD,
        "SHOW IDGATE STATUS; show idgate backends; /* c */ SHOW IDGATE GENERATORS; \
         SHOW IDGATE SESSIONS; SHOW IDGATE TABLES;",
    );
    assert_eq!(code, Some(0), "{out}");

    let status = cli_rows(&out, "Version\t");
    assert_eq!(status.len(), 1, "{out}");
    let s = &status[0];
    assert_eq!(s["Version"], env!("CARGO_PKG_VERSION"));
    assert!(s["Server_version"].ends_with("-idgate"), "{out}");
    assert_eq!(s["Config_generation"], "1");
    assert_eq!(s["Config_file"], g.config_path.display().to_string());
    assert_eq!(s["Last_reload"], "NULL", "no reload yet: {out}");
    // The CLI's session and `other` (and the setup's, if still closing).
    let threads: u64 = s["Threads_connected"].parse().unwrap();
    assert!((2..=3).contains(&threads), "{out}");
    assert!(s["Uptime"].parse::<u64>().is_ok(), "{out}");

    let backends = cli_rows(&out, "Name\tAddress\t");
    assert_eq!(backends.len(), 2, "{out}");
    for (row, name) in backends.iter().zip(["shard0", "shard1"]) {
        assert_eq!(row["Name"], name);
        assert!(row["Address"].starts_with("127.0.0.1:"), "{out}");
        assert_eq!(row["Pool_max"], "64");
        assert_eq!(row["Reachable"], "Yes", "{out}");
    }
    // `other` holds a connection to shard0 (its transaction).
    assert!(
        backends[0]["Pool_in_use"].parse::<u64>().unwrap() >= 1,
        "{out}"
    );

    let gens = cli_rows(&out, "Name\tKind\t");
    assert_eq!(gens.len(), 2, "{out}");
    let (seq, snow) = (&gens[0], &gens[1]);
    assert_eq!(
        (seq["Name"].as_str(), seq["Kind"].as_str()),
        ("seq", "segment")
    );
    assert_eq!(seq["Ids_issued"], "3", "{out}");
    assert_eq!(seq["Step"], "100", "{out}");
    let buffered: u64 = seq["Buffered"].parse().unwrap();
    assert!(buffered >= 97, "{out}");
    assert_eq!(seq["Worker_id"], "NULL");
    assert_eq!(
        (snow["Name"].as_str(), snow["Kind"].as_str()),
        ("snow", "snowflake")
    );
    assert_eq!(snow["Worker_id"], "7");
    assert_eq!(snow["Buffered"], "NULL");

    let sessions = cli_rows(&out, "Id\tUser\t");
    let mine = sessions
        .iter()
        .find(|r| r["Id"] == other_id.to_string())
        .unwrap_or_else(|| panic!("session {other_id} missing:\n{out}"));
    assert_eq!(mine["User"], APP_USER);
    assert_eq!(mine["Host"], "127.0.0.1");
    assert_eq!(mine["db"], DATABASE);
    assert_eq!(mine["Command"], "Sleep");
    assert_eq!(mine["In_transaction"], "Yes", "{out}");
    // The CLI's own session is running this statement.
    assert!(sessions.iter().any(|r| r["Command"] == "Query"), "{out}");

    let tables = cli_rows(&out, "Name\tPlacement\t");
    let by_name: HashMap<&str, &HashMap<String, String>> =
        tables.iter().map(|r| (r["Name"].as_str(), r)).collect();
    assert_eq!(tables.len(), 3, "{out}");
    let o = by_name["orders"];
    assert_eq!(o["Placement"], "sharded");
    assert_eq!(o["Backends"], "shard0,shard1");
    assert_eq!(o["Sharding_columns"], "id");
    assert_eq!(o["Algorithm"], "mod");
    assert_eq!(o["Generator"], "seq");
    assert_eq!(o["Id_column"], "id");
    assert_eq!(by_name["countries"]["Placement"], "broadcast");
    assert_eq!(by_name["countries"]["Generator"], "NULL");
    assert_eq!(by_name["notes"]["Placement"], "single");
    assert_eq!(by_name["notes"]["Backends"], "shard0");

    other.query_drop("COMMIT").unwrap();
}

fn py_admin(g: &Idgate, user: &str, pw: &str, stmts: &[&str]) -> Vec<Value> {
    require_python_modules("pymysql", "pymysql");
    let mut cmd = Command::new(require_tool("python3", "python3"));
    cmd.arg(source_dir().join("py_admin.py"))
        .args(["127.0.0.1", &g.port.to_string(), user, pw, DATABASE])
        .args(stmts);
    let r = run(cmd, "py_admin", Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    r.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn column(v: &Value, name: &str) -> Vec<Value> {
    let i = v["columns"]
        .as_array()
        .and_then(|c| c.iter().position(|c| c == name))
        .unwrap_or_else(|| panic!("no column {name}: {v}"));
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[i].clone())
        .collect()
}

#[test]
fn pymysql_reads_every_statement_with_its_types_and_non_admins_get_1227() {
    let (_dbs, g) = setup();
    let all = [
        "SHOW IDGATE STATUS",
        "SHOW IDGATE BACKENDS",
        "SHOW IDGATE GENERATORS",
        "SHOW IDGATE SESSIONS",
        "SHOW IDGATE TABLES",
    ];
    let out = py_admin(&g, APP_USER, APP_PASSWORD, &all);
    assert_eq!(out.len(), 5, "{out:?}");
    let [status, backends, gens, sessions, tables] = &out[..] else {
        unreachable!()
    };
    // LONGLONG (8) for numbers, DATETIME (12), VAR_STRING (253).
    let types: HashMap<&str, u64> = status["columns"]
        .as_array()
        .unwrap()
        .iter()
        .zip(status["types"].as_array().unwrap())
        .map(|(c, t)| (c.as_str().unwrap(), t.as_u64().unwrap()))
        .collect();
    assert_eq!(types["Uptime"], 8);
    assert_eq!(types["Config_generation"], 8);
    assert_eq!(types["Last_reload"], 12);
    assert_eq!(types["Version"], 253);
    assert_eq!(column(status, "Config_generation"), [Value::from("1")]);
    assert_eq!(column(backends, "Name"), ["shard0", "shard1"]);
    assert_eq!(column(backends, "Reachable"), ["Yes", "Yes"]);
    assert_eq!(column(gens, "Name"), ["seq", "snow"]);
    assert_eq!(column(gens, "Ids_issued")[0], "3");
    assert_eq!(column(gens, "Lease_left_ms"), [Value::Null, Value::Null]);
    assert!(column(sessions, "User").iter().all(|u| u == APP_USER));
    assert!(!column(sessions, "Id").is_empty());
    assert_eq!(column(tables, "Name").len(), 3);

    // A user without `admin: true`: MySQL's 1227, naming the setting.
    let denied = py_admin(&g, "nopw", "", &all);
    for d in &denied {
        assert_eq!(d["error"], 1227, "{d}");
        assert!(
            d["message"].as_str().unwrap().contains("admin: true"),
            "{d}"
        );
    }
    let (code, out) = mysql_cli(&g, "nopw", "", "IDGATE RELOAD");
    assert_ne!(code, Some(0));
    assert!(out.contains("ERROR 1227 (42000)"), "{out}");
    // The session goes on.
    let mut c = mysql::Conn::new(
        mysql::OptsBuilder::default()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(g.port)
            .user(Some("nopw"))
            .pass(Some(""))
            .db_name(Some(DATABASE)),
    )
    .unwrap();
    let e = c.query_drop("SHOW IDGATE TABLES").unwrap_err();
    assert!(
        matches!(&e, mysql::Error::MySqlError(m) if m.code == 1227),
        "{e}"
    );
    assert_eq!(c.query_first::<u32, _>("SELECT 7").unwrap(), Some(7));
}

#[test]
fn prepared_and_unknown_admin_statements_are_refused_clearly() {
    let (_dbs, g) = setup();
    let mut c = g.conn();
    let e = c.prep("SHOW IDGATE STATUS").unwrap_err();
    assert!(
        matches!(&e, mysql::Error::MySqlError(m) if m.code == 1295 && m.message.contains("plain quer")),
        "{e}"
    );
    let e = c.query_drop("SHOW IDGATE WHATEVER").unwrap_err();
    assert!(
        matches!(&e, mysql::Error::MySqlError(m) if m.code == 1064 && m.message.contains("SHOW IDGATE STATUS")),
        "{e}"
    );
    // A multi-statement batch with an admin statement in the middle.
    let mut r = c
        .query_iter("SELECT 1 AS a; SHOW IDGATE GENERATORS; SELECT 2 AS b")
        .unwrap();
    let mut sets = Vec::new();
    while let Some(set) = r.iter() {
        let cols: Vec<String> = set
            .columns()
            .as_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        let n = set.count();
        sets.push((cols, n));
    }
    assert_eq!(sets.len(), 3, "{sets:?}");
    assert_eq!(sets[1].0[0], "Name");
    assert_eq!(sets[1].1, 2);
}
