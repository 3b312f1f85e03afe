//! Plans kept by statement shape, against two real MariaDB shards: statements of one shape with
//! other literals are answered from the kept plan (the admin /metrics counters say so) exactly
//! as a fresh plan answers them; a LIMIT the merge reads is never taken from another statement;
//! `plan_cache_size: 0` keeps nothing and answers the same; the pages of a paginator bind their
//! LIMIT and OFFSET to one kept plan.

mod common;

use common::idgate_proc::config_for;
use common::prometheus::{must_sample, scrape};
use common::{free_port, start_db, Idgate};
use mysql::prelude::Queryable;

/// Two shards of `orders` (id mod 2) with 40 rows, behind idgate with `extra` config.
fn setup(extra: &str) -> (Vec<common::MariaDb>, Idgate, u16) {
    let dbs = vec![start_db(), start_db()];
    let admin = free_port().unwrap();
    let tables = format!(
        "{}admin:\n  listen: 127.0.0.1:{admin}\n{extra}",
        common::ORDERS_MOD_2
    );
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], &tables)
    });
    let mut c = g.conn();
    c.query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, k INT, c VARCHAR(20), KEY (k))")
        .unwrap();
    let rows: Vec<String> = (1..=40)
        .map(|i| format!("({i}, {}, 'c{}')", (i * 7) % 13, i % 3))
        .collect();
    c.query_drop(format!(
        "INSERT INTO orders (id, k, c) VALUES {}",
        rows.join(", ")
    ))
    .unwrap();
    (dbs, g, admin)
}

/// What one server holding every row answers for the scatter queries, computed here.
fn expected_top(k_min: i64, c: &str, limit: usize) -> Vec<(i64, i64)> {
    let mut rows: Vec<(i64, i64)> = (1..=40i64)
        .filter(|i| (i * 7) % 13 >= k_min && format!("c{}", i % 3) != c)
        .map(|i| ((i * 7) % 13, i))
        .collect();
    rows.sort();
    rows.truncate(limit);
    rows.into_iter().map(|(k, id)| (id, k)).collect()
}

fn scatter(c: &mut mysql::Conn, k_min: i64, not_c: &str, limit: usize) -> Vec<(i64, i64)> {
    c.query(format!(
        "SELECT id, k FROM orders WHERE k >= {k_min} AND c <> '{not_c}' ORDER BY k, id LIMIT {limit}"
    ))
    .unwrap()
}

#[test]
fn one_shape_is_planned_once_and_bound_per_statement() {
    let (_dbs, g, admin) = setup("");
    let mut c = g.conn();
    let m0 = scrape(admin);
    let (hits0, misses0) = (
        must_sample(&m0, "idgate_plan_cache_hits_total"),
        must_sample(&m0, "idgate_plan_cache_misses_total"),
    );
    // Point selects by key: each reaches its own shard with its own literal.
    for id in 1..=10i64 {
        let got: Option<(i64, i64)> = c
            .query_first(format!("SELECT id, k FROM orders WHERE id = {id}"))
            .unwrap();
        assert_eq!(got, Some((id, (id * 7) % 13)), "id {id}");
    }
    // Scatter ORDER BY … LIMIT: the WHERE literals are bound into the shard SQL.
    for (k_min, not_c) in [(3, "c0"), (9, "c1"), (0, "c2"), (12, "it's")] {
        let not_c_sql = not_c.replace('\'', "''");
        assert_eq!(
            scatter(&mut c, k_min, &not_c_sql, 10),
            expected_top(k_min, not_c, 10),
            "k >= {k_min}, c <> {not_c}"
        );
    }
    let m1 = scrape(admin);
    let hits = must_sample(&m1, "idgate_plan_cache_hits_total") - hits0;
    let misses = must_sample(&m1, "idgate_plan_cache_misses_total") - misses0;
    assert_eq!((hits, misses), (12.0, 2.0), "{m1}");
    assert!(must_sample(&m1, "idgate_plan_cache_entries") >= 2.0, "{m1}");

    // Another LIMIT is another plan: never the kept one's row count.
    for limit in [3, 10, 1, 25] {
        assert_eq!(
            scatter(&mut c, 2, "c0", limit),
            expected_top(2, "c0", limit),
            "LIMIT {limit}"
        );
    }
    // A prepared point select keeps its plan from PREPARE and binds each execution.
    let st = c.prep("SELECT id, k FROM orders WHERE id = ?").unwrap();
    for id in [4i64, 5, 6] {
        let got: Option<(i64, i64)> = c.exec_first(&st, (id,)).unwrap();
        assert_eq!(got, Some((id, (id * 7) % 13)));
    }
    // UPDATE through a kept plan reaches the right shard.
    for id in [7i64, 8] {
        c.query_drop(format!("UPDATE orders SET c = 'upd' WHERE id = {id}"))
            .unwrap();
        assert_eq!(c.affected_rows(), 1, "id {id}");
    }
    let updated: Vec<i64> = c
        .query("SELECT id FROM orders WHERE c = 'upd' ORDER BY id")
        .unwrap();
    assert_eq!(updated, [7, 8]);
}

#[test]
fn size_zero_keeps_nothing_and_answers_the_same() {
    let (_dbs, g, admin) = setup("plan_cache_size: 0\n");
    let mut c = g.conn();
    for (k_min, not_c) in [(3, "c0"), (9, "c1")] {
        assert_eq!(
            scatter(&mut c, k_min, not_c, 10),
            expected_top(k_min, not_c, 10)
        );
    }
    let m = scrape(admin);
    assert_eq!(must_sample(&m, "idgate_plan_cache_hits_total"), 0.0, "{m}");
    assert_eq!(
        must_sample(&m, "idgate_plan_cache_misses_total"),
        0.0,
        "{m}"
    );
    assert_eq!(must_sample(&m, "idgate_plan_cache_entries"), 0.0, "{m}");
}

/// `orders` as one table on `db` directly (`orders_all`): what MariaDB answers without shards.
fn reference(db: &common::MariaDb) -> mysql::Conn {
    let mut d = common::direct(db);
    d.query_drop("CREATE TABLE orders_all (id BIGINT PRIMARY KEY, k INT, c VARCHAR(20), KEY (k))")
        .unwrap();
    let rows: Vec<String> = (1..=40)
        .map(|i| format!("({i}, {}, 'c{}')", (i * 7) % 13, i % 3))
        .collect();
    d.query_drop(format!(
        "INSERT INTO orders_all (id, k, c) VALUES {}",
        rows.join(", ")
    ))
    .unwrap();
    d
}

type Row = (i64, Option<i64>, Option<String>);

/// A statement body and the LIMIT clause of its page number `p`.
type Pages = (&'static str, fn(u64) -> String);

/// Pages of one shape are one plan: a miss for the first page, hits for the rest, and each page
/// has the rows MariaDB gives for it (streaming and grouped merges, each LIMIT form, a LIMIT 0
/// and pages past the end, prepared `LIMIT ? OFFSET ?`).
#[test]
fn pages_bind_their_limit_and_offset_to_one_kept_plan() {
    let (dbs, g, admin) = setup("");
    let mut d = reference(&dbs[0]);
    let mut c = g.conn();
    let counts = || {
        let m = scrape(admin);
        (
            must_sample(&m, "idgate_plan_cache_hits_total"),
            must_sample(&m, "idgate_plan_cache_misses_total"),
        )
    };
    let pages: [Pages; 4] = [
        (
            "SELECT id, k, c FROM {t} WHERE k >= 1 ORDER BY k, id",
            |p| format!("LIMIT 4 OFFSET {}", p * 4),
        ),
        (
            "SELECT id, k, c FROM {t} WHERE k >= 2 ORDER BY c DESC, id",
            |p| format!("LIMIT {}, 3", p * 3),
        ),
        (
            "SELECT k, COUNT(*), MAX(c) FROM {t} WHERE id > 1 GROUP BY k ORDER BY k",
            |p| format!("LIMIT {}, 2", p * 2),
        ),
        (
            "SELECT k, SUM(id), NULL FROM {t} WHERE c <> 'x' GROUP BY k ORDER BY SUM(id) DESC, k",
            |p| format!("LIMIT {} OFFSET {}", p + 1, p),
        ),
    ];
    for (body, page) in pages {
        let (h0, m0) = counts();
        for p in 0..10 {
            let tail = page(p);
            let mine: Vec<Row> = c
                .query(format!("{} {tail}", body.replace("{t}", "orders")))
                .unwrap();
            let want: Vec<Row> = d
                .query(format!("{} {tail}", body.replace("{t}", "orders_all")))
                .unwrap();
            assert_eq!(mine, want, "{body} {tail}");
        }
        let (h1, m1) = counts();
        assert_eq!((h1 - h0, m1 - m0), (9.0, 1.0), "{body}");
    }
    // LIMIT 0 is its own plan and answers nothing; the next page is right again.
    let body = "SELECT id, k, c FROM {t} WHERE k >= 1 ORDER BY k, id";
    for tail in ["LIMIT 0", "LIMIT 8 OFFSET 0", "LIMIT 3, 0", "LIMIT 3, 5"] {
        let mine: Vec<Row> = c
            .query(format!("{} {tail}", body.replace("{t}", "orders")))
            .unwrap();
        let want: Vec<Row> = d
            .query(format!("{} {tail}", body.replace("{t}", "orders_all")))
            .unwrap();
        assert_eq!(mine, want, "{tail}");
    }
    // A row count past u64 is refused as before, not bound to a kept plan.
    let err = c
        .query_drop(
            "SELECT id, k, c FROM orders WHERE k >= 1 ORDER BY k, id LIMIT 99999999999999999999",
        )
        .unwrap_err();
    assert!(
        matches!(&err, mysql::Error::MySqlError(e) if e.code == 1235 || e.code == 1064),
        "{err}"
    );
    // Prepared pages: the bound text binds to the kept plan as well.
    let sql = "SELECT id, k, c FROM {t} WHERE k >= ? ORDER BY k, id LIMIT ? OFFSET ?";
    let mine = c.prep(sql.replace("{t}", "orders")).unwrap();
    let want = d.prep(sql.replace("{t}", "orders_all")).unwrap();
    for p in 0..6u64 {
        let params = (2i64, 5u64, p * 5);
        let a: Vec<Row> = c.exec(&mine, params).unwrap();
        let b: Vec<Row> = d.exec(&want, params).unwrap();
        assert_eq!(a, b, "page {p}");
    }
}

/// Statements of 64 KiB and more are parsed on the blocking pool: a 6,000-row INSERT with
/// generated ids, a SELECT and a DELETE naming every id in an IN list answer as for small ones.
#[test]
fn large_statements_are_planned_off_the_event_loop_and_answer_the_same() {
    let (dbs, g, _admin) = setup("");
    let mut c = g.conn();
    let rows: Vec<String> = (0..6000)
        .map(|i| format!("(NULL, {}, 'large row {i:05}')", i % 13))
        .collect();
    let insert = format!("INSERT INTO orders (id, k, c) VALUES {}", rows.join(", "));
    assert!(insert.len() >= 64 << 10, "{}", insert.len());
    c.query_drop(&insert).unwrap();
    assert_eq!(c.affected_rows(), 6000);
    let first = c.last_insert_id();
    assert!(first > 40, "{first}");
    let ids: Vec<u64> = c
        .query("SELECT id FROM orders WHERE c LIKE 'large row %' ORDER BY id")
        .unwrap();
    assert_eq!(ids.len(), 6000);
    assert_eq!(ids[0], first);
    // Every id twice: the same rows, a statement over 64 KiB.
    let once = ids
        .iter()
        .map(|i| format!("{i:>10}"))
        .collect::<Vec<_>>()
        .join(", ");
    let list = format!("{once}, {once}");
    let select = format!("SELECT COUNT(*), SUM(k) FROM orders WHERE id IN ({list})");
    assert!(select.len() >= 64 << 10, "{}", select.len());
    let (n, sum): (u64, u64) = c.query_first(&select).unwrap().unwrap();
    assert_eq!(n, 6000);
    assert_eq!(sum, (0..6000u64).map(|i| i % 13).sum::<u64>());
    c.query_drop(format!("DELETE FROM orders WHERE id IN ({list})"))
        .unwrap();
    assert_eq!(c.affected_rows(), 6000);
    let mut left = 0;
    for db in &dbs {
        let n: u64 = common::direct(db)
            .query_first("SELECT COUNT(*) FROM orders")
            .unwrap()
            .unwrap();
        left += n;
    }
    assert_eq!(left, 40);
    let bad = format!("SELECT * FROM orders WHERE id IN ({list}");
    match c.query_drop(&bad).unwrap_err() {
        mysql::Error::MySqlError(e) => assert_eq!(e.code, 1064, "{e:?}"),
        other => panic!("expected ERROR 1064, got {other}"),
    }
    assert_eq!(c.query_first::<i32, _>("SELECT 7").unwrap(), Some(7));
}

/// How many statements with `WEIGHT_STRING` over `orders` the shard ran (its general log).
fn weighted_statements(db: &common::MariaDb) -> i64 {
    common::direct(db)
        .query_first::<i64, _>(
            "SELECT COUNT(*) FROM mysql.general_log WHERE command_type = 'Query' \
             AND argument LIKE '%WEIGHT_STRING%' AND argument LIKE '%FROM orders %' \
             AND argument NOT LIKE '%general_log%'",
        )
        .unwrap()
        .unwrap_or(0)
}

/// A kept merge plan asks the shards for collation weights only until their columns show that
/// no key is a string; when a key becomes one (the table changed), the lean run is dropped
/// before anything reaches the client, the plan runs again with weights, and the answer is
/// still MariaDB's, now in string order.
#[test]
fn merges_leave_weights_out_while_no_key_is_a_string() {
    let (dbs, g, _admin) = setup("");
    for db in &dbs {
        common::direct(db)
            .query_drop("SET GLOBAL log_output = 'TABLE', general_log = 1")
            .unwrap();
    }
    let mut d = reference(&dbs[0]);
    let mut c = g.conn();
    let statements = [
        "SELECT id, k FROM {t} WHERE k >= 3 AND c <> 'c0' ORDER BY k, id LIMIT 10",
        "SELECT k, COUNT(*), MAX(id) FROM {t} GROUP BY k ORDER BY k LIMIT 5",
    ];
    let check = |c: &mut mysql::Conn, d: &mut mysql::Conn, round: &str| {
        for s in statements {
            let mine: Vec<mysql::Row> = c.query(s.replace("{t}", "orders")).unwrap();
            let theirs: Vec<mysql::Row> = d.query(s.replace("{t}", "orders_all")).unwrap();
            let text = |rows: Vec<mysql::Row>| -> Vec<Vec<mysql::Value>> {
                rows.into_iter().map(|r| r.unwrap()).collect()
            };
            assert_eq!(text(mine), text(theirs), "{round}: {s}");
        }
    };
    for round in ["first", "second", "third"] {
        check(&mut c, &mut d, round);
    }
    // Only each statement's first run asked for weights: integer keys need none.
    for db in &dbs {
        assert_eq!(weighted_statements(db), 2, "integer keys");
    }
    let explained = |c: &mut mysql::Conn| -> Vec<(String, String, String)> {
        c.query(format!(
            "EXPLAIN ROUTE {}",
            statements[0].replace("{t}", "orders")
        ))
        .unwrap()
    };
    for (_, sql, merge) in explained(&mut c) {
        assert!(!sql.contains("WEIGHT_STRING"), "{sql}");
        assert!(
            merge.ends_with("(no collation weights: no key was a string)"),
            "{merge}"
        );
    }
    // `k` becomes a string: '10' sorts before '3' now, and the kept plans must see it.
    c.query_drop("ALTER TABLE orders MODIFY k VARCHAR(10)")
        .unwrap();
    d.query_drop("ALTER TABLE orders_all MODIFY k VARCHAR(10)")
        .unwrap();
    for round in ["after ALTER", "after ALTER again"] {
        check(&mut c, &mut d, round);
    }
    // Every run since asked for weights: the lean run found a string key and ran again.
    for db in &dbs {
        assert_eq!(weighted_statements(db), 6, "string keys");
    }
    for (_, sql, _) in explained(&mut c) {
        assert!(sql.contains("WEIGHT_STRING(k)"), "{sql}");
    }
}
