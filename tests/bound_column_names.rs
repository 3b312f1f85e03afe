//! A select item whose subquery over a sharded table idgate runs first and binds in as a
//! literal keeps the column name one MariaDB gives it: the item's text as the client wrote it
//! (case, spacing and comments inside it kept, cut at 255 bytes), unless it has an alias. The
//! same rows sit in one database of one server (the reference) and, through idgate, in `t1`
//! sharded over two shards beside `dflt` on the default backend and `bc` broadcast; each
//! statement runs both ways and must give the same column names and rows.

mod common;

use common::answers::{assert_named_alike, reference_copy};
use mysql::prelude::Queryable;

const TABLES: &str = "tables:
  t1:
    sharding:
      columns: [id1]
      algorithm: mod
      shards: [shard0, shard1]
  bc:
    broadcast: true
";

const T1: &str = "(id1 INT PRIMARY KEY, id2 INT)";
const T1_ROWS: &str = "(1, 10), (2, 20), (3, 30), (4, 0), (5, 50)";
const OTHER: &str = "(id INT PRIMARY KEY, v VARCHAR(10))";
const OTHER_ROWS: &str = "(1, 'a'), (2, 'b'), (3, 'c')";

/// Statements; `true`: the query orders its rows itself.
fn cases() -> Vec<(String, bool)> {
    let long = format!(
        "SELECT (SELECT id2 FROM t1 WHERE id1 = 3) + {} = 0",
        (0..60)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    );
    let fixed: &[(&str, bool)] = &[
        // The four.
        ("SELECT 1 IN (SELECT id1 FROM t1)", false),
        ("SELECT EXISTS(SELECT * FROM t1)", false),
        ("SELECT (SELECT id2 FROM t1 WHERE id1 = 3)", false),
        ("SELECT MAX((SELECT MIN(id2) FROM t1))", false),
        // Over tables of each placement: the outer statement's own route.
        ("SELECT MAX((SELECT MIN(id2) FROM t1)) FROM dflt", false),
        ("SELECT MAX((SELECT MIN(id2) FROM t1)) FROM t1", false),
        (
            "SELECT id, (SELECT MAX(id2) FROM t1 WHERE id1 < 3) FROM bc ORDER BY id",
            true,
        ),
        (
            "SELECT id1, 2 IN (SELECT id FROM dflt) FROM t1 ORDER BY id1",
            true,
        ),
        // Case, spacing and comments inside the item as written; one after it is not its text.
        (
            "select  1   in   (  select id1 from t1 where id1 < 3  ) , id FROM dflt ORDER BY id",
            true,
        ),
        (
            "SELECT NOT EXISTS (SELECT 1 /* none */ FROM t1 WHERE id1 > 99) /* after */, 2",
            false,
        ),
        (
            "SELECT (SELECT id2 FROM t1 WHERE id1 = 3)\n  IS NULL",
            false,
        ),
        // Quotes and backticks inside the text.
        (
            "SELECT (SELECT COUNT(*) AS `a``b` FROM t1 WHERE id2 <> 'x''y')",
            false,
        ),
        // An alias, with AS or without, is the name.
        (
            "SELECT (SELECT id2 FROM t1 WHERE id1 = 3) AS x, 1 IN (SELECT id1 FROM t1) y",
            false,
        ),
        // DISTINCT, a UNION (the first member names the columns), a derived table's columns.
        ("SELECT DISTINCT (SELECT MAX(id2) FROM t1) FROM dflt", false),
        ("SELECT (SELECT MAX(id2) FROM t1) UNION SELECT 7", false),
        (
            "SELECT * FROM (SELECT id, (SELECT MAX(id2) FROM t1) FROM dflt) d ORDER BY id",
            true,
        ),
        (
            "SELECT 1 IN (SELECT id1 FROM t1 WHERE id1 IN (SELECT id FROM dflt))",
            false,
        ),
    ];
    let mut out: Vec<(String, bool)> = fixed.iter().map(|(s, o)| (s.to_string(), *o)).collect();
    out.push((long, false));
    out
}

#[test]
fn bound_select_items_keep_the_names_one_server_gives() {
    let s = common::two_shards(TABLES, &[]);
    let mut c = s.g.conn();
    for (t, cols, rows) in [
        ("t1", T1, T1_ROWS),
        ("dflt", OTHER, OTHER_ROWS),
        ("bc", OTHER, OTHER_ROWS),
    ] {
        c.query_drop(format!("CREATE TABLE {t} {cols}")).unwrap();
        c.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .unwrap();
    }
    let mut reference = reference_copy(
        &s.dbs[1],
        &[
            ("t1", T1, T1_ROWS),
            ("dflt", OTHER, OTHER_ROWS),
            ("bc", OTHER, OTHER_ROWS),
        ],
    );
    let cases = cases();
    assert_named_alike(
        &mut reference,
        &mut c,
        cases.iter().map(|(sql, ordered)| (sql.as_str(), *ordered)),
        |want| want.is_ok(),
    );
}
