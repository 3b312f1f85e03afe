//! Statements idgate evaluates over literal tables of fetched rows (lifted aggregates and
//! windows, joins of tables not placed alike, derived tables) compare and sort text by each
//! column's own collation, as one MariaDB holding every row does. A `utf8mb4_bin` column once
//! sorted as `utf8mb4_general_ci` there (`A a B b` instead of `A B a b`), and its join matched
//! `a` with `A`.

mod common;

use common::answers::run;
use mysql::prelude::Queryable;

const TABLES: &str = "tables:
  m2:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  h3:
    sharding:
      columns: [id]
      algorithm: hash
      shards: [shard0, shard1, shard2]
";

const COLUMNS: &str = "(id INT PRIMARY KEY, i INT, v VARCHAR(20) COLLATE utf8mb4_bin, \
                       u VARCHAR(20) COLLATE utf8mb4_unicode_ci, l VARCHAR(10) CHARACTER SET latin1)";

const ROWS: &str =
    "(1, 1, 'a', 'Straße', 'x'), (2, 2, 'B', 'strasse', 'e'), (3, 3, 'a', 'ß', 'Y'), \
                    (4, 4, 'b', 'ss', 'x'), (5, 5, 'A', 'Æ', 'ü'), (6, 6, 'C', 'ae', 'u'), \
                    (7, 1, 'c', 'AE', 'y')";

#[test]
fn literal_tables_keep_each_columns_collation() {
    let (dbs, g) = common::three_shards(TABLES);
    let mut reference = common::direct(&dbs[0]);
    let mut c = g.conn();
    for t in ["ref_a", "ref_b"] {
        reference
            .query_drop(format!("CREATE TABLE {t} {COLUMNS}"))
            .unwrap();
        reference
            .query_drop(format!("INSERT INTO {t} VALUES {ROWS}"))
            .unwrap();
    }
    for t in ["m2", "h3"] {
        c.query_drop(format!("CREATE TABLE {t} {COLUMNS}")).unwrap();
        c.query_drop(format!("INSERT INTO {t} VALUES {ROWS}"))
            .unwrap();
    }
    let mut failures = Vec::new();
    for sql in [
        // A lifted aggregate, ordered by the group value.
        "SELECT v, MAX(i) + 1 AS m FROM {A} GROUP BY v ORDER BY v",
        "SELECT COUNT(DISTINCT u) * 2 AS n, COUNT(DISTINCT v) + 0 FROM {A}",
        "SELECT i, GROUP_CONCAT(v ORDER BY id) AS g FROM {A} GROUP BY i ORDER BY 2, 1",
        // A lifted window, ordered by a column.
        "SELECT id, v, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM {A} ORDER BY v, id",
        // A join of tables not placed alike, on text.
        "SELECT a.id, b.id FROM {A} a JOIN {B} b ON b.v = a.v ORDER BY a.id, b.id",
        "SELECT a.id, b.id FROM {A} a JOIN {B} b ON b.u = a.u ORDER BY a.id, b.id",
        "SELECT a.id, b.id FROM {A} a JOIN {B} b ON b.l = a.l ORDER BY a.id, b.id",
        // A derived table over a sharded table.
        "SELECT d.v FROM (SELECT v FROM {A} WHERE i < 5) AS d ORDER BY d.v",
        "SELECT COUNT(*) FROM (SELECT DISTINCT v FROM {A}) AS d",
    ] {
        let want = run(
            &mut reference,
            &sql.replace("{A}", "ref_a").replace("{B}", "ref_b"),
        );
        assert!(want.is_ok(), "the reference rejects {sql}: {want:?}");
        let got = run(&mut c, &sql.replace("{A}", "m2").replace("{B}", "h3"));
        let rows = |a: &common::answers::Answer| a.as_ref().map(|x| x.1.clone()).ok();
        if rows(&got) != rows(&want) {
            failures.push(format!("{sql}\nwant {want:?}\n got {got:?}"));
        }
    }
    // The session's own results character set is as it was.
    let cs: Option<String> = c.query_first("SELECT @@character_set_results").unwrap();
    assert_eq!(cs.as_deref(), Some("utf8mb4"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
