//! UPDATE and DELETE whose WHERE or SET has a subquery over sharded tables answer as one
//! MariaDB holding every row: each case runs on reference tables on one server and, through
//! idgate, on tables sharded over two shards (mod) and three shards (hash), from the same
//! rows; the OK packets (affected rows, info text) and the rows left afterwards must match.
//! Inner sets hold NULLs, and some are empty. Also: text and prepared, a transaction reading
//! its own uncommitted insert, the refusals that stay, and EXPLAIN ROUTE.

mod common;

use common::answers::{error_of, run, Answer};

use mysql::prelude::Queryable;
use mysql::Value;

fn tables() -> &'static str {
    "max_subquery_rows: 1000
tables:
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
  m2c:
    unique: per_shard
    sharding:
      columns: [ref_id]
      algorithm: mod
      shards: [shard0, shard1]
  h3c:
    unique: per_shard
    sharding:
      columns: [ref_id]
      algorithm: hash
      shards: [shard0, shard1, shard2]
  bc:
    broadcast: true
"
}

const COLUMNS: &str = "(id INT PRIMARY KEY, i INT, k INT, v VARCHAR(20))";
const CHILD_COLUMNS: &str = "(cid INT PRIMARY KEY, ref_id INT, alt INT, amount DECIMAL(8,2))";

/// 60 parents: `k` NULL for every ninth.
fn rows() -> String {
    (1..=60)
        .map(|id| {
            let k = if id % 9 == 0 {
                "NULL".to_string()
            } else {
                ((id * 7) % 50).to_string()
            };
            let v = ["apple", "Banana", "cherry", "it's"][id % 4];
            format!(
                "({id}, {}, {k}, '{}')",
                id as i64 % 7 - 3,
                v.replace('\'', "''")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// 80 children, some pointing past the parents; `alt` is `ref_id` but NULL for every eleventh.
fn child_rows() -> String {
    (1..=80)
        .map(|cid| {
            let r = (cid * 13) % 70 + 1;
            let alt = if cid % 11 == 0 {
                "NULL".to_string()
            } else {
                r.to_string()
            };
            format!("({cid}, {r}, {alt}, {}.50)", (cid * 17) % 30)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reference table (on the first server, directly) and table through idgate, for each role:
/// `{T}` a sharded parent, `{C}` a sharded child, `{D}` a table on the default backend only,
/// `{B}` a broadcast table.
const ROLES: [&str; 4] = ["{T}", "{C}", "{D}", "{B}"];
const REFERENCE: [&str; 4] = ["ref", "refc", "refd", "refb"];
const SHARDED: &[[&str; 4]] = &[
    ["m2", "m2c", "dflt", "bc"],
    ["h3", "h3c", "dflt", "bc"],
    ["h3", "m2c", "dflt", "bc"],
];

struct Setup {
    dbs: Vec<common::MariaDb>,
    g: common::Idgate,
}

/// The tests change the same tables: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn setup() -> &'static Setup {
    static SETUP: std::sync::OnceLock<Setup> = std::sync::OnceLock::new();
    SETUP.get_or_init(|| {
        let (dbs, g) = common::three_shards(tables());
        let mut reference = common::direct(&dbs[0]);
        for (i, t) in REFERENCE.iter().enumerate() {
            let cols = if i == 1 { CHILD_COLUMNS } else { COLUMNS };
            reference
                .query_drop(format!("CREATE TABLE {t} {cols}"))
                .unwrap();
        }
        let mut c = g.conn();
        for t in ["m2", "h3", "m2c", "h3c", "dflt", "bc"] {
            let cols = if t.ends_with('c') && t != "bc" {
                CHILD_COLUMNS
            } else {
                COLUMNS
            };
            c.query_drop(format!("CREATE TABLE {t} {cols}")).unwrap();
        }
        Setup { dbs, g }
    })
}

/// Every table of `names` (in role order) back to the same rows.
fn reset(c: &mut mysql::Conn, names: &[&str; 4]) {
    let (data, children) = (rows(), child_rows());
    for (i, t) in names.iter().enumerate() {
        let rows = if i == 1 { &children } else { &data };
        c.query_drop(format!("DELETE FROM {t}")).unwrap();
        c.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .unwrap();
    }
}

fn fill(sql: &str, names: &[&str; 4]) -> String {
    ROLES
        .iter()
        .zip(names)
        .fold(sql.to_string(), |s, (role, t)| s.replace(role, t))
}

/// The OK packet of a write: affected rows and info text, or the error.
type Outcome = Result<(u64, String), (u16, String)>;

fn write(c: &mut mysql::Conn, sql: &str, params: Option<Vec<Value>>) -> Outcome {
    let done = match params {
        None => c.query_drop(sql),
        Some(p) => c.exec_drop(sql, p),
    };
    match done {
        Ok(()) => Ok((c.affected_rows(), c.info_str().into_owned())),
        Err(mysql::Error::MySqlError(e)) => Err((e.code, e.message)),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// The rows of each table of `names`, by primary key.
fn state(c: &mut mysql::Conn, names: &[&str; 4]) -> Vec<Answer> {
    names
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let key = if i == 1 { "cid" } else { "id" };
            run(c, &format!("SELECT * FROM {t} ORDER BY {key}"))
        })
        .collect()
}

/// Runs each write both ways from fresh rows; the differences found.
fn compare(cases: &[(&str, Option<Vec<Value>>)]) -> Vec<String> {
    let _serial = serial();
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let mut failures = Vec::new();
    for (sql, params) in cases {
        reset(&mut reference, &REFERENCE);
        let want_sql = fill(sql, &REFERENCE);
        let want = write(&mut reference, &want_sql, params.clone());
        if let Err(e) = &want {
            assert!(e.0 == 1242, "{want_sql}: {e:?}");
        }
        let want_rows = state(&mut reference, &REFERENCE);
        for names in SHARDED {
            reset(&mut c, names);
            let q = fill(sql, names);
            let got = write(&mut c, &q, params.clone());
            let codes = |o: &Outcome| o.as_ref().map_err(|e| e.0).cloned();
            if codes(&got) != codes(&want) {
                failures.push(format!("{q}\nwant {want:?}\n got {got:?}"));
                continue;
            }
            let got_rows = state(&mut c, names);
            for (n, (w, g)) in want_rows.iter().zip(&got_rows).enumerate() {
                if w != g {
                    failures.push(format!("{q}\ntable {} differs afterwards", names[n]));
                }
            }
        }
    }
    failures
}

const TEXT: &[&str] = &[
    // Django: `Parent.objects.filter(id__in=Child.objects.filter(...).values("ref_id")).delete()`.
    "DELETE FROM `{T}` WHERE `{T}`.`id` IN (SELECT U0.`ref_id` FROM `{C}` U0 WHERE U0.`amount` > 25)",
    "DELETE FROM {T} WHERE id IN (SELECT ref_id FROM {C} WHERE amount < 0)",
    // A NULL in the set: NOT IN deletes nothing; without it, the rest.
    "DELETE FROM {T} WHERE id NOT IN (SELECT alt FROM {C} WHERE amount > 20)",
    "DELETE FROM {T} WHERE id NOT IN (SELECT alt FROM {C} WHERE amount > 20 AND alt IS NOT NULL)",
    "DELETE FROM {T} WHERE id NOT IN (SELECT ref_id FROM {C} WHERE amount < 0)",
    "DELETE FROM {T} WHERE EXISTS (SELECT 1 FROM {C} WHERE amount > 100)",
    "DELETE FROM {T} WHERE NOT EXISTS (SELECT 1 FROM {C} WHERE amount > 100) AND i = 2",
    "DELETE FROM {T} WHERE k > (SELECT AVG(amount) FROM {C})",
    "DELETE FROM {T} WHERE k >= ALL (SELECT alt FROM {C} WHERE amount > 24)",
    "DELETE FROM {T} WHERE k < ANY (SELECT ref_id FROM {C} WHERE amount < 3)",
    // Django: `.filter(id__in=...).update(k=0)`; SQLAlchemy's `update().where(col.in_(select))`.
    "UPDATE `{T}` SET `k` = 0 WHERE `{T}`.`id` IN (SELECT U0.`ref_id` FROM `{C}` U0 WHERE U0.`amount` < 5)",
    "UPDATE {T} SET k = NULL, v = 'x' WHERE id IN (SELECT ref_id FROM {C} WHERE amount BETWEEN 10 AND 12)",
    "UPDATE {T} SET k = k + 1 WHERE id NOT IN (SELECT alt FROM {C} WHERE cid < 30)",
    "UPDATE {T} SET k = (SELECT MAX(amount) FROM {C}) WHERE i = 2",
    "UPDATE {T} SET k = (SELECT ref_id FROM {C} WHERE amount < 0) WHERE i = -1",
    "UPDATE {T} SET v = 'none' WHERE NOT EXISTS (SELECT 1 FROM {C} WHERE amount > 100)",
    "UPDATE {T} SET i = 9 WHERE k <> ALL (SELECT alt FROM {C} WHERE amount > 26 AND alt IS NOT NULL)",
    "UPDATE {T} SET i = 9 WHERE k <> ALL (SELECT alt FROM {C} WHERE amount > 26)",
    "UPDATE {T} SET i = 9 WHERE k = SOME (SELECT ref_id FROM {C} WHERE amount > 26)",
    // The subquery reads the table being changed: evaluated before any row changes.
    "UPDATE {T} SET k = k + 1 WHERE id IN (SELECT id FROM {T} WHERE i = 3)",
    "DELETE FROM {T} WHERE k = (SELECT MAX(k) FROM {T})",
    "UPDATE {T} SET k = (SELECT COUNT(*) FROM {T} WHERE k IS NULL) WHERE id < 5",
    // Targets on the default backend only, and broadcast.
    "UPDATE {D} SET k = NULL WHERE id IN (SELECT ref_id FROM {C} WHERE amount > 20)",
    "DELETE FROM {D} WHERE id IN (SELECT id FROM {T} WHERE i = 1)",
    "DELETE FROM {B} WHERE id IN (SELECT ref_id FROM {C} WHERE amount > 20)",
    "UPDATE {B} SET v = 'b' WHERE k > ALL (SELECT k FROM {T} WHERE i = 0)",
    // Nested: the innermost runs first.
    "DELETE FROM {T} WHERE id IN (SELECT ref_id FROM {C} WHERE ref_id IN (SELECT id FROM {B} WHERE i = 0))",
    // MariaDB's error for a scalar of several rows; nothing changes.
    "UPDATE {T} SET k = (SELECT ref_id FROM {C} WHERE amount > 20) WHERE id = 1",
];

#[test]
fn updates_and_deletes_with_sharded_subqueries_answer_as_one_server() {
    let cases: Vec<(&str, Option<Vec<Value>>)> = TEXT.iter().map(|s| (*s, None)).collect();
    let failures = compare(&cases);
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn prepared_updates_and_deletes_with_sharded_subqueries_answer_as_one_server() {
    let cases: Vec<(&str, Option<Vec<Value>>)> = vec![
        (
            "DELETE FROM {T} WHERE id IN (SELECT ref_id FROM {C} WHERE amount > ?)",
            Some(vec![Value::Int(25)]),
        ),
        (
            "DELETE FROM {T} WHERE id NOT IN (SELECT alt FROM {C} WHERE amount > ?)",
            Some(vec![Value::Int(20)]),
        ),
        (
            "UPDATE {T} SET k = ? WHERE id IN (SELECT ref_id FROM {C} WHERE amount < ?)",
            Some(vec![Value::Int(0), Value::Int(5)]),
        ),
        (
            "UPDATE {T} SET k = (SELECT MAX(amount) FROM {C} WHERE cid < ?) WHERE i = ?",
            Some(vec![Value::Int(40), Value::Int(2)]),
        ),
        (
            "UPDATE {T} SET v = ? WHERE EXISTS (SELECT 1 FROM {C} WHERE amount > ?)",
            Some(vec![Value::from("e"), Value::Int(100)]),
        ),
        (
            "DELETE FROM {T} WHERE k > ALL (SELECT ref_id FROM {C} WHERE amount > ?)",
            Some(vec![Value::Int(24)]),
        ),
    ];
    let failures = compare(&cases);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// UPDATE/DELETE with ORDER BY and LIMIT reaching several shards: the rows one server would
/// pick, found by an ordered SELECT of their ids across the shards first. Orders end in the
/// key, so one server's pick among ties is the only one.
#[test]
fn ordered_updates_and_deletes_with_a_limit_pick_the_rows_one_server_would() {
    let text = [
        "UPDATE {T} SET k = k + 100 WHERE k IS NOT NULL ORDER BY k DESC, id LIMIT 5",
        "UPDATE `{T}` SET `v` = 'first' ORDER BY `{T}`.`v`, `{T}`.`id` LIMIT 7",
        "UPDATE {T} AS t SET t.i = 0 WHERE t.i > 0 ORDER BY t.k, t.id DESC LIMIT 4",
        "UPDATE {T} SET k = NULL ORDER BY id DESC LIMIT 0",
        "UPDATE {T} SET k = 1 WHERE i = 3 ORDER BY id LIMIT 1000",
        "UPDATE {T} SET k = 7 WHERE id > 1000 ORDER BY id LIMIT 2",
        "UPDATE IGNORE {T} SET v = 'x' WHERE id IN (SELECT ref_id FROM {C} WHERE amount > 20) ORDER BY id LIMIT 3",
        "DELETE FROM {T} ORDER BY k, id LIMIT 6",
        "DELETE FROM {T} WHERE v LIKE '%an%' OR k > 40 ORDER BY v DESC, id LIMIT 5",
        "DELETE FROM {T} WHERE i = -3 LIMIT 100",
        // ORDER BY alone (Django orders an UPDATE of an ordered queryset): every shard.
        "UPDATE {T} SET k = k + 1 WHERE i > 0 ORDER BY id DESC",
        "DELETE FROM {T} WHERE k < 10 ORDER BY k, id",
        "DELETE LOW_PRIORITY QUICK IGNORE FROM {T} WHERE k > 10 ORDER BY k DESC, id LIMIT 4",
        // Modifiers once hid the table from the planner (the write reached the default
        // backend only).
        "UPDATE IGNORE {T} SET v = 'i' WHERE k > 30",
        "UPDATE LOW_PRIORITY IGNORE {T} SET v = 'i' WHERE k < 3",
        "DELETE IGNORE FROM {T} WHERE k > 35",
    ];
    let mut cases: Vec<(&str, Option<Vec<Value>>)> = text.iter().map(|s| (*s, None)).collect();
    cases.push((
        "UPDATE {T} SET k = ? WHERE i <> ? ORDER BY k DESC, id LIMIT 3",
        Some(vec![Value::Int(-5), Value::Int(0)]),
    ));
    cases.push((
        "DELETE FROM {T} WHERE k < ? ORDER BY id DESC LIMIT 4",
        Some(vec![Value::Int(30)]),
    ));
    let failures = compare(&cases);
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Without a column that is a unique key by itself under the rule's id column, the rows cannot
/// be named exactly: refused, nothing changed.
#[test]
fn an_ordered_write_without_a_unique_id_column_is_refused_and_changes_nothing() {
    let _serial = serial();
    let s = setup();
    let mut c = s.g.conn();
    reset(&mut c, &["m2", "m2c", "dflt", "bc"]);
    let (code, msg) = error_of(&mut c, "DELETE FROM m2c ORDER BY amount LIMIT 2");
    assert_eq!(code, 1235, "{msg}");
    assert!(
        msg.contains("ORDER BY/LIMIT") && msg.contains("unique key by itself"),
        "{msg}"
    );
    let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM m2c").unwrap();
    assert_eq!(n, Some(80));
    // In a transaction the picked rows are its own view, and a rollback undoes the write.
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO m2 VALUES (1001, 0, -50, 'new'), (1002, 0, -49, 'new')")
        .unwrap();
    let got = write(
        &mut c,
        "UPDATE m2 SET v = 'low' ORDER BY COALESCE(k, 0), id LIMIT 3",
        None,
    );
    assert_eq!(
        got,
        Ok((3, "Rows matched: 3  Changed: 3  Warnings: 0".to_string()))
    );
    let low: Vec<u64> = c
        .query("SELECT id FROM m2 WHERE v = 'low' ORDER BY id")
        .unwrap();
    // The two new rows first (k -50 and -49), then the first NULL key counted as 0.
    assert_eq!(low, vec![9, 1001, 1002]);
    c.query_drop("ROLLBACK").unwrap();
    let n: Option<u64> = c
        .query_first("SELECT COUNT(*) FROM m2 WHERE v = 'low' OR id > 1000")
        .unwrap();
    assert_eq!(n, Some(0));
}

#[test]
fn inside_a_transaction_the_subquery_reads_its_own_uncommitted_insert() {
    let _serial = serial();
    let s = setup();
    let mut c = s.g.conn();
    reset(&mut c, &["m2", "m2c", "dflt", "bc"]);
    reset(&mut c, &["h3", "h3c", "dflt", "bc"]);
    c.query_drop("BEGIN").unwrap();
    // Child 500 of parent 7, then of parent 8 (other shard of m2c), seen only by this session.
    c.query_drop("INSERT INTO m2c VALUES (500, 7, 7, 99.00), (501, 8, 8, 99.00)")
        .unwrap();
    let got = write(
        &mut c,
        "DELETE FROM m2 WHERE id IN (SELECT ref_id FROM m2c WHERE amount = 99)",
        None,
    );
    assert_eq!(got, Ok((2, String::new())));
    let got = write(
        &mut c,
        "UPDATE h3 SET k = -1 WHERE id IN (SELECT ref_id FROM m2c WHERE cid >= 500)",
        None,
    );
    assert_eq!(
        got,
        Ok((2, "Rows matched: 2  Changed: 2  Warnings: 0".to_string()))
    );
    // Another session sees none of it.
    let mut other = s.g.conn();
    let n: Option<u64> = other
        .query_first("SELECT COUNT(*) FROM m2 WHERE id IN (7, 8)")
        .unwrap();
    assert_eq!(n, Some(2));
    c.query_drop("ROLLBACK").unwrap();
    let n: Option<u64> = c
        .query_first("SELECT COUNT(*) FROM m2 WHERE id IN (7, 8)")
        .unwrap();
    assert_eq!(n, Some(2));
    let n: Option<u64> = c
        .query_first("SELECT COUNT(*) FROM h3 WHERE k = -1")
        .unwrap();
    assert_eq!(n, Some(0));
}

#[test]
fn refused_shapes_stay_refused_clearly_and_the_session_goes_on() {
    let _serial = serial();
    let s = setup();
    let mut c = s.g.conn();
    reset(&mut c, &["m2", "m2c", "dflt", "bc"]);
    // Correlated with a table not placed alike: cannot run first.
    let (code, msg) = error_of(
        &mut c,
        "DELETE FROM m2 WHERE EXISTS (SELECT 1 FROM h3c c WHERE c.ref_id = m2.id)",
    );
    assert_eq!(code, 1235, "{msg}");
    assert!(msg.contains("correlated") && msg.contains("`m2`"), "{msg}");
    // A multi-table DELETE keeps the planner's refusal.
    let (code, msg) = error_of(
        &mut c,
        "DELETE t FROM m2 t JOIN h3c c ON c.ref_id = t.id WHERE c.cid IN (SELECT cid FROM h3c)",
    );
    assert_eq!(code, 1235, "{msg}");
    let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM m2").unwrap();
    assert_eq!(n, Some(60));
    let one: Option<u64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn explain_route_shows_the_inner_queries_of_writes_sets_and_unions() {
    let _serial = serial();
    let s = setup();
    let mut c = s.g.conn();
    let rows: Vec<(String, String, String)> = c
        .query("EXPLAIN ROUTE DELETE FROM h3 WHERE id IN (SELECT ref_id FROM m2c WHERE amount > 3)")
        .unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows[..2].iter().all(|r| r
        .2
        .starts_with("subquery 1 (IN list), run first and bound in: ")
        && r.1 == "SELECT ref_id FROM m2c WHERE amount > 3"));
    assert_eq!(rows[2].0, "(after the subqueries)");
    assert!(rows[2].1.starts_with("DELETE FROM h3"), "{rows:?}");
    // An ALL set and a UNION member's subquery show the same way.
    let rows: Vec<(String, String, String)> = c
        .query(
            "EXPLAIN ROUTE SELECT id FROM dflt WHERE k > ALL (SELECT k FROM h3 WHERE id = 7) \
             UNION SELECT id FROM dflt WHERE id IN (SELECT ref_id FROM m2c WHERE ref_id = 4)",
        )
        .unwrap();
    let merges: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(
        merges[0].starts_with("subquery 1 (ANY/SOME/ALL set), run first and bound in: "),
        "{rows:?}"
    );
    assert!(
        merges[1].starts_with("subquery 2 (IN list), run first and bound in: "),
        "{rows:?}"
    );
    assert_eq!(rows[2].0, "(after the subqueries)");
}
