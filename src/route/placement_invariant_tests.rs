//! The invariant over the whole planner: a statement idgate sends to a backend as it is (or as a
//! merge's shard statement) names only tables that live on that backend. Anything else is a
//! gateway operation (subqueries run first, a join over literal tables, INSERT … SELECT read
//! into idgate) or a refusal. Checked over many statement shapes, joins in either order,
//! subqueries, UNIONs, common table expressions, multi-table writes and INSERT … SELECT.

use super::statement::{plan, Plan, StatementContext};
use super::test_rules::{self, sharded};
use super::{Placement, PlanCache, PlanContext, Route, TableRule, Tables};
use crate::sql::{self, TableRef};

const DEFAULT: &str = "s0";

fn rule(name: &str, placement: Placement) -> TableRule {
    test_rules::rule(name, None, placement)
}

/// Backends s0 (the default), s1, s2. `orders` and `items` sharded alike over s0/s1, `archive`
/// over s1/s2 (away from the default backend), `countries` broadcast, `users` configured on the
/// default backend; `notes` and `namedcategory` are not configured, so they live on s0 only.
fn tables() -> Tables {
    Tables::new(vec![
        rule("orders", sharded("id", &["s0", "s1"])),
        rule("items", sharded("order_id", &["s0", "s1"])),
        rule("dumbcategory", sharded("id", &["s0", "s1"])),
        rule("archive", sharded("id", &["s1", "s2"])),
        rule(
            "countries",
            Placement::Broadcast {
                backends: vec!["s0".into(), "s1".into(), "s2".into()],
            },
        ),
        rule(
            "users",
            Placement::Single {
                backend: DEFAULT.into(),
            },
        ),
        TableRule {
            schema: Some("otherdb".into()),
            ..rule("events", sharded("id", &["s1", "s2"]))
        },
    ])
}

/// Whether `t` lives on `backend` (a sharded table: its part does).
fn lives_on(ctx: &PlanContext, t: &TableRef, ctes: &[String], backend: &str) -> bool {
    let system = t.schema.as_deref().is_some_and(|s| {
        ["information_schema", "performance_schema", "mysql", "sys"]
            .iter()
            .any(|x| x.eq_ignore_ascii_case(s))
    });
    let lower = t.name.to_lowercase();
    if system || (t.schema.is_none() && (lower == "dual" || ctes.contains(&lower))) {
        return true;
    }
    let schema = t.schema.as_deref().or(ctx.db);
    match ctx.tables.lookup(schema, &t.name).map(|r| &r.placement) {
        None => backend == DEFAULT,
        Some(Placement::Single { backend: b }) => b == backend,
        Some(Placement::Broadcast { backends }) => backends.iter().any(|b| b == backend),
        Some(Placement::Sharded { shards, .. }) => shards.iter().any(|b| b == backend),
    }
}

/// What each backend gets for `stmt` as it is, when its plan sends it so; `None`: a gateway
/// operation or a refusal.
fn sent(stmt: &str, p: &Plan) -> Option<Vec<(String, Vec<u8>)>> {
    let all = |bs: &[String]| {
        bs.iter()
            .map(|b| (b.clone(), stmt.as_bytes().to_vec()))
            .collect()
    };
    Some(match p {
        Plan::Forward(_) => vec![(DEFAULT.to_string(), stmt.as_bytes().to_vec())],
        Plan::Routed(Route::One(b), _) => all(std::slice::from_ref(b)),
        Plan::Routed(Route::Concat(bs) | Route::Everywhere(bs), _) => all(bs),
        Plan::Routed(Route::Write { backends, .. }, _) => all(backends),
        Plan::Routed(Route::ByKey(k), _) => all(&k.shards),
        Plan::Routed(Route::Merge(bs, m), _) => bs
            .iter()
            .map(|b| (b.clone(), m.shard_sql.clone()))
            .collect(),
        _ => return None,
    })
}

/// The statements checked, each with whether idgate must send it to backends as it is (`true`),
/// or must not (`false`: a gateway plan or a refusal).
const SHAPES: &[(&str, bool)] = &[
    // The join, in both orders.
    (
        "SELECT d.id FROM dumbcategory d LEFT JOIN namedcategory n ON n.id = d.id WHERE d.id > 0",
        false,
    ),
    (
        "SELECT d.id FROM namedcategory n LEFT JOIN dumbcategory d ON n.id = d.id WHERE n.id > 0",
        false,
    ),
    (
        "SELECT d.id FROM dumbcategory d JOIN namedcategory n ON n.id = d.id WHERE d.id = 4",
        false,
    ),
    ("SELECT o.id FROM orders o, notes n WHERE o.id = n.id", false),
    (
        "SELECT COUNT(*) FROM orders o JOIN notes n ON n.id = o.id GROUP BY o.x ORDER BY 1 LIMIT 3",
        false,
    ),
    ("SELECT * FROM orders o JOIN users u ON u.id = o.uid", false),
    ("SELECT * FROM archive a JOIN notes n ON a.id = n.id", false),
    ("SELECT * FROM shop.orders o JOIN other.notes n ON o.id = n.id", false),
    // Subqueries, derived tables and common table expressions.
    ("SELECT * FROM orders WHERE id IN (SELECT id FROM notes)", false),
    (
        "SELECT * FROM orders WHERE id = 3 AND EXISTS (SELECT 1 FROM notes WHERE notes.id = orders.id)",
        false,
    ),
    ("SELECT * FROM notes WHERE id IN (SELECT id FROM orders)", false),
    ("SELECT (SELECT MAX(id) FROM notes) FROM orders", false),
    ("SELECT * FROM (SELECT id FROM notes) d JOIN orders o ON o.id = d.id", false),
    (
        "WITH c AS (SELECT id FROM notes) SELECT * FROM orders o JOIN c ON c.id = o.id",
        false,
    ),
    ("SELECT id FROM orders UNION SELECT id FROM notes", false),
    ("SELECT id FROM notes UNION ALL SELECT id FROM orders", false),
    // Multi-table and subquery writes.
    ("UPDATE orders o JOIN notes n ON n.id = o.id SET o.x = n.x", false),
    ("UPDATE orders SET x = 1 WHERE id IN (SELECT id FROM notes)", false),
    ("DELETE o FROM orders o JOIN notes n ON n.id = o.id", false),
    ("DELETE FROM orders WHERE id = 3 AND x IN (SELECT x FROM users)", false),
    ("UPDATE countries c JOIN notes n ON c.id = n.id SET c.name = n.name", false),
    ("DELETE FROM countries WHERE id IN (SELECT id FROM notes)", false),
    // INSERT … SELECT across placements.
    ("INSERT INTO notes SELECT * FROM orders", false),
    ("INSERT INTO notes (id) SELECT o.id FROM orders o JOIN notes n ON n.id = o.id", false),
    ("INSERT INTO orders (x) SELECT x FROM notes", false),
    ("INSERT INTO notes (id) SELECT id FROM users", true),
    // Subqueries in VALUES / SET: run first wherever the row goes.
    ("INSERT INTO notes (id) VALUES ((SELECT MAX(id) FROM orders))", false),
    ("INSERT INTO orders (x) VALUES ((SELECT MAX(x) FROM notes))", false),
    ("INSERT INTO orders SET x = (SELECT COUNT(*) FROM orders)", false),
    // What stays on the backends that hold every table it names.
    ("SELECT * FROM orders WHERE id = 5", true),
    ("SELECT * FROM orders ORDER BY x LIMIT 4", true),
    ("SELECT * FROM orders o JOIN items i ON i.order_id = o.id", true),
    ("SELECT * FROM orders o JOIN countries c ON c.id = o.country", true),
    ("SELECT * FROM archive a JOIN countries c ON c.id = a.country", true),
    // Run first as a derived table (the planner keeps a CTE to the subquery path).
    ("WITH c AS (SELECT id FROM orders) SELECT * FROM c", false),
    (
        "SELECT o.id FROM orders o JOIN information_schema.tables t ON t.table_name = o.x",
        true,
    ),
    ("SELECT * FROM notes n JOIN users u ON u.id = n.uid", true),
    ("SELECT * FROM countries c JOIN notes n ON n.id = c.id", true),
    ("UPDATE orders SET x = 2 WHERE id = 9", true),
    ("UPDATE countries SET name = 'x' WHERE id = 1", true),
    ("DELETE FROM archive WHERE id IN (1, 2)", true),
    // DDL: rules matched by schema; foreign keys only where the shards can hold them.
    ("CREATE TABLE events (id INT)", true),
    ("CREATE VIEW events_v AS SELECT id FROM events", true),
    ("CREATE TABLE otherdb.events (id INT)", true),
    ("ALTER TABLE archive ADD COLUMN note TEXT", true),
    ("DROP TABLE IF EXISTS orders", true),
    ("TRUNCATE TABLE shop.orders", true),
    ("CREATE INDEX k ON archive (note)", true),
    ("CREATE TABLE notes2 (id INT, oid INT REFERENCES orders (id))", false),
    ("ALTER TABLE notes ADD FOREIGN KEY (oid) REFERENCES orders (id)", false),
    ("ALTER TABLE items ADD FOREIGN KEY (x) REFERENCES orders (id)", false),
    ("ALTER TABLE archive ADD FOREIGN KEY (id) REFERENCES orders (id)", false),
    ("ALTER TABLE countries ADD FOREIGN KEY (oid) REFERENCES orders (id)", false),
    ("ALTER TABLE orders ADD FOREIGN KEY (uid) REFERENCES users (id)", false),
    ("ALTER TABLE items ADD FOREIGN KEY (order_id) REFERENCES orders (id)", true),
    ("ALTER TABLE orders ADD FOREIGN KEY (country) REFERENCES countries (id)", true),
    ("CREATE TABLE notes3 (id INT, c INT REFERENCES countries (id))", true),
    ("DROP TABLE orders, items", true),
    ("CREATE TABLE notes_copy AS SELECT * FROM orders", false),
    ("CREATE TABLE items AS SELECT * FROM notes", false),
    ("CREATE TABLE orders_copy AS SELECT * FROM notes", true),
    ("CREATE TABLE notes_copy AS SELECT * FROM notes JOIN users ON users.id = notes.uid", true),
    ("DROP TABLE IF EXISTS orders, notes", false),
    ("DROP TABLE orders, countries", false),
    ("RENAME TABLE orders TO orders_old", false),
    ("ALTER TABLE orders RENAME TO orders_old", false),
    ("RENAME TABLE notes TO notes_old", true),
];

#[test]
fn every_statement_sent_to_a_backend_names_only_tables_it_holds() {
    let tables = tables();
    let cache = PlanCache::new(64);
    let ctx = StatementContext {
        tables: PlanContext {
            db: Some("shop"),
            tables: &tables,
        },
        plans: &cache,
        generation: 0,
        default_backend: DEFAULT,
        backends: &[],
        generators: false,
        local_files: false,
        caller: None,
    };
    for &(stmt, as_is) in SHAPES {
        // Twice: the second planning binds the plan kept for the statement's shape.
        for _ in 0..2 {
            let p = plan(stmt.as_bytes(), &ctx);
            let Some(sends) = sent(stmt, &p) else {
                assert!(!as_is, "{stmt}: sent to no backend as it is ({p:?})");
                continue;
            };
            assert!(as_is, "{stmt}: sent as it is, as {p:?}");
            // Forwarded whole, a sharded table would be read or changed on one shard only.
            if matches!(p, Plan::Forward(_)) {
                let a = sql::analyze_dml(stmt.as_bytes()).ok();
                let sharded = a.iter().flat_map(|a| &a.relations).find(|t| {
                    let schema = t.schema.as_deref().or(ctx.tables.db);
                    ctx.tables
                        .tables
                        .lookup(schema, &t.name)
                        .is_some_and(|r| matches!(r.placement, Placement::Sharded { .. }))
                });
                assert!(sharded.is_none(), "{stmt}: forwarded, naming {sharded:?}");
            }
            for (backend, text) in sends {
                let a = sql::analyze_dml(&text).unwrap_or_else(|e| panic!("{stmt}: {e:?}"));
                // DDL: the tables it is about and the parents of its foreign keys too.
                let ddl = sql::ddl_tables(&text).unwrap_or_default();
                let parents = ddl.foreign_keys.iter().map(|k| &k.parent);
                for t in a.relations.iter().chain(&ddl.subjects).chain(parents) {
                    assert!(
                        lives_on(&ctx.tables, t, &a.ctes, &backend),
                        "{stmt}: `{}` is not on `{backend}`, which would get {:?}",
                        t.name,
                        String::from_utf8_lossy(&text)
                    );
                }
            }
        }
    }
}

#[test]
fn mixed_placements_run_in_the_gateway_or_are_refused() {
    let tables = tables();
    let cache = PlanCache::new(8);
    let ctx = StatementContext {
        tables: PlanContext {
            db: Some("shop"),
            tables: &tables,
        },
        plans: &cache,
        generation: 0,
        default_backend: DEFAULT,
        backends: &[],
        generators: false,
        local_files: false,
        caller: None,
    };
    for stmt in [
        "SELECT d.id FROM dumbcategory d LEFT JOIN namedcategory n ON n.id = d.id WHERE d.id > 0",
        "SELECT d.id FROM namedcategory n LEFT JOIN dumbcategory d ON n.id = d.id WHERE n.id > 0",
    ] {
        assert!(
            matches!(plan(stmt.as_bytes(), &ctx), Plan::Join(_)),
            "{stmt}"
        );
    }
    // A write cannot run in the gateway: a refusal saying what to do.
    let stmt = "UPDATE orders o JOIN notes n ON n.id = o.id SET o.x = n.x";
    let Plan::Refuse(e) = plan(stmt.as_bytes(), &ctx) else {
        panic!("{stmt}");
    };
    assert_eq!(e.code, sql::ER_NOT_SUPPORTED_YET);
    assert!(
        e.message.contains("`notes` (on the default backend only)"),
        "{}",
        e.message
    );
    // A foreign key the shards cannot hold is refused, saying why and what to do.
    let stmt = "ALTER TABLE notes ADD FOREIGN KEY (oid) REFERENCES orders (id)";
    let Plan::Refuse(e) = plan(stmt.as_bytes(), &ctx) else {
        panic!("{stmt}");
    };
    assert_eq!(e.code, sql::ER_NOT_SUPPORTED_YET);
    assert!(e.message.contains("Vitess"), "{}", e.message);
    // Colocated tables keep their key on every shard of both.
    let stmt = "ALTER TABLE items ADD FOREIGN KEY (order_id) REFERENCES orders (id)";
    assert!(
        matches!(plan(stmt.as_bytes(), &ctx), Plan::Routed(Route::Everywhere(bs), _) if bs == ["s0", "s1"]),
        "{stmt}"
    );
    // A rule for another schema's table is not this one's.
    assert!(matches!(
        plan(b"CREATE TABLE events (id INT)", &ctx),
        Plan::Forward(_)
    ));
    // INSERT … SELECT into a table of the default backend reads its source through idgate.
    let stmt = "INSERT INTO notes SELECT * FROM orders";
    assert!(
        matches!(plan(stmt.as_bytes(), &ctx), Plan::Insert(b) if b.1.generator.is_none()),
        "{stmt}"
    );
}

#[test]
fn databases_are_made_and_dropped_on_every_backend() {
    let tables = tables();
    let cache = PlanCache::new(8);
    let all = ["s0".to_string(), "s1".into(), "s2".into()];
    let ctx = |backends| StatementContext {
        tables: PlanContext {
            db: Some("shop"),
            tables: &tables,
        },
        plans: &cache,
        generation: 0,
        default_backend: DEFAULT,
        backends,
        generators: false,
        local_files: false,
        caller: None,
    };
    for stmt in [
        "CREATE DATABASE IF NOT EXISTS shop2",
        "DROP SCHEMA old_shop",
        "ALTER DATABASE CHARACTER SET latin1",
    ] {
        match plan(stmt.as_bytes(), &ctx(&all)) {
            Plan::Database { backends, .. } => assert_eq!(backends, all, "{stmt}"),
            other => panic!("{stmt}: {other:?}"),
        }
        // One backend: nothing to spread.
        assert!(matches!(
            plan(stmt.as_bytes(), &ctx(&all[..1])),
            Plan::Forward(_)
        ));
    }
}
