//! An explicit 0 (and NULL, DEFAULT, the column absent) in the id column of a table with a
//! generator asks for a new id as AUTO_INCREMENT does, whatever the backends' column says,
//! unless the session's sql_mode has NO_AUTO_VALUE_ON_ZERO.
//!
//! Differential: the same statements run directly on one MariaDB, on tables whose id is
//! `BIGINT AUTO_INCREMENT`, and through idgate on the same tables with a plain `BIGINT PRIMARY
//! KEY` id and a segment generator: one sharded over two MariaDB servers, one on the default
//! backend. Generated values differ between the two, so what is compared is their shape: the
//! affected rows, warnings and info, which row the OK packet's insert id and LAST_INSERT_ID()
//! name (by its `v`), the error code of a failure (1062 or none), and at the end the rows with
//! whether their id is 0. Text queries and server-side prepared statements alike.

mod common;

use mysql::prelude::Queryable;
use mysql::{Params, Value};

const TABLES: [&str; 2] = ["z_sharded", "z_default"];

fn ddl(table: &str, auto_increment: bool) -> String {
    let ai = if auto_increment {
        " AUTO_INCREMENT"
    } else {
        ""
    };
    format!("CREATE TABLE {table} (id BIGINT{ai} PRIMARY KEY, v VARCHAR(20) NOT NULL, n INT)")
}

const CONFIG: &str = "generators:
  seq:
    kind: segment
    start: 1
    step: 100
tables:
  z_sharded:
    generator: seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  z_default:
    generator: seq
";

/// What a client sees of one INSERT, its ids named by the rows holding them.
#[derive(Debug, PartialEq)]
enum Shape {
    Ok {
        affected: u64,
        warnings: u16,
        info: String,
        insert_id: String,
        last_insert_id: String,
    },
    Err(u16),
}

/// One side: the connection statements run on, and one that names ids by their rows.
struct Side {
    c: mysql::Conn,
    peek: mysql::Conn,
}

impl Side {
    fn name(&mut self, table: &str, id: u64) -> String {
        if id == 0 {
            return "0".into();
        }
        self.peek
            .exec_first::<String, _, _>(format!("SELECT v FROM {table} WHERE id = ?"), (id,))
            .unwrap()
            .unwrap_or_else(|| "no row has this id".into())
    }

    /// Runs `sql` as a text query, or prepared with `params`.
    fn shape(&mut self, table: &str, sql: &str, params: Option<Vec<Value>>) -> Shape {
        let sql = sql.replace(" T ", &format!(" {table} "));
        let ran = match params {
            None => self.c.query_drop(&sql),
            Some(p) => self.c.exec_drop(&sql, Params::Positional(p)),
        };
        match ran {
            Ok(()) => {}
            Err(mysql::Error::MySqlError(e)) => return Shape::Err(e.code),
            Err(e) => panic!("{sql}: {e}"),
        }
        let (affected, warnings, info, id) = (
            self.c.affected_rows(),
            self.c.warnings(),
            self.c.info_str().into_owned(),
            self.c.last_insert_id(),
        );
        let lid: u64 = self
            .c
            .query_first("SELECT LAST_INSERT_ID()")
            .unwrap()
            .unwrap();
        Shape::Ok {
            affected,
            warnings,
            info,
            insert_id: self.name(table, id),
            last_insert_id: self.name(table, lid),
        }
    }

    fn rows(&mut self, table: &str) -> Vec<(String, Option<i64>, bool)> {
        self.c
            .query(format!("SELECT v, n, id = 0 FROM {table} ORDER BY v"))
            .unwrap()
    }
}

fn text(sql: &str) -> (&str, Option<Vec<Value>>) {
    (sql, None)
}

fn prepared(sql: &str, params: Vec<Value>) -> (&str, Option<Vec<Value>>) {
    (sql, Some(params))
}

fn s(v: &str) -> Value {
    Value::Bytes(v.as_bytes().to_vec())
}

/// With the default sql_mode: every 0 asks for a new id, explicit ids are kept. Explicit ids
/// grow from step to step, each above every id generated before it: the direct table's counter
/// moves past an explicit id, idgate's generator does not.
fn zero_generates() -> Vec<(&'static str, Option<Vec<Value>>)> {
    vec![
        text("INSERT INTO T (id, v) VALUES (0, 'a')"),
        // A second 0 is no duplicate.
        text("INSERT INTO T (id, v) VALUES (0, 'b')"),
        text("INSERT INTO T (id, v) VALUES ('0', 'c')"),
        text("INSERT INTO T (id, v, n) VALUES (0, 'd', 1), (NULL, 'e', 2), (5000, 'f', 3), (0, 'g', 4), (DEFAULT, 'h', 5)"),
        // The first row keeps its id: the insert id is the first generated one.
        text("INSERT INTO T (id, v, n) VALUES (6000, 'i', 1), (0, 'j', 2)"),
        text("INSERT INTO T SET id = 0, v = 'k'"),
        text("INSERT INTO T VALUES (0, 'l', 9)"),
        text("INSERT INTO T (v) VALUES ('m')"),
        text("INSERT INTO T (id, v) VALUES (5000, 'dup')"),
        text("INSERT INTO T (id, v) VALUES (0, 'n'); INSERT INTO T (id, v) VALUES (0, 'o')"),
        prepared("INSERT INTO T (id, v) VALUES (?, ?)", vec![Value::Int(0), s("p0")]),
        prepared("INSERT INTO T (id, v) VALUES (?, ?)", vec![Value::Int(0), s("p1")]),
        prepared("INSERT INTO T (id, v) VALUES (?, ?)", vec![s("0"), s("p2")]),
        prepared("INSERT INTO T (id, v) VALUES (?, ?)", vec![Value::NULL, s("p3")]),
        prepared("INSERT INTO T (id, v) VALUES (?, ?)", vec![Value::Int(7000), s("p4")]),
        prepared(
            "INSERT INTO T (id, v) VALUES (?, ?), (?, ?)",
            vec![Value::Int(0), s("q0"), Value::NULL, s("q1")],
        ),
        prepared(
            "INSERT INTO T (id, v) VALUES (?, ?), (?, ?)",
            vec![Value::Int(8000), s("q2"), Value::Int(0), s("q3")],
        ),
        prepared("INSERT INTO T SET id = ?, v = ?", vec![Value::Int(0), s("r0")]),
        prepared("INSERT INTO T (id, v) VALUES (?, ?)", vec![Value::Int(7000), s("p dup")]),
    ]
}

/// Under NO_AUTO_VALUE_ON_ZERO: 0 is a value, a second 0 a duplicate; NULL still generates.
fn zero_is_value() -> Vec<(&'static str, Option<Vec<Value>>)> {
    vec![
        text("INSERT INTO T (id, v) VALUES (NULL, 's')"),
        text("INSERT INTO T (id, v) VALUES (0, 'zero')"),
        text("INSERT INTO T (id, v) VALUES (0, 'zero again')"),
        text("INSERT INTO T (id, v) VALUES (NULL, 't'), (0, 'u')"),
        text("INSERT INTO T SET id = 0, v = 'set zero'"),
        prepared(
            "INSERT INTO T (id, v) VALUES (?, ?)",
            vec![Value::Int(0), s("pz")],
        ),
        prepared(
            "INSERT INTO T (id, v) VALUES (?, ?)",
            vec![Value::NULL, s("pn")],
        ),
        text("DELETE FROM T WHERE id = 0"),
        prepared(
            "INSERT INTO T (id, v) VALUES (?, ?)",
            vec![Value::Int(0), s("pz2")],
        ),
        prepared(
            "INSERT INTO T (id, v) VALUES (?, ?), (?, ?)",
            vec![Value::NULL, s("pm"), Value::Int(0), s("pz3")],
        ),
    ]
}

/// Back to a mode without NO_AUTO_VALUE_ON_ZERO: 0 asks for an id again, though a row holds 0.
fn zero_generates_again() -> Vec<(&'static str, Option<Vec<Value>>)> {
    vec![
        text("INSERT INTO T (id, v) VALUES (0, 'w')"),
        prepared(
            "INSERT INTO T (id, v) VALUES (?, ?)",
            vec![Value::Int(0), s("pw")],
        ),
    ]
}

#[test]
fn an_explicit_zero_asks_for_an_id_as_auto_increment_does() {
    let reference = common::start_db();
    let mut setup = common::direct(&reference);
    for t in TABLES {
        setup.query_drop(ddl(t, true)).unwrap();
    }
    let plain: Vec<String> = TABLES.iter().map(|t| ddl(t, false)).collect();
    let plain: Vec<&str> = plain.iter().map(String::as_str).collect();
    let shards = common::two_shards(CONFIG, &plain);
    let mut direct = Side {
        c: common::direct(&reference),
        peek: common::direct(&reference),
    };
    let mut through = Side {
        c: shards.g.conn(),
        peek: shards.g.conn(),
    };
    let modes = [
        (None, zero_generates()),
        (
            Some("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')"),
            zero_is_value(),
        ),
        (
            Some("SET SESSION sql_mode = 'STRICT_TRANS_TABLES'"),
            zero_generates_again(),
        ),
    ];
    for (set, steps) in modes {
        if let Some(set) = set {
            direct.c.query_drop(set).unwrap();
            through.c.query_drop(set).unwrap();
        }
        for table in TABLES {
            for (sql, params) in &steps {
                let want = direct.shape(table, sql, params.clone());
                let got = through.shape(table, sql, params.clone());
                assert_eq!(
                    got,
                    want,
                    "{table}, sql_mode {set:?}: `{sql}` {params:?}\nidgate log:\n{}",
                    shards.g.log()
                );
            }
        }
    }
    for table in TABLES {
        let (want, got) = (direct.rows(table), through.rows(table));
        assert_eq!(got, want, "{table}: the rows, and which hold id 0");
        // Every id through idgate came from its generator or the statement: no 0 stored but
        // the ones NO_AUTO_VALUE_ON_ZERO kept.
        let zeros = got.iter().filter(|(_, _, zero)| *zero).count();
        assert_eq!(zeros, 1, "{table}: {got:?}");
    }
    // The rows went to their shards: each shard holds only the ids it owns (id mod 2).
    for (i, db) in shards.dbs.iter().enumerate() {
        let wrong: u64 = common::direct(db)
            .query_first(format!(
                "SELECT COUNT(*) FROM z_sharded WHERE MOD(id, 2) <> {i}"
            ))
            .unwrap()
            .unwrap();
        assert_eq!(wrong, 0, "shard{i} holds rows of the other shard");
    }
}
