//! The parts of a join idgate runs in the gateway: which table drives, which conditions filter
//! each table before the join, the key pairs, and the statements built from them.

use super::join_plan::*;

fn shape(sql: &str) -> JoinShape {
    analyze_join(sql.as_bytes())
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .unwrap_or_else(|| panic!("{sql}: not a join"))
}

#[test]
fn where_conjuncts_are_split_by_the_table_they_name() {
    let s = shape(
        "SELECT o.id, i.name FROM orders o JOIN items i ON i.sku = o.sku AND i.price > 3 \
         WHERE o.qty > 1 AND (i.color = 'red' OR i.color IS NULL) AND o.qty + i.price > 7 \
         AND qty < 9",
    );
    assert_eq!(s.kind, JoinKind::Inner);
    assert_eq!(s.driver, 0);
    assert_eq!(s.sides[0].qualifier, "o");
    assert_eq!(s.sides[0].filters, vec!["o.qty > 1".to_string()]);
    // Both tables' names, unqualified ones and subqueries stay in the final evaluation only.
    assert_eq!(
        s.sides[1].filters,
        vec![
            "i.color = 'red' OR i.color IS NULL".to_string(),
            "i.price > 3".to_string()
        ]
    );
    assert_eq!(s.keys, vec![("sku".to_string(), "sku".to_string())]);
}

#[test]
fn outer_joins_filter_only_where_it_keeps_their_meaning() {
    // LEFT: WHERE on the left filters it; ON on the right filters the right; WHERE on the
    // right (`i.id IS NULL`) and ON on the left decide after the join.
    let s = shape(
        "SELECT * FROM orders o LEFT JOIN items i ON i.sku = o.sku AND i.price > 3 AND o.qty > 0 \
         WHERE o.id < 10 AND i.id IS NULL",
    );
    assert_eq!((s.kind, s.driver), (JoinKind::Left, 0));
    assert_eq!(s.sides[0].filters, vec!["o.id < 10".to_string()]);
    assert_eq!(s.sides[1].filters, vec!["i.price > 3".to_string()]);
    // RIGHT: the right table drives.
    let s = shape("SELECT * FROM orders o RIGHT JOIN items i ON o.sku = i.sku WHERE i.id > 2");
    assert_eq!((s.kind, s.driver), (JoinKind::Right, 1));
    assert_eq!(s.keys, vec![("sku".to_string(), "sku".to_string())]);
    assert_eq!(s.sides[1].filters, vec!["i.id > 2".to_string()]);
}

#[test]
fn an_inner_join_drives_from_the_table_with_conditions() {
    let s = shape(
        "SELECT `r`.`id` FROM `app_review` `r` INNER JOIN `app_book` ON (`r`.`book_id` = \
         `app_book`.`id`) WHERE `app_book`.`genre` = 'sf'",
    );
    assert_eq!(s.driver, 1);
    assert_eq!(s.keys, vec![("id".to_string(), "book_id".to_string())]);
    assert_eq!(
        s.sides[1].filters,
        vec!["`app_book`.`genre` = 'sf'".to_string()]
    );
    assert!(!s.sides[1].aliased);
    // A comma join takes its keys from WHERE.
    let s = shape("SELECT * FROM a x, b y WHERE x.k = y.k2 AND y.v = 1");
    assert_eq!(s.driver, 1);
    assert_eq!(s.keys, vec![("k2".to_string(), "k".to_string())]);
    let s = shape("SELECT * FROM a JOIN b USING (k)");
    assert_eq!(s.keys, vec![("k".to_string(), "k".to_string())]);
}

#[test]
fn other_shapes_are_left_or_refused() {
    assert_eq!(analyze_join(b"SELECT * FROM a WHERE id = 1"), Ok(None));
    assert_eq!(analyze_join(b"SELECT 1 UNION SELECT 2"), Ok(None));
    let e = analyze_join(b"SELECT * FROM a JOIN b ON a.x = b.x JOIN c ON c.y = b.y").unwrap_err();
    assert!(e.0.contains("has 3"), "{e:?}");
    let e = analyze_join(b"SELECT * FROM a JOIN (SELECT 1 AS x) d ON d.x = a.x").unwrap_err();
    assert!(e.0.contains("derived"), "{e:?}");
}

#[test]
fn the_inner_batch_statement_and_the_bound_statement() {
    let sql = "SELECT o.id, items.name FROM shop.orders o JOIN items ON items.sku = o.sku \
               WHERE items.price > 3 AND o.id > 0 ORDER BY o.id";
    let s = shape(sql);
    let inner = &s.sides[s.inner()];
    let cond = batch_condition(inner, "sku", &[b"1".to_vec(), b"_utf8mb4 X'41'".to_vec()]);
    assert_eq!(
        String::from_utf8(side_select(sql.as_bytes(), inner, Some(&cond))).unwrap(),
        "SELECT * FROM items AS `items` WHERE (`items`.`sku` IN (1,_utf8mb4 X'41')) AND \
         (items.price > 3)"
    );
    assert_eq!(batch_condition(inner, "sku", &[]), "FALSE");
    let driver = &s.sides[s.driver];
    assert_eq!(
        String::from_utf8(side_select(sql.as_bytes(), driver, None)).unwrap(),
        "SELECT * FROM shop.orders AS `o` WHERE (o.id > 0)"
    );
    let bound = bind_tables(sql.as_bytes(), &s, [b"(T0)".to_vec(), b"(T1)".to_vec()]);
    assert_eq!(
        String::from_utf8(bound).unwrap(),
        "SELECT o.id, items.name FROM (T0) o JOIN (T1) AS `items` ON items.sku = o.sku \
         WHERE items.price > 3 AND o.id > 0 ORDER BY o.id"
    );
}
