//! INSERT … SELECT into a two-shard table whose ids idgate generates, against the same
//! statements on an AUTO_INCREMENT table in one MariaDB: the same rows, the same OK packet
//! (affected rows, info text, insert id) and LAST_INSERT_ID(); every row on the shard that owns
//! it; sources on the default backend, scattered over shards, merged, or the target itself; all
//! or nothing on a failure and inside a rolled-back transaction; a source too large for
//! merge_memory_limit refused with the session going on.

mod common;

use common::{direct, two_shards, DATABASE};
use mysql::prelude::Queryable;

const TABLES: &str = "generators:
  is_seq:
    kind: segment
    step: 100
  is_snow:
    kind: snowflake
    worker_id: 3
  is_bias:
    kind: biased
    worker_id: 4
    slot_bits: 4
    bias_column: user_id
  is_uuid:
    kind: uuidv7
tables:
  items:
    generator: is_seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  snow_items:
    generator: is_snow
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  bias_items:
    generator: is_bias
    sharding:
      columns: [id, user_id]
      algorithm: slot
      shards: [shard0, shard1]
  uuid_items:
    generator: is_uuid
    sharding:
      columns: [user_id]
      algorithm: mod
      shards: [shard0, shard1]
  sharded_src:
    sharding:
      columns: [user_id]
      algorithm: mod
      shards: [shard0, shard1]
";

const COLUMNS: &str = "user_id INT, note VARCHAR(100) CHARACTER SET utf8mb4, \
     l1 VARCHAR(20) CHARACTER SET latin1, amount DECIMAL(10,2), made DATETIME(3), \
     data VARBINARY(20), score DOUBLE";

fn items_ddl(id: &str) -> String {
    format!("CREATE TABLE items (id {id}, {COLUMNS})")
}

/// The source rows: text in two character sets, NULLs, binary bytes with quotes and
/// backslashes, decimals, fractional times and doubles.
const SRC_ROWS: &str = "INSERT INTO src (user_id, note, l1, amount, made, data, score) VALUES \
     (1, 'plain', 'a', 1.50, '2024-01-02 03:04:05.678', X'00275C22FF', 0.1), \
     (2, 'héllo ☃ it''s \\\\ \"q\"', 'é', -2.25, NULL, NULL, -1e300), \
     (3, NULL, NULL, NULL, '1999-12-31 23:59:59.000', X'', 1.5e-7), \
     (4, 'four', 'ü', 4.00, '2020-02-29 00:00:00.001', X'41', 42), \
     (5, 'five', 'x', 0.01, '2021-06-01 12:00:00.000', X'5C', 3.25)";

const SRC_DDL: &str = "CREATE TABLE src (k INT PRIMARY KEY AUTO_INCREMENT, user_id INT, \
     note VARCHAR(100) CHARACTER SET utf8mb4, l1 VARCHAR(20) CHARACTER SET latin1, \
     amount DECIMAL(10,2), made DATETIME(3), data VARBINARY(20), score DOUBLE)";

/// What a statement answered: affected rows, info text, insert id, LAST_INSERT_ID() after it.
#[derive(Debug, PartialEq)]
struct Answer {
    affected: u64,
    info: String,
    lid: u64,
}

fn run(c: &mut mysql::Conn, sql: &str) -> (Answer, u64) {
    c.query_drop(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let affected = c.affected_rows();
    let info = c.info_str().into_owned();
    let insert_id = c.last_insert_id();
    let lid: u64 = c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
    (
        Answer {
            affected,
            info,
            lid,
        },
        insert_id,
    )
}

/// idgate answered as the reference did, with its own first id as insert id and
/// LAST_INSERT_ID().
fn same(got: &Answer, id: u64, want: &Answer) {
    assert_eq!((got.affected, &got.info), (want.affected, &want.info));
    assert_eq!(got.lid, id, "LAST_INSERT_ID() is the insert id");
}

/// The rows of `items` without their ids, in a stable order.
type Row = (
    Option<i32>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<Vec<u8>>,
    Option<f64>,
);
const ROW_SELECT: &str = "SELECT user_id, note, l1, CAST(amount AS CHAR), CAST(made AS CHAR), \
     data, score FROM items ORDER BY user_id, note, made";

fn rows(c: &mut mysql::Conn) -> Vec<Row> {
    let mut v: Vec<Row> = c.query(ROW_SELECT).unwrap();
    // Rows equal in the ORDER BY columns may come in either order.
    v.sort_by_cached_key(|r| format!("{r:?}"));
    v
}

/// Every row of `table` on each shard, and none on a shard that does not own it.
fn assert_placed(ts: &common::TwoShards, table: &str, owner: &str) -> u64 {
    let mut total = 0;
    for (k, db) in ts.dbs.iter().enumerate() {
        let (n, wrong): (u64, u64) = direct(db)
            .query_first(format!(
                "SELECT COUNT(*), COALESCE(SUM(({owner}) <> {k}), 0) FROM {DATABASE}.{table}"
            ))
            .unwrap()
            .unwrap();
        assert_eq!(
            wrong, 0,
            "rows of {table} on shard{k} that belong elsewhere"
        );
        total += n;
    }
    total
}

#[test]
fn backfill_answers_as_an_auto_increment_table_does() {
    let reference = common::start_db();
    let mut r = direct(&reference);
    r.query_drop(items_ddl("BIGINT PRIMARY KEY AUTO_INCREMENT"))
        .unwrap();
    r.query_drop(SRC_DDL).unwrap();
    r.query_drop(SRC_ROWS).unwrap();
    let items = items_ddl("BIGINT PRIMARY KEY");
    let sharded_src = "CREATE TABLE sharded_src (user_id INT, note VARCHAR(100))";
    let ts = two_shards(TABLES, &[&items, sharded_src]);
    // `src` is on the default backend only (shard0), as a table idgate does not know.
    let mut s0 = direct(&ts.dbs[0]);
    s0.query_drop(SRC_DDL).unwrap();
    s0.query_drop(SRC_ROWS).unwrap();
    let mut c = ts.g.conn();
    let cols = "user_id, note, l1, amount, made, data, score";

    // A default-backend source, with generated ids.
    let sql = format!("INSERT INTO items ({cols}) SELECT {cols} FROM src ORDER BY k");
    let (want, ref_id) = run(&mut r, &sql);
    let (got, id) = run(&mut c, &sql);
    same(&got, id, &want);
    assert_eq!(ref_id, want.lid);
    assert_eq!(want.info, "Records: 5  Duplicates: 0  Warnings: 0");
    let first: u64 = c.query_first("SELECT MIN(id) FROM items").unwrap().unwrap();
    assert_eq!(id, first, "the insert id is the first generated id");
    assert_eq!(rows(&mut c), rows(&mut r));
    assert_eq!(assert_placed(&ts, "items", "id % 2"), 5);

    // The target itself: every row read before any is written (the table doubles).
    let sql = format!("INSERT INTO items ({cols}) SELECT {cols} FROM items");
    let (want, _) = run(&mut r, &sql);
    let (got, id) = run(&mut c, &sql);
    same(&got, id, &want);
    assert_eq!(want.affected, 5);
    assert_eq!(rows(&mut c), rows(&mut r));
    assert_eq!(assert_placed(&ts, "items", "id % 2"), 10);

    // A merged source: ORDER BY … LIMIT over both shards.
    let sql = format!(
        "INSERT INTO items ({cols}) SELECT {cols} FROM items ORDER BY user_id DESC, made LIMIT 3"
    );
    let (want, _) = run(&mut r, &sql);
    let (got, id) = run(&mut c, &sql);
    same(&got, id, &want);
    assert_eq!(rows(&mut c), rows(&mut r));

    // A sharded source table, scattered; an id given as NULL or 0 is generated.
    for (user, note) in [(1, "one"), (2, "two"), (3, "three")] {
        let v = format!("INSERT INTO sharded_src VALUES ({user}, '{note}')");
        c.query_drop(&v).unwrap();
    }
    r.query_drop("CREATE TABLE sharded_src (user_id INT, note VARCHAR(100))")
        .unwrap();
    r.query_drop("INSERT INTO sharded_src VALUES (1, 'one'), (2, 'two'), (3, 'three')")
        .unwrap();
    let sql = "INSERT INTO items (id, user_id, note) \
               SELECT IF(user_id = 2, 0, NULL), user_id, note FROM sharded_src";
    let (want, _) = run(&mut r, sql);
    let (got, id) = run(&mut c, sql);
    same(&got, id, &want);
    assert_eq!(rows(&mut c), rows(&mut r));

    // Explicit ids are kept, and route by their own value; LAST_INSERT_ID() stays.
    let lid_before = got.lid;
    let sql = "INSERT INTO items (id, user_id, note) \
               SELECT k + 1000000, user_id, note FROM src WHERE k <= 3";
    let (want, ref_id) = run(&mut r, sql);
    let (got, id) = run(&mut c, sql);
    assert_eq!((got.affected, &got.info), (want.affected, &want.info));
    assert_eq!((id, got.lid), (ref_id, lid_before));
    let explicit: Vec<u64> = c
        .query("SELECT id FROM items WHERE id > 1000000 ORDER BY id")
        .unwrap();
    assert_eq!(explicit, vec![1000001, 1000002, 1000003]);
    assert_eq!(assert_placed(&ts, "items", "id % 2"), 19);

    // INSERT IGNORE counts the duplicates as MariaDB does.
    let sql = "INSERT IGNORE INTO items (id, user_id, note) \
               SELECT k + 1000000, user_id, note FROM src";
    let (want, ref_id) = run(&mut r, sql);
    let (got, id) = run(&mut c, sql);
    assert_eq!((got.affected, &got.info), (want.affected, &want.info));
    assert_eq!(want.info, "Records: 5  Duplicates: 3  Warnings: 3");
    assert_eq!(id, ref_id);

    // No rows selected: OK with nothing inserted.
    let sql = format!("INSERT INTO items ({cols}) SELECT {cols} FROM src WHERE k > 99");
    let (want, ref_id) = run(&mut r, &sql);
    let (got, id) = run(&mut c, &sql);
    assert_eq!(
        (got.affected, &got.info, id),
        (want.affected, &want.info, ref_id)
    );

    // Prepared, with the WHERE value bound.
    let stmt = format!("INSERT INTO items ({cols}) SELECT {cols} FROM src WHERE user_id = ?");
    r.exec_drop(&stmt, (4,)).unwrap();
    c.exec_drop(&stmt, (4,)).unwrap();
    assert_eq!(c.affected_rows(), 1);
    let id = c.last_insert_id();
    let lid: u64 = c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
    assert_eq!(
        (
            id,
            c.query_first(format!("SELECT user_id FROM items WHERE id = {lid}"))
                .unwrap()
        ),
        (lid, Some(4))
    );
    assert_eq!(rows(&mut c), rows(&mut r));

    // A column count that does not match is MariaDB's own error.
    let e = c
        .query_drop("INSERT INTO items (user_id, note) SELECT user_id FROM src")
        .unwrap_err();
    match (
        e,
        r.query_drop("INSERT INTO items (user_id, note) SELECT user_id FROM src")
            .unwrap_err(),
    ) {
        (mysql::Error::MySqlError(a), mysql::Error::MySqlError(b)) => {
            assert_eq!((a.code, &a.state), (b.code, &b.state));
        }
        other => panic!("{other:?}"),
    }
    // ON DUPLICATE KEY UPDATE is refused with what to do instead.
    match c
        .query_drop("INSERT INTO items (id, note) SELECT k, note FROM src ON DUPLICATE KEY UPDATE note = 'x'")
        .unwrap_err()
    {
        mysql::Error::MySqlError(e) => {
            assert_eq!(e.code, 1235, "{e:?}");
            assert!(e.message.contains("INSERT IGNORE"), "{e:?}");
        }
        other => panic!("{other}"),
    }
    assert_eq!(rows(&mut c), rows(&mut r));
}

#[test]
fn failures_and_rollbacks_leave_nothing_and_memory_is_capped() {
    let items = items_ddl("BIGINT PRIMARY KEY");
    let ts = two_shards(TABLES, &[&items, SRC_DDL]);
    let mut c = ts.g.conn();
    direct(&ts.dbs[0]).query_drop(SRC_ROWS).unwrap();
    // A row that makes the INSERT's part on shard1 fail: nothing may stay on shard0 either.
    c.query_drop("INSERT INTO items (id, note) VALUES (1000003, 'taken')")
        .unwrap();
    let count = |ts: &common::TwoShards| -> Vec<u64> {
        ts.dbs
            .iter()
            .map(|db| {
                direct(db)
                    .query_first(format!("SELECT COUNT(*) FROM {DATABASE}.items"))
                    .unwrap()
                    .unwrap()
            })
            .collect()
    };
    let before = count(&ts);
    match c
        .query_drop("INSERT INTO items (id, note) SELECT k + 1000000, note FROM src")
        .unwrap_err()
    {
        mysql::Error::MySqlError(e) => assert_eq!(e.code, 1062, "{e:?}"),
        other => panic!("{other}"),
    }
    assert_eq!(count(&ts), before);
    // Inside the client's transaction: rolled back with it.
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO items (note) SELECT note FROM src")
        .unwrap();
    assert_eq!(c.affected_rows(), 5);
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM items")
        .unwrap()
        .unwrap();
    assert_eq!(n, 6, "the transaction sees its own rows");
    c.query_drop("ROLLBACK").unwrap();
    assert_eq!(count(&ts), before);
    // A failure inside the transaction undoes only the statement.
    c.query_drop("BEGIN").unwrap();
    c.query_drop("INSERT INTO items (id, note) VALUES (2000000, 'kept')")
        .unwrap();
    assert!(c
        .query_drop("INSERT INTO items (id, note) SELECT k + 1000000, note FROM src")
        .is_err());
    c.query_drop("COMMIT").unwrap();
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM items")
        .unwrap()
        .unwrap();
    assert_eq!(n, 2);

    // A source larger than merge_memory_limit: ERROR 1037 naming the setting; the session
    // goes on, and nothing was written.
    let small = common::Idgate::start_with(|port| {
        common::idgate_proc::config_for(
            port,
            &[("shard0", &ts.dbs[0]), ("shard1", &ts.dbs[1])],
            &format!("merge_memory_limit: 2000\n{TABLES}"),
        )
    });
    let mut c = small.conn();
    let big = "INSERT INTO items (note) SELECT REPEAT('x', 100) FROM src a, src b, src c";
    match c.query_drop(big).unwrap_err() {
        mysql::Error::MySqlError(e) => {
            assert_eq!((e.code, e.state.as_str()), (1037, "HY001"), "{e:?}");
            assert!(e.message.contains("merge_memory_limit"), "{e:?}");
        }
        other => panic!("{other}"),
    }
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM items")
        .unwrap()
        .unwrap();
    assert_eq!(n, 2);
    c.query_drop("INSERT INTO items (note) SELECT note FROM src WHERE k = 1")
        .unwrap();
    assert_eq!(c.affected_rows(), 1);
}

#[test]
fn every_generator_kind_fills_and_places_rows() {
    let ddl = [
        "CREATE TABLE snow_items (id BIGINT PRIMARY KEY, user_id INT, note VARCHAR(20))",
        "CREATE TABLE bias_items (id BIGINT PRIMARY KEY, user_id INT, note VARCHAR(20))",
        "CREATE TABLE uuid_items (id CHAR(36) PRIMARY KEY, user_id INT, note VARCHAR(20))",
        SRC_DDL,
    ];
    let ts = two_shards(TABLES, &ddl);
    direct(&ts.dbs[0]).query_drop(SRC_ROWS).unwrap();
    let mut c = ts.g.conn();
    for (table, owner) in [
        ("snow_items", "id % 2"),
        ("bias_items", "(id & 15) % 2"),
        ("uuid_items", "user_id % 2"),
    ] {
        // Twice, the second time from the table itself.
        let sql = format!("INSERT INTO {table} (user_id, note) SELECT user_id, note FROM src");
        let (got, id) = run(&mut c, &sql);
        assert_eq!(got.affected, 5, "{table}");
        assert_eq!(got.info, "Records: 5  Duplicates: 0  Warnings: 0");
        let sql = format!("INSERT INTO {table} (user_id, note) SELECT user_id, note FROM {table}");
        let (again, id2) = run(&mut c, &sql);
        assert_eq!(again.affected, 5, "{table}");
        if table == "uuid_items" {
            assert_eq!((id, id2), (0, 0), "uuids are no insert id");
        } else {
            assert_eq!((got.lid, again.lid), (id, id2));
            let n: u64 = c
                .query_first(format!("SELECT COUNT(*) FROM {table} WHERE id = {id2}"))
                .unwrap()
                .unwrap();
            assert_eq!(n, 1, "{table}: the insert id is a row's id");
        }
        assert_eq!(assert_placed(&ts, table, owner), 10, "{table}");
    }
    // A biased id copies its row's user_id in its low bits.
    let wrong: u64 = c
        .query_first("SELECT COUNT(*) FROM bias_items WHERE (id & 15) <> (user_id & 15)")
        .unwrap()
        .unwrap();
    assert_eq!(wrong, 0);
    let uuids: Vec<String> = c.query("SELECT id FROM uuid_items").unwrap();
    assert!(
        uuids
            .iter()
            .all(|u| u.len() == 36 && u.as_bytes()[14] == b'7'),
        "{uuids:?}"
    );
}

#[test]
fn explain_route_shows_the_source_and_the_target() {
    let items = items_ddl("BIGINT PRIMARY KEY");
    let sharded_src = "CREATE TABLE sharded_src (user_id INT, note VARCHAR(100))";
    let ts = two_shards(TABLES, &[&items, sharded_src]);
    let mut c = ts.g.conn();
    let rows: Vec<(String, String, String)> = c
        .query(
            "EXPLAIN ROUTE INSERT INTO items (user_id, note) SELECT user_id, note FROM \
             sharded_src ORDER BY user_id LIMIT 3",
        )
        .unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows[..2] {
        assert!(r.2.starts_with("source, read into idgate first: "), "{r:?}");
        assert!(r.2.contains("first 3 rows"), "the merge: {r:?}");
        assert!(r.1.starts_with("SELECT user_id, note"), "{r:?}");
    }
    for (r, shard) in rows[2..].iter().zip(["shard0", "shard1"]) {
        assert_eq!(r.0, shard, "{r:?}");
        assert!(
            r.2.starts_with("target: ids from generator `is_seq`"),
            "{r:?}"
        );
    }
    // Nothing ran.
    let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM items").unwrap();
    assert_eq!(n, Some(0));
}
