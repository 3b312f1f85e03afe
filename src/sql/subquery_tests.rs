//! Finding subqueries and writing their rows back as literals, without a server.

use mysql_common::constants::{ColumnFlags, ColumnType};

use super::subquery::{
    find_subqueries, has_own_limit, is_multi_table_write, is_sort_item, splice, union_members,
    SubqueryUse,
};
use super::subquery_bind::*;

fn found(sql: &str) -> Vec<(SubqueryUse, String, String)> {
    find_subqueries(sql.as_bytes())
        .expect("readable")
        .into_iter()
        .map(|s| {
            (
                s.kind,
                sql[s.replace.clone()].to_string(),
                sql[s.inner.clone()].to_string(),
            )
        })
        .collect()
}

#[test]
fn finds_each_use_of_a_subquery() {
    let f = found("SELECT * FROM u WHERE id IN (SELECT uid FROM o WHERE q > 1) AND x = 2");
    assert_eq!(
        f,
        vec![(
            SubqueryUse::In,
            "(SELECT uid FROM o WHERE q > 1)".into(),
            "SELECT uid FROM o WHERE q > 1".into()
        )]
    );
    let f = found("SELECT * FROM u WHERE id NOT IN ( select uid from o ) ");
    assert_eq!(f[0].0, SubqueryUse::In);
    assert_eq!(f[0].2, "select uid from o");
    let f = found("SELECT * FROM u WHERE NOT EXISTS (SELECT 1 FROM o)");
    assert_eq!(f[0].0, SubqueryUse::Exists);
    assert_eq!(f[0].1, "EXISTS (SELECT 1 FROM o)");
    let f = found("SELECT (SELECT MAX(id) FROM o) AS m, a FROM u HAVING a > (SELECT 1 FROM o)");
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|x| x.0 == SubqueryUse::Scalar));
    let f = found("SELECT COUNT(*) FROM (SELECT DISTINCT `v` AS `col1` FROM `m2`) subquery");
    assert_eq!(f[0].0, SubqueryUse::Derived);
    assert_eq!(f[0].1, "(SELECT DISTINCT `v` AS `col1` FROM `m2`)");
    let f = found("SELECT * FROM a, (SELECT 1 AS x FROM o) d JOIN (SELECT 2 AS y) e ON 1");
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|x| x.0 == SubqueryUse::Derived));
    let f = found("SELECT a, (SELECT 1 FROM o) FROM u");
    assert_eq!(f[0].0, SubqueryUse::Scalar);
    let f = found("SELECT * FROM u WHERE a > ALL (SELECT b FROM o)");
    assert_eq!(f[0].0, SubqueryUse::Quantified);
    let f = found("SELECT COALESCE((SELECT MAX(id) FROM o), 0)");
    assert_eq!(f[0].0, SubqueryUse::Scalar);
}

#[test]
fn nested_subqueries_belong_to_their_parent() {
    let f = found("SELECT * FROM u WHERE id IN (SELECT uid FROM o WHERE k IN (SELECT k FROM p))");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].2, "SELECT uid FROM o WHERE k IN (SELECT k FROM p)");
}

#[test]
fn unions_and_strings_are_not_subqueries() {
    assert_eq!(found("(SELECT 1) UNION (SELECT 2)"), vec![]);
    assert_eq!(found("SELECT 1 UNION ALL (SELECT 2)"), vec![]);
    assert!(find_subqueries(b"((SELECT 1) UNION (SELECT 2)) UNION SELECT 3").is_none());
    assert_eq!(found("SELECT '(SELECT 1)' FROM o"), vec![]);
    assert!(find_subqueries(b"SELECT (SELECT 1 FROM o").is_none());
}

#[test]
fn splice_replaces_ranges_in_order() {
    let s = b"SELECT * FROM u WHERE a IN (SELECT 1) AND EXISTS (SELECT 2)";
    let subs = find_subqueries(s).unwrap();
    let parts: Vec<_> = subs
        .iter()
        .zip([b"(1,2)".to_vec(), b"TRUE".to_vec()])
        .map(|(q, t)| (q.replace.clone(), t))
        .collect();
    assert_eq!(
        splice(s, &parts),
        b"SELECT * FROM u WHERE a IN (1,2) AND TRUE".to_vec()
    );
}

fn col(ty: ColumnType, charset: u16) -> BoundColumn {
    BoundColumn {
        name: b"c".to_vec(),
        ty,
        charset,
        flags: ColumnFlags::empty(),
        decimals: 0,
    }
}

fn value(c: &BoundColumn, v: Option<&[u8]>) -> String {
    let mut out = Vec::new();
    render_value(c, v, &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn values_are_written_to_read_back_alike() {
    use ColumnType::*;
    assert_eq!(value(&col(MYSQL_TYPE_LONGLONG, 63), Some(b"-42")), "-42");
    assert_eq!(
        value(&col(MYSQL_TYPE_NEWDECIMAL, 63), Some(b"12.50")),
        "12.50"
    );
    assert_eq!(value(&col(MYSQL_TYPE_DOUBLE, 63), Some(b"1.5")), "1.5e0");
    assert_eq!(value(&col(MYSQL_TYPE_DOUBLE, 63), Some(b"1e300")), "1e300");
    assert_eq!(value(&col(MYSQL_TYPE_LONG, 63), None), "NULL");
    // Quotes and backslashes need no escaping in hex, whatever the sql_mode.
    assert_eq!(
        value(&col(MYSQL_TYPE_VAR_STRING, 45), Some(b"a'\\")),
        "_utf8mb4 X'61275C'"
    );
    assert_eq!(
        value(&col(MYSQL_TYPE_VAR_STRING, 33), Some(b"")),
        "_utf8 X''"
    );
    assert_eq!(
        value(&col(MYSQL_TYPE_VAR_STRING, 8), Some(b"\xe9")),
        "_latin1 X'E9'"
    );
    assert_eq!(
        value(&col(MYSQL_TYPE_BLOB, 63), Some(b"\x00\xff")),
        "X'00FF'"
    );
    assert_eq!(
        value(&col(MYSQL_TYPE_DATE, 63), Some(b"2024-01-02")),
        "CAST(_latin1 X'323032342D30312D3032' AS DATE)"
    );
    let mut dt = col(MYSQL_TYPE_DATETIME, 63);
    dt.decimals = 3;
    assert!(value(&dt, Some(b"2024-01-02 00:00:00.000")).ends_with(" AS DATETIME(3))"));
    // Unknown MariaDB collation ids (UCA 14.0 is 2048 and up) are utf8mb4.
    assert!(value(&col(MYSQL_TYPE_VAR_STRING, 2048), Some(b"x")).starts_with("_utf8mb4 "));
}

#[test]
fn in_lists_exists_and_scalars() {
    let c = col(ColumnType::MYSQL_TYPE_LONG, 63);
    let rows = vec![
        vec![Some(b"1".to_vec())],
        vec![None],
        vec![Some(b"3".to_vec())],
    ];
    assert_eq!(
        render_in_list(std::slice::from_ref(&c), &rows),
        b"(1,NULL,3)"
    );
    assert_eq!(
        render_in_list(std::slice::from_ref(&c), &[]),
        b"(SELECT NULL FROM DUAL WHERE FALSE)"
    );
    let two = vec![c.clone(), c.clone()];
    let pairs = vec![vec![Some(b"1".to_vec()), Some(b"2".to_vec())]];
    assert_eq!(render_in_list(&two, &pairs), b"((1,2))");
    assert_eq!(
        render_in_list(&two, &[]),
        b"(SELECT NULL,NULL FROM DUAL WHERE FALSE)"
    );
    assert_eq!(render_exists(true), b"TRUE");
    assert_eq!(render_exists(false), b"FALSE");
    assert_eq!(
        render_scalar(std::slice::from_ref(&c), &rows[..1]).unwrap(),
        b"(1)"
    );
    assert_eq!(
        render_scalar(std::slice::from_ref(&c), &[]).unwrap(),
        b"(NULL)"
    );
    let e = render_scalar(std::slice::from_ref(&c), &rows).unwrap_err();
    assert_eq!((e.code, e.state), (1242, b"21000"));
    assert_eq!(e.message, "Subquery returns more than 1 row");
}

#[test]
fn derived_tables_are_typed_literal_tables() {
    let mut id = col(ColumnType::MYSQL_TYPE_LONGLONG, 63);
    id.name = b"id".to_vec();
    let mut v = col(ColumnType::MYSQL_TYPE_VAR_STRING, 45);
    v.name = b"we`ird".to_vec();
    let cols = vec![id, v];
    let rows = vec![
        vec![Some(b"1".to_vec()), Some(b"a".to_vec())],
        vec![Some(b"2".to_vec()), None],
    ];
    assert_eq!(
        String::from_utf8(render_derived(&cols, &rows).unwrap()).unwrap(),
        "(SELECT CAST(1 AS SIGNED) AS `id`,_utf8mb4 X'61' AS `we``ird` \
         UNION ALL VALUES (2,NULL))"
    );
    assert_eq!(
        String::from_utf8(render_derived(&cols, &[]).unwrap()).unwrap(),
        "(SELECT CAST(NULL AS SIGNED) AS `id`,CAST(NULL AS CHAR CHARACTER SET utf8mb4) AS \
         `we``ird` FROM DUAL WHERE FALSE)"
    );
}

#[test]
fn quantified_sets_are_literal_tables_with_a_full_row_first() {
    let f =
        found("SELECT * FROM u WHERE a <> SOME (SELECT b FROM o) AND c = ANY (SELECT d FROM p)");
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|x| x.0 == SubqueryUse::Quantified));
    assert_eq!(f[0].1, "(SELECT b FROM o)");
    let k = col(ColumnType::MYSQL_TYPE_LONG, 63);
    let v = col(ColumnType::MYSQL_TYPE_VAR_STRING, 45);
    let cols = vec![k.clone(), v.clone()];
    // The inner names repeat; the NULL-free row goes first so a text value stays a literal.
    let mut rows = vec![
        vec![None, Some(b"a".to_vec())],
        vec![Some(b"2".to_vec()), Some(b"b".to_vec())],
    ];
    assert_eq!(
        String::from_utf8(render_quantified(&cols, &mut rows).unwrap()).unwrap(),
        "(SELECT * FROM (SELECT CAST(2 AS SIGNED) AS `c1`,_utf8mb4 X'62' AS `c2` \
         UNION ALL VALUES (NULL,_utf8mb4 X'61')) AS idgate_set)"
    );
    // An empty set stays empty (ALL: TRUE, ANY: FALSE, as MariaDB decides).
    assert_eq!(
        String::from_utf8(render_quantified(&[k], &mut []).unwrap()).unwrap(),
        "(SELECT * FROM (SELECT CAST(NULL AS SIGNED) AS `c1` FROM DUAL WHERE FALSE) AS \
         idgate_set)"
    );
}

#[test]
fn a_limit_of_the_inner_statement_itself_is_found() {
    assert!(has_own_limit(b"SELECT k FROM t ORDER BY id LIMIT 3"));
    assert!(has_own_limit(b"select k from t limit 1"));
    assert!(!has_own_limit(b"SELECT k FROM (SELECT k FROM t LIMIT 3) d"));
    assert!(!has_own_limit(b"SELECT `limit` FROM t WHERE v = 'LIMIT 1'"));
}

#[test]
fn single_table_writes_are_told_from_multi_table_ones() {
    for single in [
        "UPDATE orders SET qty = 0 WHERE id IN (SELECT order_id FROM items WHERE x = 1)",
        "update `orders` set a = (SELECT MAX(b) FROM t), c = 1 where id = 2",
        "DELETE FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE y, z)",
        "DELETE LOW_PRIORITY QUICK IGNORE FROM o WHERE EXISTS (SELECT 1 FROM t JOIN u ON 1)",
        "DELETE FROM o ORDER BY id LIMIT 3",
    ] {
        assert!(!is_multi_table_write(single.as_bytes()), "{single}");
    }
    for multi in [
        "UPDATE orders o JOIN items i ON i.order_id = o.id SET o.qty = 0",
        "UPDATE orders o, items i SET o.qty = 0 WHERE i.order_id = o.id",
        "UPDATE orders o STRAIGHT_JOIN items i ON 1 SET o.qty = 0",
        "DELETE o FROM orders o JOIN items i ON i.order_id = o.id",
        "DELETE o.* FROM orders o WHERE o.id IN (SELECT 1)",
        "DELETE FROM o USING orders o, items i WHERE i.order_id = o.id",
        "DELETE FROM o, i USING orders o JOIN items i",
        "SELECT 1",
    ] {
        assert!(is_multi_table_write(multi.as_bytes()), "{multi}");
    }
}

#[test]
fn subqueries_of_each_union_member_are_found() {
    let f = found(
        "(SELECT a FROM u WHERE a IN (SELECT b FROM o)) UNION ALL (SELECT (SELECT MAX(c) FROM p)) \
         UNION DISTINCT SELECT d FROM v WHERE d > ALL (SELECT e FROM q) ORDER BY 1",
    );
    let kinds: Vec<SubqueryUse> = f.iter().map(|x| x.0).collect();
    assert_eq!(
        kinds,
        [
            SubqueryUse::In,
            SubqueryUse::Scalar,
            SubqueryUse::Quantified
        ]
    );
    assert_eq!(f[0].2, "SELECT b FROM o");
    assert_eq!(f[1].1, "(SELECT MAX(c) FROM p)");
    assert_eq!(f[2].2, "SELECT e FROM q");
    // A derived table whose body is a UNION stays one derived table.
    let f = found("SELECT * FROM (SELECT a FROM u UNION SELECT b FROM o) d");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0, SubqueryUse::Derived);
}

#[test]
fn an_in_list_of_a_union_is_one_subquery_of_its_members() {
    let sql = "SELECT id FROM b WHERE id IN ((SELECT id FROM b WHERE p > 3) UNION ALL (SELECT id FROM b WHERE g = 'x')) ORDER BY id";
    let f = found(sql);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, SubqueryUse::In);
    let inner = f[0].2.clone();
    assert_eq!(
        inner,
        "(SELECT id FROM b WHERE p > 3) UNION ALL (SELECT id FROM b WHERE g = 'x')"
    );
    let members: Vec<&str> = union_members(inner.as_bytes())
        .unwrap()
        .into_iter()
        .map(|r| &inner[r])
        .collect();
    assert_eq!(
        members,
        [
            "SELECT id FROM b WHERE p > 3",
            "SELECT id FROM b WHERE g = 'x'"
        ]
    );
    // Not a union of parenthesized SELECTs: left as before.
    assert_eq!(union_members(b"SELECT 1"), None);
    assert_eq!(union_members(b"(SELECT 1) EXCEPT (SELECT 2)"), None);
    assert_eq!(
        found("SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4))"),
        vec![]
    );
}

#[test]
fn a_select_option_before_a_subquery_is_no_set_operator() {
    for sql in [
        "SELECT DISTINCT (SELECT MAX(id) FROM t) FROM u",
        "SELECT ALL (SELECT MAX(id) FROM t) FROM u",
        "SELECT COUNT(DISTINCT (SELECT MAX(id) FROM t)) FROM u",
    ] {
        let f = found(sql);
        assert_eq!(f.len(), 1, "{sql}");
        assert_eq!(f[0].0, SubqueryUse::Scalar, "{sql}");
        assert_eq!(f[0].1, "(SELECT MAX(id) FROM t)", "{sql}");
    }
    // A member of the statement's own UNION DISTINCT / ALL is not a subquery.
    let f = found("SELECT 1 FROM u UNION DISTINCT (SELECT 2 FROM t) UNION ALL (SELECT 3 FROM t)");
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn common_table_expressions_are_tables_and_recursive_ones_are_left_whole() {
    let f = found(
        "WITH c AS (SELECT id FROM t), d (x, y) AS (SELECT a, b FROM u) \
         SELECT * FROM c JOIN d ON d.x = c.id WHERE c.id = (SELECT 1 AS z)",
    );
    let kinds: Vec<SubqueryUse> = f.iter().map(|x| x.0).collect();
    assert_eq!(
        kinds,
        vec![SubqueryUse::Cte, SubqueryUse::Cte, SubqueryUse::Scalar],
        "{f:?}"
    );
    assert_eq!(f[1].2, "SELECT a, b FROM u");
    assert!(find_subqueries(
        b"WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT * FROM r"
    )
    .is_none());
}

#[test]
fn whole_sort_and_group_items_are_told_apart() {
    let at = |sql: &str, sub: &str| {
        let start = sql.find(sub).unwrap();
        is_sort_item(sql.as_bytes(), &(start..start + sub.len()))
    };
    let sub = "(SELECT MAX(v) FROM t)";
    for sql in [
        "SELECT id FROM t ORDER BY (SELECT MAX(v) FROM t)",
        "SELECT id FROM t ORDER BY (SELECT MAX(v) FROM t) DESC, id",
        "SELECT id FROM t ORDER BY id, (SELECT MAX(v) FROM t) LIMIT 3",
        "SELECT COUNT(*) FROM t GROUP BY (SELECT MAX(v) FROM t) HAVING COUNT(*) > 1",
        "SELECT a FROM (SELECT id AS a FROM t ORDER BY (SELECT MAX(v) FROM t)) d",
    ] {
        assert!(at(sql, sub), "{sql}");
    }
    for sql in [
        "SELECT id FROM t ORDER BY (SELECT MAX(v) FROM t) + id",
        "SELECT id FROM t ORDER BY id + (SELECT MAX(v) FROM t)",
        "SELECT (SELECT MAX(v) FROM t), id FROM t ORDER BY id",
        "SELECT id FROM t WHERE v = (SELECT MAX(v) FROM t) ORDER BY id",
        "SELECT id FROM t ORDER BY FIELD(id, (SELECT MAX(v) FROM t))",
    ] {
        assert!(!at(sql, sub), "{sql}");
    }
}
