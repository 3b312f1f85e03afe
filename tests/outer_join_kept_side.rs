//! An outer join that keeps every row of a side holding no sharded table (a derived table of
//! literals, a broadcast table, a table on the default backend) and NULL-extends a sharded
//! table answers as one MariaDB holding every row: once, not once per shard. The same rows sit
//! in one database of one server (the reference) and, through idgate, in `t2` sharded over two
//! shards, `bc` broadcast and `dflt` on the default backend only; each statement runs both ways
//! and must give the same column names and rows. An outer join that keeps a sharded side still
//! runs on the shards.

mod common;

use common::answers::{assert_named_alike, error_of, reference_copy};
use mysql::prelude::Queryable;

const TABLES: &str = "tables:
  t2:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  bc:
    broadcast: true
";

const T2: &str = "(id INT PRIMARY KEY, tcol1 VARCHAR(20), n INT)";
const TITLED: &str = "(id INT PRIMARY KEY, title VARCHAR(20))";

/// Titles `t2` has on both shards (ABC: ids 1 and 4), on one shard (DEF: id 2) and nowhere.
const T2_ROWS: &str = "(1, 'ABC', 5), (2, 'DEF', 1), (3, 'GHI', 7), (4, 'ABC', 2), \
                       (5, NULL, 3), (6, 'JKL', 9), (7, 'GHI', 4), (8, 'MNO', 0)";
const TITLED_ROWS: &str = "(1, 'ABC'), (2, 'DEF'), (3, 'XYZ'), (4, NULL), (5, 'GHI'), (6, 'QRS')";

/// The statements; `true`: the query orders its rows itself.
const CASES: &[(&str, bool)] = &[
    // The statements: a RIGHT JOIN onto a one-row derived table, matching on one shard
    // only, or nowhere.
    ("SELECT t.title, t2.id FROM t2 RIGHT JOIN (SELECT 'ABC' AS title) AS t ON t2.id = 1 AND t.title = t2.tcol1", false),
    ("SELECT t.title, t2.id FROM t2 RIGHT JOIN (SELECT 'DEF' AS title) AS t ON t2.id = 1 AND t.title = t2.tcol1", false),
    ("SELECT t.title, t2.id FROM t2 RIGHT JOIN (SELECT 'ABC' AS title) AS t ON t.title = t2.tcol1", false),
    // The same with the derived table on the left of a LEFT JOIN; several literal rows.
    ("SELECT t.title, t2.id, t2.n FROM (SELECT 'ABC' AS title) t LEFT JOIN t2 ON t2.tcol1 = t.title", false),
    ("SELECT t.title, t2.id FROM (SELECT 'DEF' AS title UNION ALL SELECT 'ZZZ' UNION ALL SELECT 'GHI') t LEFT JOIN t2 ON t2.tcol1 = t.title AND t2.n > 3", false),
    ("SELECT t.title, COUNT(t2.id) FROM (SELECT 'ABC' AS title UNION ALL SELECT 'NOPE') t LEFT JOIN t2 ON t2.tcol1 = t.title GROUP BY t.title ORDER BY t.title", true),
    // A broadcast table kept whole.
    ("SELECT b.id, b.title, t2.id FROM bc b LEFT JOIN t2 ON t2.tcol1 = b.title", false),
    ("SELECT b.id, t2.id FROM t2 RIGHT JOIN bc b ON t2.tcol1 = b.title AND t2.n > 2 ORDER BY b.id, t2.id", true),
    ("SELECT b.id FROM bc b LEFT JOIN t2 ON t2.tcol1 = b.title WHERE t2.id IS NULL ORDER BY b.id", true),
    ("SELECT COUNT(*), COUNT(t2.id), SUM(t2.n) FROM bc b LEFT JOIN t2 ON t2.tcol1 = b.title", false),
    // A table on the default backend kept whole, alone or beside a broadcast table.
    ("SELECT d.id, t2.id FROM dflt d LEFT JOIN t2 ON t2.tcol1 = d.title", false),
    ("SELECT d.id, t2.id FROM t2 RIGHT JOIN dflt d ON d.title = t2.tcol1 WHERE d.id < 5", false),
    ("SELECT d.id, b.id, t2.id FROM dflt d JOIN bc b ON b.id = d.id LEFT JOIN t2 ON t2.tcol1 = b.title", false),
    // The sharded side kept: the shards answer it, as before.
    ("SELECT t2.id, b.id FROM t2 LEFT JOIN bc b ON b.title = t2.tcol1", false),
    ("SELECT t2.id, t.title FROM t2 LEFT JOIN (SELECT 'ABC' AS title) t ON t.title = t2.tcol1 ORDER BY t2.id", true),
];

struct Setup {
    /// Kept alive for the servers' lifetime.
    _s: common::TwoShards,
    idgate: mysql::Conn,
    reference: mysql::Conn,
}

fn setup() -> Setup {
    let s = common::two_shards(TABLES, &[]);
    let mut c = s.g.conn();
    for (t, cols, rows) in [
        ("t2", T2, T2_ROWS),
        ("bc", TITLED, TITLED_ROWS),
        ("dflt", TITLED, TITLED_ROWS),
    ] {
        c.query_drop(format!("CREATE TABLE {t} {cols}")).unwrap();
        c.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .unwrap();
    }
    // Each shard got its own part of `t2`.
    let mut shard1 = common::direct(&s.dbs[1]);
    let n: Option<u64> = shard1.query_first("SELECT COUNT(*) FROM t2").unwrap();
    assert_eq!(n, Some(4));
    let reference = reference_copy(
        &s.dbs[1],
        &[
            ("t2", T2, T2_ROWS),
            ("bc", TITLED, TITLED_ROWS),
            ("dflt", TITLED, TITLED_ROWS),
        ],
    );
    Setup {
        idgate: c,
        reference,
        _s: s,
    }
}

#[test]
fn outer_joins_keeping_an_unsharded_side_answer_as_one_server() {
    let mut s = setup();
    assert_named_alike(
        &mut s.reference,
        &mut s.idgate,
        CASES.iter().copied(),
        |want| want.as_ref().is_ok_and(|(_, rows)| !rows.is_empty()),
    );

    // Prepared, rows in the binary protocol: the same rows.
    let sql = "SELECT t.title, t2.id FROM t2 RIGHT JOIN (SELECT ? AS title) AS t \
               ON t2.id = 1 AND t.title = t2.tcol1";
    for title in ["ABC", "DEF"] {
        let got: Vec<(String, Option<i32>)> = s.idgate.exec(sql, (title,)).unwrap();
        let want: Vec<(String, Option<i32>)> = s.reference.exec(sql, (title,)).unwrap();
        assert_eq!(got, want, "{title}");
    }

    // EXPLAIN ROUTE shows the gateway's fetches, not one statement sent to each shard.
    let rows: Vec<(String, String, String)> = s
        .idgate
        .query("EXPLAIN ROUTE SELECT b.id, t2.id FROM bc b LEFT JOIN t2 ON t2.tcol1 = b.title")
        .unwrap();
    assert!(
        rows.iter()
            .any(|r| r.1.contains("t2") && !r.1.contains("bc")),
        "{rows:?}"
    );
}

#[test]
fn outer_joins_idgate_cannot_run_in_the_gateway_are_refused_clearly() {
    let mut s = setup();
    // A common table expression kept whole: the gateway join does not take WITH.
    for sql in [
        "WITH c AS (SELECT 'ABC' AS title) SELECT c.title, t2.id FROM c LEFT JOIN t2 ON t2.tcol1 = c.title",
        "SELECT b.id, t2.id FROM bc b LEFT JOIN (t2 JOIN dflt d ON d.id = t2.id) ON t2.tcol1 = b.title",
    ] {
        let (code, msg) = error_of(&mut s.idgate, sql);
        assert_eq!(code, 1235, "{sql}: {msg}");
        assert!(msg.contains("idgate"), "{sql}: {msg}");
        eprintln!("{sql}: {msg}");
    }
    let (code, msg) = error_of(
        &mut s.idgate,
        "WITH c AS (SELECT 'ABC' AS title) SELECT c.title, t2.id FROM c LEFT JOIN t2 ON t2.tcol1 = c.title",
    );
    assert_eq!(code, 1235);
    assert!(
        msg.contains("NULL-extends sharded table `t2`") && msg.contains("`c`"),
        "{msg}"
    );
    let one: Option<u64> = s.idgate.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}
