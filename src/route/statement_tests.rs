//! Statement plans of each kind, made without a server: a configuration of placed tables, a
//! session context, and the plan each statement gets.

use super::statement::{plan, Caller, Plan, StatementContext};
use super::test_rules::{rule, sharded};
use super::{Placement, PlanCache, PlanContext, Route, Tables};
use crate::config::User;
use crate::sql::{AdminStatement, StatementKind};

/// `orders` sharded by id and `items` by order_id over s0/s1, `users` generated on the default
/// backend, `archive` sharded over s2/s3 (the default backend s0 holds none of it).
fn tables() -> Tables {
    Tables::new(vec![
        rule("orders", Some("ids"), sharded("id", &["s0", "s1"])),
        rule("items", None, sharded("order_id", &["s0", "s1"])),
        rule(
            "users",
            Some("ids"),
            Placement::Single {
                backend: "s0".into(),
            },
        ),
        rule("archive", None, sharded("id", &["s2", "s3"])),
    ])
}

fn user(yaml: &str) -> User {
    serde_saphyr::from_str(yaml).unwrap()
}

struct Fixture {
    tables: Tables,
    cache: PlanCache,
    user: User,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            tables: tables(),
            cache: PlanCache::new(64),
            user: user("name: app\ngenerators: [ids]\n"),
        }
    }

    fn ctx(&self, local_files: bool) -> StatementContext<'_> {
        StatementContext {
            tables: PlanContext {
                db: Some("shop"),
                tables: &self.tables,
            },
            plans: &self.cache,
            generation: 0,
            default_backend: "s0",
            backends: &[],
            generators: true,
            local_files,
            caller: Some(Caller {
                user: &self.user,
                host: "10.0.0.7",
            }),
        }
    }

    fn plan(&self, stmt: &str) -> Plan {
        plan(stmt.as_bytes(), &self.ctx(true))
    }
}

fn refusal(p: Plan) -> (u16, String) {
    match p {
        Plan::Refuse(e) => (e.code, e.message.clone()),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn statements_about_no_placed_table_are_forwarded_with_their_kind() {
    let f = Fixture::new();
    for (stmt, kind) in [
        ("SELECT 1", StatementKind::Select),
        ("SELECT * FROM notes WHERE id = 3", StatementKind::Select),
        ("SET @a = 1", StatementKind::Set),
        ("BEGIN", StatementKind::Begin),
        (
            "INSERT INTO notes (body) VALUES ('x')",
            StatementKind::Insert,
        ),
        ("SELECT * FROM users WHERE id = 3", StatementKind::Select),
    ] {
        assert!(
            matches!(f.plan(stmt), Plan::Forward(k) if k == kind),
            "{stmt}"
        );
    }
}

#[test]
fn idgate_answers_its_own_statements() {
    let f = Fixture::new();
    assert!(matches!(
        f.plan("SHOW IDGATE STATUS"),
        Plan::Admin(AdminStatement::Status)
    ));
    let stmt = "EXPLAIN ROUTE SELECT * FROM orders";
    let Plan::ExplainRoute(r) = f.plan(stmt) else {
        panic!("EXPLAIN ROUTE");
    };
    assert_eq!(&stmt[r], "SELECT * FROM orders");
}

#[test]
fn nextval_is_answered_for_generators_the_user_may_call() {
    let f = Fixture::new();
    assert!(matches!(
        f.plan("SELECT NEXTVAL(ids)"),
        Plan::NextValues { generator, count: 1, .. } if generator == "ids"
    ));
    let (code, msg) = refusal(f.plan("SELECT NEXTVAL(other)"));
    assert_eq!(code, 1142);
    assert!(
        msg.contains("'app'@'10.0.0.7'") && msg.contains("`other`"),
        "{msg}"
    );
    // Without generators NEXTVAL is MariaDB's own (a sequence on the backend).
    let mut ctx = f.ctx(true);
    ctx.generators = false;
    assert!(matches!(
        plan(b"SELECT NEXTVAL(ids)", &ctx),
        Plan::Forward(StatementKind::Select)
    ));
}

#[test]
fn inserts_into_configured_tables_get_ids() {
    let f = Fixture::new();
    for stmt in [
        "INSERT INTO orders (note) VALUES ('a')",
        "REPLACE INTO shop.orders (id, note) VALUES (4, 'a')",
        "INSERT INTO users (name) VALUES ('b')",
    ] {
        let Plan::Insert(boxed) = f.plan(stmt) else {
            panic!("{stmt}");
        };
        assert!(
            ["orders", "users"].contains(&boxed.1.name.as_str()),
            "{stmt}"
        );
    }
    let (code, _) = refusal(f.plan("INSERT INTO orders (note) VALUES ("));
    assert_eq!(code, 1064);
}

#[test]
fn subqueries_in_insert_values_over_placed_tables_run_first() {
    let f = Fixture::new();
    for stmt in [
        // Into a sharded table: any subquery would run on the row's shard only.
        "INSERT INTO orders (note, customer) VALUES ('a', (SELECT MAX(customer) + 1 FROM orders))",
        "INSERT INTO orders SET note = 'b', customer = (SELECT COUNT(*) FROM users)",
        // Into a table of the default backend, reading a sharded one.
        "INSERT INTO users (name) VALUES ((SELECT MAX(note) FROM orders))",
    ] {
        let Plan::Subqueries(subs) = f.plan(stmt) else {
            panic!("{stmt}: {:?}", f.plan(stmt));
        };
        assert_eq!(subs.len(), 1, "{stmt}");
    }
    // A default-backend table read into a default-backend table stays one statement there.
    assert!(matches!(
        f.plan("INSERT INTO users (name) VALUES ((SELECT MAX(name) FROM users))"),
        Plan::Insert(_)
    ));
}

#[test]
fn selects_updates_and_ddl_over_placed_tables_are_routed() {
    let f = Fixture::new();
    let routed = |stmt: &str| match f.plan(stmt) {
        Plan::Routed(r, _) => r,
        other => panic!("{stmt}: {other:?}"),
    };
    assert!(matches!(routed("SELECT * FROM orders WHERE id = 3"), Route::One(b) if b == "s1"));
    assert!(matches!(routed("SELECT * FROM orders"), Route::Concat(bs) if bs.len() == 2));
    assert!(matches!(
        routed("SELECT * FROM orders ORDER BY note LIMIT 5"),
        Route::Merge(bs, _) if bs.len() == 2
    ));
    assert!(matches!(
        routed("UPDATE orders SET note = 'x' WHERE note = 'y'"),
        Route::Write {
            broadcast: false,
            ..
        }
    ));
    assert!(matches!(
        routed("ALTER TABLE orders ADD COLUMN c INT"),
        Route::Everywhere(bs) if bs.len() == 2
    ));
}

#[test]
fn refused_shapes_fall_back_to_subqueries_and_gateway_joins() {
    let f = Fixture::new();
    let Plan::Subqueries(subs) =
        f.plan("SELECT * FROM users WHERE id IN (SELECT customer FROM orders)")
    else {
        panic!("subqueries");
    };
    assert_eq!(subs.len(), 1);
    assert!(matches!(
        f.plan("SELECT o.id, a.id FROM orders o JOIN archive a ON a.note = o.note"),
        Plan::Join(_)
    ));
    // Multi-table UPDATEs keep the planner's refusal.
    let (code, _) = refusal(f.plan(
        "UPDATE orders o JOIN archive a ON a.id = o.id SET o.note = a.note WHERE o.id IN \
         (SELECT id FROM archive)",
    ));
    assert_eq!(code, 1235);
}

#[test]
fn metadata_of_tables_away_from_the_default_backend_is_routed_there() {
    let f = Fixture::new();
    assert!(matches!(
        f.plan("SHOW CREATE TABLE archive"),
        Plan::Routed(Route::One(b), StatementKind::Show) if b == "s2"
    ));
    let Plan::ListTables { backends, names } = f.plan("SHOW TABLES") else {
        panic!("SHOW TABLES");
    };
    assert_eq!(
        (backends, names),
        (vec!["s2".to_string()], vec!["archive".to_string()])
    );
    assert!(matches!(
        f.plan("SELECT * FROM information_schema.columns WHERE table_name = 'archive'"),
        Plan::Routed(Route::One(b), StatementKind::Select) if b == "s2"
    ));
    assert!(matches!(
        f.plan("SHOW CREATE TABLE orders"),
        Plan::Forward(StatementKind::Show)
    ));
}

#[test]
fn statements_that_would_bypass_ids_or_shards_are_refused() {
    let f = Fixture::new();
    for (stmt, what) in [
        ("LOCK TABLES orders WRITE", "LOCK TABLES"),
        ("HANDLER orders OPEN", "HANDLER"),
        (
            "LOAD DATA INFILE '/tmp/x' INTO TABLE users",
            "LOAD DATA/XML",
        ),
    ] {
        let (code, msg) = refusal(f.plan(stmt));
        assert_eq!(code, 1235, "{stmt}");
        assert!(msg.starts_with(what), "{stmt}: {msg}");
    }
}

#[test]
fn load_data_local_needs_a_client_that_sends_files() {
    let f = Fixture::new();
    let stmt = "LOAD DATA LOCAL INFILE 'o.csv' INTO TABLE orders";
    assert!(matches!(f.plan(stmt), Plan::LoadData(_)));
    let (code, _) = refusal(plan(
        b"LOAD DATA LOCAL INFILE 'n.csv' INTO TABLE notes",
        &f.ctx(false),
    ));
    assert_eq!(code, 4166);
    assert!(matches!(
        f.plan("LOAD DATA LOCAL INFILE 'n.csv' INTO TABLE notes"),
        Plan::Forward(StatementKind::Other)
    ));
}

/// `EXPLAIN ROUTE`'s rows for `stmt`.
fn explained(f: &Fixture, stmt: &str) -> Vec<[String; 3]> {
    super::explain::explain(stmt.as_bytes(), &f.ctx(true)).unwrap()
}

#[test]
fn explain_route_shows_each_backend_with_its_sql_and_merge() {
    let f = Fixture::new();
    let point = "SELECT * FROM orders WHERE id = 3";
    assert_eq!(
        explained(&f, point),
        [["s1".to_string(), point.into(), "none".into()]]
    );
    let merged = explained(&f, "SELECT id FROM orders ORDER BY note LIMIT 5");
    assert_eq!(merged.len(), 2);
    assert_eq!((merged[0][0].as_str(), merged[1][0].as_str()), ("s0", "s1"));
    assert!(merged[0][1].contains("WEIGHT_STRING(note)"), "{merged:?}");
    let insert = explained(&f, "INSERT INTO orders (note) VALUES ('a')");
    assert_eq!(insert.len(), 2);
    assert!(insert[0][2].starts_with("ids from generator `ids` into `id`; rows split by id (mod)"));
    let backfill = explained(&f, "INSERT INTO orders (note) SELECT note FROM archive");
    let merges: Vec<&str> = backfill.iter().map(|r| r[2].as_str()).collect();
    assert_eq!(backfill.len(), 4, "{backfill:?}");
    assert!(merges[..2]
        .iter()
        .all(|m| m.starts_with("source, read into idgate first: rows concatenated")));
    assert!(merges[2..]
        .iter()
        .all(|m| m.starts_with("target: ids from generator")));
    let e = super::explain::explain(
        b"SELECT * FROM orders o JOIN archive a USING (id) WHERE",
        &f.ctx(true),
    );
    assert!(e.is_err());
}

#[test]
fn explain_route_shows_a_gateway_joins_steps() {
    let f = Fixture::new();
    let rows = explained(
        &f,
        "SELECT o.note, a.note FROM orders o JOIN archive a ON a.id = o.customer WHERE o.id = 4",
    );
    let merges: Vec<&str> = rows.iter().map(|r| r[2].as_str()).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    // `orders` drives (pinned to one shard by its literal id); `archive` is fetched by its
    // sharding column, so each batch goes to the shards owning its values.
    assert_eq!(rows[0][0], "s0");
    assert!(
        merges[0].starts_with("join step 1: rows of `o` (driving)"),
        "{merges:?}"
    );
    assert!(rows[1][0].starts_with("the shards owning each batch's values (of s2, s3)"));
    assert!(rows[1][1].contains("<up to 500 values>"), "{rows:?}");
    assert!(merges[1].contains("distinct `o`.`customer` values"));
    assert_eq!(rows[2][0], "s0");
    assert!(rows[2][1].contains("(<rows of `o`>)") && rows[2][1].contains("(<rows of `a`>)"));
}

#[test]
fn a_gateway_join_is_driven_by_a_table_pinned_by_its_sharding_column() {
    let f = Fixture::new();
    let steps = |stmt: &str| {
        let Plan::Join(shape) = f.plan(stmt) else {
            panic!("{stmt}: a gateway join");
        };
        super::join_steps::join_steps(&shape, &f.ctx(true).tables)
    };
    let s = steps("SELECT * FROM orders o JOIN archive a ON a.id = o.customer WHERE a.id = 7");
    assert_eq!(s.driver(), 1, "archive is pinned by its literal");
    assert_eq!(
        s.fetches[1],
        super::join_steps::Fetch {
            side: 0,
            key: Some((1, "id".into(), "customer".into())),
            pinned: false,
        }
    );
    let s = steps("SELECT * FROM orders o JOIN archive a ON a.id = o.customer WHERE o.id = 7");
    assert_eq!(s.driver(), 0);
    assert!(s.fetches[1].pinned, "archive's key is its sharding column");
}

#[test]
fn ordered_writes_over_shards_pick_their_rows_by_id_first() {
    let f = Fixture::new();
    for stmt in [
        "UPDATE orders SET v = 'z' WHERE id IN (2, 3, 5, 6) ORDER BY id LIMIT 3",
        "UPDATE IGNORE orders SET v = 'z' WHERE id IN (2, 3, 5, 6) ORDER BY id LIMIT 3",
        "DELETE FROM items ORDER BY order_id DESC LIMIT 2",
    ] {
        match f.plan(stmt) {
            Plan::Lifted { sql, unique_id, .. } => {
                assert!(sql.contains("IN (SELECT `id` FROM (SELECT"), "{sql}");
                assert_eq!(unique_id.map(|u| u.column).as_deref(), Some("id"), "{stmt}");
            }
            other => panic!("{stmt}: {other:?}"),
        }
    }
    // Pinned to one shard: as it is.
    assert!(matches!(
        f.plan("UPDATE orders SET v = 'z' WHERE id = 4 ORDER BY id LIMIT 3"),
        Plan::Routed(Route::One(_), _)
    ));
}

#[test]
fn write_modifiers_do_not_hide_the_table() {
    let f = Fixture::new();
    for stmt in [
        "UPDATE IGNORE orders SET v = 1 WHERE id = 3",
        "UPDATE LOW_PRIORITY IGNORE orders SET v = 1 WHERE id = 3",
        "/* app */ update low_priority orders o SET o.v = 1 WHERE o.id = 3",
        "DELETE IGNORE FROM orders WHERE id = 3",
        "DELETE LOW_PRIORITY QUICK IGNORE FROM orders WHERE id = 3",
        "DELETE QUICK FROM orders WHERE id = 3",
    ] {
        match f.plan(stmt) {
            Plan::Routed(Route::One(b), _) => assert_eq!(b, "s1", "{stmt}"),
            other => panic!("{stmt}: {other:?}"),
        }
    }
}

#[test]
fn an_outer_join_keeping_no_sharded_table_runs_in_the_gateway_not_per_shard() {
    let f = Fixture::new();
    for stmt in [
        "SELECT t.title, o.id FROM orders o RIGHT JOIN (SELECT 'ABC' AS title) AS t \
         ON o.id = 1 AND t.title = o.note",
        "SELECT t.title, o.id FROM (SELECT 'ABC' AS title) t LEFT JOIN orders o ON o.note = t.title",
    ] {
        assert!(matches!(f.plan(stmt), Plan::Join(_)), "{stmt}");
    }
    // The sharded side kept: each shard answers for its own rows.
    assert!(matches!(
        f.plan("SELECT o.id, t.title FROM orders o LEFT JOIN (SELECT 'ABC' AS title) t ON t.title = o.note"),
        Plan::Routed(..)
    ));
    let (code, msg) = refusal(f.plan(
        "WITH c AS (SELECT 'ABC' AS title) SELECT c.title, o.id FROM c LEFT JOIN orders o \
         ON o.note = c.title",
    ));
    assert_eq!(code, 1235);
    assert!(msg.contains("NULL-extends sharded table `orders`"), "{msg}");
}
