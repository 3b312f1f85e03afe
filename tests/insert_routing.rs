//! Rows of an INSERT land on the shard that owns them, checked on each backend directly; a
//! multi-shard INSERT is all-or-nothing in autocommit mode.

mod common;

use mysql::prelude::Queryable;

fn ids_on(db: &common::MariaDb, sql: &str) -> Vec<u64> {
    common::direct(db).query(sql).unwrap()
}

#[test]
fn mod_sharding_by_generated_id_and_broadcast() {
    let s = common::two_shards(
        common::ORDERS_MOD_2,
        &[
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20))",
            "CREATE TABLE countries (code CHAR(2) PRIMARY KEY, name VARCHAR(20))",
        ],
    );
    let mut c = s.g.conn();
    c.query_drop("INSERT INTO orders (item) VALUES ('a'), ('b'), ('c'), ('d'), ('e')")
        .unwrap();
    assert_eq!(c.affected_rows(), 5);
    let first = c.last_insert_id();
    let lid: u64 = c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
    assert_eq!(
        lid, first,
        "LAST_INSERT_ID() follows even when the first row is on another shard"
    );
    let all: Vec<u64> = (first..first + 5).collect();
    let even: Vec<u64> = all.iter().copied().filter(|i| i % 2 == 0).collect();
    let odd: Vec<u64> = all.iter().copied().filter(|i| i % 2 == 1).collect();
    assert_eq!(ids_on(&s.dbs[0], "SELECT id FROM orders ORDER BY id"), even);
    assert_eq!(ids_on(&s.dbs[1], "SELECT id FROM orders ORDER BY id"), odd);
    // An explicit id routes by its own value.
    c.query_drop("INSERT INTO orders (id, item) VALUES (1001, 'x')")
        .unwrap();
    assert_eq!(
        ids_on(&s.dbs[1], "SELECT id FROM orders WHERE id = 1001"),
        vec![1001]
    );
    // Session state reaches every shard: a SET after both connections exist, and one replayed
    // on a connection taken later.
    let odd = odd[0];
    c.query_drop("SET @tag = 'everywhere'").unwrap();
    let tag: Option<String> = c
        .query_first(format!("SELECT @tag FROM orders WHERE id = {odd}"))
        .unwrap();
    assert_eq!(tag.as_deref(), Some("everywhere"));
    let mut fresh = s.g.conn();
    fresh.query_drop("SET @tag = 'replayed'").unwrap();
    let tag: Option<String> = fresh
        .query_first(format!("SELECT @tag FROM orders WHERE id = {odd}"))
        .unwrap();
    assert_eq!(tag.as_deref(), Some("replayed"));
    // Broadcast: every row on every shard, counted once.
    c.query_drop("INSERT INTO countries VALUES ('DE', 'Germany'), ('FR', 'France')")
        .unwrap();
    assert_eq!(c.affected_rows(), 2);
    for db in &s.dbs {
        let n: u64 = common::direct(db)
            .query_first("SELECT COUNT(*) FROM countries")
            .unwrap()
            .unwrap();
        assert_eq!(n, 2);
    }
}

#[test]
fn a_duplicate_on_one_shard_leaves_no_row_anywhere() {
    let s = common::two_shards(
        common::ORDERS_MOD_2,
        &["CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20))"],
    );
    let mut c = s.g.conn();
    c.query_drop("INSERT INTO orders (id, item) VALUES (7, 'taken')")
        .unwrap();
    let err = c
        .query_drop("INSERT INTO orders (id, item) VALUES (10, 'even'), (12, 'even'), (7, 'dup')")
        .unwrap_err();
    match err {
        mysql::Error::MySqlError(e) => assert_eq!(e.code, 1062, "{e}"),
        e => panic!("{e}"),
    }
    assert_eq!(
        ids_on(&s.dbs[0], "SELECT id FROM orders"),
        Vec::<u64>::new()
    );
    assert_eq!(ids_on(&s.dbs[1], "SELECT id FROM orders"), vec![7]);
    // Inside the client's transaction, rows wait for its COMMIT, on every shard.
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO orders (id, item) VALUES (20, 'a'), (21, 'b')")
        .unwrap();
    c.query_drop("INSERT INTO orders (id, item) VALUES (23, 'c')")
        .unwrap();
    assert_eq!(
        ids_on(&s.dbs[0], "SELECT id FROM orders"),
        Vec::<u64>::new()
    );
    assert_eq!(ids_on(&s.dbs[1], "SELECT id FROM orders"), vec![7]);
    c.query_drop("ROLLBACK").unwrap();
    assert_eq!(
        ids_on(&s.dbs[0], "SELECT id FROM orders"),
        Vec::<u64>::new()
    );
    assert_eq!(ids_on(&s.dbs[1], "SELECT id FROM orders"), vec![7]);
    c.query_drop("START TRANSACTION").unwrap();
    c.query_drop("INSERT INTO orders (id, item) VALUES (30, 'a'), (31, 'b'), (33, 'c')")
        .unwrap();
    c.query_drop("COMMIT").unwrap();
    assert_eq!(ids_on(&s.dbs[0], "SELECT id FROM orders"), vec![30]);
    assert_eq!(
        ids_on(&s.dbs[1], "SELECT id FROM orders ORDER BY id"),
        vec![7, 31, 33]
    );
}

#[test]
fn biased_ids_share_the_low_bits_and_the_shard_of_their_user() {
    let tables = "generators:
  order_ids:
    kind: biased
    worker_id: 3
    slot_bits: 4
    bias_column: user_id
tables:
  orders:
    generator: order_ids
    sharding:
      columns: [id, user_id]
      algorithm: slot
      shards: [shard0, shard1]
  users:
    id_column: user_id
    sharding:
      columns: [user_id]
      algorithm: mod
      shards: [shard0, shard1]
";
    let s = common::two_shards(
        tables,
        &[
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, item VARCHAR(20))",
            "CREATE TABLE users (user_id BIGINT PRIMARY KEY, name VARCHAR(20))",
        ],
    );
    let mut c = s.g.conn();
    let users: Vec<u64> = vec![1, 2, 17, 30, 12345, 99991];
    for u in &users {
        c.query_drop(format!("INSERT INTO users VALUES ({u}, 'u{u}')"))
            .unwrap();
    }
    let values: Vec<String> = (0..60)
        .map(|i| format!("({}, 'item{i}')", users[i % users.len()]))
        .collect();
    c.query_drop(format!(
        "INSERT INTO orders (user_id, item) VALUES {}",
        values.join(", ")
    ))
    .unwrap();
    assert_eq!(c.affected_rows(), 60);
    for (shard, db) in s.dbs.iter().enumerate() {
        let rows: Vec<(u64, u64)> = common::direct(db)
            .query("SELECT id, user_id FROM orders")
            .unwrap();
        let here: Vec<u64> = common::direct(db)
            .query("SELECT user_id FROM users")
            .unwrap();
        for (id, user) in &rows {
            assert_eq!(
                id & 15,
                user & 15,
                "id {id} keeps the low 4 bits of user {user}"
            );
            assert!(
                here.contains(user),
                "order {id} of user {user} is on shard {shard} with its user"
            );
        }
    }
    let total: usize = s
        .dbs
        .iter()
        .map(|db| ids_on(db, "SELECT id FROM orders").len())
        .sum();
    assert_eq!(total, 60);
    // A bias value that is not a literal cannot be honoured.
    match c
        .query_drop("INSERT INTO orders (user_id, item) VALUES (1 + 1, 'x')")
        .unwrap_err()
    {
        mysql::Error::MySqlError(e) => assert!(e.message.contains("user_id"), "{e}"),
        e => panic!("{e}"),
    }
    c.query_drop("INSERT INTO orders (user_id, item) VALUES (2, 'y')")
        .unwrap();
}

#[test]
fn statements_that_would_bypass_ids_or_shards_are_refused() {
    let s = common::two_shards(
        common::ORDERS_MOD_2,
        &["CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20))"],
    );
    let mut c = s.g.conn();
    c.query_drop("INSERT INTO orders (item) VALUES ('a')")
        .unwrap();
    let id = c.last_insert_id();
    let refused = |c: &mut mysql::Conn, sql: &str, code: u16, needle: &str| match c.query_drop(sql)
    {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!(e.code, code, "{sql}: {}", e.message);
            assert!(e.message.contains(needle), "{sql}: {}", e.message);
        }
        other => panic!("{sql} was not refused: {other:?}"),
    };
    // Changing the sharding column on a duplicate would leave the row on the wrong shard.
    refused(
        &mut c,
        &format!(
            "INSERT INTO orders (id, item) VALUES ({id}, 'x') ON DUPLICATE KEY UPDATE id = id + 1"
        ),
        1105,
        "would move the row",
    );
    c.query_drop(format!(
        "INSERT INTO orders (id, item) VALUES ({id}, 'x') ON DUPLICATE KEY UPDATE item = 'updated'"
    ))
    .unwrap();
    refused(
        &mut c,
        "LOAD DATA INFILE '/nonexistent.tsv' INTO TABLE orders",
        1235,
        "LOAD DATA",
    );
    refused(&mut c, "HANDLER orders OPEN", 1235, "HANDLER");
    refused(&mut c, "LOCK TABLES orders WRITE", 1235, "LOCK TABLES");
    refused(
        &mut c,
        "/* bulk */ LOAD DATA INFILE '/nonexistent.tsv' INTO TABLE orders",
        1235,
        "LOAD DATA",
    );
    let rows: Vec<(u64, String)> = c.query("SELECT id, item FROM orders").unwrap();
    assert_eq!(rows, [(id, "updated".to_string())], "one row, where it was");
}

/// `SELECT LAST_INSERT_ID()` answers the last single-row INSERT whichever shard its row is on,
/// and the last successful one after an INSERT fails on either shard. An INSERT on the default
/// shard sets LAST_INSERT_ID() there itself, so an id still waiting to be carried there from the
/// other shard is not sent ahead of it as an extra SET.
#[test]
fn last_insert_id_follows_single_row_inserts_on_either_shard() {
    let s = common::two_shards(
        common::ORDERS_MOD_2,
        &["CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20) NOT NULL)"],
    );
    let mut c = s.g.conn();
    let insert = |c: &mut mysql::Conn| {
        c.query_drop("INSERT INTO orders (item) VALUES ('x')")
            .unwrap();
        c.last_insert_id()
    };
    let fail = |c: &mut mysql::Conn| match c
        .query_drop("INSERT INTO orders (item) VALUES (NULL)")
        .unwrap_err()
    {
        mysql::Error::MySqlError(e) => assert_eq!(e.code, 1048, "{e}"),
        e => panic!("{e}"),
    };
    let lid =
        |c: &mut mysql::Conn| -> u64 { c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap() };
    // SET statements this session's connection to the default shard has run.
    let sets = |c: &mut mysql::Conn| -> u64 {
        let (_, n): (String, u64) = c
            .query_first("SHOW SESSION STATUS LIKE 'Com_set_option'")
            .unwrap()
            .unwrap();
        n
    };

    // Ids are consecutive: start from an even one, on shard0 (the default backend).
    let mut even = insert(&mut c);
    if even % 2 == 1 {
        assert_eq!(lid(&mut c), even);
        even = insert(&mut c);
    }
    assert_eq!(even % 2, 0);
    assert_eq!(lid(&mut c), even);
    let before = sets(&mut c);
    let odd = insert(&mut c);
    assert_eq!(odd, even + 1, "shard1");
    let next = insert(&mut c);
    assert_eq!(next, even + 2, "shard0");
    assert_eq!(
        sets(&mut c),
        before,
        "the shard0 INSERT set LAST_INSERT_ID() itself: no SET carried the shard1 id first"
    );
    assert_eq!(lid(&mut c), next);

    // A failure on shard1 (id next + 1), then one on shard0 (id next + 3) after a shard1 row.
    fail(&mut c);
    assert_eq!(lid(&mut c), next);
    assert_eq!(insert(&mut c), next + 2, "shard0");
    assert_eq!(lid(&mut c), next + 2);
    assert_eq!(insert(&mut c), next + 3, "shard1");
    fail(&mut c);
    assert_eq!(
        lid(&mut c),
        next + 3,
        "after a failed INSERT on shard0, the last successful id is put back"
    );
    assert_eq!(insert(&mut c), next + 5, "shard1");
    assert_eq!(lid(&mut c), next + 5);
}

/// A client that did not enable multi-statements (PyMySQL's default) cannot slip a second
/// statement past routing: idgate's backend connection would run it as written.
#[test]
fn a_second_statement_without_multi_statements_is_refused() {
    let python = common::clients::require_tool("python3", "python3");
    common::clients::require_python_modules("pymysql", "pymysql");
    let s = common::two_shards(
        common::ORDERS_MOD_2,
        &["CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20))"],
    );
    let script = format!(
        "import pymysql\n\
         c = pymysql.connect(host='127.0.0.1', port={}, user='{}', password='{}', database='{}')\n\
         cur = c.cursor()\n\
         try:\n    cur.execute(\"SELECT 1; INSERT INTO orders (id, item) VALUES (7, 'sneaked')\")\n    print('ran')\n\
         except pymysql.err.ProgrammingError as e:\n    print('refused', e.args[0])\n\
         cur.execute('SELECT 2')\n\
         print('then', cur.fetchone()[0])\n",
        s.g.port,
        common::idgate_proc::APP_USER,
        common::idgate_proc::APP_PASSWORD,
        common::DATABASE
    );
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "refused 1064\nthen 2\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for db in &s.dbs {
        assert!(ids_on(db, "SELECT id FROM orders").is_empty());
    }
}

/// With `best_effort` commits, a COMMIT inside a multi-statement batch still reaches every shard
/// that joined the transaction.
#[test]
fn commit_in_a_batch_reaches_every_shard() {
    let yaml = format!(
        "{}transactions:\n  commit: best_effort\n",
        common::ORDERS_MOD_2
    );
    let s = common::two_shards(
        &yaml,
        &["CREATE TABLE orders (id BIGINT PRIMARY KEY, item VARCHAR(20))"],
    );
    let mut c = s.g.conn();
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO orders (item) VALUES ('a'), ('b'), ('c'), ('d')")
        .unwrap();
    c.query_drop("SELECT 1; COMMIT").unwrap();
    let total: usize = s
        .dbs
        .iter()
        .map(|db| ids_on(db, "SELECT id FROM orders").len())
        .sum();
    assert_eq!(total, 4, "committed on both shards");
}
