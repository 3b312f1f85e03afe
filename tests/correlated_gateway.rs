//! Correlated subqueries over tables not placed alike answer as one MariaDB holding every row:
//! idgate fetches the outer table with its own conditions, the subquery's table by the outer
//! rows' values of the column it is equated to, and runs the statement over literal tables of
//! them. The same rows go into reference tables on one server and, through idgate, into `o2`
//! (orders, mod over 2 shards by id), `k3` (items, hash over 3 shards by sku, so a correlation
//! on sku pins each batch) and `rv` (reviews, mod over 3 shards by their own id, correlated by
//! order id). Also: NULL correlation keys, outer rows with none or several inner rows, an empty
//! outer set, text and prepared, the row cap's errors and EXPLAIN ROUTE.

mod common;

use common::answers::{self, error_of};
use common::join_rows::{items, labels, orders, ITEMS, LABELS, ORDERS};
use common::rng::Rng;

use mysql::prelude::Queryable;
use mysql::Value;

const MAX_ROWS: u64 = 1500;

fn tables() -> String {
    format!(
        "max_subquery_rows: {MAX_ROWS}
tables:
  o2:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  k3:
    unique: per_shard
    sharding:
      columns: [sku]
      algorithm: hash
      shards: [shard0, shard1, shard2]
  rv:
    sharding:
      columns: [rid]
      algorithm: mod
      shards: [shard0, shard1, shard2]
  many:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  labels: {{}}
"
    )
}

const REVIEWS: &str = "(rid INT PRIMARY KEY, oid INT, stars INT)";

/// Reviews of orders 1..100 (some of no order, several of one, NULL order and stars now and
/// then).
fn reviews() -> String {
    let mut r = Rng(11);
    (1..=70)
        .map(|rid| {
            let oid = if r.below(10) == 0 {
                "NULL".into()
            } else {
                (1 + r.below(100)).to_string()
            };
            let stars = if r.below(12) == 0 {
                "NULL".into()
            } else {
                r.below(6).to_string()
            };
            format!("({rid}, {oid}, {stars})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

struct Setup {
    dbs: Vec<common::MariaDb>,
    g: common::Idgate,
}

fn setup() -> &'static Setup {
    static SETUP: std::sync::OnceLock<Setup> = std::sync::OnceLock::new();
    SETUP.get_or_init(load)
}

fn load() -> Setup {
    let (dbs, g) = common::three_shards(&tables());
    let (o, i, r) = (orders(), items(), reviews());
    let mut reference = common::direct(&dbs[0]);
    for (t, cols, rows) in [
        ("ref_o", ORDERS, &o),
        ("ref_k", ITEMS, &i),
        ("ref_rv", REVIEWS, &r),
    ] {
        reference
            .query_drop(format!("CREATE TABLE {t} {cols}"))
            .unwrap();
        reference
            .query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .unwrap();
    }
    let many: String = (1..=MAX_ROWS + 100)
        .map(|id| format!("({id}, {}, 1, NULL)", id % 50))
        .collect::<Vec<_>>()
        .join(", ");
    let mut c = g.conn();
    for (t, cols, rows) in [
        ("o2", ORDERS, &o),
        ("k3", ITEMS, &i),
        ("rv", REVIEWS, &r),
        ("many", ORDERS, &many),
        ("labels", LABELS, &labels()),
    ] {
        c.query_drop(format!("CREATE TABLE {t} {cols}")).unwrap();
        c.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .unwrap();
    }
    Setup { dbs, g }
}

/// `{O}` orders, `{K}` items, `{R}` reviews; `true`: the query orders its rows itself.
const CASES: &[(&str, bool)] = &[
    // Django's `filter(Exists(OuterRef))`: reviews sharded by their own id.
    ("SELECT o.id FROM {O} o WHERE EXISTS (SELECT * FROM {R} r WHERE r.oid = o.id) ORDER BY o.id", true),
    ("SELECT o.id, o.qty FROM {O} o WHERE NOT EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id AND r.stars > 2)", false),
    // Outer conditions narrow the outer fetch; the table names as qualifiers.
    ("SELECT {O}.id FROM {O} WHERE {O}.qty > 2 AND EXISTS (SELECT 1 FROM {R} WHERE {R}.oid = {O}.id)", false),
    // Scalar: a count (0 for orders without reviews), a MAX (NULL for those).
    ("SELECT o.id, (SELECT COUNT(*) FROM {R} r WHERE r.oid = o.id) AS n FROM {O} o ORDER BY o.id", true),
    ("SELECT o.id, (SELECT MAX(r.stars) FROM {R} r WHERE r.oid = o.id AND r.stars > 1) FROM {O} o WHERE o.qty > 2", false),
    // Correlated IN / NOT IN (NULL stars make NOT IN unknown).
    ("SELECT o.id FROM {O} o WHERE o.qty IN (SELECT r.stars FROM {R} r WHERE r.oid = o.id)", false),
    ("SELECT o.id FROM {O} o WHERE o.qty NOT IN (SELECT r.stars FROM {R} r WHERE r.oid = o.id)", false),
    // Keyed on the inner table's sharding column (each batch pinned); NULL outer keys.
    ("SELECT o.id, o.sku FROM {O} o WHERE EXISTS (SELECT 1 FROM {K} i WHERE i.sku = o.sku AND i.price > 30)", false),
    ("SELECT o.id, o.sku FROM {O} o WHERE NOT EXISTS (SELECT 1 FROM {K} i WHERE i.sku = o.sku)", false),
    // An annotation in the select list; two correlations at once.
    ("SELECT o.id, EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id AND r.stars >= 3) AS good FROM {O} o WHERE o.id < 50", false),
    ("SELECT o.id FROM {O} o WHERE EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id AND r.stars = o.qty)", false),
    // Two subqueries, grouping over the outer rows, and a join outside.
    ("SELECT o.id, (SELECT COUNT(*) FROM {R} r WHERE r.oid = o.id), (SELECT MIN(i.price) FROM {K} i WHERE i.sku = o.sku) FROM {O} o ORDER BY o.id", true),
    ("SELECT o.note, COUNT(*) FROM {O} o WHERE EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id) GROUP BY o.note ORDER BY o.note", true),
    ("SELECT o.id, i.iid FROM {O} o JOIN {K} i ON i.sku = o.sku WHERE EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id)", false),
    // The default backend's table outside, a sharded one inside.
    ("SELECT l.sku, l.label FROM labels l WHERE EXISTS (SELECT 1 FROM {K} i WHERE i.sku = l.sku AND i.price > 50)", false),
    // Uncorrelated subqueries over sharded tables too: they run first and are bound in.
    ("SELECT o.id FROM {O} o WHERE o.sku IN (SELECT i.sku FROM {K} i WHERE i.price > 40) AND EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id)", false),
    ("SELECT o.id, (SELECT COUNT(*) FROM {R} r WHERE r.oid = o.id) FROM {O} o WHERE o.qty > (SELECT MIN(r.stars) FROM {R} r) ORDER BY o.id", true),
    // An empty outer set.
    ("SELECT o.id, (SELECT COUNT(*) FROM {R} r WHERE r.oid = o.id) FROM {O} o WHERE o.id < 0", false),
    ("SELECT COUNT(*) FROM {O} o WHERE o.id < 0 AND EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id)", false),
];

type Answer = Result<Vec<Vec<Option<Vec<u8>>>>, (u16, String)>;

fn run(c: &mut mysql::Conn, sql: &str) -> Answer {
    answers::run(c, sql).map(|(_, rows)| rows)
}

/// `sql` with the tables filled in: idgate's (`through`) or the reference ones.
fn fill(sql: &str, through: bool) -> String {
    let names = [
        ("{O}", "o2", "ref_o"),
        ("{K}", "k3", "ref_k"),
        ("{R}", "rv", "ref_rv"),
    ];
    let mut out = sql.to_string();
    for (k, mine, reference) in names {
        out = out.replace(k, if through { mine } else { reference });
    }
    out
}

#[test]
fn correlated_subqueries_of_tables_not_placed_alike_answer_as_one_server() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let mut failures = Vec::new();
    for (sql, ordered) in CASES {
        let want = run(&mut reference, &fill(sql, false));
        let got = run(&mut c, &fill(sql, true));
        let (mut w, mut g) = match (&want, &got) {
            (Ok(w), Ok(g)) => (w.clone(), g.clone()),
            _ => {
                failures.push(format!("{sql}\nwant {want:?}\n got {got:?}"));
                continue;
            }
        };
        assert!(!w.is_empty() || sql.contains("< 0"), "{sql}: no rows");
        if !ordered {
            w.sort();
            g.sort();
        }
        if w != g {
            failures.push(format!("{sql}\nwant {w:?}\n got {g:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A prepared statement's rows, each value as its text.
fn exec_rows(c: &mut mysql::Conn, stmt: &mysql::Statement, params: Vec<Value>) -> Answer {
    let rows: Vec<mysql::Row> = match c.exec(stmt, params) {
        Ok(r) => r,
        Err(mysql::Error::MySqlError(e)) => return Err((e.code, e.message)),
        Err(e) => panic!("{e}"),
    };
    Ok(rows
        .into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    Value::NULL => None,
                    Value::Bytes(b) => Some(b),
                    Value::Int(i) => Some(i.to_string().into_bytes()),
                    Value::UInt(u) => Some(u.to_string().into_bytes()),
                    other => Some(format!("{other:?}").into_bytes()),
                })
                .collect()
        })
        .collect())
}

const PREPARED: &[(&str, [&[i64]; 2])] = &[
    ("SELECT o.id, (SELECT COUNT(*) FROM {R} r WHERE r.oid = o.id AND r.stars > ?) AS n FROM {O} o WHERE o.qty > ? ORDER BY o.id", [&[1, 2], &[3, 0]]),
    ("SELECT o.id, o.sku FROM {O} o WHERE NOT EXISTS (SELECT 1 FROM {K} i WHERE i.sku = o.sku AND i.price > ?) ORDER BY o.id", [&[40], &[70]]),
    ("SELECT o.id FROM {O} o WHERE o.id < ? AND EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id)", [&[60], &[30]]),
    ("SELECT o.id FROM {O} o WHERE o.sku IN (SELECT i.sku FROM {K} i WHERE i.price > ?) AND NOT EXISTS (SELECT 1 FROM {R} r WHERE r.oid = o.id)", [&[40], &[20]]),
];

#[test]
fn prepared_correlated_subqueries_answer_as_one_server_in_the_binary_protocol() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let mut failures = Vec::new();
    for (sql, value_sets) in PREPARED {
        let want_stmt = reference.prep(fill(sql, false)).unwrap();
        let got_stmt = c.prep(fill(sql, true)).unwrap();
        for values in value_sets {
            let params: Vec<Value> = values.iter().map(|&v| Value::Int(v)).collect();
            let mut want = exec_rows(&mut reference, &want_stmt, params.clone());
            let mut got = exec_rows(&mut c, &got_stmt, params);
            assert!(
                want.as_ref().is_ok_and(|w| !w.is_empty()),
                "{sql} {values:?}: {want:?}"
            );
            if !sql.contains("ORDER BY") {
                for rows in [&mut want, &mut got].into_iter().flatten() {
                    rows.sort();
                }
            }
            if want != got {
                failures.push(format!("{sql} {values:?}\nwant {want:?}\n got {got:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_row_cap_names_the_table_and_the_session_goes_on() {
    let s = setup();
    let mut c = s.g.conn();
    // The outer table past the cap.
    let (code, msg) = error_of(
        &mut c,
        "SELECT m.id FROM many m WHERE EXISTS (SELECT 1 FROM k3 i WHERE i.sku = m.sku)",
    );
    assert_eq!(code, 1235, "{msg}");
    assert!(
        msg.contains(&format!("max_subquery_rows ({MAX_ROWS}) rows of `many`"))
            && msg.contains("correlated subqueries"),
        "{msg}"
    );
    // The subquery's table past the cap: every row of `many` has qty 1.
    let (code, msg) = error_of(
        &mut c,
        "SELECT o.id FROM o2 o WHERE o.qty = 1 AND EXISTS (SELECT 1 FROM many m WHERE m.qty = o.qty)",
    );
    assert_eq!(code, 1235, "{msg}");
    assert!(
        msg.contains(&format!("max_subquery_rows ({MAX_ROWS}) rows of `many`")),
        "{msg}"
    );
    // Its own conditions narrow the inner fetch: under the cap, answered.
    let n: Option<u64> = c
        .query_first(
            "SELECT COUNT(*) FROM k3 i WHERE EXISTS (SELECT 1 FROM many m WHERE m.sku = i.sku \
             AND m.id <= 60)",
        )
        .unwrap();
    let mut reference = common::direct(&s.dbs[0]);
    let want: Option<u64> = reference
        .query_first(
            "SELECT COUNT(*) FROM ref_k i WHERE EXISTS (SELECT 1 FROM seq_1_to_60 m WHERE \
             m.seq % 50 = i.sku)",
        )
        .unwrap();
    assert!(n.is_some_and(|n| n > 0), "{n:?}");
    assert_eq!(n, want);
    // More outer rows than one batch (row-wise: batch by batch), under the cap.
    let mut got: Vec<u64> = c
        .query(
            "SELECT m.id FROM many m WHERE m.id <= 1200 AND EXISTS (SELECT 1 FROM k3 i WHERE \
             i.sku = m.sku AND i.price > 50)",
        )
        .unwrap();
    let want: Vec<u64> = reference
        .query(
            "SELECT m.seq FROM seq_1_to_1200 m WHERE EXISTS (SELECT 1 FROM ref_k i WHERE \
             i.sku = m.seq % 50 AND i.price > 50) ORDER BY m.seq",
        )
        .unwrap();
    got.sort();
    assert!(want.len() > 500, "{}", want.len());
    assert_eq!(got, want);
    let one: Option<u64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn explain_route_shows_the_correlated_fetches() {
    let s = setup();
    let mut c = s.g.conn();
    let rows: Vec<(String, String, String)> = c
        .query(
            "EXPLAIN ROUTE SELECT o.id FROM o2 o WHERE o.qty > 2 AND EXISTS \
             (SELECT 1 FROM k3 i WHERE i.sku = o.sku AND i.price > 5)",
        )
        .unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(
        rows[0].1.contains("WHERE (o.qty > 2)") && rows[0].2.contains("step 1"),
        "{rows:?}"
    );
    assert!(
        rows[1].0.contains("shards owning")
            && rows[1].1.contains("`i`.`sku` IN (")
            && rows[1].1.contains("i.price > 5"),
        "{rows:?}"
    );
    assert_eq!(rows[2].0, "shard0", "{rows:?}");
    assert!(
        rows[2].1.contains(
            "FROM (<rows of `o`>) o WHERE o.qty > 2 AND EXISTS (SELECT 1 FROM (<rows of `i`>) i"
        ),
        "{rows:?}"
    );
}

#[test]
fn explain_route_shows_subqueries_run_first_then_the_correlated_fetches() {
    let s = setup();
    let mut c = s.g.conn();
    let rows: Vec<(String, String, String)> = c
        .query(
            "EXPLAIN ROUTE SELECT o.id FROM o2 o WHERE o.sku IN (SELECT i.sku FROM k3 i WHERE \
             i.price > 40) AND EXISTS (SELECT 1 FROM rv r WHERE r.oid = o.id)",
        )
        .unwrap();
    assert!(
        rows.first()
            .is_some_and(|r| r.2.contains("subquery 1 (IN list), run first")),
        "{rows:?}"
    );
    assert!(
        !rows.iter().any(|r| r.2.contains("subquery 2")),
        "the correlated one is not run first: {rows:?}"
    );
    let last = rows.last().unwrap();
    assert!(
        last.1.contains("IN (SELECT 'rows of subquery 1')")
            && last.1.contains("EXISTS (SELECT 1 FROM (<rows of `r`>) r")
            && last.2.contains("join step 3"),
        "{rows:?}"
    );
}

#[test]
fn correlations_idgate_cannot_key_keep_their_refusal() {
    let s = setup();
    let mut c = s.g.conn();
    for sql in [
        // No equality with the outer query.
        "SELECT o.id FROM o2 o WHERE EXISTS (SELECT 1 FROM rv r WHERE r.oid > o.id)",
        // The correlation inside OR.
        "SELECT o.id FROM o2 o WHERE EXISTS (SELECT 1 FROM rv r WHERE r.oid = o.id OR r.stars = 5)",
    ] {
        let (code, msg) = error_of(&mut c, sql);
        assert_eq!(code, 1235, "{sql}: {msg}");
        assert!(msg.contains("refers to `o`"), "{sql}: {msg}");
    }
    let one: Option<u64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

/// Joins over derived tables: the derived table's query runs first, then the join.
const DERIVED: &[(&str, bool)] = &[
    ("SELECT o.id, t.mp FROM {O} o JOIN (SELECT sku, MAX(price) AS mp FROM {K} GROUP BY sku) t ON t.sku = o.sku ORDER BY o.id", true),
    ("SELECT o.id, t.n FROM {O} o LEFT JOIN (SELECT r.oid, COUNT(*) AS n FROM {R} r GROUP BY r.oid) t ON t.oid = o.id", false),
    ("SELECT o.id, i.iid, t.n FROM {O} o JOIN {K} i ON i.sku = o.sku JOIN (SELECT r.oid, COUNT(*) AS n FROM {R} r GROUP BY r.oid) t ON t.oid = o.id", false),
    ("SELECT t.oid, i.iid FROM (SELECT r.oid, MAX(r.stars) AS s FROM {R} r GROUP BY r.oid) t JOIN {O} o ON o.id = t.oid JOIN {K} i ON i.sku = o.sku WHERE t.s > 2", false),
    ("SELECT o.note, SUM(t.mp) FROM {O} o JOIN {K} i ON i.sku = o.sku JOIN (SELECT sku, MAX(price) AS mp FROM {K} GROUP BY sku) t ON t.sku = i.sku GROUP BY o.note ORDER BY o.note", true),
    // NULL keys in the derived rows (reviews without an order), an outer join keeping orders
    // the derived table lacks, and an empty derived table.
    ("SELECT o.id, i.iid, t.s FROM {O} o JOIN {K} i ON i.sku = o.sku LEFT JOIN (SELECT r.oid, SUM(r.stars) AS s FROM {R} r GROUP BY r.oid) t ON t.oid = o.id WHERE o.qty < 4", false),
    ("SELECT o.id, i.iid, t.n FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku LEFT JOIN (SELECT r.oid, COUNT(*) AS n FROM {R} r WHERE r.stars > 100 GROUP BY r.oid) t ON t.oid = o.id WHERE o.id < 20", false),
];

#[test]
fn joins_over_derived_tables_answer_as_one_server() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let mut failures = Vec::new();
    for (sql, ordered) in DERIVED {
        let want = run(&mut reference, &fill(sql, false));
        let got = run(&mut c, &fill(sql, true));
        let (mut w, mut g) = match (&want, &got) {
            (Ok(w), Ok(g)) => (w.clone(), g.clone()),
            _ => {
                failures.push(format!("{sql}\nwant {want:?}\n got {got:?}"));
                continue;
            }
        };
        assert!(!w.is_empty(), "{sql}: no rows");
        if !ordered {
            w.sort();
            g.sort();
        }
        if w != g {
            failures.push(format!("{sql}\nwant {w:?}\n got {g:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn prepared_joins_over_derived_tables_and_their_plan() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let sql = "SELECT o.id, i.iid, t.mp FROM {O} o JOIN {K} i ON i.sku = o.sku JOIN (SELECT sku, \
               MAX(price) AS mp FROM {K} WHERE price > ? GROUP BY sku) t ON t.sku = o.sku WHERE \
               o.qty > ? ORDER BY o.id, i.iid";
    let want_stmt = reference.prep(fill(sql, false)).unwrap();
    let got_stmt = c.prep(fill(sql, true)).unwrap();
    for values in [[20, 1], [60, 3]] {
        let params: Vec<Value> = values.iter().map(|&v| Value::Int(v)).collect();
        let want = exec_rows(&mut reference, &want_stmt, params.clone());
        let got = exec_rows(&mut c, &got_stmt, params);
        assert!(want.as_ref().is_ok_and(|w| !w.is_empty()), "{want:?}");
        assert_eq!(got, want, "{values:?}");
    }
    // The derived table's rows drive (computed first, on the shards its query reaches), the
    // orders are fetched by its `oid` values on the shards owning them, then the items.
    let rows: Vec<(String, String, String)> = c
        .query(
            "EXPLAIN ROUTE SELECT o.id, i.iid FROM o2 o JOIN k3 i ON i.sku = o.sku JOIN (SELECT \
             r.oid, COUNT(*) AS n FROM rv r GROUP BY r.oid) t ON t.oid = o.id WHERE t.n > 1",
        )
        .unwrap();
    assert!(
        rows.iter().any(|r| r.2.contains("derived table")),
        "{rows:?}"
    );
    let join: Vec<_> = rows.iter().filter(|r| r.2.contains("join step")).collect();
    assert_eq!(join.len(), 4, "{rows:?}");
    assert!(join[0].2.contains("rows of `t` (driving)"), "{rows:?}");
    assert!(
        join[1].0.contains("shards owning") && join[1].1.contains("`o`.`id` IN ("),
        "{rows:?}"
    );
    // A derived table with a column list keeps a refusal that says so.
    let (code, msg) = error_of(
        &mut c,
        "SELECT o.id FROM o2 o JOIN k3 i ON i.sku = o.sku JOIN (SELECT 1, 2) t(a, b) ON t.a = o.id",
    );
    assert_eq!(code, 1235, "{msg}");
    assert!(msg.contains("without a column list"), "{msg}");
}
