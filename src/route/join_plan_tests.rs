//! The parts of a join idgate runs in the gateway: which table drives, which conditions filter
//! each table before the join, the keys that tie each table to those fetched before it, the
//! fetch order, and the statements built from them.

use super::join_plan::*;

fn shape(sql: &str) -> JoinShape {
    analyze_join(sql.as_bytes())
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .unwrap_or_else(|| panic!("{sql}: not a join"))
}

fn filters(s: &JoinShape, i: usize) -> Vec<&str> {
    s.sides[i].filters.iter().map(String::as_str).collect()
}

/// `(from, from column, to, to column)` of every key, sorted.
fn keys(s: &JoinShape) -> Vec<(usize, &str, usize, &str)> {
    let mut out: Vec<_> = s
        .keys
        .iter()
        .map(|k| (k.from, k.from_column.as_str(), k.to, k.to_column.as_str()))
        .collect();
    out.sort();
    out
}

/// `(side, key's from side)` of each fetch from `driver`, no key preferred.
fn order(s: &JoinShape, driver: usize) -> Vec<(usize, Option<usize>)> {
    s.fetch_order(driver, &|_| false)
        .into_iter()
        .map(|f| (f.side, f.key.map(|k| k.from)))
        .collect()
}

#[test]
fn where_conjuncts_are_split_by_the_table_they_name() {
    let s = shape(
        "SELECT o.id, i.name FROM orders o JOIN items i ON i.sku = o.sku AND i.price > 3 \
         WHERE o.qty > 1 AND (i.color = 'red' OR i.color IS NULL) AND o.qty + i.price > 7 \
         AND qty < 9",
    );
    assert_eq!(s.driver, 0);
    assert_eq!(s.sides[0].qualifier, "o");
    assert_eq!(filters(&s, 0), ["o.qty > 1"]);
    // Both tables' names, unqualified ones and subqueries stay in the final evaluation only.
    assert_eq!(
        filters(&s, 1),
        ["i.color = 'red' OR i.color IS NULL", "i.price > 3"]
    );
    assert_eq!(keys(&s), [(0, "sku", 1, "sku"), (1, "sku", 0, "sku")]);
    assert!(s.row_wise);
}

#[test]
fn outer_joins_filter_only_where_it_keeps_their_meaning() {
    // LEFT: WHERE on the left filters it; ON on the right filters the right; WHERE on the
    // right (`i.id IS NULL`) and ON on the left decide after the join. Only the right is
    // fetched by the left's values.
    let s = shape(
        "SELECT * FROM orders o LEFT JOIN items i ON i.sku = o.sku AND i.price > 3 AND o.qty > 0 \
         WHERE o.id < 10 AND i.id IS NULL",
    );
    assert_eq!(s.driver, 0);
    assert!(!s.sides[0].nullable && s.sides[1].nullable);
    assert_eq!(filters(&s, 0), ["o.id < 10"]);
    assert_eq!(filters(&s, 1), ["i.price > 3"]);
    assert_eq!(keys(&s), [(0, "sku", 1, "sku")]);
    // RIGHT: the right table drives.
    let s = shape("SELECT * FROM orders o RIGHT JOIN items i ON o.sku = i.sku WHERE i.id > 2");
    assert_eq!(s.driver, 1);
    assert_eq!(keys(&s), [(1, "sku", 0, "sku")]);
    assert_eq!(filters(&s, 1), ["i.id > 2"]);
}

#[test]
fn an_inner_join_drives_from_the_most_selective_table() {
    let s = shape(
        "SELECT `r`.`id` FROM `app_review` `r` INNER JOIN `app_book` ON (`r`.`book_id` = \
         `app_book`.`id`) WHERE `app_book`.`genre` = 'sf'",
    );
    assert_eq!(s.driver, 1);
    assert_eq!(s.sides[1].pinned, ["genre"]);
    assert_eq!(filters(&s, 1), ["`app_book`.`genre` = 'sf'"]);
    assert!(!s.sides[1].aliased);
    // A comma join takes its keys from WHERE; an equality to a literal beats a range.
    let s = shape("SELECT * FROM a x, b y WHERE x.k = y.k2 AND y.v = 1 AND x.w > 3");
    assert_eq!(s.driver, 1);
    assert_eq!(keys(&s), [(0, "k", 1, "k2"), (1, "k2", 0, "k")]);
    let s = shape("SELECT * FROM a JOIN b USING (k)");
    assert_eq!(keys(&s), [(0, "k", 1, "k"), (1, "k", 0, "k")]);
}

#[test]
fn three_and_four_tables_are_fetched_each_from_one_fetched_before() {
    // A chain: o drives, i by o's sku, l by i's sku (tied only through i), a whole.
    let s = shape(
        "SELECT * FROM o JOIN i ON i.sku = o.sku JOIN l ON l.sku2 = i.sku CROSS JOIN a \
         WHERE o.id = 4",
    );
    assert_eq!(s.sides.len(), 4);
    assert_eq!(s.driver, 0);
    assert_eq!(
        order(&s, 0),
        [(0, None), (1, Some(0)), (2, Some(1)), (3, None)]
    );
    // From another driver the order follows the ties.
    assert_eq!(
        order(&s, 2),
        [(2, None), (1, Some(2)), (0, Some(1)), (3, None)]
    );
    // A preferred key wins over the first usable one.
    let s = shape("SELECT * FROM o JOIN i ON i.sku = o.sku JOIN l ON l.id = o.id");
    let pick = s.fetch_order(0, &|k| k.to == 2);
    assert_eq!(pick[1].side, 2);
}

#[test]
fn outer_joins_of_many_tables_keep_their_null_sides() {
    // o LEFT i LEFT l: i and l NULL-extended; l is fetched by i's values (its ON matches it),
    // never i by l's. WHERE on a NULL-extended table stays in the final evaluation.
    let s = shape(
        "SELECT * FROM o LEFT JOIN i ON i.sku = o.sku AND i.p > 1 \
         LEFT JOIN l ON l.sku = i.sku AND l.x = 2 AND o.q = 1 WHERE l.y IS NULL AND o.id > 0",
    );
    assert_eq!(
        s.sides.iter().map(|x| x.nullable).collect::<Vec<_>>(),
        [false, true, true]
    );
    assert_eq!(filters(&s, 0), ["o.id > 0"]);
    assert_eq!(filters(&s, 1), ["i.p > 1"]);
    assert_eq!(filters(&s, 2), ["l.x = 2"]);
    assert_eq!(keys(&s), [(0, "sku", 1, "sku"), (1, "sku", 2, "sku")]);
    assert_eq!(s.drivers().collect::<Vec<_>>(), [0]);
    // o JOIN i RIGHT JOIN l: l drives; o and i are NULL-extended by the RIGHT join, so the
    // inner join's ON still filters them (it must match both), but WHERE does not.
    let s = shape(
        "SELECT * FROM o JOIN i ON i.sku = o.sku AND o.q > 1 RIGHT JOIN l ON l.sku = i.sku \
         WHERE o.z = 3 AND l.w = 1",
    );
    assert_eq!(s.driver, 2);
    assert_eq!(filters(&s, 0), ["o.q > 1"]);
    assert!(filters(&s, 1).is_empty());
    assert_eq!(filters(&s, 2), ["l.w = 1"]);
    assert_eq!(order(&s, 2), [(2, None), (1, Some(2)), (0, Some(1))]);
    // o LEFT i JOIN l ON l.k = i.k: i is NULL-extended by the LEFT join, so the inner join's
    // ON does not filter it (a NULL i row would meet the condition differently).
    let s = shape("SELECT * FROM o LEFT JOIN i ON i.k = o.k JOIN l ON l.k = i.k AND i.v = 1");
    assert!(filters(&s, 1).is_empty());
    assert!(keys(&s).contains(&(1, "k", 2, "k")) && keys(&s).contains(&(2, "k", 1, "k")));
    // USING deep in a chain ties to every table before it only when all the joins are inner.
    let s = shape("SELECT * FROM a JOIN b USING (k) LEFT JOIN c USING (k)");
    assert_eq!(keys(&s), [(0, "k", 1, "k"), (1, "k", 0, "k")]);
    let s = shape("SELECT * FROM a JOIN b USING (k) JOIN c USING (k)");
    assert_eq!(keys(&s).len(), 6);
}

#[test]
fn row_wise_joins_are_told_apart() {
    for sql in [
        "SELECT o.id, i.iid FROM o JOIN i ON i.k = o.k",
        "SELECT o.id, (SELECT 1) FROM o LEFT JOIN i ON i.k = o.k WHERE o.x > 1",
    ] {
        assert!(shape(sql).row_wise, "{sql}");
    }
    for sql in [
        "SELECT COUNT(*) FROM o JOIN i ON i.k = o.k",
        "SELECT o.k, MAX(i.v) FROM o JOIN i ON i.k = o.k GROUP BY o.k",
        "SELECT DISTINCT o.k FROM o JOIN i ON i.k = o.k",
        "SELECT o.k FROM o JOIN i ON i.k = o.k ORDER BY o.k",
        "SELECT o.k FROM o JOIN i ON i.k = o.k LIMIT 3",
        "SELECT ROW_NUMBER() OVER (ORDER BY o.k) FROM o JOIN i ON i.k = o.k",
        "SELECT o.k FROM o JOIN i ON i.k = o.k GROUP BY o.k HAVING o.k > 1",
    ] {
        assert!(!shape(sql).row_wise, "{sql}");
    }
}

#[test]
fn other_shapes_are_left_or_refused() {
    assert_eq!(analyze_join(b"SELECT * FROM a WHERE id = 1"), Ok(None));
    assert_eq!(analyze_join(b"SELECT 1 UNION SELECT 2"), Ok(None));
    for sql in [
        "SELECT * FROM a JOIN (SELECT 1 AS x) d(y) ON d.y = a.x",
        "SELECT * FROM a JOIN LATERAL (SELECT a.x) d ON d.x = a.x",
        "SELECT * FROM a JOIN json_table('[]', '$[*]' COLUMNS (x INT PATH '$')) j ON j.x = a.x",
    ] {
        let e = analyze_join(sql.as_bytes()).unwrap_err();
        assert!(e.0.contains("derived"), "{sql}: {e:?}");
    }
    let e = analyze_join(b"SELECT * FROM a NATURAL JOIN b").unwrap_err();
    assert!(e.0.contains("NATURAL"), "{e:?}");
}

#[test]
fn the_inner_batch_statement_and_the_bound_statement() {
    let sql = "SELECT o.id, items.name FROM shop.orders o JOIN items ON items.sku = o.sku \
               WHERE items.price > 3 AND o.id > 0 ORDER BY o.id";
    let s = shape(sql);
    let inner = &s.sides[1];
    let cond = batch_condition(inner, "sku", &[b"1".to_vec(), b"_utf8mb4 X'41'".to_vec()]);
    assert_eq!(
        String::from_utf8(side_select(sql.as_bytes(), inner, Some(&cond))).unwrap(),
        "SELECT * FROM items AS `items` WHERE (`items`.`sku` IN (1,_utf8mb4 X'41')) AND \
         (items.price > 3)"
    );
    assert_eq!(batch_condition(inner, "sku", &[]), "FALSE");
    let driver = &s.sides[0];
    assert_eq!(
        String::from_utf8(side_select(sql.as_bytes(), driver, None)).unwrap(),
        "SELECT * FROM shop.orders AS `o` WHERE (o.id > 0)"
    );
    let bound = bind_tables(sql.as_bytes(), &s, vec![b"(T0)".to_vec(), b"(T1)".to_vec()]);
    assert_eq!(
        String::from_utf8(bound).unwrap(),
        "SELECT o.id, items.name FROM (T0) o JOIN (T1) AS `items` ON items.sku = o.sku \
         WHERE items.price > 3 AND o.id > 0 ORDER BY o.id"
    );
}

#[test]
fn a_derived_table_is_one_more_side_that_drives_and_ties_by_key() {
    let sql = "SELECT o.id, t.mp FROM o JOIN i ON i.k = o.k JOIN (SELECT k, MAX(p) AS mp FROM \
               x GROUP BY k) AS t ON t.k = i.k WHERE t.mp > 3 AND o.q > 1";
    let s = shape(sql);
    assert_eq!(s.sides.len(), 3);
    let t = &s.sides[2];
    assert!(t.derived && t.aliased && !s.sides[0].derived);
    assert_eq!(
        &sql[t.name_at.clone()],
        "(SELECT k, MAX(p) AS mp FROM x GROUP BY k)"
    );
    assert_eq!(filters(&s, 2), ["t.mp > 3"]);
    assert_eq!(
        s.driver, 2,
        "computed rows drive before a table's own condition"
    );
    assert_eq!(order(&s, 2), [(2, None), (1, Some(2)), (0, Some(1))]);
    assert_eq!(
        String::from_utf8(side_select(sql.as_bytes(), t, None)).unwrap(),
        "SELECT * FROM (SELECT k, MAX(p) AS mp FROM x GROUP BY k) AS `t` WHERE (t.mp > 3)"
    );
    let bound = bind_tables(
        sql.as_bytes(),
        &s,
        vec![b"(T0)".to_vec(), b"(T1)".to_vec(), b"(T2)".to_vec()],
    );
    assert_eq!(
        String::from_utf8(bound).unwrap(),
        "SELECT o.id, t.mp FROM (T0) AS `o` JOIN (T1) AS `i` ON i.k = o.k JOIN (T2) AS t ON \
         t.k = i.k WHERE t.mp > 3 AND o.q > 1"
    );
    // Two derived tables, and one first in FROM.
    let sql =
        "SELECT * FROM (SELECT 1 AS k) a JOIN o ON o.k = a.k JOIN (SELECT 2 AS k) b ON b.k = o.k";
    let s = shape(sql);
    assert_eq!(&sql[s.sides[0].name_at.clone()], "(SELECT 1 AS k)");
    assert_eq!(&sql[s.sides[2].name_at.clone()], "(SELECT 2 AS k)");
}
