//! Joins of tables not placed alike (sharded differently, joined off their sharding columns, or
//! a sharded table with one on the default backend) answer as one MariaDB holding every row:
//! idgate fetches each side and evaluates the statement over literal tables of their rows. The
//! same rows go into reference tables on one server and, through idgate, into `o2` (mod over 2
//! shards by id) and `k3` (hash over 3 shards by sku); every query runs both ways. Also: the row
//! cap's error with the session going on, EXPLAIN ROUTE's plan, and prepared joins (rows in the
//! binary protocol). Joins of three and four tables add `rv` (reviews, mod over shards 1-2 by
//! their own id, joined by order id) and `cat` (broadcast); `big` (1,300 orders) and `bigi`
//! (two items each, 2,600 rows, more than the row cap) run a row-wise join batch by batch.

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
  many:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  labels: {{}}
  rv:
    sharding:
      columns: [rid]
      algorithm: mod
      shards: [shard1, shard2]
  cat:
    broadcast: true
  big:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  bigi:
    sharding:
      columns: [iid]
      algorithm: hash
      shards: [shard0, shard1, shard2]
"
    )
}

const REVIEWS: &str = "(rid INT PRIMARY KEY, oid INT, stars INT)";
const CATS: &str = "(sku INT, cat VARCHAR(10))";
const BIG_ITEMS: &str = "(iid INT PRIMARY KEY, bid INT, v INT)";
/// Rows of `big`: more than two batches of driving rows.
const BIG: u32 = 1300;

/// Reviews of orders 1..100 (some of no order, several of one, NULL now and then).
fn reviews() -> String {
    let mut r = Rng(11);
    (1..=70)
        .map(|rid| {
            let oid = if r.below(10) == 0 {
                "NULL".into()
            } else {
                (1 + r.below(100)).to_string()
            };
            format!("({rid}, {oid}, {})", r.below(5))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A category for most skus, two for some.
fn cats() -> String {
    (5..=45)
        .filter(|s| s % 7 != 0)
        .flat_map(|s| {
            let mut v = vec![format!("({s}, 'c{}')", s % 3)];
            if s % 5 == 0 {
                v.push(format!("({s}, 'x{}')", s % 2));
            }
            v
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn big() -> String {
    (1..=BIG)
        .map(|id| format!("({id}, {}, {}, NULL)", id % 50, id % 4))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Two items of every big order (`bid`), by ids unrelated to its placement.
fn big_items() -> String {
    (1..=2 * BIG)
        .map(|iid| format!("({iid}, {}, {})", (iid * 7) % BIG + 1, iid % 9))
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
    let (o, i, l) = (orders(), items(), labels());
    let (r, b, bi) = (reviews(), big(), big_items());
    // The reference tables sit on the default backend, where idgate's `labels` lives too (and
    // the broadcast `cat`, on every backend).
    let mut reference = common::direct(&dbs[0]);
    for (t, cols, rows) in [
        ("ref_o", ORDERS, &o),
        ("ref_k", ITEMS, &i),
        ("ref_rv", REVIEWS, &r),
        ("ref_big", ORDERS, &b),
        ("ref_bigi", BIG_ITEMS, &bi),
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
        ("labels", LABELS, &l),
        ("many", ORDERS, &many),
        ("rv", REVIEWS, &r),
        ("cat", CATS, &cats()),
        ("big", ORDERS, &b),
        ("bigi", BIG_ITEMS, &bi),
    ] {
        c.query_drop(format!("CREATE TABLE {t} {cols}")).unwrap();
        c.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .unwrap();
    }
    Setup { dbs, g }
}

/// `{O}` the orders, `{K}` the items, `{L}` the labels (configured, on the default backend only); `true`: the
/// query orders its rows itself.
const CASES: &[(&str, bool)] = &[
    // INNER, on a column that is neither side's sharding column for `o2`.
    ("SELECT o.id, o.sku, i.iid, i.name FROM {O} o JOIN {K} i ON i.sku = o.sku", false),
    ("SELECT o.id, i.iid FROM {O} o INNER JOIN {K} i ON o.sku = i.sku WHERE o.qty > 2 AND i.price > 20 ORDER BY o.id, i.iid", true),
    ("SELECT o.id, i.iid FROM {O} o JOIN {K} i ON o.sku = i.sku WHERE o.qty + i.price > 30 OR o.note IS NULL ORDER BY i.iid DESC, o.id LIMIT 7", true),
    ("SELECT o.id, i.iid FROM {O} o JOIN {K} i ON o.sku = i.sku ORDER BY o.id, i.iid LIMIT 5, 10", true),
    // LEFT: orders without items (and NULL skus) keep their row.
    ("SELECT o.id, i.iid, i.name FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku", false),
    ("SELECT o.id FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku AND i.price > 50 WHERE i.iid IS NULL ORDER BY o.id", true),
    ("SELECT o.id, i.iid FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku AND o.qty > 3 WHERE o.id < 40", false),
    // RIGHT: items drive.
    ("SELECT i.iid, o.id FROM {O} o RIGHT JOIN {K} i ON o.sku = i.sku WHERE i.iid < 50", false),
    // Grouping and aggregates over the joined rows; COUNT(*).
    ("SELECT COUNT(*) FROM {O} o JOIN {K} i ON i.sku = o.sku", false),
    ("SELECT o.sku, COUNT(*), SUM(i.price), MAX(i.name) FROM {O} o JOIN {K} i ON i.sku = o.sku GROUP BY o.sku HAVING COUNT(*) > 1 ORDER BY o.sku", true),
    ("SELECT o.note, COUNT(i.iid), AVG(o.qty) FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku GROUP BY o.note ORDER BY o.note", true),
    // A comma join, keys in WHERE; the table names as qualifiers.
    ("SELECT {O}.id, {K}.iid FROM {O}, {K} WHERE {O}.sku = {K}.sku AND {K}.name = 'item3'", false),
    // No equality to batch on: the inner side is read whole.
    ("SELECT o.id, i.iid FROM {O} o JOIN {K} i ON i.sku > o.sku + 30 WHERE o.id < 30", false),
    // With the default backend's table, either way round.
    ("SELECT o.id, l.label FROM {O} o JOIN {L} l ON l.sku = o.sku WHERE o.qty < 4 ORDER BY o.id", true),
    ("SELECT l.sku, COUNT(i.iid) FROM {L} l LEFT JOIN {K} i ON i.sku = l.sku GROUP BY l.sku ORDER BY l.sku", true),
    // Nothing on one side.
    ("SELECT o.id, i.iid FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku WHERE o.id < 0", false),
    ("SELECT o.id, i.iid FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku AND i.price < 0 WHERE o.id < 5", false),
];

type Answer = Result<Vec<Vec<Option<Vec<u8>>>>, (u16, String)>;

/// The rows `sql` gives (the literal tables' column definitions are not compared).
fn run(c: &mut mysql::Conn, sql: &str) -> Answer {
    answers::run(c, sql).map(|(_, rows)| rows)
}

/// `sql` with the tables filled in: idgate's (`through`) or the reference ones.
fn fill(sql: &str, through: bool) -> String {
    let names: [(&str, &str, &str); 5] = [
        ("{O}", "o2", "ref_o"),
        ("{K}", "k3", "ref_k"),
        ("{R}", "rv", "ref_rv"),
        ("{B}", "big", "ref_big"),
        ("{BI}", "bigi", "ref_bigi"),
    ];
    let mut out = sql.replace("{L}", "labels");
    for (k, mine, reference) in names {
        out = out.replace(k, if through { mine } else { reference });
    }
    out
}

/// Runs every case through idgate and on the reference server; the differences.
fn differences(cases: &[(&str, bool)]) -> Vec<String> {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let mut failures = Vec::new();
    for (sql, ordered) in cases {
        let want = run(&mut reference, &fill(sql, false));
        let got = run(&mut c, &fill(sql, true));
        let (mut w, mut g) = match (&want, &got) {
            (Ok(w), Ok(g)) => (w.clone(), g.clone()),
            _ => {
                failures.push(format!("{sql}\nwant {want:?}\n got {got:?}"));
                continue;
            }
        };
        assert!(
            !w.is_empty() || sql.contains("< 0"),
            "{sql}: no rows to compare"
        );
        if !ordered {
            w.sort();
            g.sort();
        }
        if w != g {
            failures.push(format!("{sql}\nwant {w:?}\n got {g:?}"));
        }
    }
    failures
}

fn assert_same(cases: &[(&str, bool)]) {
    let failures = differences(cases);
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn joins_of_tables_not_placed_alike_answer_as_one_server() {
    assert_same(CASES);
}

/// Joins of three and four tables: `{R}` reviews (by order id), `cat` broadcast.
const CASES_MANY: &[(&str, bool)] = &[
    // INNER chains: each table fetched by the values of the one before.
    ("SELECT o.id, i.iid, l.label FROM {O} o JOIN {K} i ON i.sku = o.sku JOIN {L} l ON l.sku = i.sku", false),
    ("SELECT o.id, i.iid, l.label FROM {O} o JOIN {K} i ON i.sku = o.sku JOIN {L} l ON l.sku = i.sku WHERE o.qty > 1 AND l.label <> 'L2' ORDER BY o.id, i.iid", true),
    ("SELECT o.id, r.rid, r.stars FROM {R} r JOIN {O} o ON o.id = r.oid JOIN {K} i ON i.sku = o.sku WHERE r.stars = 3", false),
    // LEFT chains: NULL keys, orders without items, items without labels.
    ("SELECT o.id, i.iid, l.label FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku LEFT JOIN {L} l ON l.sku = i.sku AND l.label <> 'L1'", false),
    ("SELECT o.id FROM {O} o LEFT JOIN {R} r ON r.oid = o.id LEFT JOIN {K} i ON i.sku = o.sku WHERE r.rid IS NULL AND i.iid IS NOT NULL ORDER BY o.id", true),
    // A mix of inner and outer; a RIGHT join drives from its right table.
    ("SELECT o.id, r.rid, i.iid FROM {O} o JOIN {R} r ON r.oid = o.id LEFT JOIN {K} i ON i.sku = o.sku AND i.price > 20 WHERE r.stars >= 2", false),
    ("SELECT i.iid, o.id, r.rid FROM {O} o JOIN {R} r ON r.oid = o.id RIGHT JOIN {K} i ON i.sku = o.sku WHERE i.iid < 60", false),
    ("SELECT l.sku, o.id, i.iid FROM {O} o JOIN {K} i ON i.sku = o.sku AND o.qty > 0 RIGHT JOIN {L} l ON l.sku = i.sku WHERE l.sku < 30 AND o.note IS NULL", false),
    // The middle table broadcast, with duplicate skus.
    ("SELECT o.id, c.cat, i.iid FROM {O} o JOIN cat c ON c.sku = o.sku JOIN {K} i ON i.sku = c.sku WHERE c.cat <> 'c1'", false),
    ("SELECT c.cat, COUNT(*), COUNT(i.iid) FROM {O} o JOIN cat c ON c.sku = o.sku LEFT JOIN {K} i ON i.sku = c.sku GROUP BY c.cat ORDER BY c.cat", true),
    // Four tables, one on the default backend.
    ("SELECT o.id, i.iid, r.rid, l.label FROM {O} o JOIN {K} i ON i.sku = o.sku JOIN {R} r ON r.oid = o.id LEFT JOIN {L} l ON l.sku = i.sku", false),
    ("SELECT l.label, COUNT(*), SUM(r.stars), MAX(i.name) FROM {O} o JOIN {K} i ON i.sku = o.sku JOIN {R} r ON r.oid = o.id JOIN {L} l ON l.sku = o.sku GROUP BY l.label ORDER BY l.label", true),
    ("SELECT o.id, r.rid, c.cat, i.iid FROM {R} r LEFT JOIN {O} o ON o.id = r.oid LEFT JOIN cat c ON c.sku = o.sku LEFT JOIN {K} i ON i.sku = c.sku AND i.price < 50 ORDER BY r.rid, c.cat, i.iid", true),
    // Comma joins with keys in WHERE; a table tied to none (read whole).
    ("SELECT o.id, i.iid, r.rid FROM {O} o, {K} i, {R} r WHERE o.sku = i.sku AND r.oid = o.id AND r.stars = 3", false),
    ("SELECT o.id, r.rid, l.label FROM {O} o JOIN {R} r ON r.oid = o.id CROSS JOIN {L} l WHERE o.id < 20 AND l.sku < 6", false),
    // Nothing matches somewhere.
    ("SELECT o.id, i.iid, r.rid FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku LEFT JOIN {R} r ON r.oid = o.id WHERE o.id < 0", false),
    ("SELECT o.id, i.iid, r.rid FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku AND i.price < 0 LEFT JOIN {R} r ON r.oid = o.id AND r.stars > 10 WHERE o.id < 8", false),
    ("SELECT o.id, i.iid, r.rid FROM {O} o JOIN {K} i ON i.sku = o.sku JOIN {R} r ON r.oid = o.id AND r.stars < 0", false),
];

#[test]
fn joins_of_three_and_four_tables_answer_as_one_server() {
    let failures = differences(CASES_MANY);
    // The cases without rows are meant so; the others must have rows to compare.
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A row-wise join of more driving rows than one batch: the batches' rows together are the
/// join's rows; the further table holds more rows than the cap, but no batch needs that many.
#[test]
fn a_row_wise_join_runs_batch_by_batch_under_the_cap() {
    assert_same(&[
        ("SELECT b.id, b.sku, x.iid, x.v FROM {B} b JOIN {BI} x ON x.bid = b.id", false),
        ("SELECT b.id, x.iid, i.iid FROM {B} b LEFT JOIN {BI} x ON x.bid = b.id AND x.v > 2 LEFT JOIN {K} i ON i.sku = b.sku AND i.price > 80", false),
    ]);
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let n = run(
        &mut c,
        &fill(
            "SELECT b.id, x.iid FROM {B} b JOIN {BI} x ON x.bid = b.id",
            true,
        ),
    )
    .unwrap()
    .len();
    assert_eq!(n, 2 * BIG as usize);
    // Prepared: the same rows in the binary protocol.
    let sql =
        "SELECT b.id, b.qty, x.iid, x.v FROM {B} b JOIN {BI} x ON x.bid = b.id WHERE b.qty <> ?";
    let got_stmt = c.prep(fill(sql, true)).unwrap();
    let want_stmt = reference.prep(fill(sql, false)).unwrap();
    let mut got = exec_rows(&mut c, &got_stmt, vec![Value::Int(1)]).unwrap();
    let mut want = exec_rows(&mut reference, &want_stmt, vec![Value::Int(1)]).unwrap();
    assert!(want.len() > 1500, "{}", want.len());
    got.sort();
    want.sort();
    assert!(got == want, "{} rows, want {}", got.len(), want.len());
    // Ordered, the whole further table is needed at once: past the cap, naming it.
    let (code, msg) = error_of(
        &mut c,
        "SELECT b.id, x.iid FROM big b JOIN bigi x ON x.bid = b.id ORDER BY x.iid",
    );
    assert_eq!(code, 1235, "{msg}");
    assert!(
        msg.contains(&format!("max_subquery_rows ({MAX_ROWS}) rows of `bigi`")),
        "{msg}"
    );
    let one: Option<u64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn the_row_cap_gives_its_error_and_the_session_goes_on() {
    let s = setup();
    let mut c = s.g.conn();
    let (code, msg) = error_of(
        &mut c,
        "SELECT COUNT(*) FROM many m JOIN k3 i ON i.sku = m.sku",
    );
    assert_eq!(code, 1235, "{msg}");
    assert!(
        msg.contains(&format!("max_subquery_rows ({MAX_ROWS})")) && msg.contains("`many`"),
        "{msg}"
    );
    // Its own conditions narrow what is fetched: under the cap, answered.
    let n: Option<u64> = c
        .query_first("SELECT COUNT(*) FROM many m JOIN k3 i ON i.sku = m.sku WHERE m.id <= 60")
        .unwrap();
    let mut reference = common::direct(&s.dbs[0]);
    let want: Option<u64> = reference
        .query_first(
            "SELECT COUNT(*) FROM (SELECT seq % 50 AS sku FROM seq_1_to_60) m \
             JOIN ref_k i ON i.sku = m.sku",
        )
        .unwrap();
    assert_eq!(n, want);
    // Three tables: the cap names the table past it, here the third (read whole, tied to
    // none), not the driving one.
    let (code, msg) = error_of(
        &mut c,
        "SELECT COUNT(*) FROM o2 o JOIN k3 i ON i.sku = o.sku CROSS JOIN many m WHERE o.id < 5",
    );
    assert_eq!(code, 1235, "{msg}");
    assert!(
        msg.contains(&format!("max_subquery_rows ({MAX_ROWS}) rows of `many`"))
            && msg.contains("`o2`, `k3` and `many`"),
        "{msg}"
    );
    let one: Option<u64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn explain_route_shows_every_step_of_a_join_of_many_tables() {
    let s = setup();
    let mut c = s.g.conn();
    let rows: Vec<(String, String, String)> = c
        .query(
            "EXPLAIN ROUTE SELECT o.id, i.iid, r.rid, l.label FROM rv r JOIN o2 o ON o.id = r.oid \
             JOIN k3 i ON i.sku = o.sku LEFT JOIN labels l ON l.sku = i.sku WHERE o.id = 3 \
             ORDER BY r.rid",
        )
        .unwrap();
    assert_eq!(rows.len(), 5, "{rows:?}");
    // The orders drive (pinned to one shard by `o.id = 3`), then reviews by order id, items
    // by sku (pinned to their shards), labels by the items' skus; then the final statement.
    assert_eq!(rows[0].0, "shard1", "{rows:?}");
    assert!(
        rows[0].2.contains("step 1: rows of `o` (driving)"),
        "{rows:?}"
    );
    let step = |n: usize, q: &str| {
        rows.iter()
            .position(|r| r.2.contains(&format!("step {n}: rows of `{q}`")))
            .unwrap_or_else(|| panic!("step {n} of {q}: {rows:?}"))
    };
    let i = step(2, "i");
    assert!(rows[i].0.contains("shards owning"), "{rows:?}");
    assert!(rows[i].1.contains("`i`.`sku` IN ("), "{rows:?}");
    let r = step(3, "r");
    assert!(rows[r].1.contains("`r`.`oid` IN ("), "{rows:?}");
    assert!(rows[r].2.contains("`o`.`id` values"), "{rows:?}");
    let l = step(4, "l");
    assert!(rows[l].1.contains("`l`.`sku` IN ("), "{rows:?}");
    assert!(rows[l].2.contains("`i`.`sku` values"), "{rows:?}");
    assert!(
        rows[4]
            .1
            .contains("FROM (<rows of `r`>) r JOIN (<rows of `o`>) o")
            && rows[4].2.contains("step 5"),
        "{rows:?}"
    );
    // A row-wise join says it runs batch by batch.
    let rows: Vec<(String, String, String)> = c
        .query("EXPLAIN ROUTE SELECT b.id, x.iid FROM big b JOIN bigi x ON x.bid = b.id")
        .unwrap();
    assert!(rows[0].2.contains("in batches of 500"), "{rows:?}");
    assert!(rows[2].2.contains("batch by batch"), "{rows:?}");
}

#[test]
fn explain_route_shows_the_join_steps() {
    let s = setup();
    let mut c = s.g.conn();
    let rows: Vec<(String, String, String)> = c
        .query(
            "EXPLAIN ROUTE SELECT o.id, i.name FROM o2 o JOIN k3 i ON i.sku = o.sku WHERE o.id = 4",
        )
        .unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0].0, "shard0", "{rows:?}");
    assert!(
        rows[0].1.contains("WHERE (o.id = 4)") && rows[0].2.contains("step 1"),
        "{rows:?}"
    );
    assert!(
        rows[1].0.contains("shards owning") && rows[1].1.contains("`i`.`sku` IN ("),
        "{rows:?}"
    );
    assert_eq!(rows[2].0, "shard0", "{rows:?}");
    assert!(
        rows[2]
            .1
            .contains("FROM (<rows of `o`>) o JOIN (<rows of `i`>) i"),
        "{rows:?}"
    );
}

#[test]
fn inside_a_transaction_the_join_reads_its_own_writes() {
    let s = setup();
    let mut c = s.g.conn();
    c.query_drop("BEGIN").unwrap();
    c.query_drop("UPDATE k3 SET name = 'fresh' WHERE iid = 1")
        .unwrap();
    let n: Option<u64> = c
        .query_first(
            "SELECT COUNT(*) FROM o2 o RIGHT JOIN k3 i ON i.sku = o.sku WHERE i.name = 'fresh'",
        )
        .unwrap();
    assert!(n.is_some_and(|n| n >= 1), "{n:?}");
    c.query_drop("ROLLBACK").unwrap();
    let n: Option<u64> = c
        .query_first(
            "SELECT COUNT(*) FROM o2 o RIGHT JOIN k3 i ON i.sku = o.sku WHERE i.name = 'fresh'",
        )
        .unwrap();
    assert_eq!(n, Some(0));
}

/// A prepared statement's rows as the binary protocol gave them, each value as its text (the
/// literal tables' column types are not the base tables': integers may come signed or not).
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

/// Prepared joins, each executed with two value sets: `?` in WHERE, ON, LIMIT and a subquery.
const PREPARED: &[(&str, [&[i64]; 2])] = &[
    ("SELECT o.id, i.iid, i.name, i.price FROM {O} o JOIN {K} i ON i.sku = o.sku WHERE o.qty > ? ORDER BY o.id, i.iid LIMIT ?", [&[2, 10], &[0, 25]]),
    ("SELECT o.id, i.iid FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku AND i.price > ? WHERE o.id < ? ORDER BY o.id, i.iid", [&[50, 30], &[10, 60]]),
    ("SELECT o.sku, COUNT(*), SUM(i.price) FROM {O} o JOIN {K} i ON i.sku = o.sku WHERE i.iid % 7 = ? GROUP BY o.sku ORDER BY o.sku", [&[3], &[5]]),
    ("SELECT o.id, l.label FROM {O} o JOIN {L} l ON l.sku = o.sku WHERE o.qty < ? ORDER BY o.id LIMIT ?, ?", [&[4, 2, 5], &[2, 0, 3]]),
    ("SELECT o.id, i.iid FROM {O} o JOIN {K} i ON i.sku = o.sku WHERE o.sku IN (SELECT sku FROM {K} WHERE price > ?) ORDER BY o.id, i.iid", [&[60], &[80]]),
];

/// Prepared joins of three and four tables, ordered and row-wise (a prepared statement is
/// prepared on the default backend first, so its tables are ones it holds too).
const PREPARED_MANY: &[(&str, [&[i64]; 2])] = &[
    ("SELECT o.id, i.iid, l.label FROM {O} o JOIN {K} i ON i.sku = o.sku LEFT JOIN {L} l ON l.sku = i.sku WHERE o.qty > ? ORDER BY o.id, i.iid LIMIT ?", [&[2, 10], &[0, 40]]),
    ("SELECT o.id, i.iid, c.cat FROM {O} o LEFT JOIN {K} i ON i.sku = o.sku AND i.price > ? LEFT JOIN cat c ON c.sku = o.sku WHERE o.id < ?", [&[50, 30], &[10, 60]]),
    ("SELECT o.id, c.cat, i.iid, l.label FROM {O} o JOIN cat c ON c.sku = o.sku JOIN {K} i ON i.sku = c.sku LEFT JOIN {L} l ON l.sku = i.sku WHERE o.qty >= ?", [&[2], &[0]]),
    ("SELECT c.cat, COUNT(*), SUM(o.qty), MAX(i.name) FROM {K} i JOIN {O} o ON o.sku = i.sku JOIN cat c ON c.sku = o.sku WHERE o.qty < ? GROUP BY c.cat ORDER BY c.cat", [&[3], &[6]]),
];

#[test]
fn prepared_joins_answer_as_one_server_in_the_binary_protocol() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let mut failures = Vec::new();
    for (sql, value_sets) in PREPARED.iter().chain(PREPARED_MANY) {
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
                // Row-wise joins run batch by batch: the same rows, in no promised order.
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
    // Past the row cap the execution gets the text query's error, and the statement and the
    // session go on.
    let stmt = c
        .prep("SELECT COUNT(*) FROM many m JOIN k3 i ON i.sku = m.sku WHERE m.id <= ?")
        .unwrap();
    match c.exec_first::<u64, _, _>(&stmt, (MAX_ROWS + 50,)) {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!(e.code, 1235, "{}", e.message);
            assert!(
                e.message.contains("max_subquery_rows") && e.message.contains("`many`"),
                "{}",
                e.message
            );
        }
        other => panic!("{other:?}"),
    }
    let n: Option<u64> = c.exec_first(&stmt, (60,)).unwrap();
    let want: Option<u64> = c
        .query_first("SELECT COUNT(*) FROM many m JOIN k3 i ON i.sku = m.sku WHERE m.id <= 60")
        .unwrap();
    assert!(n.is_some_and(|n| n > 0), "{n:?}");
    assert_eq!(n, want);
}
