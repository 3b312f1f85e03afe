//! SELECT, UPDATE, DELETE and DDL on sharded and broadcast tables: point statements reach only
//! the owning shard, others reach every shard and answer as one table; shapes idgate cannot
//! merge yet are refused clearly, never answered from one shard.

mod common;

use mysql::prelude::Queryable;

fn count(db: &common::MariaDb, sql: &str) -> u64 {
    common::direct(db).query_first(sql).unwrap().unwrap()
}

fn code(r: Result<(), mysql::Error>) -> (u16, String) {
    match r {
        Err(mysql::Error::MySqlError(e)) => (e.code, e.message),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn ddl_reaches_every_shard_and_reads_route_by_key() {
    let s = common::two_shards(common::ORDERS_MOD_2, &[]);
    let mut c = s.g.conn();
    c.query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20), qty INT)")
        .unwrap();
    c.query_drop("CREATE TABLE countries (code CHAR(2) PRIMARY KEY, name VARCHAR(20))")
        .unwrap();
    for db in &s.dbs {
        assert_eq!(count(db, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME IN ('orders', 'countries')"), 2);
    }
    c.query_drop("INSERT INTO orders (item, qty) VALUES ('a', 1), ('b', 2), ('c', 3), ('d', 4)")
        .unwrap();
    let first = c.last_insert_id();
    // Point lookups: one shard answers.
    for id in first..first + 4 {
        let item: Option<String> = c
            .query_first(format!("SELECT item FROM orders WHERE id = {id}"))
            .unwrap();
        assert!(item.is_some(), "row {id} found through idgate");
    }
    // IN over both shards and a full scan: every row, concatenated.
    let ids: Vec<u64> = c
        .query(format!(
            "SELECT id FROM orders WHERE id IN ({}, {})",
            first,
            first + 1
        ))
        .unwrap();
    assert_eq!(ids.len(), 2);
    let mut all: Vec<(u64, String)> = c.query("SELECT id, item FROM orders").unwrap();
    all.sort();
    assert_eq!(all.len(), 4);
    assert_eq!(all[0], (first, "a".to_string()));
    // An aggregate inside a subquery over a broadcast table is that subquery's, on every shard.
    let mut with_count: Vec<(u64, u64)> = c
        .query("SELECT o.id, (SELECT COUNT(*) FROM countries) FROM orders o")
        .unwrap();
    with_count.sort();
    assert_eq!(with_count.len(), 4);
    assert!(with_count.iter().all(|&(_, n)| n == 0), "{with_count:?}");
    // ORDER BY / LIMIT over shards: a merge of sorted answers.
    let ordered: Vec<u64> = c.query("SELECT id FROM orders ORDER BY id DESC").unwrap();
    assert_eq!(ordered, (first..first + 4).rev().collect::<Vec<_>>());
    let top: Vec<(u64, i32)> = c
        .query("SELECT id, qty FROM orders ORDER BY qty LIMIT 3")
        .unwrap();
    assert_eq!(top.iter().map(|r| r.1).collect::<Vec<_>>(), vec![1, 2, 3]);
    let any: Vec<u64> = c.query("SELECT id FROM orders LIMIT 2").unwrap();
    assert_eq!(any.len(), 2);
    // String order by collation, LIMIT with an offset: merged as one server would answer.
    c.query_drop("UPDATE orders SET item = 'B' WHERE item = 'b'")
        .unwrap();
    let by_item: Vec<String> = c
        .query("SELECT item FROM orders ORDER BY item DESC")
        .unwrap();
    assert_eq!(
        by_item,
        vec!["d", "c", "B", "a"],
        "general_ci: 'B' between 'a' and 'c'"
    );
    let page: Vec<u64> = c
        .query("SELECT id FROM orders ORDER BY id LIMIT 1, 2")
        .unwrap();
    assert_eq!(page, vec![first + 1, first + 2]);
    let (n, m) = code(c.query_drop("SELECT JSON_ARRAYAGG(item) FROM orders"));
    assert_eq!(n, 1235, "{m}");
    assert!(m.contains("JSON_ARRAYAGG()"), "{m}");
    let after: u64 = c
        .query_first("SELECT COUNT(*) FROM orders")
        .unwrap()
        .unwrap();
    assert_eq!(after, 4, "connections stay in step after a refused merge");
    // COUNT/SUM/MIN/MAX over every shard combine into the whole table's row.
    let agg: (u64, String, i32, i32) = c
        .query_first("SELECT COUNT(*), SUM(qty), MIN(qty), MAX(qty) FROM orders")
        .unwrap()
        .unwrap();
    assert_eq!(agg, (4, "10".to_string(), 1, 4));
    let avg: (String, String) = c
        .query_first("SELECT AVG(qty), MAX(item) FROM orders")
        .unwrap()
        .unwrap();
    assert_eq!(avg, ("2.5000".to_string(), "d".to_string()));
    let total: u64 = c
        .query_first(format!("SELECT COUNT(*) FROM orders WHERE id = {first}"))
        .unwrap()
        .unwrap();
    assert_eq!(total, 1, "an aggregate pinned to one shard is fine");
    // EXPLAIN ROUTE shows the plan without running it.
    let plan: Vec<(String, String, String)> = c
        .query(format!(
            "EXPLAIN ROUTE SELECT * FROM orders WHERE id = {first}"
        ))
        .unwrap();
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].2, "none");
    let plan: Vec<(String, String, String)> = c
        .query("EXPLAIN ROUTE SELECT id FROM orders ORDER BY id LIMIT 5")
        .unwrap();
    assert_eq!(
        plan.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        vec!["shard0", "shard1"]
    );
    assert!(
        plan[0].2.contains("k-way merge") && plan[0].1.starts_with("SELECT id , WEIGHT_STRING(id)"),
        "{plan:?}"
    );
    let plan: Vec<(String, String, String)> = c
        .query("EXPLAIN ROUTE INSERT INTO orders (item) VALUES ('z')")
        .unwrap();
    assert_eq!(plan.len(), 2);
    assert!(plan[0].2.contains("generator `seq`"), "{plan:?}");
    let before: u64 = c
        .query_first("SELECT COUNT(*) FROM orders")
        .unwrap()
        .unwrap();
    assert_eq!(before, 4, "EXPLAIN ROUTE ran nothing");
    // UPDATE and DELETE: affected rows summed over shards.
    c.query_drop("UPDATE orders SET qty = qty + 10").unwrap();
    assert_eq!(c.affected_rows(), 4);
    assert_eq!(c.info_str(), "Rows matched: 4  Changed: 4  Warnings: 0");
    c.query_drop(format!("UPDATE orders SET qty = 0 WHERE id = {first}"))
        .unwrap();
    assert_eq!(c.affected_rows(), 1);
    let (_, m) = code(c.query_drop(format!("UPDATE orders SET id = 5 WHERE id = {first}")));
    assert!(m.contains("move the row"), "{m}");
    c.query_drop(format!(
        "DELETE FROM orders WHERE id IN ({}, {})",
        first + 2,
        first + 3
    ))
    .unwrap();
    assert_eq!(c.affected_rows(), 2);
    assert_eq!(
        count(&s.dbs[0], "SELECT COUNT(*) FROM orders")
            + count(&s.dbs[1], "SELECT COUNT(*) FROM orders"),
        2
    );
    // Broadcast: writes everywhere, reads from one backend.
    c.query_drop("INSERT INTO countries VALUES ('DE', 'Germany')")
        .unwrap();
    c.query_drop("UPDATE countries SET name = 'Deutschland' WHERE code = 'DE'")
        .unwrap();
    assert_eq!(c.affected_rows(), 1);
    for db in &s.dbs {
        assert_eq!(
            count(
                db,
                "SELECT COUNT(*) FROM countries WHERE name = 'Deutschland'"
            ),
            1
        );
    }
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM countries")
        .unwrap()
        .unwrap();
    assert_eq!(n, 1);
    // A join of the sharded table with a broadcast table runs per shard.
    let joined: Vec<(u64, String)> = c
        .query("SELECT o.id, c.name FROM orders o JOIN countries c ON c.code = 'DE'")
        .unwrap();
    assert_eq!(joined.len(), 2);
    // DDL again reaches both shards.
    c.query_drop("ALTER TABLE orders ADD COLUMN note VARCHAR(10)")
        .unwrap();
    for db in &s.dbs {
        assert_eq!(count(db, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_NAME = 'orders' AND COLUMN_NAME = 'note'"), 1);
    }
    c.query_drop("INSERT INTO orders (item, qty, note) VALUES ('e', 5, 'after')")
        .unwrap();
    // Counts summed over shards outgrow each shard's digits: the info text keeps its length.
    c.query_drop(
        "INSERT INTO orders (item, qty) VALUES ('f', 1), ('g', 1), ('h', 1), ('i', 1), \
         ('j', 1), ('k', 1), ('l', 1), ('m', 1), ('n', 1)",
    )
    .unwrap();
    let per_shard: Vec<u64> = s
        .dbs
        .iter()
        .map(|db| count(db, "SELECT COUNT(*) FROM orders"))
        .collect();
    assert!(per_shard.iter().all(|n| *n < 10), "{per_shard:?}");
    let total: u64 = per_shard.iter().sum();
    assert!(total >= 10, "{per_shard:?}");
    c.query_drop("UPDATE orders SET qty = qty + 1").unwrap();
    assert_eq!(
        c.info_str(),
        format!("Rows matched: {total}  Changed: {total}  Warnings: 0")
    );
    c.query_drop("DROP TABLE orders").unwrap();
    for db in &s.dbs {
        assert_eq!(
            count(
                db,
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = 'orders'"
            ),
            0
        );
    }
}

#[test]
fn prepared_statements_route_by_their_parameters() {
    let s = common::two_shards(common::ORDERS_MOD_2, &[]);
    let mut c = s.g.conn();
    c.query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20), qty INT)")
        .unwrap();
    let ins = c
        .prep("INSERT INTO orders (item, qty) VALUES (?, ?)")
        .unwrap();
    let mut ids = Vec::new();
    for i in 0..6 {
        c.exec_drop(&ins, (format!("p{i}"), i)).unwrap();
        ids.push(c.last_insert_id());
    }
    let by_id = c.prep("SELECT item, qty FROM orders WHERE id = ?").unwrap();
    for (i, id) in ids.iter().enumerate() {
        let row: Option<(String, i32)> = c.exec_first(&by_id, (*id,)).unwrap();
        assert_eq!(row, Some((format!("p{i}"), i as i32)), "id {id}");
    }
    let scan = c.prep("SELECT id, qty FROM orders WHERE qty >= ?").unwrap();
    let mut rows: Vec<(u64, i32)> = c.exec(&scan, (0,)).unwrap();
    rows.sort();
    assert_eq!(rows.len(), 6, "every shard's rows, in the binary protocol");
    let upd = c
        .prep("UPDATE orders SET qty = qty + ? WHERE id IN (?, ?)")
        .unwrap();
    c.exec_drop(&upd, (100, ids[0], ids[1])).unwrap();
    assert_eq!(c.affected_rows(), 2);
    let del = c.prep("DELETE FROM orders WHERE qty >= ?").unwrap();
    c.exec_drop(&del, (100,)).unwrap();
    assert_eq!(c.affected_rows(), 2);
    let n = count(&s.dbs[0], "SELECT COUNT(*) FROM orders")
        + count(&s.dbs[1], "SELECT COUNT(*) FROM orders");
    assert_eq!(n, 4);
    let ordered = c
        .prep("SELECT id FROM orders WHERE qty > ? ORDER BY id")
        .unwrap();
    let sorted: Vec<u64> = c.exec(&ordered, (0,)).unwrap();
    assert_eq!(sorted, ids[2..], "merged in order, in the binary protocol");
    // A shard that cannot prepare the statement: a clear error, and every connection in step.
    let scan_all = c.prep("SELECT id FROM orders WHERE qty > ?").unwrap();
    common::direct(&s.dbs[1])
        .query_drop("RENAME TABLE orders TO orders_away")
        .unwrap();
    match c.exec_drop(&scan_all, (0,)) {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1146, "{e}"),
        other => panic!("{other:?}"),
    }
    let rows: Vec<u64> = c.query("SELECT id FROM orders WHERE id = 0").unwrap();
    assert!(rows.is_empty());
    let one: Option<i64> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn subqueries_over_a_sharded_table_run_first_or_are_refused() {
    let s = common::two_shards(
        common::ORDERS_MOD_2,
        &["CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20), qty INT)"],
    );
    let mut c = s.g.conn();
    c.query_drop("INSERT INTO orders (item, qty) VALUES ('a', 1), ('b', 2), ('c', 3)")
        .unwrap();
    let first = c.last_insert_id();
    // Each shard would compute its own MAX(id): idgate runs the subquery over every shard
    // first and binds its value.
    let top: Vec<u64> = c
        .query("SELECT id FROM orders WHERE id = (SELECT MAX(id) FROM orders)")
        .unwrap();
    assert_eq!(top, [first + 2]);
    let below: Vec<u64> = c
        .query(format!(
            "SELECT id FROM orders WHERE id = {first} AND qty < (SELECT MAX(qty) FROM orders)"
        ))
        .unwrap();
    assert_eq!(below, [first]);
    // An UPDATE's subquery over the table itself runs first too (tests/subquery_writes.rs).
    c.query_drop("UPDATE orders SET qty = qty WHERE id IN (SELECT id FROM orders)")
        .unwrap();
    assert_eq!(c.info_str(), "Rows matched: 3  Changed: 0  Warnings: 0");
    // A self-join off the sharding column runs in the gateway: every pair of equal quantities.
    let pairs: Vec<(u64, u64)> = c
        .query("SELECT a.id, b.id FROM orders a JOIN orders b ON a.qty = b.qty")
        .unwrap();
    assert!(pairs.len() >= 3, "{pairs:?}");
    // HAVING without GROUP BY or aggregates filters rows one by one, as on one server.
    let mut ids: Vec<u64> = c.query("SELECT id FROM orders HAVING id > 0").unwrap();
    ids.sort();
    assert_eq!(ids, [first, first + 1, first + 2]);
    let top: Vec<u64> = c
        .query("SELECT id, qty AS q FROM orders HAVING q > 1 ORDER BY id DESC LIMIT 1")
        .unwrap()
        .into_iter()
        .map(|(id, _q): (u64, i32)| id)
        .collect();
    assert_eq!(top, [first + 2]);
    // A window function sees every shard's rows: it runs over a derived table of them.
    let mut numbered: Vec<(u64, u64)> = c
        .query("SELECT id, ROW_NUMBER() OVER (ORDER BY id) FROM orders")
        .unwrap();
    numbered.sort();
    let count: Option<u64> = c.query_first("SELECT COUNT(*) FROM orders").unwrap();
    assert_eq!(Some(numbered.len() as u64), count);
    let expected: Vec<u64> = (1..=numbered.len() as u64).collect();
    assert_eq!(numbered.iter().map(|r| r.1).collect::<Vec<_>>(), expected);
    // FOUND_ROWS() would see one shard's rows.
    let (n, m) = code(c.query_drop("SELECT SQL_CALC_FOUND_ROWS id FROM orders LIMIT 1"));
    assert_eq!(n, 1235, "{m}");
    // Row counts of a statement that ran on shards are not the default backend's.
    let _: Vec<u64> = c.query("SELECT id FROM orders").unwrap();
    let (n, m) = code(c.query_drop("SELECT FOUND_ROWS()"));
    assert_eq!(n, 1235, "{m}");
    c.query_drop("UPDATE orders SET qty = qty WHERE qty > 0")
        .unwrap();
    let (n, m) = code(c.query_drop("SELECT ROW_COUNT()"));
    assert_eq!(n, 1235, "{m}");
    let _: Vec<u64> = c.query("SELECT 1 UNION SELECT 2").unwrap();
    let found: u64 = c.query_first("SELECT FOUND_ROWS()").unwrap().unwrap();
    assert_eq!(
        found, 2,
        "after a statement on the default backend, its own answer"
    );
    let qty: u64 = c
        .query_first("SELECT SUM(qty) FROM orders")
        .unwrap()
        .unwrap();
    assert_eq!(qty, 6, "nothing changed and the session goes on");
}

#[test]
fn string_keys_meet_under_case_insensitive_collations() {
    let yaml = "generators:
  seq:
    kind: segment
    step: 100
tables:
  tenants:
    generator: seq
    sharding:
      columns: [code]
      algorithm: hash
      shards: [shard0, shard1]
";
    let s = common::two_shards(
        yaml,
        &["CREATE TABLE tenants (id BIGINT PRIMARY KEY, code VARCHAR(20) COLLATE utf8mb4_general_ci, UNIQUE KEY (code))"],
    );
    let mut c = s.g.conn();
    let codes: Vec<String> = (0..40).map(|i| format!("Tenant-{i}")).collect();
    for tenant in &codes {
        c.exec_drop("INSERT INTO tenants (code) VALUES (?)", (tenant,))
            .unwrap();
    }
    for tenant in &codes {
        for spelling in [
            tenant.to_lowercase(),
            tenant.to_uppercase(),
            format!("{tenant}  "),
        ] {
            let n: u64 = c
                .query_first(format!(
                    "SELECT COUNT(*) FROM tenants WHERE code = '{spelling}'"
                ))
                .unwrap()
                .unwrap();
            assert_eq!(n, 1, "{spelling} finds {tenant}");
        }
        // The same code in another case is a duplicate, as on one server.
        let (n, m) = code(c.exec_drop(
            "INSERT INTO tenants (code) VALUES (?)",
            (tenant.to_lowercase(),),
        ));
        assert_eq!(n, 1062, "{m}");
    }
    let per_shard: Vec<u64> = s
        .dbs
        .iter()
        .map(|db| count(db, "SELECT COUNT(*) FROM tenants"))
        .collect();
    assert!(per_shard.iter().all(|&n| n > 0), "{per_shard:?}");
}
