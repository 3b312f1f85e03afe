//! A sharded table together with a table idgate does not configure (so it lives on the default
//! backend only) answers as one MariaDB holding both would, in either join order, or gets ERROR
//! 1235 saying what to do; it is never sent unchanged to the shards. Shard1 holds a stale copy
//! of the unconfigured table that must never be read. The reference is the same rows in one
//! database of one server.

mod common;

use common::answers::{self, error_of};
use mysql::prelude::Queryable;

const TABLES: &str = "tables:
  dumbcategory:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

const DUMB: &str = "(id INT PRIMARY KEY, name VARCHAR(20))";
const NAMED: &str = "(id INT PRIMARY KEY, name VARCHAR(20), dumb_id INT)";

fn dumb_rows() -> String {
    (1..=12)
        .map(|i| format!("({i}, 'dumb{i}')"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Categories naming every third dumb category (some of none).
fn named_rows() -> String {
    (1..=10)
        .map(|i| {
            let dumb = if i % 4 == 0 {
                "NULL".to_string()
            } else {
                (i * 3 % 14).to_string()
            };
            format!("({i}, 'named{i}', {dumb})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The join and subquery shapes; `true`: the query orders its rows itself.
const CASES: &[(&str, bool)] = &[
    // The statement: the sharded table first.
    (
        "SELECT d.id FROM dumbcategory d LEFT JOIN namedcategory n ON n.dumb_id = d.id WHERE n.id IS NULL",
        false,
    ),
    (
        "SELECT d.id, n.name FROM dumbcategory d LEFT JOIN namedcategory n ON n.dumb_id = d.id WHERE d.id > 2",
        false,
    ),
    // The same join the other way round.
    (
        "SELECT n.id, d.name FROM namedcategory n LEFT JOIN dumbcategory d ON d.id = n.dumb_id WHERE n.id < 9 ORDER BY n.id",
        true,
    ),
    (
        "SELECT d.id FROM namedcategory n RIGHT JOIN dumbcategory d ON d.id = n.dumb_id WHERE n.id IS NULL",
        false,
    ),
    (
        "SELECT d.id, n.id FROM dumbcategory d JOIN namedcategory n ON n.dumb_id = d.id WHERE d.id = 3",
        false,
    ),
    (
        "SELECT COUNT(*), MAX(n.name) FROM dumbcategory d JOIN namedcategory n ON n.dumb_id = d.id",
        false,
    ),
    // Correlated subqueries over the default backend's table: a join in the gateway.
    (
        "SELECT d.id FROM dumbcategory d WHERE EXISTS (SELECT 1 FROM namedcategory n WHERE n.dumb_id = d.id)",
        false,
    ),
    (
        "SELECT d.id, (SELECT MAX(n.name) FROM namedcategory n WHERE n.dumb_id = d.id) FROM dumbcategory d WHERE d.id < 10",
        false,
    ),
    // Subqueries and UNIONs naming both: answered as one server, or refused.
    (
        "SELECT id FROM dumbcategory WHERE id IN (SELECT dumb_id FROM namedcategory)",
        false,
    ),
    (
        "SELECT id FROM namedcategory WHERE dumb_id IN (SELECT id FROM dumbcategory WHERE id > 5)",
        false,
    ),
    (
        "SELECT d.id, x.name FROM dumbcategory d \
         JOIN (SELECT dumb_id, name FROM namedcategory WHERE id < 7) x ON d.id = x.dumb_id",
        false,
    ),
    (
        "SELECT id FROM dumbcategory UNION SELECT id FROM namedcategory",
        false,
    ),
];

/// Shapes idgate may refuse (with 1235 naming the table) rather than answer.
const MAY_REFUSE: &[&str] = &["SELECT id FROM dumbcategory UNION SELECT id FROM namedcategory"];

#[test]
fn joins_with_a_default_backend_table_answer_as_one_server_in_either_order() {
    let s = common::two_shards(TABLES, &[]);
    let mut c = s.g.conn();
    c.query_drop(format!("CREATE TABLE dumbcategory {DUMB}"))
        .unwrap();
    c.query_drop(format!("CREATE TABLE namedcategory {NAMED}"))
        .unwrap();
    c.query_drop(format!("INSERT INTO dumbcategory VALUES {}", dumb_rows()))
        .unwrap();
    c.query_drop(format!("INSERT INTO namedcategory VALUES {}", named_rows()))
        .unwrap();
    // The unconfigured table went to the default backend only.
    let mut shard1 = common::direct(&s.dbs[1]);
    let there: Option<String> = shard1
        .query_first("SHOW TABLES LIKE 'namedcategory'")
        .unwrap();
    assert_eq!(there, None);
    // A stale copy on the other shard, which a statement sent to every shard would read.
    shard1
        .query_drop(format!("CREATE TABLE namedcategory {NAMED}"))
        .unwrap();
    shard1
        .query_drop(
            "INSERT INTO namedcategory VALUES (1, 'stale', 1), (2, 'stale', 2), (3, 'stale', 5)",
        )
        .unwrap();
    // The reference: both tables whole in one database of one server.
    shard1.query_drop("CREATE DATABASE ref").unwrap();
    shard1
        .query_drop(format!("CREATE TABLE ref.dumbcategory {DUMB}"))
        .unwrap();
    shard1
        .query_drop(format!("CREATE TABLE ref.namedcategory {NAMED}"))
        .unwrap();
    shard1
        .query_drop(format!(
            "INSERT INTO ref.dumbcategory VALUES {}",
            dumb_rows()
        ))
        .unwrap();
    shard1
        .query_drop(format!(
            "INSERT INTO ref.namedcategory VALUES {}",
            named_rows()
        ))
        .unwrap();
    let mut reference = common::direct(&s.dbs[1]);
    reference.query_drop("USE ref").unwrap();

    let mut failures = Vec::new();
    let mut refused = Vec::new();
    for &(sql, ordered) in CASES {
        let want = answers::run(&mut reference, sql).map(|(_, rows)| rows);
        let got = answers::run(&mut c, sql).map(|(_, rows)| rows);
        match (want, got) {
            (Ok(mut w), Ok(mut g)) => {
                assert!(!w.is_empty(), "{sql}: no rows to compare");
                if !ordered {
                    w.sort();
                    g.sort();
                }
                if w != g {
                    failures.push(format!("{sql}\nwant {w:?}\n got {g:?}"));
                }
            }
            (_, Err((1235, msg))) if msg.contains("namedcategory") => {
                eprintln!("refused: {sql}: {msg}");
                refused.push(sql)
            }
            (w, g) => failures.push(format!("{sql}\nwant {w:?}\n got {g:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Every join here is one the gateway runs: only the listed shapes may be refused.
    refused.retain(|sql| !MAY_REFUSE.contains(sql));
    assert!(refused.is_empty(), "refused: {refused:?}");

    // Prepared, rows in the binary protocol: the same answer.
    let sql = "SELECT d.id, n.name FROM dumbcategory d LEFT JOIN namedcategory n \
               ON n.dumb_id = d.id WHERE d.id > ? ORDER BY d.id";
    let got: Vec<(i32, Option<String>)> = c.exec(sql, (3,)).unwrap();
    let want: Vec<(i32, Option<String>)> = reference.exec(sql, (3,)).unwrap();
    assert_eq!(got, want);

    // EXPLAIN ROUTE shows the join's steps, not one statement sent to the shards.
    let rows: Vec<(String, String, String)> = c
        .query(
            "EXPLAIN ROUTE SELECT d.id FROM dumbcategory d LEFT JOIN namedcategory n \
             ON n.dumb_id = d.id WHERE n.id IS NULL",
        )
        .unwrap();
    assert!(
        rows.iter()
            .any(|r| r.1.contains("namedcategory") && !r.1.contains("dumbcategory")),
        "{rows:?}"
    );

    // INSERT … SELECT from the sharded table into the default backend's table reads every
    // shard, as one server would.
    c.query_drop(format!("CREATE TABLE namedcopy {DUMB}"))
        .unwrap();
    reference
        .query_drop(format!("CREATE TABLE namedcopy {DUMB}"))
        .unwrap();
    let copy = "INSERT INTO namedcopy SELECT d.id, d.name FROM dumbcategory d WHERE d.id > 4";
    c.query_drop(copy).unwrap();
    assert_eq!(c.affected_rows(), 8);
    reference.query_drop(copy).unwrap();
    // Prepared, the same.
    let copy = "INSERT INTO namedcopy SELECT d.id, d.name FROM dumbcategory d WHERE d.id < ?";
    c.exec_drop(copy, (3,)).unwrap();
    assert_eq!(c.affected_rows(), 2);
    reference.exec_drop(copy, (3,)).unwrap();
    let read = "SELECT id, name FROM namedcopy ORDER BY id";
    let got: Vec<(i32, String)> = c.query(read).unwrap();
    let want: Vec<(i32, String)> = reference.query(read).unwrap();
    assert_eq!(got, want);

    // A write whose subquery reads the default backend's table: that runs first.
    let update = "UPDATE dumbcategory SET name = 'picked' \
                  WHERE id IN (SELECT dumb_id FROM namedcategory WHERE id <= 3)";
    c.query_drop(update).unwrap();
    reference.query_drop(update).unwrap();
    let read = "SELECT id, name FROM dumbcategory ORDER BY id";
    let got: Vec<(i32, String)> = c.query(read).unwrap();
    let want: Vec<(i32, String)> = reference.query(read).unwrap();
    assert_eq!(got, want);

    // A write joining them cannot run in the gateway: refused, nothing changed.
    let (code, msg) = error_of(
        &mut c,
        "UPDATE dumbcategory d JOIN namedcategory n ON n.dumb_id = d.id SET d.name = n.name",
    );
    assert_eq!(code, 1235, "{msg}");
    assert!(
        msg.contains("`namedcategory` (on the default backend only)"),
        "{msg}"
    );
    let renamed: u64 = c
        .query_first("SELECT COUNT(*) FROM dumbcategory WHERE name LIKE 'named%'")
        .unwrap()
        .unwrap();
    assert_eq!(renamed, 0);
}
