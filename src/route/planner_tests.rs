//! Plans of each kind, made and bound without a server.

use super::plan::{BoundMerge, PlanContext, Route, ShapeKind, ShapePlan, Term};
use super::{planner, Placement, TableRule, Tables};
use crate::sql;

fn rule(name: &str, placement: Placement) -> TableRule {
    super::test_rules::rule(name, None, placement)
}

fn mod2(name: &str, column: &str) -> TableRule {
    rule(name, super::test_rules::sharded(column, &["s0", "s1"]))
}

pub(super) fn tables() -> Tables {
    Tables::new(vec![
        mod2("orders", "id"),
        mod2("users", "id"),
        rule(
            "countries",
            Placement::Broadcast {
                backends: vec!["s0".into(), "s1".into()],
            },
        ),
        rule(
            "local",
            Placement::Single {
                backend: "s0".into(),
            },
        ),
    ])
}

fn plan_of(tables: &Tables, stmt: &str) -> ShapePlan {
    let ctx = PlanContext { db: None, tables };
    planner::plan(stmt.as_bytes(), &sql::shape(stmt.as_bytes()).slots, &ctx).unwrap()
}

/// The route of `stmt` bound to the plan made for `planned` (a statement of the same shape).
fn bound(tables: &Tables, planned: &str, stmt: &str) -> Result<Option<Route>, String> {
    let shape = sql::shape(planned.as_bytes());
    assert_eq!(shape.text, sql::shape(stmt.as_bytes()).text, "one shape");
    let plan = plan_of(tables, planned);
    let literals = sql::shape(stmt.as_bytes()).slots;
    assert!(plan.holds_for(stmt.as_bytes(), &literals));
    plan.bind(stmt.as_bytes(), &literals, false)
        .map_err(|e| e.to_string())
}

fn backends(r: &Route) -> Vec<String> {
    match r {
        Route::One(b) => vec![b.clone()],
        Route::Concat(bs) | Route::Everywhere(bs) | Route::Write { backends: bs, .. } => bs.clone(),
        Route::Merge(bs, _) => bs.clone(),
        Route::ByKey(k) => k.shards.clone(),
    }
}

#[test]
fn point_selects_pin_by_each_executions_literal() {
    let t = tables();
    let planned = "SELECT * FROM orders WHERE id = 4";
    let r = bound(&t, planned, "SELECT * FROM orders WHERE id = 7").unwrap();
    assert!(matches!(&r, Some(Route::One(b)) if b == "s1"), "{r:?}");
    let r = bound(&t, planned, "SELECT * FROM orders WHERE id = 10").unwrap();
    assert!(matches!(&r, Some(Route::One(b)) if b == "s0"), "{r:?}");
    // A negated literal and a string literal are read as the text route reads them.
    let r = bound(
        &t,
        "SELECT * FROM orders WHERE id = -4",
        "SELECT * FROM orders WHERE id = -3",
    )
    .unwrap();
    assert!(matches!(&r, Some(Route::One(b)) if b == "s1"), "{r:?}");
    // A value that pins nothing (a float) reaches every shard.
    let r = bound(&t, planned, "SELECT * FROM orders WHERE id = 1.5").unwrap();
    assert!(
        matches!(&r, Some(Route::Concat(bs)) if bs.len() == 2),
        "{r:?}"
    );
    // A float when planned, an integer when bound: the plan kept the condition.
    let r = bound(
        &t,
        "SELECT * FROM orders WHERE id = 1.5",
        "SELECT * FROM orders WHERE id = 3",
    )
    .unwrap();
    assert!(matches!(&r, Some(Route::One(b)) if b == "s1"), "{r:?}");
}

#[test]
fn in_lists_and_updates_spread_to_the_shards_they_name() {
    let t = tables();
    let r = bound(
        &t,
        "SELECT * FROM orders WHERE id IN (1, 3)",
        "SELECT * FROM orders WHERE id IN (2, 3)",
    )
    .unwrap()
    .unwrap();
    assert!(matches!(&r, Route::Concat(_)));
    assert_eq!(backends(&r), ["s0", "s1"]);
    let r = bound(
        &t,
        "UPDATE orders SET note = 'a' WHERE id IN (1, 3)",
        "UPDATE orders SET note = 'b' WHERE id IN (5, 7)",
    )
    .unwrap()
    .unwrap();
    assert!(matches!(&r, Route::One(b) if b == "s1"), "{r:?}");
    let r = bound(
        &t,
        "DELETE FROM orders WHERE note = 'x'",
        "DELETE FROM orders WHERE note = 'y'",
    )
    .unwrap()
    .unwrap();
    assert!(matches!(&r, Route::Write { backends, broadcast: false } if backends.len() == 2));
}

#[test]
fn broadcast_ddl_and_unplaced_statements() {
    let t = tables();
    assert!(matches!(
        plan_of(&t, "SELECT * FROM countries WHERE id = 1").kind,
        ShapeKind::Forward
    ));
    let r = bound(
        &t,
        "UPDATE countries SET n = 'a' WHERE id = 1",
        "UPDATE countries SET n = 'b' WHERE id = 2",
    )
    .unwrap();
    assert!(matches!(
        r,
        Some(Route::Write {
            broadcast: true,
            ..
        })
    ));
    let p = plan_of(&t, "ALTER TABLE orders ADD COLUMN n INT");
    assert!(matches!(&p.kind, ShapeKind::Everywhere(bs) if bs.len() == 2));
    assert!(matches!(
        plan_of(&t, "SELECT * FROM local WHERE id = 1").kind,
        ShapeKind::Forward
    ));
}

#[test]
fn refusals_are_errors_not_plans() {
    let t = tables();
    let ctx = PlanContext {
        db: None,
        tables: &t,
    };
    for (stmt, says) in [
        ("UPDATE orders SET id = 3 WHERE id = 1", "move the row"),
        (
            "SELECT * FROM orders JOIN local ON orders.id = local.id",
            "default backend only",
        ),
        (
            "SELECT * FROM orders o JOIN users u ON o.note = u.id",
            "sharded alike",
        ),
        (
            "SELECT * FROM countries WHERE id IN (SELECT id FROM orders)",
            "subquery",
        ),
    ] {
        let e = planner::plan(stmt.as_bytes(), &sql::shape(stmt.as_bytes()).slots, &ctx)
            .err()
            .unwrap_or_else(|| panic!("{stmt} was planned"));
        assert!(e.to_string().contains(says), "{stmt}: {e}");
    }
    // Colocated joins plan.
    let r = bound(
        &t,
        "SELECT * FROM orders o JOIN users u ON o.id = u.id WHERE o.id = 2",
        "SELECT * FROM orders o JOIN users u ON o.id = u.id WHERE o.id = 5",
    )
    .unwrap();
    assert!(matches!(&r, Some(Route::One(b)) if b == "s1"), "{r:?}");
}

#[test]
fn merges_bind_the_where_literals_into_the_shard_sql() {
    let t = tables();
    let planned = "SELECT id, k FROM orders WHERE k >= 5012 AND c = 'a' ORDER BY k, id LIMIT 10";
    let p = plan_of(&t, planned);
    let fixed: Vec<&[u8]> = p.fixed.iter().map(|(_, t)| t.as_slice()).collect();
    assert!(fixed.is_empty(), "nothing is fixed: {fixed:?}");
    let stmt = "SELECT id, k FROM orders WHERE k >= 77 AND c = 'it''s' ORDER BY k, id LIMIT 10";
    let Some(Route::Merge(bs, m)) = bound(&t, planned, stmt).unwrap() else {
        panic!("a merge")
    };
    assert_eq!(bs, ["s0", "s1"]);
    // The same as planning the statement itself.
    let direct = plan_of(&t, stmt);
    let Ok(Some(Route::Merge(_, d))) =
        direct.bind(stmt.as_bytes(), &sql::shape(stmt.as_bytes()).slots, false)
    else {
        panic!("a merge")
    };
    assert_eq!(
        String::from_utf8_lossy(&m.shard_sql),
        String::from_utf8_lossy(&d.shard_sql)
    );
    assert!(m.shard_sql.windows(7).any(|w| w == b"'it''s'"));
    assert_eq!(m.limit, Some(10));
}

/// The merge `stmt` binds to with the plan made for `planned`, and with a plan of its own.
fn page_pair(t: &Tables, planned: &str, stmt: &str) -> (BoundMerge, BoundMerge) {
    let Ok(Some(Route::Merge(_, cached))) = bound(t, planned, stmt) else {
        panic!("a merge for {stmt}")
    };
    let direct = plan_of(t, stmt);
    let Ok(Some(Route::Merge(_, fresh))) =
        direct.bind(stmt.as_bytes(), &sql::shape(stmt.as_bytes()).slots, false)
    else {
        panic!("a merge for {stmt}")
    };
    (*cached, *fresh)
}

#[test]
fn every_page_binds_to_the_plan_of_one() {
    let t = tables();
    let bodies = [
        "SELECT id, k FROM orders WHERE k > 5 ORDER BY k, id",
        "SELECT k, COUNT(*) FROM orders WHERE k > 5 GROUP BY k ORDER BY k",
        "SELECT DISTINCT k FROM orders WHERE k > 5 ORDER BY k",
    ];
    let forms: [fn(u64, u64) -> String; 3] = [
        |_, n| format!("LIMIT {n}"),
        |o, n| format!("LIMIT {o}, {n}"),
        |o, n| format!("LIMIT {n} OFFSET {o}"),
    ];
    for body in bodies {
        for form in forms {
            let planned = format!("{body} {}", form(40, 20));
            assert!(plan_of(&t, &planned).fixed.is_empty(), "{planned}");
            for (o, n) in [(60, 20), (0, 7), (1, 1), (u64::MAX, 5), (3, u64::MAX)] {
                let stmt = format!("{body} {}", form(o, n));
                let (cached, fresh) = page_pair(&t, &planned, &stmt);
                assert_eq!(
                    String::from_utf8_lossy(&cached.shard_sql),
                    String::from_utf8_lossy(&fresh.shard_sql),
                    "{stmt}"
                );
                assert_eq!((cached.offset, cached.limit), (fresh.offset, fresh.limit));
                assert_eq!(cached.limit, Some(n), "{stmt}");
                assert_eq!(cached.describe(), fresh.describe());
            }
        }
    }
    // Streaming: each shard returns offset + rows, saturating.
    let body = bodies[0];
    let (m, _) = page_pair(
        &t,
        &format!("{body} LIMIT 40, 20"),
        &format!("{body} LIMIT 60, 20"),
    );
    assert!(String::from_utf8_lossy(&m.shard_sql).ends_with("LIMIT 80 "));
    let (m, _) = page_pair(
        &t,
        &format!("{body} LIMIT 40, 20"),
        &format!("{body} LIMIT {}, 9", u64::MAX),
    );
    assert!(String::from_utf8_lossy(&m.shard_sql).ends_with(&format!("LIMIT {} ", u64::MAX)));
}

#[test]
fn a_limit_of_zero_or_out_of_range_has_a_plan_of_its_own() {
    let t = tables();
    let body = "SELECT id, k FROM orders WHERE k > 5 ORDER BY k, id";
    let holds = |planned: &str, stmt: &str| {
        plan_of(&t, planned).holds_for(stmt.as_bytes(), &sql::shape(stmt.as_bytes()).slots)
    };
    let s = |tail: &str| format!("{body} {tail}");
    assert!(!holds(&s("LIMIT 10"), &s("LIMIT 0")));
    assert!(!holds(&s("LIMIT 0"), &s("LIMIT 10")));
    assert!(!holds(&s("LIMIT 5, 10"), &s("LIMIT 5, 00")));
    assert!(holds(&s("LIMIT 0"), &s("LIMIT 0")));
    assert!(
        holds(&s("LIMIT 4, 0"), &s("LIMIT 9, 0")),
        "the offset of LIMIT 0 binds"
    );
    let big = "99999999999999999999";
    assert!(!holds(&s("LIMIT 10"), &s(&format!("LIMIT {big}"))));
    assert!(!holds(&s("LIMIT 3, 10"), &s(&format!("LIMIT {big}, 10"))));
    assert!(!holds(&s("LIMIT 10 OFFSET 3"), &s("LIMIT 10 OFFSET 3.5")));
    // What a fresh plan says about those: LIMIT 0 asks the shards for nothing; a number past
    // u64 is refused.
    let (m, f) = page_pair(&t, &s("LIMIT 4, 0"), &s("LIMIT 9, 0"));
    assert!(String::from_utf8_lossy(&m.shard_sql).ends_with("LIMIT 0 "));
    assert_eq!((m.offset, m.limit), (f.offset, f.limit));
    assert_eq!((m.offset, m.limit), (9, Some(0)));
    let refused = plan_of(&t, &s(&format!("LIMIT {big}")));
    let ShapeKind::Sharded(p) = &refused.kind else {
        panic!("sharded")
    };
    assert!(matches!(&p.merge, Some(Err(w)) if w.contains(big)));
}

#[test]
fn literals_the_merge_reads_are_fixed() {
    let t = tables();
    for (stmt, fixed) in [
        ("SELECT k, 'tag' FROM orders ORDER BY 2 LIMIT 5 OFFSET 3", 2),
        ("SELECT k + 1 FROM orders WHERE a = 2 ORDER BY k + 1", 2),
        (
            "SELECT k, COUNT(*) FROM orders WHERE a = 2 GROUP BY k HAVING COUNT(*) > 3",
            1,
        ),
        // The refusal names no WHERE literal: those stay slots.
        (
            "SELECT JSON_ARRAYAGG(k) FROM orders WHERE id = 3 AND a = 'x'",
            0,
        ),
        ("SELECT JSON_ARRAYAGG(k), 'v' FROM orders WHERE id = 3", 1),
    ] {
        let p = plan_of(&t, stmt);
        assert_eq!(p.fixed.len(), fixed, "{stmt}: {:?}", p.fixed);
    }
    // Pinned to one shard, a merge idgate cannot do is no obstacle; reaching two, it is refused.
    let planned = "SELECT JSON_ARRAYAGG(k) FROM orders WHERE id = 3 AND a = 'x'";
    let r = bound(
        &t,
        planned,
        "SELECT JSON_ARRAYAGG(k) FROM orders WHERE id = 4 AND a = 'x'",
    );
    assert!(matches!(r, Ok(Some(Route::One(b))) if b == "s0"));
    let r = bound(
        &t,
        "SELECT JSON_ARRAYAGG(k) FROM orders WHERE id IN (3, 5) AND a = 'x'",
        "SELECT JSON_ARRAYAGG(k) FROM orders WHERE id IN (3, 4) AND a = 'x'",
    );
    assert!(r.unwrap_err().contains("JSON_ARRAYAGG()"));
}

#[test]
fn prepared_placeholders_stay_terms() {
    let t = tables();
    let p = plan_of(&t, "SELECT * FROM orders WHERE id = ? AND note = 'n'");
    let ShapeKind::Sharded(s) = &p.kind else {
        panic!("sharded")
    };
    assert_eq!(s.keys[0].1, [Term::Placeholder(0)]);
    assert_eq!(
        s.keys[1].1,
        [Term::Slot {
            slot: 0,
            negated: false
        }]
    );
    let (_, set) = p
        .pinned(|t| match t {
            Term::Placeholder(0) => Some(super::ShardValue::Int(9)),
            _ => None,
        })
        .unwrap();
    assert_eq!(set.unwrap().into_iter().collect::<Vec<_>>(), [1]);
}

/// Authors and their books sharded alike on the author's id; reviews by their own id; letters
/// by author id over other shards.
fn library() -> Tables {
    let mut letters = mod2("letters", "author_id");
    if let Placement::Sharded { shards, .. } = &mut letters.placement {
        *shards = vec!["s2".into(), "s3".into()];
    }
    Tables::new(vec![
        mod2("author", "id"),
        mod2("book", "author_id"),
        mod2("review", "id"),
        letters,
    ])
}

#[test]
fn correlated_subqueries_of_tables_placed_alike_run_per_shard() {
    let t = library();
    let ctx = PlanContext {
        db: None,
        tables: &t,
    };
    for stmt in [
        // Django's Exists() annotation and filter, NOT EXISTS, a correlated count.
        "SELECT author.id, EXISTS(SELECT 1 AS a FROM book U1 WHERE U1.author_id = (author.id) \
         LIMIT 1) AS has_books FROM author",
        "SELECT author.id FROM author WHERE EXISTS(SELECT 1 AS a FROM book U1 \
         WHERE U1.author_id = (author.id) LIMIT 1)",
        "SELECT a.id FROM author a WHERE NOT EXISTS (SELECT 1 FROM book b WHERE a.id = b.author_id)",
        "SELECT a.id, (SELECT COUNT(*) FROM book b WHERE b.author_id = a.id AND b.id > 2) AS n \
         FROM author a ORDER BY a.id",
        // Nested: the inner book correlated with the outer author.
        "SELECT a.id FROM author a WHERE EXISTS (SELECT 1 FROM book b WHERE b.author_id = a.id \
         AND EXISTS (SELECT 1 FROM book c WHERE c.author_id = b.author_id))",
    ] {
        let p = planner::plan(stmt.as_bytes(), &sql::shape(stmt.as_bytes()).slots, &ctx);
        assert!(p.is_ok(), "{stmt}: {:?}", p.err());
    }
    // Pinned by the outer key, the subquery goes along.
    let r = bound(
        &t,
        "SELECT a.id FROM author a WHERE a.id = 2 AND EXISTS (SELECT 1 FROM book b WHERE \
         b.author_id = a.id)",
        "SELECT a.id FROM author a WHERE a.id = 5 AND EXISTS (SELECT 1 FROM book b WHERE \
         b.author_id = a.id)",
    )
    .unwrap();
    assert!(matches!(&r, Some(Route::One(b)) if b == "s1"), "{r:?}");
    for stmt in [
        // Reviews are sharded by their own id: a review of a book may be on another shard.
        "SELECT * FROM book WHERE EXISTS (SELECT * FROM review WHERE review.book_id = book.id)",
        // Correlated on a column that is not the sharding column.
        "SELECT a.id FROM author a WHERE EXISTS (SELECT 1 FROM book b WHERE b.id = a.id)",
        // Only in an OR: not every pair is tied to one shard.
        "SELECT a.id FROM author a WHERE EXISTS (SELECT 1 FROM book b WHERE b.author_id = a.id \
         OR b.id = 1)",
        // Placed alike in all but the shards.
        "SELECT a.id FROM author a WHERE EXISTS (SELECT 1 FROM letters l WHERE l.author_id = a.id)",
        // Not correlated: runs first, on its own.
        "SELECT a.id FROM author a WHERE a.id IN (SELECT author_id FROM book)",
        // The inner alias shadows the outer one: `b.author_id = b.id` is inside book.
        "SELECT b.id FROM author b WHERE EXISTS (SELECT 1 FROM book b WHERE b.author_id = b.id)",
        // A derived table is not correlated.
        "SELECT a.id FROM author a WHERE EXISTS (SELECT 1 FROM book b WHERE b.author_id = a.id) \
         AND a.id IN (SELECT d.x FROM (SELECT author_id AS x FROM book) d)",
    ] {
        let e = planner::plan(stmt.as_bytes(), &sql::shape(stmt.as_bytes()).slots, &ctx)
            .err()
            .unwrap_or_else(|| panic!("{stmt} was planned"));
        assert!(e.to_string().contains("subquery"), "{stmt}: {e}");
    }
}

#[test]
fn a_prepared_select_pins_one_shard_from_its_bound_values() {
    use super::prepared::PreparedSelect;
    use mysql_common::value::Value;
    let t = tables();
    let single = |stmt: &str, values: &[Value], generation: u64| {
        let p = std::sync::Arc::new(plan_of(&t, stmt));
        let literals = sql::shape(stmt.as_bytes()).slots;
        PreparedSelect::new(p, literals, 7)
            .and_then(|p| p.single_shard(stmt.as_bytes(), values, generation))
    };
    let point = "SELECT c FROM orders WHERE id = ?";
    assert_eq!(single(point, &[Value::Int(9)], 7).as_deref(), Some("s1"));
    assert_eq!(single(point, &[Value::UInt(4)], 7).as_deref(), Some("s0"));
    assert_eq!(
        single(point, &[Value::Bytes(b"4".to_vec())], 7).as_deref(),
        Some("s0")
    );
    // NULL or a float pins nothing; a new configuration generation sends it to the text route.
    assert_eq!(single(point, &[Value::NULL], 7), None);
    assert_eq!(single(point, &[Value::Double(4.0)], 7), None);
    assert_eq!(single(point, &[Value::Int(9)], 8), None);
    let list = "SELECT c FROM orders WHERE id IN (?, ?)";
    assert_eq!(
        single(list, &[Value::Int(1), Value::Int(3)], 7).as_deref(),
        Some("s1")
    );
    assert_eq!(single(list, &[Value::Int(1), Value::Int(2)], 7), None);
    // A literal key of the prepared text pins as in a text statement.
    assert_eq!(
        single(
            "SELECT c FROM orders WHERE id = 6 AND note = ?",
            &[Value::Int(1)],
            7
        )
        .as_deref(),
        Some("s0")
    );
    // A condition on another column pins nothing; no condition at all makes no prepared route.
    assert_eq!(
        single("SELECT c FROM orders WHERE note = ?", &[Value::Int(1)], 7),
        None
    );
    assert!(PreparedSelect::new(
        std::sync::Arc::new(plan_of(&t, "SELECT c FROM orders")),
        Vec::new(),
        7
    )
    .is_none());
}

#[test]
fn a_kept_merge_leaves_weights_out_once_its_keys_showed_no_strings() {
    let t = tables();
    let stmt = "SELECT id, note FROM orders WHERE note > 'a' ORDER BY note, id LIMIT 5";
    let plan = plan_of(&t, stmt);
    let bind = |s: &str| match plan.bind(s.as_bytes(), &sql::shape(s.as_bytes()).slots, false) {
        Ok(Some(Route::Merge(_, b))) => b,
        other => panic!("{s}: {other:?}"),
    };
    let first = bind(stmt);
    assert!(String::from_utf8_lossy(&first.shard_sql).contains("WEIGHT_STRING(note)"));
    assert!(first.lean.is_none(), "nothing learned yet");
    let types = first.key_types.clone().expect("a plan with weights learns");
    types.saw(false);
    let next = bind("SELECT id, note FROM orders WHERE note > 'm' ORDER BY note, id LIMIT 7");
    let (lean, lean_sql) = next.lean.expect("no string among the keys");
    assert_eq!(
        String::from_utf8_lossy(&lean_sql),
        "SELECT id, note FROM orders WHERE note > 'm' ORDER BY note, id LIMIT 7 "
    );
    assert!(!lean.has_weights() && lean.hidden == 0);
    // The full statement stays bound beside it, for a run that finds a string key.
    assert!(String::from_utf8_lossy(&next.shard_sql).contains("note > 'm'"));
    assert_eq!((next.offset, next.limit), (0, Some(7)));
    // A string seen once keeps the weights for good.
    types.saw(true);
    types.saw(false);
    assert!(bind(stmt).lean.is_none());
    // A merge that compares nothing by weight has nothing to learn.
    let counted = plan_of(&t, "SELECT COUNT(*) FROM orders");
    let ShapeKind::Sharded(s) = &counted.kind else {
        panic!("sharded")
    };
    let stmt = "SELECT COUNT(*) FROM orders";
    let b = s
        .merge
        .as_ref()
        .unwrap()
        .as_ref()
        .unwrap()
        .render(stmt.as_bytes(), &[])
        .unwrap();
    assert!(b.key_types.is_none() && b.lean.is_none());
}
