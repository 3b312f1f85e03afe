//! A subquery inside INSERT … VALUES / SET over sharded tables answers as one server would: it
//! runs first across every shard and its value is bound in, instead of being sent with the row
//! to one shard, where it read that shard's rows only (a MAX of one shard, or NULL).

mod common;

use mysql::prelude::Queryable;

const TABLES: &str = "generators:
  seq:
    kind: segment
    step: 100
tables:
  company:
    generator: seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

const COMPANY: &str = "CREATE TABLE company (id BIGINT AUTO_INCREMENT PRIMARY KEY, \
                       name VARCHAR(20) NOT NULL, num_employees INT)";
/// On the default backend only (not configured).
const STATS: &str =
    "CREATE TABLE stats (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(20), n INT)";

/// (name, value) rows of a table.
type Rows = Vec<(String, Option<i64>)>;

fn contents(c: &mut mysql::Conn) -> (Rows, Rows) {
    (
        c.query("SELECT name, num_employees FROM company ORDER BY name")
            .unwrap(),
        c.query("SELECT what, n FROM stats ORDER BY id").unwrap(),
    )
}

#[test]
fn subqueries_in_insert_values_read_every_shard() {
    let reference = common::start_db();
    let ts = common::two_shards(TABLES, &[COMPANY, STATS]);
    let mut direct = common::direct(&reference);
    direct.query_drop(COMPANY).unwrap();
    direct.query_drop(STATS).unwrap();
    let mut through = ts.g.conn();
    let seed = "INSERT INTO company (name, num_employees) VALUES \
                ('a', 10), ('b', 250), ('c', 40), ('d', 7), ('e', 90)";
    for c in [&mut direct, &mut through] {
        c.query_drop(seed).unwrap();
    }
    // Both shards hold some of the companies.
    for db in &ts.dbs {
        let n: u64 = common::direct(db)
            .query_first("SELECT COUNT(*) FROM company")
            .unwrap()
            .unwrap();
        assert!(n > 0);
    }
    let statements = [
        "INSERT INTO company (name, num_employees) VALUES ('f', (SELECT MAX(U0.num_employees) FROM company U0))",
        "INSERT INTO company SET name = 'g', num_employees = (SELECT COUNT(*) FROM company WHERE num_employees > 20)",
        "INSERT INTO company (name, num_employees) VALUES ('h', (SELECT MIN(num_employees) FROM company)), ('i', (SELECT SUM(num_employees) FROM company WHERE name IN ('a', 'b')))",
        // A table of the default backend reading the sharded one.
        "INSERT INTO stats (what, n) VALUES ('total', (SELECT SUM(num_employees) FROM company))",
        "INSERT INTO stats (what, n) VALUES ('none', (SELECT MAX(num_employees) FROM company WHERE name = 'zz'))",
    ];
    for sql in statements {
        direct.query_drop(sql).unwrap();
        let want = (direct.affected_rows(), contents(&mut direct));
        through
            .query_drop(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}\n{}", ts.g.log()));
        let got = (through.affected_rows(), contents(&mut through));
        assert_eq!(got, want, "{sql}");
    }
    // Prepared, with the subquery's own parameter: the same answer.
    let sql = "INSERT INTO company (name, num_employees) VALUES (?, (SELECT MAX(num_employees) FROM company WHERE num_employees < ?))";
    for c in [&mut direct, &mut through] {
        let stmt = c.prep(sql).unwrap();
        c.exec_drop(&stmt, ("j", 200)).unwrap();
    }
    assert_eq!(contents(&mut through), contents(&mut direct));
    let j: Option<i64> = through
        .query_first("SELECT num_employees FROM company WHERE name = 'j'")
        .unwrap();
    assert_eq!(j, Some(90));
    // Prepared into the default backend's table, reading the sharded one.
    let sql = "INSERT INTO stats (what, n) VALUES (?, (SELECT COUNT(*) FROM company WHERE num_employees > ?))";
    for c in [&mut direct, &mut through] {
        let stmt = c.prep(sql).unwrap();
        c.exec_drop(&stmt, ("big", 20)).unwrap();
    }
    assert_eq!(contents(&mut through), contents(&mut direct));

    // An expression over an aggregate across shards (Django's `Max('n') + 1`): lifted over a
    // derived table of the merged aggregate, never answered from one shard.
    for sql in [
        "INSERT INTO company (name, num_employees) VALUES ('k', (SELECT MAX(U0.num_employees) + 1 FROM company U0))",
        "INSERT INTO company SET name = 'l', num_employees = (SELECT COALESCE(AVG(num_employees), 0) * 3 FROM company WHERE name < 'f')",
    ] {
        direct.query_drop(sql).unwrap();
        through
            .query_drop(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}\n{}", ts.g.log()));
        assert_eq!(contents(&mut through), contents(&mut direct), "{sql}");
    }
    // One that also reads a column neither aggregated nor grouped is refused with what to do;
    // nothing is inserted.
    let sql = "INSERT INTO company (name, num_employees) VALUES ('m', (SELECT MAX(U0.num_employees) + U0.id FROM company U0))";
    match through.query_drop(sql) {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1235, "{}", e.message),
        other => panic!("{sql}: {other:?}"),
    }
    let m: Option<i64> = through
        .query_first("SELECT COUNT(*) FROM company WHERE name = 'm'")
        .unwrap();
    assert_eq!(m, Some(0));
}
