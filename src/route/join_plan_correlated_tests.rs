//! Correlated subqueries taken apart for the gateway: the outer tables, one side per subquery
//! over a configured table, keyed by its equalities with the outer query, with its own
//! conditions; shapes that do not fit are left to the other paths.

use super::join_plan::JoinShape;
use super::join_plan_correlated::analyze_correlated;
use crate::sql::TableRef;

/// Every table but `plain` is configured.
fn configured(t: &TableRef) -> bool {
    t.name != "plain"
}

fn shape(sql: &str) -> Option<JoinShape> {
    analyze_correlated(sql.as_bytes(), &configured).unwrap_or_else(|e| panic!("{sql}: {e:?}"))
}

#[test]
fn an_exists_is_keyed_by_its_equality_with_the_outer_table() {
    let s = shape(
        "SELECT b.id FROM book b WHERE b.genre = 'x' AND EXISTS (SELECT * FROM review r WHERE \
         r.book_id = b.id AND r.stars > 3) ORDER BY b.id",
    )
    .unwrap();
    assert!(s.correlated);
    assert_eq!(s.sides.len(), 2);
    assert_eq!(s.driver, 0);
    assert_eq!(s.sides[0].filters, ["b.genre = 'x'"]);
    assert!(s.sides[1].nullable, "a subquery's table never drives");
    assert_eq!(s.sides[1].qualifier, "r");
    assert_eq!(s.sides[1].filters, ["r.stars > 3"]);
    let k = &s.keys[0];
    assert_eq!(
        (k.from, k.from_column.as_str(), k.to, k.to_column.as_str()),
        (0, "id", 1, "book_id")
    );
    let order: Vec<_> = s
        .fetch_order(0, &|_| false)
        .into_iter()
        .map(|f| (f.side, f.key.map(|k| k.from)))
        .collect();
    assert_eq!(order, [(0, None), (1, Some(0))]);
}

#[test]
fn django_shapes_with_parenthesized_outer_columns_and_several_subqueries() {
    let s = shape(
        "SELECT `app_book`.`id`, (SELECT COUNT(*) AS `c` FROM `app_review` U0 WHERE \
         U0.`book_id` = (`app_book`.`id`) GROUP BY U0.`book_id`) AS `n` FROM `app_book` WHERE \
         NOT EXISTS(SELECT 1 AS `a` FROM `app_item` U1 WHERE (U1.`book_id` = (`app_book`.`id`) \
         AND U1.`sku` = (`app_book`.`sku`)) LIMIT 1)",
    )
    .unwrap();
    assert_eq!(s.sides.len(), 3);
    let keys: Vec<_> = s
        .keys
        .iter()
        .map(|k| (k.from, k.from_column.as_str(), k.to, k.to_column.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            (0, "id", 1, "book_id"),
            (0, "id", 2, "book_id"),
            (0, "sku", 2, "sku")
        ]
    );
    assert!(!s.row_wise, "a COUNT in the select list");
}

#[test]
fn a_subquery_over_unconfigured_tables_stays_as_written() {
    let s = shape(
        "SELECT b.id FROM book b WHERE EXISTS (SELECT 1 FROM plain p WHERE p.x > b.id) AND \
         EXISTS (SELECT 1 FROM review r WHERE r.book_id = b.id)",
    )
    .unwrap();
    assert_eq!(s.sides.len(), 2);
    assert_eq!(s.sides[1].table.name, "review");
    assert!(s.row_wise);
}

#[test]
fn shapes_it_cannot_key_are_left_to_the_other_paths() {
    for sql in [
        // Uncorrelated: runs first on the other path.
        "SELECT b.id FROM book b WHERE b.id IN (SELECT r.book_id FROM review r WHERE r.stars > 3)",
        // No equality, or the equality inside OR.
        "SELECT b.id FROM book b WHERE EXISTS (SELECT 1 FROM review r WHERE r.book_id > b.id)",
        "SELECT b.id FROM book b WHERE EXISTS (SELECT 1 FROM review r WHERE r.book_id = b.id \
         OR r.stars = 5)",
        // Nested subqueries, a join inside, a derived table outside.
        "SELECT b.id FROM book b WHERE EXISTS (SELECT 1 FROM review r WHERE r.book_id = b.id \
         AND r.stars IN (SELECT s FROM stars))",
        "SELECT b.id FROM book b WHERE EXISTS (SELECT 1 FROM review r JOIN item i ON i.id = \
         r.item WHERE r.book_id = b.id)",
        "SELECT d.id FROM (SELECT id FROM book) d WHERE EXISTS (SELECT 1 FROM review r WHERE \
         r.book_id = d.id)",
        // The inner table hides the outer one's name.
        "SELECT book.id FROM book WHERE EXISTS (SELECT 1 FROM book WHERE book.author_id = \
         book.id)",
        // No subquery at all.
        "SELECT b.id FROM book b WHERE b.id = 3",
    ] {
        assert_eq!(shape(sql), None, "{sql}");
    }
}
