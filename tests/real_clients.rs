//! Real clients through idgate: MariaDB Connector/J, PyMySQL + SQLAlchemy, mysql-connector-python,
//! the `mysql` CLI and sysbench. Each client program (tests/clients/) runs once directly against a
//! throwaway MariaDB and once through idgate in front of the same MariaDB; what the client saw must
//! be identical. A missing client is a failure that says to run scripts/test, never a skip.

mod common;

use common::clients::*;

use mysql::prelude::Queryable;
use std::process::Command;
use std::time::Duration;

use common::idgate_proc::{APP_PASSWORD, APP_USER};
use common::{Idgate, DATABASE};

/// No client run may take longer than this; a hang through idgate fails the test with its log.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

fn assert_starts(transcript: &str, prefix: &str) {
    assert!(
        transcript.lines().any(|l| l.starts_with(prefix)),
        "expected a line starting `{prefix}` in the transcript:\n{transcript}"
    );
}

/// Then the same program over the compressed protocol (`useCompression`); one after the
/// other, as both use the same tables.
#[test]
fn jdbc_connector_j() {
    jdbc_connector_j_with("jdbc", "");
    jdbc_connector_j_with("jdbc_compressed", "useCompression=true");
}

fn jdbc_connector_j_with(name: &str, options: &str) {
    let (java, classpath) = compile_java("Jdbc.java");
    let g = Idgate::start(common::shared_db());
    let t = differential(
        "real_clients",
        name,
        common::shared_db(),
        &g,
        CLIENT_TIMEOUT,
        |t| {
            let mut cmd = Command::new(&java);
            cmd.arg("-Dfile.encoding=UTF-8")
                .arg("-Duser.timezone=UTC")
                .arg(format!("-Didgate.test.options={options}"))
                .arg("-cp")
                .arg(&classpath)
                .arg("Jdbc");
            client_args(&mut cmd, t);
            cmd
        },
    );
    for line in [
        "bytes client-prep round trip OK",
        "bytes server-prep round trip OK",
        "bytes client-prep single-byte parameters equal on the server: 256/256",
        "bytes server-prep single-byte parameters equal on the server: 256/256",
        "batch update counts: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]",
        "batch statement counts: [1, 1, 2, 0]",
        "tx before commit: other session sees 0, own session sees 1",
        "tx after commit: other session sees 1",
        "tx after rollback: own session sees 1, other session sees 1",
        "tx row 1 committed",
        "tx row 3 kept",
        "keys single generated keys: [1]",
        "keys multi generated keys: [2, 3, 4]",
        "keys batch generated keys: [5, 6, 7]",
        "keys LAST_INSERT_ID()=7",
        "keys server-prep generated keys: [8, 9]",
        "text select rows: 3",
        "binary select rows: 3",
        "connection still usable: 42",
        "server-prep connection still usable: 43",
        "done",
    ] {
        assert_has(&t, line);
    }
    assert_starts(&t, "batch verify count=100 ");
    assert_starts(
        &t,
        "batch with duplicate: error code=1062 sqlstate=23000 message=Duplicate entry '2000'",
    );
    assert_starts(
        &t,
        "statement error: error code=3819 sqlstate=45000 message=custom check failed",
    );
    assert_starts(&t, "statement error: error code=1064 sqlstate=42000 ");
    assert_starts(&t, "warning select warning code=1292 ");
    assert_starts(
        &t,
        "metadata column biu DATA_TYPE=-5 TYPE_NAME=BIGINT UNSIGNED COLUMN_SIZE=20 ",
    );
    assert_starts(&t, "text select column 10 name=dcm label=dcm table=jdbc_types catalog=idgate_test type=3 typeName=DECIMAL class=java.math.BigDecimal precision=20 scale=6 ");
}

#[test]
fn python_pymysql_and_sqlalchemy() {
    let python = require_tool("python3", "python3");
    require_python_modules("pymysql, sqlalchemy", "pymysql sqlalchemy");
    let g = Idgate::start(common::shared_db());
    let t = differential(
        "real_clients",
        "py_pymysql",
        common::shared_db(),
        &g,
        CLIENT_TIMEOUT,
        |t| {
            let mut cmd = Command::new(&python);
            cmd.arg(source_dir().join("py_pymysql.py"));
            client_args(&mut cmd, t);
            cmd
        },
    );
    for line in [
        "pymysql insert rowcount=1 lastrowid=1 conn.insert_id=1",
        "pymysql multi-row insert rowcount=3 lastrowid=2",
        "pymysql executemany rowcount=10 lastrowid=5",
        "pymysql executemany update rowcount=5",
        "pymysql bytes round trip OK (eq=1 hex_eq=1 length=256)",
        "pymysql warning select (12,) warning_count=1",
        "pymysql error OperationalError (4025, 'custom constraint')",
        "pymysql after rollback count=0",
        "pymysql multi-statement next=(('two', 2),)",
        "orm inserted ids [1, 2, 3]",
        "orm bytes round trip OK",
        "orm unicode round trip OK",
        "orm count after failed insert 2",
        "done",
    ] {
        assert_has(&t, line);
    }
    assert_starts(&t, "orm duplicate error (1062, ");
}

/// Then the same program over the compressed protocol (`compress=True`).
#[test]
fn python_mysql_connector() {
    python_mysql_connector_with("py_connector", "");
    python_mysql_connector_with("py_connector_compressed", "1");
}

fn python_mysql_connector_with(name: &str, compress: &str) {
    let python = require_tool("python3", "python3");
    require_python_modules("mysql.connector", "mysql-connector-python");
    let g = Idgate::start(common::shared_db());
    let t = differential(
        "real_clients",
        name,
        common::shared_db(),
        &g,
        CLIENT_TIMEOUT,
        |t| {
            let mut cmd = Command::new(&python);
            cmd.env("CLIENT_COMPRESS", compress);
            cmd.arg(source_dir().join("py_connector.py"));
            client_args(&mut cmd, t);
            cmd
        },
    );
    for line in [
        "prepared insert rowcount=1 lastrowid=1",
        "prepared insert rowcount=1 lastrowid=3",
        "prepared bytes round trip OK (eq=1 length=256 vc_eq=1)",
        "prepared update rowcount=2",
        "plain multi-row insert rowcount=2 lastrowid=4",
        "plain warning select [(7,)] warning_count=1",
        "plain error errno=3819 sqlstate=45000 msg=check failed",
        "plain after rollback [(0,)]",
        "done",
    ] {
        assert_has(&t, line);
    }
    assert_starts(&t, "prepared error errno=1062 sqlstate=23000 ");
    assert_starts(&t, "prepared prepare error errno=1146 sqlstate=42S02 ");
    assert_starts(&t, "prepared row int:2 None None");
}

/// The `mysql` CLI with `args` (after the connection options), directly and through idgate.
/// Returns the direct run, and a description of what differed through idgate (stdout, stderr or
/// exit code), if anything did.
fn mysql_cli(g: &Idgate, name: &str, args: &[&str], with_db: bool) -> (Run, Option<String>) {
    let mysql = require_tool("mysql", "mariadb-client");
    let make = |t: &Target| {
        let mut cmd = Command::new(&mysql);
        cmd.arg("--no-defaults")
            .arg("--default-character-set=utf8mb4")
            .arg("--protocol=TCP")
            .arg("-h127.0.0.1")
            .arg(format!("-P{}", t.port))
            .arg(format!("-u{}", t.user))
            .arg(format!("-p{}", t.password));
        if with_db {
            cmd.arg(DATABASE);
        }
        cmd.args(args);
        cmd
    };
    let db = common::shared_db();
    let (d, i) = (direct_target(db), idgate_target(g));
    let direct = run(
        make(&d),
        &format!("mysql {name} {}", d.name),
        CLIENT_TIMEOUT,
    );
    let through = run(
        make(&i),
        &format!("mysql {name} {}", i.name),
        CLIENT_TIMEOUT,
    );
    let same = direct.code == through.code
        && direct.stdout == through.stdout
        && direct.stderr == through.stderr;
    let difference = (!same).then(|| {
        format!(
            "mysql CLI `{name}` ({args:?}, database on the command line: {with_db}) differs through idgate.\n\
             exit: direct {:?}, idgate {:?}\nstdout differences:\n{}stderr differences:\n{}",
            direct.code,
            through.code,
            diff(&direct.stdout, &through.stdout),
            diff(&direct.stderr, &through.stderr),
        )
    });
    (direct, difference)
}

#[test]
fn mysql_cli_several_statements_use_and_errors() {
    let g = Idgate::start(common::shared_db());
    let mut differences = Vec::new();
    let mut check = |name: &str, args: &[&str], with_db: bool| {
        let (r, d) = mysql_cli(&g, name, args, with_db);
        differences.extend(d);
        r
    };
    let several = "DROP TABLE IF EXISTS cli_t; \
         CREATE TABLE cli_t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) CHARACTER SET utf8mb4, b VARBINARY(4), d DECIMAL(6,2)); \
         INSERT INTO cli_t (v, b, d) VALUES ('a', x'00ff', 1.5), ('🦀', NULL, -2); \
         SELECT LAST_INSERT_ID(), ROW_COUNT(); \
         SELECT * FROM cli_t ORDER BY id; \
         SELECT CAST('1x' AS INTEGER) AS w; \
         UPDATE cli_t SET d = d + 1; \
         SELECT ROW_COUNT()";
    let r = check("several", &["-e", several], true);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "LAST_INSERT_ID()\tROW_COUNT()\n1\t2\nid\tv\tb\td\n1\ta\t\\0\u{fffd}\t1.50\n2\t🦀\tNULL\t-2.00\nw\n1\nROW_COUNT()\n2\n"
    );
    // Table output, warnings after each statement and the full column metadata.
    let r = check(
        "table-and-metadata",
        &[
            "--table",
            "--show-warnings",
            "--column-type-info",
            "-e",
            "SELECT * FROM cli_t ORDER BY id; SELECT CAST('1x' AS INTEGER) AS w",
        ],
        true,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("Field   2:  `v`"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("Warning (Code 1292): Truncated incorrect INTEGER value: '1x'"),
        "{}",
        r.stdout
    );

    // USE switches the database; a client that logged in without one starts with none.
    let r = check(
        "use",
        &[
            "-e",
            "SELECT DATABASE(); USE idgate_test; SELECT DATABASE(), COUNT(*) FROM cli_t; USE mysql; SELECT DATABASE(); USE no_such_db; SELECT 'not reached'",
        ],
        false,
    );
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stdout,
        "DATABASE()\nNULL\nDATABASE()\tCOUNT(*)\nidgate_test\t2\nDATABASE()\nmysql\n"
    );
    assert!(
        r.stderr
            .contains("ERROR 1049 (42000) at line 1: Unknown database 'no_such_db'"),
        "{}",
        r.stderr
    );

    let r = check("syntax-error", &["-e", "SELECT 1; SELEC 2; SELECT 3"], true);
    assert_eq!(r.code, Some(1));
    assert_eq!(r.stdout, "1\n1\n");
    assert!(
        r.stderr.contains(
            "ERROR 1064 (42000) at line 1: You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near 'SELEC 2' at line 1"
        ),
        "{}",
        r.stderr
    );

    let r = check(
        "force",
        &["--force", "-e", "SELECT 1; SELEC 2; SELECT 3"],
        true,
    );
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("ERROR 1064 (42000)"), "{}", r.stderr);

    assert!(
        differences.is_empty(),
        "{}\nidgate log:\n{}",
        differences.join("\n"),
        g.log()
    );
}

/// One sysbench command through idgate; fails with sysbench's output and idgate's log otherwise.
fn sysbench(g: &Idgate, phase: &str, extra: &[&str]) -> String {
    let sysbench = require_tool("sysbench", "sysbench");
    let mut cmd = Command::new(sysbench);
    cmd.arg("oltp_read_write")
        .arg("--db-driver=mysql")
        .arg("--mysql-host=127.0.0.1")
        .arg(format!("--mysql-port={}", g.port))
        .arg(format!("--mysql-user={APP_USER}"))
        .arg(format!("--mysql-password={APP_PASSWORD}"))
        .arg(format!("--mysql-db={DATABASE}"))
        // An InnoDB deadlock between the 4 threads is MariaDB's own answer (directly as well):
        // sysbench retries that transaction. Every other error fails the run.
        .arg("--mysql-ignore-errors=1213")
        // Big enough that such deadlocks are rare; 2 x 1000 rows has a few per run.
        .arg("--tables=4")
        .arg("--table-size=10000")
        .args(extra)
        .arg(phase);
    let r = run(cmd, &format!("sysbench {phase}"), CLIENT_TIMEOUT);
    assert_eq!(
        r.code,
        Some(0),
        "sysbench {phase} {extra:?} through idgate failed:\n{}\n{}\nidgate log:\n{}",
        r.stdout,
        r.stderr,
        g.log()
    );
    r.stdout
}

/// The first number after `label` on its line of sysbench's report.
fn sysbench_number(report: &str, label: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` line in the sysbench report:\n{report}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number on `{line}`"))
}

#[test]
fn sysbench_oltp_read_write_has_no_errors() {
    // A private backend: sysbench's tables and load stay away from the other clients' tests.
    let db = common::start_db();
    let g = Idgate::start(&db);
    sysbench(&g, "cleanup", &[]);
    sysbench(&g, "prepare", &["--threads=2"]);
    for (mode, seconds) in [("auto", "5"), ("disable", "2")] {
        let report = sysbench(
            &g,
            "run",
            &[
                "--threads=4",
                &format!("--time={seconds}"),
                &format!("--db-ps-mode={mode}"),
                "--report-interval=0",
            ],
        );
        // sysbench 1.0 names the line "ignored errors:". Only 1213 is ignored (any other error
        // is fatal: non-zero exit, checked in `sysbench`), so these are InnoDB's own deadlocks
        // between the threads, which a direct connection meets as well: rare, never a share.
        let deadlocks = sysbench_number(&report, "ignored errors:");
        assert!(!report.contains("FATAL"), "{report}");
        let reconnects = sysbench_number(&report, "reconnects:");
        let transactions = sysbench_number(&report, "transactions:");
        let queries = sysbench_number(&report, "total:");
        assert!(
            reconnects == 0 && deadlocks * 100 <= transactions,
            "sysbench (ps-mode {mode}) through idgate saw errors:\n{report}\nidgate log:\n{}",
            g.log()
        );
        assert!(
            transactions > 0 && queries >= transactions * 18,
            "sysbench (ps-mode {mode}) did too little work:\n{report}"
        );
    }
    sysbench(&g, "cleanup", &[]);
}

#[test]
fn mysql_cli_shows_mariadb_extended_metadata() {
    let g = Idgate::start(common::shared_db());
    common::direct(common::shared_db())
        .query_drop(
            "CREATE OR REPLACE TABLE t_cli_ext (j JSON, p POINT, ip INET6); \
             INSERT INTO t_cli_ext VALUES ('[1]', POINT(3, 4), '10::1')",
        )
        .unwrap();
    let args = [
        "-t",
        "--column-type-info",
        "-e",
        "SELECT j, p, ip FROM t_cli_ext",
    ];
    let (r, difference) = mysql_cli(&g, "column-type-info", &args, true);
    assert_eq!(difference, None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for ty in [
        "BLOB (format=json)",
        "GEOMETRY (type=point)",
        "STRING (type=inet6)",
    ] {
        assert!(r.stdout.contains(ty), "no `{ty}` in:\n{}", r.stdout);
    }
}

/// The compressed protocol both ways: a 2 MB LOCAL INFILE the client sends in frames, an 8 MB
/// row, many rows, and an error.
#[test]
fn mysql_cli_compressed() {
    let g = Idgate::start(common::shared_db());
    let dir = scratch_dir("real_clients", "compressed");
    let file = dir.join("rows.tsv");
    let rows: String = (0..40_000)
        .map(|i| format!("{i}\t{}\n", "x".repeat(i % 97)))
        .collect();
    std::fs::write(&file, rows).unwrap();
    let sql = format!(
        "CREATE OR REPLACE TABLE t_cz (a INT, b TEXT); \
         LOAD DATA LOCAL INFILE '{}' INTO TABLE t_cz; \
         SELECT COUNT(*), SUM(LENGTH(b)) FROM t_cz; \
         SELECT a, b FROM t_cz ORDER BY a; \
         SELECT REPEAT('q', 8000000) = REPEAT('q', 8000000), REPEAT('r', 8000000); \
         SELECT nosuch FROM t_cz",
        file.display()
    );
    let args = [
        "--compress",
        "--local-infile=1",
        "--max-allowed-packet=64M",
        "-e",
        &sql,
    ];
    let (r, difference) = mysql_cli(&g, "compressed", &args, true);
    assert_eq!(difference, None, "idgate log:\n{}", g.log());
    assert!(r.stdout.contains("40000\t1918902"), "{}", r.stdout);
    assert!(r.stderr.contains("ERROR 1054"), "{}", r.stderr);
}

#[test]
fn mysql_cli_ignore_spaces_is_honoured() {
    let g = Idgate::start(common::shared_db());
    let sql = "SELECT COUNT (*) AS n FROM (SELECT 1) t; \
               SELECT @@SESSION.sql_mode LIKE '%IGNORE_SPACE%' AS ignore_space";
    let (r, difference) = mysql_cli(&g, "ignore-spaces", &["--ignore-spaces", "-e", sql], true);
    assert_eq!(difference, None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "n\n1\nignore_space\n1\n");
    // Without the flag, MariaDB's own parse error, through idgate as directly.
    let (r, difference) = mysql_cli(&g, "no-ignore-spaces", &["-e", sql], true);
    assert_eq!(difference, None);
    assert!(r.stderr.contains("ERROR 1064"), "{}", r.stderr);
}
