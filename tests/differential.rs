//! The same statements directly against MariaDB and through idgate must give the client the same
//! bytes: column definitions, rows, OK packets (affected rows, insert id, status flags, warnings)
//! and errors, in the text and the binary protocol, over every MariaDB column type.

mod common;

use common::raw::Raw;
use mysql::prelude::Queryable;
use mysql_common::value::Value;

const TYPES_TABLE: &str = "CREATE TABLE {table} (
    id INT PRIMARY KEY,
    ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
    mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
    dec65 DECIMAL(65,30), dec10 DECIMAL(10,2), f FLOAT, d DOUBLE,
    dt DATE, tm TIME, tm6 TIME(6), dtm DATETIME, dtm6 DATETIME(6), ts TIMESTAMP(3) NULL, y YEAR,
    c CHAR(10), vc VARCHAR(100), bn BINARY(4), vb VARBINARY(300), blb BLOB, txt TEXT, mt MEDIUMTEXT,
    e ENUM('a','b','c'), st SET('x','y','z'), bt BIT(13), j JSON
) CHARSET utf8mb4";

fn all_bytes_hex() -> String {
    (0..=255u8).map(|b| format!("{b:02X}")).collect()
}

/// Creates `table` with every column type and rows at the types' limits, NULLs and odd bytes.
fn seed(conn: &mut mysql::Conn, table: &str) {
    conn.query_drop(format!("DROP TABLE IF EXISTS {table}"))
        .unwrap();
    conn.query_drop(TYPES_TABLE.replace("{table}", table))
        .unwrap();
    let hex = all_bytes_hex();
    conn.query_drop(format!(
        "INSERT INTO {table} VALUES
        (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
         -9223372036854775808, 18446744073709551615,
         -99999999999999999999999999999999999.999999999999999999999999999999, -99999999.99,
         -3.40282e38, -1.7976931348623157e308,
         '1000-01-01', '-838:59:59', '-838:59:58.999999', '1000-01-01 00:00:00',
         '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01.000', 1901,
         '', '😀𝄞 ü', x'00000000', x'{hex}', x'{hex}', 'plain', 'm€dium',
         'a', '', b'0', '{{\"k\": [1, 2.5, null, \"😀\"]}}'),
        (2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 0,
         99999999999999999999999999999999999.999999999999999999999999999999, 99999999.99,
         3.40282e38, 1.7976931348623157e308,
         '9999-12-31', '838:59:59', '00:00:00.000001', '9999-12-31 23:59:59',
         '2038-01-19 03:14:07.999999', '2038-01-19 03:14:07.999', 2155,
         'ten chars!', REPEAT('x', 100), 'ab', '', '', REPEAT('long ', 1000), REPEAT('🎉', 5000),
         'c', 'x,y,z', b'1111111111111', '[]'),
        (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
         NULL, NULL, NULL, NULL),
        (4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
         '2024-02-29', '00:00:00', '12:34:56.5', '2024-02-29 12:00:00', '2024-02-29 12:00:00.000001',
         '2024-02-29 12:00:00.5', 2000,
         'a', 'b', x'FF', x'00', x'', '', '', 'b', 'y', b'101', 'null')"
    ))
    .unwrap();
}

/// Statements compared in the text protocol, each with the response shape expected.
const TEXT_STATEMENTS: &[&str] = &[
    "SELECT * FROM diff_types ORDER BY id",
    "SELECT id, vb, blb FROM diff_types WHERE id = 1",
    "SELECT 1, 1.5, -0.0, 'x', NULL, 18446744073709551615, CAST('2020-01-01' AS DATE)",
    "SELECT COUNT(*), SUM(i), AVG(d), MIN(dt), MAX(vc), GROUP_CONCAT(c ORDER BY id) FROM diff_types",
    "UPDATE diff_types SET vc = 'changed' WHERE id IN (1, 2)",
    "UPDATE diff_types SET vc = 'changed' WHERE id IN (1, 2)",
    "INSERT IGNORE INTO diff_types (id, ti) VALUES (1, 1), (10, 1000)",
    "SHOW WARNINGS",
    "DELETE FROM diff_types WHERE id = 10",
    "SELECT * FROM diff_types WHERE 1 = 0",
    "BEGIN",
    "SELECT id FROM diff_types WHERE id = 2 FOR UPDATE",
    "ROLLBACK",
    "SET autocommit = 0",
    "SELECT @@autocommit",
    "SET autocommit = 1",
    "SELECT 1; SELECT 2, 'two'; UPDATE diff_types SET c = c WHERE id = 4",
    "CALL diff_proc()",
    "SELECT * FROM no_such_table",
    "INSERT INTO diff_types (id) VALUES (1)",
    "SELECT 1 FROM",
    "INSERT INTO diff_check VALUES (-1)",
    "SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 3819, MESSAGE_TEXT = 'custom check'",
    "SELECT 1; SELECT * FROM no_such_table; SELECT 3",
    "SHOW COLUMNS FROM diff_types",
    "EXPLAIN SELECT * FROM diff_types WHERE id = 1",
];

fn setup_extra(conn: &mut mysql::Conn) {
    conn.query_drop("DROP PROCEDURE IF EXISTS diff_proc")
        .unwrap();
    conn.query_drop(
        "CREATE PROCEDURE diff_proc() BEGIN SELECT id, c FROM diff_types ORDER BY id; SELECT 'second' AS s; END",
    )
    .unwrap();
    conn.query_drop("DROP TABLE IF EXISTS diff_check").unwrap();
    conn.query_drop("CREATE TABLE diff_check (v INT CHECK (v >= 0))")
        .unwrap();
}

/// Two servers seeded alike: one reached directly, one behind idgate (statements change data, so
/// each side needs its own copy).
fn pair(prepare: impl Fn(&mut mysql::Conn)) -> (&'static common::MariaDb, common::Idgate) {
    static SECOND: std::sync::OnceLock<common::MariaDb> = std::sync::OnceLock::new();
    let direct = common::shared_db();
    let behind = SECOND.get_or_init(common::start_db);
    prepare(&mut common::direct(direct));
    prepare(&mut common::direct(behind));
    (direct, common::Idgate::start(behind))
}

fn show(packets: &[Vec<u8>]) -> String {
    packets
        .iter()
        .map(|p| format!("{:?}", String::from_utf8_lossy(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn text_protocol_bytes_match_direct() {
    let (db, g) = pair(|c| {
        seed(c, "diff_types");
        setup_extra(c);
    });
    let mut direct = Raw::connect(db.port, common::USER, common::PASSWORD, common::DATABASE);
    let mut proxied = Raw::connect(g.port, "app", "app-secret", common::DATABASE);
    for sql in TEXT_STATEMENTS {
        let d = direct.query(sql.as_bytes());
        let p = proxied.query(sql.as_bytes());
        assert_eq!(
            d,
            p,
            "`{sql}` differs.\ndirect:\n{}\nidgate:\n{}",
            show(&d),
            show(&p)
        );
        assert!(!d.is_empty());
    }
    // Errors keep their own code and SQLSTATE (4025: CHECK constraint, 3819 from SIGNAL).
    let e = proxied.query(b"INSERT INTO diff_check VALUES (-1)");
    assert_eq!(e[0][0], 0xff);
    assert_eq!(u16::from_le_bytes([e[0][1], e[0][2]]), 4025);
    let e = proxied.query(b"SIGNAL SQLSTATE '45000' SET MYSQL_ERRNO = 3819, MESSAGE_TEXT = 'x'");
    assert_eq!(u16::from_le_bytes([e[0][1], e[0][2]]), 3819);
    assert_eq!(&e[0][3..9], b"#45000");
    // A statement that is not valid UTF-8 reaches the server as bytes.
    let mut sql = b"SELECT HEX('".to_vec();
    sql.extend_from_slice(&[0xff, 0xfe, 0x80]);
    sql.extend_from_slice(b"')");
    assert_eq!(direct.query(&sql), proxied.query(&sql));
}

#[test]
fn binary_protocol_bytes_match_direct() {
    let (db, g) = pair(|c| seed(c, "diff_types_bin"));
    let mut direct = Raw::connect(db.port, common::USER, common::PASSWORD, common::DATABASE);
    let mut proxied = Raw::connect(g.port, "app", "app-secret", common::DATABASE);
    let cases: Vec<(&str, Vec<Value>)> = vec![
        (
            "SELECT * FROM diff_types_bin WHERE id >= ? ORDER BY id",
            vec![Value::Int(0)],
        ),
        (
            "SELECT * FROM diff_types_bin WHERE id = ?",
            vec![Value::UInt(3)],
        ),
        (
            "SELECT ?, ?, ?, ?, ?, ?",
            vec![
                Value::Bytes((0..=255u8).collect()),
                Value::Double(-1.5),
                Value::NULL,
                Value::Date(2024, 2, 29, 13, 14, 15, 123456),
                Value::Time(true, 3, 4, 5, 6, 7),
                Value::Int(i64::MIN),
            ],
        ),
        (
            "UPDATE diff_types_bin SET vc = ? WHERE id = ?",
            vec![Value::Bytes(b"p".to_vec()), Value::Int(1)],
        ),
        (
            "INSERT INTO diff_types_bin (id) VALUES (?)",
            vec![Value::Int(1)],
        ),
        (
            "SELECT * FROM diff_types_bin WHERE 1 = ?",
            vec![Value::Int(0)],
        ),
    ];
    for (sql, params) in &cases {
        let (did, dprep) = direct.prepare(sql.as_bytes());
        let (pid, pprep) = proxied.prepare(sql.as_bytes());
        assert_eq!(dprep, pprep, "prepare `{sql}` differs");
        for _ in 0..2 {
            let d = direct.execute(did, params);
            let p = proxied.execute(pid, params);
            assert_eq!(
                d,
                p,
                "execute `{sql}` differs.\ndirect:\n{}\nidgate:\n{}",
                show(&d),
                show(&p)
            );
        }
    }
}

/// The same through a real driver (the Rust `mysql` crate, which negotiates CLIENT_DEPRECATE_EOF),
/// compared on what it decodes: column metadata, values, affected rows, insert ids, warnings.
#[test]
fn decoded_results_match_direct_with_deprecate_eof() {
    let (db, g) = pair(|c| {
        seed(c, "diff_types_dec");
        c.query_drop("ALTER TABLE diff_types_dec ADD COLUMN ai INT AUTO_INCREMENT UNIQUE")
            .unwrap();
    });
    let mut d = common::direct(db);
    let mut p = g.conn();
    let statements = [
        "SELECT * FROM diff_types_dec ORDER BY id",
        "INSERT INTO diff_types_dec (id) VALUES (100), (101)",
        "INSERT IGNORE INTO diff_types_dec (id, ti) VALUES (102, 999)",
        "UPDATE diff_types_dec SET c = 'z' WHERE id >= 100",
        "SELECT 1; SELECT 'a', NULL",
    ];
    for sql in statements {
        let dr = transcript_text(&mut d, sql);
        let pr = transcript_text(&mut p, sql);
        assert_eq!(dr, pr, "`{sql}`");
        let dr = transcript_binary(&mut d, sql);
        let pr = transcript_binary(&mut p, sql);
        assert_eq!(dr, pr, "prepared `{sql}`");
    }
}

fn describe_columns(cols: &[mysql::Column]) -> String {
    cols.iter()
        .map(|c| {
            format!(
                "{}.{}.{}({}/{}) type={:?} cs={} len={} dec={} flags={:?}",
                c.schema_str(),
                c.table_str(),
                c.name_str(),
                c.org_table_str(),
                c.org_name_str(),
                c.column_type(),
                c.character_set(),
                c.column_length(),
                c.decimals(),
                c.flags()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn transcript_text(conn: &mut mysql::Conn, sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut result = match conn.query_iter(sql) {
        Ok(r) => r,
        Err(e) => return vec![format!("{e}")],
    };
    while let Some(set) = result.iter() {
        out.push(describe_columns(set.columns().as_ref()));
        for row in set {
            out.push(format!("{:?}", row.unwrap().unwrap()));
        }
    }
    out.push(format!(
        "affected={} insert_id={:?} warnings={} info={}",
        result.affected_rows(),
        result.last_insert_id(),
        result.warnings(),
        result.info_str()
    ));
    out
}

fn transcript_binary(conn: &mut mysql::Conn, sql: &str) -> Vec<String> {
    // Multi-statements cannot be prepared: compare the error instead.
    let stmt = match conn.prep(sql) {
        Ok(s) => s,
        Err(e) => return vec![format!("{e}")],
    };
    let mut out = vec![describe_columns(&stmt.columns())];
    let mut result = match conn.exec_iter(&stmt, ()) {
        Ok(r) => r,
        Err(e) => return vec![format!("{e}")],
    };
    while let Some(set) = result.iter() {
        for row in set {
            out.push(format!("{:?}", row.unwrap().unwrap()));
        }
    }
    out.push(format!(
        "affected={} insert_id={:?} warnings={}",
        result.affected_rows(),
        result.last_insert_id(),
        result.warnings()
    ));
    out
}
