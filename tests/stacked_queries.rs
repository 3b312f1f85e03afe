//! Stacked queries: a client without CLIENT_MULTI_STATEMENTS (or after COM_SET_OPTION OFF) gets,
//! for a COM_QUERY holding several statements, exactly what MariaDB answers (its 1064, same
//! bytes) and nothing of the packet runs, whether the statements would be relayed, routed,
//! rewritten or answered by idgate; with the capability every statement runs and none is dropped.
//! Each client runs directly against MariaDB and through idgate (two shards), same transcript.

mod common;

use std::process::Command;
use std::time::Duration;

use common::clients::{
    assert_has, client_args, compile_java, diff, differential, require_python_modules,
    require_tool, run, source_dir,
};
use common::raw::Raw;
use common::{TwoShards, DATABASE, PASSWORD, USER};
use idgate::exec::relay::Reply;
use mysql::prelude::Queryable;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

const ORDERS: &str =
    "CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(40)) ENGINE=InnoDB";

fn setup() -> TwoShards {
    common::two_shards(common::ORDERS_MOD_2, &[ORDERS])
}

/// Every attack of a run without multi-statements ended in MariaDB's 1064 with nothing run.
fn assert_refused(transcript: &str, section: &str, orders_prefix: &str) {
    let mut seen = 0;
    let mut lines = transcript.lines().peekable();
    while let Some(l) = lines.next() {
        if !l.starts_with(section) {
            continue;
        }
        seen += 1;
        let answer = lines.next().unwrap_or_default();
        assert!(
            answer.contains("1064") && answer.contains("You have an error in your SQL syntax"),
            "{l}: expected MariaDB's 1064, got `{answer}`"
        );
        let state = lines.next().unwrap_or_default();
        assert_eq!(
            state.trim(),
            format!("victim rows 2, {orders_prefix} 0"),
            "{l}: part of the packet ran"
        );
    }
    assert!(seen >= 5, "no `{section}` lines in:\n{transcript}");
}

#[test]
fn python_drivers_with_and_without_multi_statements() {
    require_python_modules("pymysql, mysql.connector", "pymysql mysql-connector-python");
    let s = setup();
    let script = source_dir().join("py_stacked.py");
    let t = differential(
        "stacked",
        "py_stacked",
        &s.dbs[0],
        &s.g,
        CLIENT_TIMEOUT,
        |t| {
            let mut cmd = Command::new("python3");
            cmd.arg(&script);
            client_args(&mut cmd, t);
            cmd
        },
    );
    assert_refused(&t, "[pymysql default]", "stacked orders");
    assert_refused(&t, "[pymysql option off]", "stacked orders");
    assert_refused(&t, "[connector no multi]", "stacked orders");
    // COM_STMT_PREPARE of several statements: MariaDB's parse error too.
    assert_refused(&t, "[connector prepared]", "stacked orders");
    // With multi-statements, the statement after a generated INSERT runs and sees its row.
    assert_has(&t, "  result rows=((1,),) rowcount=1");
    assert_has(&t, "  result rows=((2,),) rowcount=1");
    assert_has(&t, "  multi orders 3");
    // A failing statement stops the batch, as on MariaDB.
    assert_has(
        &t,
        &format!("  error 1146: Table '{DATABASE}.no_such_table' doesn't exist"),
    );
    assert_has(&t, "  -> ran, 2 result(s)");
    assert_has(&t, "  with_rows=True rows=[(1,)]");
    assert_has(&t, "done");
}

#[test]
fn connector_j_allow_multi_queries_false_and_true() {
    let (java, classpath) = compile_java("JdbcStacked.java");
    let s = setup();
    let t = differential(
        "stacked",
        "jdbc_stacked",
        &s.dbs[0],
        &s.g,
        CLIENT_TIMEOUT,
        |t| {
            let mut cmd = Command::new(&java);
            cmd.arg("-cp").arg(&classpath).arg("JdbcStacked");
            client_args(&mut cmd, t);
            cmd
        },
    );
    let refused = t
        .lines()
        .filter(|l| l.starts_with("  -> error 1064 42000: "))
        .count();
    assert_eq!(refused, 10, "every stacked packet refused:\n{t}");
    assert_eq!(
        t.lines()
            .filter(|l| *l == "  victim rows 2, stacked orders 0")
            .count(),
        10,
        "nothing of a refused packet ran:\n{t}"
    );
    assert_has(&t, "  -> ran: update=1 rows=1");
    assert_has(&t, "  victim rows 3, stacked orders 3");
    assert_has(&t, "  -> ran: update=1 rows=1");
    assert_has(&t, "  victim rows 4, stacked orders 3");
    assert_has(&t, "done");
}

/// The `mysql` CLI always announces multi-statements; with a delimiter other than `;` it sends
/// several statements in one packet, and every one of them runs.
#[test]
fn mysql_cli_sends_several_statements_in_one_packet() {
    let mysql = require_tool("mysql", "mariadb-client");
    let s = setup();
    let script = "DELETE FROM orders WHERE note LIKE 'cli%'//\
        INSERT INTO orders (note) VALUES ('cli1'); INSERT INTO orders (note) VALUES ('cli2'), ('cli3'); \
        SELECT COUNT(*) AS n FROM orders WHERE note LIKE 'cli%'; SELECT 'after' AS last//";
    let make = |port: u16, user: &str, password: &str| {
        let mut cmd = Command::new(&mysql);
        cmd.arg("--no-defaults")
            .arg("--protocol=TCP")
            .arg("-h127.0.0.1")
            .arg(format!("-P{port}"))
            .arg(format!("-u{user}"))
            .arg(format!("-p{password}"))
            .arg("--delimiter=//")
            .arg("-e")
            .arg(script)
            .arg(DATABASE);
        cmd
    };
    let direct = run(
        make(s.dbs[0].port, USER, PASSWORD),
        "cli direct",
        CLIENT_TIMEOUT,
    );
    let through = run(
        make(
            s.g.port,
            common::idgate_proc::APP_USER,
            common::idgate_proc::APP_PASSWORD,
        ),
        "cli idgate",
        CLIENT_TIMEOUT,
    );
    assert_eq!(direct.code, Some(0), "direct: {}", direct.stderr);
    assert_eq!(
        (through.code, &through.stdout, &through.stderr),
        (Some(0), &direct.stdout, &direct.stderr),
        "differs:\n{}",
        diff(&direct.stdout, &through.stdout)
    );
    assert!(
        direct.stdout.contains("n\n3\nlast\nafter\n"),
        "{}",
        direct.stdout
    );
    // The rows idgate inserted (the DELETE ran through idgate first) sit on both shards.
    let per_shard: Vec<u64> = s
        .dbs
        .iter()
        .map(|db| {
            common::direct(db)
                .query_first::<u64, _>("SELECT COUNT(*) FROM orders WHERE note LIKE 'cli%'")
                .unwrap()
                .unwrap_or(0)
        })
        .collect();
    assert_eq!(per_shard.iter().sum::<u64>(), 3, "{per_shard:?}");
    assert!(
        per_shard.iter().all(|n| *n > 0),
        "rows on both shards: {per_shard:?}"
    );
}

/// Byte-for-byte: after COM_SET_OPTION OFF the stacked packet's answer is MariaDB's own, and
/// after ON the packet runs whole; the session's later shard connections follow the option.
#[test]
fn set_option_answers_are_mariadbs_bytes() {
    let s = setup();
    let mut direct = Raw::connect(s.dbs[0].port, USER, PASSWORD, DATABASE);
    let mut through = Raw::connect(
        s.g.port,
        common::idgate_proc::APP_USER,
        common::idgate_proc::APP_PASSWORD,
        DATABASE,
    );
    let setup_sql: &[&[u8]] = &[
        b"DROP TABLE IF EXISTS victim",
        b"CREATE TABLE victim (v INT)",
        b"INSERT INTO victim VALUES (1)",
    ];
    for sql in setup_sql {
        direct.query(sql);
    }
    let off = [0x1b, 1, 0];
    let on = [0x1b, 0, 0];
    assert_eq!(
        direct.command(&off, Reply::Eof),
        through.command(&off, Reply::Eof)
    );
    let attacks: &[&[u8]] = &[
        b"SELECT 1; DROP TABLE victim",
        b"INSERT INTO orders (note) VALUES ('raw'); DROP TABLE victim",
        b"SELECT * FROM orders WHERE id = 5; DROP TABLE victim",
        b"SELECT NEXTVAL(seq); DROP TABLE victim",
        b"DROP TABLE victim;\nSELECT 1",
    ];
    for sql in attacks {
        let d = direct.query(sql);
        let i = through.query(sql);
        assert_eq!(d, i, "{}", String::from_utf8_lossy(sql));
        assert_eq!(
            d[0][0],
            0xff,
            "MariaDB refuses {}",
            String::from_utf8_lossy(sql)
        );
    }
    // A single routed statement runs while the option is off, on connections that follow it.
    let routed = through.query(b"SELECT COUNT(*) FROM orders");
    assert_ne!(
        routed[0][0],
        0xff,
        "{:?}",
        String::from_utf8_lossy(&routed[0])
    );
    assert_eq!(
        direct.command(&on, Reply::Eof),
        through.command(&on, Reply::Eof)
    );
    let batch = b"SELECT COUNT(*) FROM victim; SELECT 2";
    assert_eq!(direct.query(batch), through.query(batch));
    let routed = through.query(b"SELECT COUNT(*) FROM orders; SELECT 3");
    assert!(routed.iter().all(|p| p[0] != 0xff), "a batch runs whole");
    let mut c = common::direct(&s.dbs[0]);
    let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM victim").unwrap();
    assert_eq!(n, Some(1), "victim survived every refused packet");
}
