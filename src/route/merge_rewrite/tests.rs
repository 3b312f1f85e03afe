//! Plans and shard statements for the shapes the merge handles, and the names of those it refuses.

use super::*;
use sqlparser::ast::{SetExpr, Statement};

pub(super) fn plan(sql: &str) -> Plan<MergePlan> {
    let parsed = crate::sql::parse::parse_one(sql).unwrap();
    let Statement::Query(q) = &parsed else {
        panic!()
    };
    let SetExpr::Select(s) = q.body.as_ref() else {
        panic!()
    };
    plan_merge(sql.as_bytes(), sql, q, s)
}

fn shard(sql: &str) -> String {
    String::from_utf8(plan(sql).unwrap().shard_sql).unwrap()
}

#[test]
fn order_keys_get_weights_and_limits_cover_the_offset() {
    let p =
        plan("SELECT id, v AS name FROM t WHERE x = 1 ORDER BY name DESC, 1 LIMIT 5, 10").unwrap();
    assert_eq!(
        String::from_utf8(p.shard_sql.clone()).unwrap(),
        "SELECT id, v AS name , WEIGHT_STRING(v), WEIGHT_STRING(CONCAT(LEFT(v, 0), ' ')), \
         WEIGHT_STRING(id), WEIGHT_STRING(CONCAT(LEFT(id, 0), ' ')) FROM t WHERE x = 1 ORDER BY name DESC, 1 LIMIT 15 "
    );
    assert_eq!((p.offset, p.limit, p.hidden), (5, Some(10), 4));
    assert_eq!(p.order[0].value, ColRef::Visible(1));
    assert!(p.order[0].desc && !p.order[1].desc);
    let p = plan("SELECT id FROM t ORDER BY lower(v) LIMIT 3 OFFSET 2").unwrap();
    assert_eq!(p.order[0].value, ColRef::Hidden(0));
    assert!(String::from_utf8(p.shard_sql)
        .unwrap()
        .ends_with("ORDER BY lower(v) LIMIT 5 "));
}

#[test]
fn groups_push_aggregates_and_apply_having_here() {
    let sql = "SELECT k, AVG(q), COUNT(*) AS n FROM t GROUP BY k HAVING SUM(q) > 10 AND n > 1 ORDER BY MAX(q) DESC LIMIT 2";
    let s = shard(sql);
    assert_eq!(
        s,
        "SELECT k, AVG(q), COUNT(*) AS n , SUM(q), COUNT(q), MAX(q), WEIGHT_STRING(MAX(q)), \
         WEIGHT_STRING(CONCAT(LEFT(MAX(q), 0), ' ')), WEIGHT_STRING(k), \
         WEIGHT_STRING(CONCAT(LEFT(k, 0), ' ')) FROM t GROUP BY k  ORDER BY MAX(q) DESC  "
    );
    let p = plan(sql).unwrap();
    let MergeMode::Group { keys, aggs, having } = p.mode else {
        panic!()
    };
    assert_eq!(keys[0].value, ColRef::Visible(0));
    assert!(aggs
        .iter()
        .any(|a| a.func == AggFn::Avg && a.parts == Some((ColRef::Hidden(0), ColRef::Hidden(1)))));
    assert!(matches!(having, Some(Having::Bin(HavingOp::And, ..))));
}

#[test]
fn unsupported_shapes_are_named() {
    for (sql, what) in [
        ("SELECT JSON_ARRAYAGG(k) FROM t", "JSON_ARRAYAGG()"),
        ("SELECT BIT_AND(DISTINCT k) FROM t", "BIT_AND(DISTINCT"),
        (
            "SELECT k, SUM(q) + 1 FROM t GROUP BY k",
            "expression over SUM()",
        ),
        (
            "SELECT ROW_NUMBER() OVER (ORDER BY k) FROM t",
            "window function ROW_NUMBER()",
        ),
        ("SELECT DISTINCT k FROM t ORDER BY q", "DISTINCT"),
        ("SELECT k FROM t GROUP BY k WITH ROLLUP", "ROLLUP"),
        (
            "SELECT k, COUNT(*) FROM t GROUP BY k HAVING k LIKE 'a%'",
            "HAVING",
        ),
    ] {
        let e = plan(sql).unwrap_err();
        assert!(e.contains(what), "{sql}: {e}");
    }
}

#[test]
fn splices_keep_the_clients_bytes_across_lines_and_non_utf8() {
    let sql = "SELECT v AS ä,\n  d FROM t WHERE v <> 'ö'\nORDER BY ä DESC\nLIMIT 2, 3";
    assert_eq!(
        shard(sql),
        "SELECT v AS ä,\n  d , WEIGHT_STRING(v), WEIGHT_STRING(CONCAT(LEFT(v, 0), ' ')) FROM t \
         WHERE v <> 'ö'\nORDER BY ä DESC\nLIMIT 5 "
    );
    let mut raw = b"SELECT v FROM t WHERE b = _binary'".to_vec();
    raw.extend_from_slice(&[0xff, 0xfe]);
    raw.extend_from_slice(b"' ORDER BY v");
    let text = crate::sql::parse::sanitize(&raw);
    let parsed = crate::sql::parse::parse_one(&text).unwrap();
    let Statement::Query(q) = &parsed else {
        panic!()
    };
    let SetExpr::Select(s) = q.body.as_ref() else {
        panic!()
    };
    let p = plan_merge(&raw, &text, q, s).unwrap();
    assert!(
        p.shard_sql.windows(2).any(|w| w == [0xff, 0xfe]),
        "raw bytes kept"
    );
}

#[test]
fn groups_ordered_by_their_keys_let_shards_stop_at_offset_plus_limit() {
    let stops = |sql: &str| {
        let s = shard(sql);
        assert!(!s.contains("LIMIT 2,"), "{s}");
        s.ends_with("LIMIT 7 ")
    };
    // Ordered by exactly the group keys (any direction, any order): each shard's first 7 groups
    // hold every group of the first 7 overall.
    assert!(stops(
        "SELECT k, COUNT(*) FROM t GROUP BY k ORDER BY k LIMIT 2, 5"
    ));
    assert!(stops(
        "SELECT a, b, SUM(q) FROM t GROUP BY a, b ORDER BY b DESC, a LIMIT 5 OFFSET 2"
    ));
    assert!(stops(
        "SELECT DISTINCT a, b FROM t ORDER BY b, a LIMIT 2, 5"
    ));
    // Not when the order leaves a key out or orders by an aggregate, with HAVING, or when the
    // shards group more finely than the client (DISTINCT arguments, GROUP_CONCAT pieces).
    for sql in [
        "SELECT a, b, COUNT(*) FROM t GROUP BY a, b ORDER BY a LIMIT 2, 5",
        "SELECT k, COUNT(*) FROM t GROUP BY k ORDER BY COUNT(*), k LIMIT 2, 5",
        "SELECT k FROM t GROUP BY k HAVING COUNT(*) > 1 ORDER BY k LIMIT 2, 5",
        "SELECT k, COUNT(DISTINCT v) FROM t GROUP BY k ORDER BY k LIMIT 2, 5",
        "SELECT k, GROUP_CONCAT(v) FROM t GROUP BY k ORDER BY k LIMIT 2, 5",
        "SELECT DISTINCT a, b FROM t ORDER BY a LIMIT 2, 5",
        "SELECT k, COUNT(*) FROM t GROUP BY k LIMIT 2, 5",
    ] {
        let s = shard(sql);
        assert!(!s.contains("LIMIT"), "{sql} → {s}");
    }
}
