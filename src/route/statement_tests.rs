//! Statement plans of each kind, made without a server: a configuration of placed tables, a
//! session context, and the plan each statement gets.

use super::statement::{plan, Caller, Plan, StatementContext};
use super::{Algorithm, Placement, PlanCache, PlanContext, Route, TableRule, Tables};
use crate::config::User;
use crate::sql::{AdminStatement, StatementKind};

fn rule(name: &str, generator: Option<&str>, placement: Placement) -> TableRule {
    TableRule {
        schema: None,
        name: name.into(),
        id_column: "id".into(),
        generator: generator.map(String::from),
        explicit_ids: Default::default(),
        bias_column: None,
        placement,
    }
}

fn sharded(column: &str, shards: &[&str]) -> Placement {
    Placement::Sharded {
        columns: vec![column.into()],
        algorithm: Algorithm::Mod,
        shards: shards.iter().map(|s| s.to_string()).collect(),
    }
}

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
