//! Stored programs through idgate answer as MariaDB does: procedures, functions, triggers,
//! `BEGIN NOT ATOMIC` compound statements, cursors (parameterised too), handlers,
//! SIGNAL/RESIGNAL, OUT parameters and multi-result CALLs ending in an error. MariaDB marks the
//! results such programs produce with SERVER_STATUS_CURSOR_EXISTS although no prepared-statement
//! cursor is open; the mysql CLI (which announces CLIENT_DEPRECATE_EOF) saw 2027 for them.

mod common;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::clients::{diff, direct_target, idgate_target, require_tool, Target};
use common::{Idgate, DATABASE};
use mysql::prelude::Queryable;

const CLI_TIMEOUT: Duration = Duration::from_secs(60);

/// The setup and the calls, run by the mysql CLI from standard input with `--force`, so every
/// statement runs and every error is printed where it happened.
const SCRIPT: &str = r#"
DROP TABLE IF EXISTS sp_t1, sp_log;
CREATE TABLE sp_t1 (a INT);
CREATE TABLE sp_log (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(40));
INSERT INTO sp_t1 VALUES (1),(2),(3);
DROP PROCEDURE IF EXISTS sp_cursor_error;
DROP PROCEDURE IF EXISTS sp_params;
DROP PROCEDURE IF EXISTS sp_multi_then_error;
DROP PROCEDURE IF EXISTS sp_handler;
DROP PROCEDURE IF EXISTS sp_signal;
DROP PROCEDURE IF EXISTS sp_resignal;
DROP PROCEDURE IF EXISTS sp_cursor_loop;
DROP FUNCTION IF EXISTS sp_sum_above;
DROP TRIGGER IF EXISTS sp_t1_log;
DELIMITER //
BEGIN NOT ATOMIC
  DECLARE va INT;
  DECLARE cur CURSOR FOR SELECT a FROM sp_t1 WHERE a > 1 ORDER BY a;
  OPEN cur; FETCH cur INTO va; SELECT va; CLOSE cur;
END//
BEGIN NOT ATOMIC
  DECLARE va INT;
  DECLARE cur CURSOR(lo INT) FOR SELECT a FROM sp_t1 WHERE a > lo ORDER BY a;
  OPEN cur(2); FETCH cur INTO va; SELECT va AS parameterised; CLOSE cur;
END//
CREATE PROCEDURE sp_cursor_error()
BEGIN
  DECLARE va INT;
  DECLARE cur CURSOR FOR SELECT a FROM sp_t1;
  OPEN cur; FETCH cur INTO va; SELECT va AS before_error; CLOSE cur;
  FETCH cur INTO va;
END//
CREATE PROCEDURE sp_cursor_loop(OUT total INT)
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE va INT;
  DECLARE cur CURSOR FOR SELECT a FROM sp_t1 ORDER BY a;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  SET total = 0;
  OPEN cur;
  l: LOOP
    FETCH cur INTO va;
    IF done THEN LEAVE l; END IF;
    SET total = total + va;
    SELECT va AS row_seen;
  END LOOP;
  CLOSE cur;
END//
CREATE PROCEDURE sp_params(IN x INT, INOUT y INT, OUT z VARCHAR(20))
BEGIN
  SET y = y + x, z = CONCAT('got ', x);
  SELECT x, y, z;
END//
CREATE PROCEDURE sp_multi_then_error()
BEGIN
  SELECT 1 AS first;
  SELECT a FROM sp_t1 ORDER BY a;
  SELECT * FROM sp_no_such_table;
END//
CREATE PROCEDURE sp_handler()
BEGIN
  DECLARE CONTINUE HANDLER FOR SQLEXCEPTION
  BEGIN
    GET DIAGNOSTICS CONDITION 1 @sqlstate = RETURNED_SQLSTATE, @errno = MYSQL_ERRNO;
    SELECT @sqlstate AS handled_state, @errno AS handled_errno;
  END;
  INSERT INTO sp_no_such_table VALUES (1);
  SELECT 'after handler' AS went_on;
END//
CREATE PROCEDURE sp_signal(v INT)
BEGIN
  IF v < 0 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'negative value', MYSQL_ERRNO = 4025;
  END IF;
  SELECT v AS accepted;
END//
CREATE PROCEDURE sp_resignal()
BEGIN
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    SELECT 'cleaning up' AS step;
    RESIGNAL SET MESSAGE_TEXT = 'resignalled';
  END;
  DROP TABLE sp_no_such_table;
END//
CREATE FUNCTION sp_sum_above(lo INT) RETURNS INT READS SQL DATA
BEGIN
  DECLARE s INT DEFAULT 0;
  DECLARE done INT DEFAULT 0;
  DECLARE va INT;
  DECLARE cur CURSOR FOR SELECT a FROM sp_t1 WHERE a > lo;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  OPEN cur;
  l: LOOP
    FETCH cur INTO va;
    IF done THEN LEAVE l; END IF;
    SET s = s + va;
  END LOOP;
  CLOSE cur;
  RETURN s;
END//
CREATE TRIGGER sp_t1_log AFTER INSERT ON sp_t1 FOR EACH ROW
BEGIN
  INSERT INTO sp_log (what) VALUES (CONCAT('inserted ', NEW.a));
END//
DELIMITER ;
CALL sp_cursor_error();
SELECT 'still connected' AS after_cursor_error;
CALL sp_cursor_loop(@total);
SELECT @total;
SET @y = 10;
CALL sp_params(5, @y, @z);
SELECT @y, @z;
CALL sp_multi_then_error();
SELECT 'still connected' AS after_multi_error;
CALL sp_handler();
CALL sp_signal(3);
CALL sp_signal(-1);
CALL sp_resignal();
SELECT sp_sum_above(1) AS sum_above;
INSERT INTO sp_t1 VALUES (7);
SELECT what FROM sp_log ORDER BY id;
SELECT 'done' AS finished;
"#;

fn run_cli(t: &Target, script: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let mysql = require_tool("mysql", "mariadb-client");
    let mut cmd = Command::new(mysql);
    cmd.arg("--no-defaults")
        .arg("--protocol=TCP")
        .arg("-h127.0.0.1")
        .arg(format!("-P{}", t.port))
        .arg(format!("-u{}", t.user))
        .arg(format!("-p{}", t.password))
        .arg("--force")
        .args(extra)
        .arg(DATABASE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start the mysql CLI");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(script.as_bytes()).expect("send the script");
    drop(stdin);
    let deadline = std::time::Instant::now() + CLI_TIMEOUT;
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("mysql output");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_cli_same(g: &Idgate, script: &str, extra: &[&str]) -> String {
    let db = common::shared_db();
    let direct = run_cli(&direct_target(db), script, extra);
    let through = run_cli(&idgate_target(g), script, extra);
    assert_eq!(
        direct,
        through,
        "the mysql CLI ({extra:?}) saw another answer through idgate.\nstdout differences:\n{}\
         stderr differences:\n{}\nidgate log:\n{}",
        diff(&direct.1, &through.1),
        diff(&direct.2, &through.2),
        g.log()
    );
    direct.1
}

#[test]
fn stored_programs_answer_as_mariadb_through_the_mysql_cli() {
    let g = Idgate::start(common::shared_db());
    let out = assert_cli_same(&g, SCRIPT, &[]);
    // What MariaDB itself answered, so the comparison above compared something real.
    for line in [
        "va\n2",
        "parameterised\n3",
        "before_error\n1",
        "after_cursor_error\nstill connected",
        "@total\n6",
        "@y\t@z\n15\tgot 5",
        "after_multi_error\nstill connected",
        "handled_state\thandled_errno\n42S02\t1146",
        "went_on\nafter handler",
        "sum_above\n5",
        "what\ninserted 7",
        "finished\ndone",
    ] {
        assert!(out.contains(line), "expected `{line}` in:\n{out}");
    }
    // The same in table output with every column definition shown.
    assert_cli_same(&g, SCRIPT, &["--table", "--column-type-info"]);
}

#[test]
fn a_session_stays_usable_after_stored_program_results() {
    // Through the binary protocol and text protocol of the Rust client (no DEPRECATE_EOF).
    let db = common::shared_db();
    let g = Idgate::start(db);
    let mut c = g.conn();
    c.query_drop("DROP TABLE IF EXISTS sp_rs").unwrap();
    c.query_drop("CREATE TABLE sp_rs (a INT)").unwrap();
    c.query_drop("INSERT INTO sp_rs VALUES (4),(5)").unwrap();
    let sql = "BEGIN NOT ATOMIC DECLARE va INT; \
               DECLARE cur CURSOR FOR SELECT a FROM sp_rs ORDER BY a DESC; \
               OPEN cur; FETCH cur INTO va; SELECT va; CLOSE cur; END";
    let v: Option<i64> = c.query_first(sql).unwrap();
    assert_eq!(v, Some(5));
    let one: Option<i64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn a_prepared_statement_cursor_still_fetches_its_rows() {
    // A cursor the client asked for (COM_STMT_EXECUTE with CURSOR_TYPE_READ_ONLY) ends its answer
    // after the column definitions; the rows come with COM_STMT_FETCH.
    let db = common::shared_db();
    let g = Idgate::start(db);
    let mut c = common::direct(db);
    c.query_drop("DROP TABLE IF EXISTS sp_cur").unwrap();
    c.query_drop("CREATE TABLE sp_cur (a INT)").unwrap();
    c.query_drop("INSERT INTO sp_cur VALUES (1),(2),(3)")
        .unwrap();
    let (mut direct, mut through) = common::raw::direct_and_through(db, &g);
    let sql = b"SELECT a FROM sp_cur ORDER BY a";
    let answers: Vec<Vec<Vec<Vec<u8>>>> = [&mut direct, &mut through]
        .into_iter()
        .map(|r| {
            let (id, _) = r.prepare(sql);
            vec![
                r.execute_with_cursor(id),
                r.fetch(id, 2),
                r.fetch(id, 2),
                r.query(b"SELECT 7"),
            ]
        })
        .collect();
    for (i, (d, t)) in answers[0].iter().zip(&answers[1]).enumerate() {
        assert_eq!(
            d,
            t,
            "answer {i} differs:\ndirect:\n{}\nthrough idgate:\n{}",
            common::raw::show(d),
            common::raw::show(t)
        );
    }
    // Two rows, then the last row and the end of the cursor.
    assert_eq!(
        answers[0][1].len(),
        3,
        "{}",
        common::raw::show(&answers[0][1])
    );
    assert_eq!(
        answers[0][2].len(),
        2,
        "{}",
        common::raw::show(&answers[0][2])
    );
}

#[test]
fn stored_programs_answer_as_mariadb_through_pymysql_and_mysql_connector() {
    use common::clients::{client_args, differential, require_python_modules, source_dir};
    let python = require_tool("python3", "python3");
    require_python_modules("pymysql, mysql.connector", "pymysql mysql-connector-python");
    let g = Idgate::start(common::shared_db());
    for driver in ["pymysql", "connector"] {
        let t = differential(
            "stored_programs",
            driver,
            common::shared_db(),
            &g,
            CLI_TIMEOUT,
            |t| {
                let mut cmd = Command::new(&python);
                cmd.arg(source_dir().join("py_stored_programs.py"))
                    .arg(driver);
                client_args(&mut cmd, t);
                cmd
            },
        );
        for line in [
            "plain compound: [[(2,)]]",
            "plain CALL spc_loop(@total): [[(1,)], [(2,)], [(3,)]]",
            "plain after CALL spc_loop(@total): [(6, 42)]",
            "plain CALL spc_error(): error 1326",
            "plain CALL spc_signal(-1): error 4025",
            "done",
        ] {
            assert!(
                t.lines().any(|l| l == line),
                "{driver}: no `{line}` in\n{t}"
            );
        }
    }
}

#[test]
fn stored_programs_answer_as_mariadb_through_connector_j() {
    use common::clients::{client_args, compile_java, differential};
    let (java, classpath) = compile_java("JdbcStoredPrograms.java");
    let g = Idgate::start(common::shared_db());
    let t = differential(
        "stored_programs",
        "jdbc",
        common::shared_db(),
        &g,
        CLI_TIMEOUT,
        |t| {
            let mut cmd = Command::new(&java);
            cmd.arg("-cp").arg(&classpath).arg("JdbcStoredPrograms");
            client_args(&mut cmd, t);
            cmd
        },
    );
    for line in [
        "client-prep compound: [[2]]",
        "client-prep loop total: 6",
        "client-prep CALL spj_error(): error code=1326 sqlstate=24000",
        "server-prep loop results: [[1], [2], [3]]",
        "server-prep loop total: 6",
        "server-prep CALL spj_signal(-1): error code=4025 sqlstate=45000",
        "server-prep usable after CALL spj_signal(-1): 42",
        "done",
    ] {
        assert!(t.lines().any(|l| l == line), "no `{line}` in\n{t}");
    }
}
