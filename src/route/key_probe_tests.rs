//! `WHERE key = value` on a key held through a lookup: which statements the lookup may send to
//! one shard, and the read of the owner each execution makes.

use std::sync::Arc;

use super::plan::{PlanContext, Route};
use super::{planner, Tables};
use crate::config::tables::UniqueScope;
use crate::sql;
use crate::unique::{lookup_table, GlobalKey, KeyColumn, Lookups};

fn column(name: &str, column_type: &str, text: bool) -> KeyColumn {
    KeyColumn {
        name: name.into(),
        column_type: column_type.into(),
        charset: text.then(|| "utf8mb4".into()),
        collation: text.then(|| "utf8mb4_general_ci".into()),
        sub_part: None,
        default: None,
    }
}

fn key(name: &str, columns: Vec<KeyColumn>) -> GlobalKey {
    GlobalKey {
        schema: "app".into(),
        table: "users".into(),
        name: name.into(),
        columns,
        backend: "main".into(),
        lookup: lookup_table::name("app", "users", name),
    }
}

fn tables_over(shards: &[&str]) -> Tables {
    let mut users = super::test_rules::rule(
        "users",
        Some("seq"),
        super::test_rules::sharded("id", shards),
    );
    users.unique = Some(UniqueScope::Global);
    let lookups = Lookups::default();
    lookups.set(
        "app",
        "users",
        vec![
            key("email", vec![column("email", "varchar(60)", true)]),
            key(
                "pair",
                vec![
                    column("a", "int(11)", false),
                    column("b", "bigint(20)", false),
                ],
            ),
        ],
    );
    Tables::new(vec![users]).with_lookups(Arc::new(lookups))
}

fn tables() -> Tables {
    tables_over(&["s0", "s1", "s2"])
}

/// The route of `stmt`, bound on a plan made for `planned` (of the same shape).
fn route_as(planned: &str, stmt: &str, by_key: bool) -> Route {
    route_over(&tables(), planned, stmt, by_key)
}

fn route_over(t: &Tables, planned: &str, stmt: &str, by_key: bool) -> Route {
    let ctx = PlanContext {
        db: Some("app"),
        tables: t,
    };
    let plan = planner::plan(
        planned.as_bytes(),
        &sql::shape(planned.as_bytes()).slots,
        &ctx,
    )
    .unwrap();
    let literals = sql::shape(stmt.as_bytes()).slots;
    plan.bind(stmt.as_bytes(), &literals, by_key)
        .unwrap()
        .unwrap()
}

fn route(stmt: &str) -> Route {
    route_as(stmt, stmt, true)
}

/// The owner read of a lookup route, and the route without it.
fn by_key(r: Route) -> (String, Route) {
    match r {
        Route::ByKey(k) => {
            assert_eq!(k.lookup, "main");
            assert_eq!(k.shards, ["s0", "s1", "s2"]);
            (String::from_utf8(k.owner_sql).unwrap(), k.otherwise)
        }
        other => panic!("not through the lookup: {other:?}"),
    }
}

#[test]
fn a_whole_key_given_by_literals_reads_its_owner_first() {
    let (sql, otherwise) = by_key(route("SELECT * FROM users WHERE email = 'a@x'"));
    assert_eq!(
        sql,
        "SELECT idgate_owner FROM `idgate_unique`.`app__users__email` WHERE `email` = 'a@x' LIMIT 2"
    );
    assert!(matches!(otherwise, Route::Concat(bs) if bs.len() == 3));

    // A cached plan reads the owner of each execution's own value.
    let (sql, _) = by_key(route_as(
        "SELECT * FROM users WHERE email = 'a@x'",
        "SELECT * FROM users WHERE email = 'b@y'",
        true,
    ));
    assert!(sql.contains("`email` = 'b@y'"), "{sql}");

    // Two columns, each given; ORMs' LIMIT and ORDER BY keep the lookup (the merge is the
    // fallback), and so does GROUP BY (no match, no group).
    let (sql, _) = by_key(route("SELECT id FROM users WHERE a = 1 AND b = -2"));
    assert!(sql.ends_with("WHERE `a` = 1 AND `b` = -2 LIMIT 2"), "{sql}");
    let (_, otherwise) = by_key(route(
        "SELECT id, email FROM users WHERE email = 'a@x' ORDER BY id LIMIT 21",
    ));
    assert!(matches!(otherwise, Route::Merge(..)));
    by_key(route(
        "SELECT email, COUNT(*) FROM users WHERE email = 'a@x' GROUP BY email",
    ));
}

#[test]
fn statements_a_lookup_cannot_answer_alone_take_the_general_route() {
    for stmt in [
        // Without GROUP BY an aggregate answers even when no row matches.
        "SELECT COUNT(*) FROM users WHERE email = 'a@x'",
        "SELECT MAX(id) FROM users WHERE a = 1 AND b = 2",
        // A number compares with a string column as a number: '5' and '05' both match.
        "SELECT * FROM users WHERE email = 5",
        // A string compared with an integer column is a conversion, not one value.
        "SELECT * FROM users WHERE a = '1' AND b = 2",
        // Part of a key, several values, NULL.
        "SELECT * FROM users WHERE a = 1",
        "SELECT * FROM users WHERE email IN ('a@x', 'b@x')",
        "SELECT * FROM users WHERE email = NULL",
        "SELECT * FROM users WHERE email = 'a@x' OR id = 3",
        // Another table: a self-join.
        "SELECT u.id FROM users u JOIN users v ON v.id = u.id WHERE u.email = 'a@x'",
    ] {
        let r = route(stmt);
        assert!(
            matches!(r, Route::Concat(_) | Route::Merge(..)),
            "{stmt}: {r:?}"
        );
    }
    // The sharding key decides first; idgate's own reads never use the lookup.
    assert!(matches!(
        route("SELECT * FROM users WHERE id = 4 AND email = 'a@x'"),
        Route::One(b) if b == "s1"
    ));
    let stmt = "SELECT * FROM users WHERE email = 'a@x'";
    assert!(matches!(route_as(stmt, stmt, false), Route::Concat(_)));
    // Two shards asked at once cost what the lookup and one shard cost, in one round trip.
    let two = tables_over(&["s0", "s1"]);
    assert!(matches!(
        route_over(&two, stmt, stmt, true),
        Route::Concat(bs) if bs.len() == 2
    ));
}

#[test]
fn updates_and_deletes_of_a_whole_key_read_its_owner_first() {
    for stmt in [
        "DELETE FROM users WHERE email = 'a@x'",
        "UPDATE users SET note = 'n' WHERE a = 1 AND b = 2",
    ] {
        let (_, otherwise) = by_key(route(stmt));
        assert!(
            matches!(otherwise, Route::Write { ref backends, broadcast: false } if backends.len() == 3),
            "{stmt}"
        );
    }
    // Several rows, or the order of rows, are not one key's.
    assert!(matches!(
        route("DELETE FROM users WHERE email IN ('a@x', 'b@x')"),
        Route::Write { .. }
    ));
}

#[test]
fn a_prepared_select_reads_the_owner_of_its_bound_values() {
    use mysql_common::value::Value;
    let t = tables();
    let ctx = PlanContext {
        db: Some("app"),
        tables: &t,
    };
    let stmt = b"SELECT * FROM users WHERE email = ?";
    let literals = sql::shape(stmt).slots;
    let plan = Arc::new(planner::plan(stmt, &literals, &ctx).unwrap());
    let p = super::prepared::PreparedSelect::new(plan, literals, 7).unwrap();
    let all = || Route::Concat(vec!["s0".into(), "s1".into(), "s2".into()]);
    let email = [Value::Bytes(b"a@x".to_vec())];
    let (sql, _) = by_key(p.by_key(stmt, &email, "utf8mb4", 7, all()));
    assert!(
        sql.ends_with("`email` = _utf8mb4 X'614078' LIMIT 2"),
        "{sql}"
    );
    // A number for a string column, or a plan made before the lookups changed: every shard.
    let r = p.by_key(stmt, &[Value::Int(5)], "utf8mb4", 7, all());
    assert!(matches!(r, Route::Concat(_)));
    let r = p.by_key(stmt, &email, "utf8mb4", 8, all());
    assert!(matches!(r, Route::Concat(_)));
}
