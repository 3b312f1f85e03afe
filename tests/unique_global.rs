//! `unique: global`: a unique key without the sharding column holds across shards through a
//! lookup table, so duplicates behave as on one server. Every statement runs directly against
//! one MariaDB and through idgate over two shards (rows sharded by their generated id), and the
//! client must see the same outcome (error code and message, affected rows, info, warnings) and
//! the same rows: plain duplicates, INSERT IGNORE, ON DUPLICATE KEY UPDATE, REPLACE, duplicates
//! inside one statement, NULLs, a deleted row's value used again, a rolled-back transaction,
//! prepared statements, and two sessions inserting the same value at once.

mod common;

use std::time::Duration;

use common::{idgate_proc, Idgate, MariaDb};
use mysql::prelude::Queryable;

const FRIENDS: &str = "CREATE TABLE friends (id BIGINT PRIMARY KEY AUTO_INCREMENT, \
                       a INT, b INT, note VARCHAR(20), UNIQUE KEY pair (a, b))";
const USERS: &str = "CREATE TABLE users (id BIGINT PRIMARY KEY AUTO_INCREMENT, \
                     email VARCHAR(60) COLLATE utf8mb4_general_ci NOT NULL, \
                     UNIQUE KEY email (email))";

fn tables() -> String {
    tables_over(2)
}

/// The tables sharded by id mod `n` over shard0 … shard{n-1}.
fn tables_over(n: usize) -> String {
    let shards: Vec<String> = (0..n).map(|i| format!("shard{i}")).collect();
    let mut y = String::from("generators:\n  seq:\n    kind: segment\n    step: 100\ntables:\n");
    for t in ["friends", "users"] {
        y.push_str(&format!(
            "  {t}:\n    generator: seq\n    unique: global\n    sharding:\n      \
             columns: [id]\n      algorithm: mod\n      shards: [{}]\n",
            shards.join(", ")
        ));
    }
    y
}

/// What a client sees of one statement.
fn outcome(c: &mut mysql::Conn, sql: &str) -> String {
    match c.query_iter(sql) {
        Ok(r) => format!(
            "ok affected={} info={:?} warnings={}",
            r.affected_rows(),
            r.info_str(),
            r.warnings()
        ),
        Err(mysql::Error::MySqlError(e)) => format!("err {} {}", e.code, e.message),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// What a client sees of one prepared statement.
fn prepared(c: &mut mysql::Conn, sql: &str, params: impl Into<mysql::Params>) -> String {
    match c.exec_drop(sql, params) {
        Ok(()) => format!("ok {}", c.affected_rows()),
        Err(mysql::Error::MySqlError(e)) => format!("err {} {}", e.code, e.message),
        Err(e) => panic!("{sql}: {e}"),
    }
}

fn rows(c: &mut mysql::Conn, table: &str) -> Vec<String> {
    let cols = if table == "friends" {
        "a, b, note"
    } else {
        "email"
    };
    let mut v: Vec<String> = c
        .query_map(format!("SELECT {cols} FROM {table}"), |r: mysql::Row| {
            format!("{:?}", r.unwrap())
        })
        .unwrap();
    v.sort();
    v
}

struct Both {
    _one: MariaDb,
    direct: mysql::Conn,
    shards: Vec<MariaDb>,
    g: Idgate,
    through: mysql::Conn,
}

fn start() -> Both {
    start_in("")
}

/// `yaml` goes before the tables (e.g. `transactions: {commit: best_effort}`).
fn start_in(yaml: &str) -> Both {
    start_over(yaml, 2)
}

/// [`start_in`] with the tables over `n` shards.
fn start_over(yaml: &str, n: usize) -> Both {
    let one = common::start_db();
    let mut direct = common::direct(&one);
    let shards: Vec<MariaDb> = (0..n).map(|_| common::start_db()).collect();
    for sql in [FRIENDS, USERS] {
        direct.query_drop(sql).unwrap();
        for s in &shards {
            common::direct(s).query_drop(sql).unwrap();
        }
    }
    // A row already on a shard before idgate starts: the lookup is filled from it.
    direct
        .query_drop("INSERT INTO users (email) VALUES ('old@x')")
        .unwrap();
    common::direct(&shards[1])
        .query_drop("INSERT INTO users (id, email) VALUES (1, 'old@x')")
        .unwrap();
    let names: Vec<String> = (0..n).map(|i| format!("shard{i}")).collect();
    let backends: Vec<(&str, &MariaDb)> = names.iter().map(String::as_str).zip(&shards).collect();
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(port, &backends, &format!("{yaml}{}", tables_over(n)))
    });
    let through = g.conn();
    Both {
        _one: one,
        direct,
        shards,
        g,
        through,
    }
}

fn same(b: &mut Both, sql: &str) -> String {
    let want = outcome(&mut b.direct, sql);
    let got = outcome(&mut b.through, sql);
    assert_eq!(got, want, "{sql}");
    got
}

#[test]
fn duplicates_across_shards_answer_as_one_server() {
    // XA branches (the default), then one transaction per backend.
    for mode in ["", "transactions:\n  commit: best_effort\n"] {
        duplicates_answer_as_one_server(start_in(mode));
    }
}

fn duplicates_answer_as_one_server(mut b: Both) {
    let script = [
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'first')",
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'again')",
        "INSERT IGNORE INTO friends (a, b, note) VALUES (1, 2, 'c'), (3, 4, 'd'), (3, 4, 'e')",
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'x') ON DUPLICATE KEY UPDATE note = 'upd'",
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'x') ON DUPLICATE KEY UPDATE note = 'upd'",
        "INSERT INTO friends (a, b, note) VALUES (5, 6, 'n'), (1, 2, 'y') \
         ON DUPLICATE KEY UPDATE note = VALUES(note)",
        // An upsert that assigns every column its inserted value (Rails' upsert_all): the key
        // keeps the value the row claimed.
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'up1'), (40, 41, 'up2') \
         ON DUPLICATE KEY UPDATE a = VALUES(a), b = VALUES(b), note = VALUES(note)",
        "REPLACE INTO friends (a, b, note) VALUES (3, 4, 'rep')",
        "REPLACE INTO friends (a, b, note) VALUES (3, 4, 'rep2'), (7, 8, 'new')",
        // A duplicate inside one statement rolls the whole statement back.
        "INSERT INTO friends (a, b, note) VALUES (9, 9, 'p'), (9, 9, 'q')",
        "INSERT INTO friends SET a = 10, b = 10, note = 'set'",
        "INSERT INTO friends SET a = 10, b = 10, note = 'set'",
        // NULL never meets a unique key.
        "INSERT INTO friends (a, b, note) VALUES (NULL, 2, 'n1'), (NULL, 2, 'n2')",
        "INSERT INTO friends (b, note) VALUES (2, 'n3')",
        // A deleted row's value is free again.
        "DELETE FROM friends WHERE a = 1",
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'back')",
        // The collation decides: the lookup compares as the shard's index does.
        "INSERT INTO users (email) VALUES ('Old@X')",
        "INSERT INTO users (email) VALUES ('new@x'), ('NEW@x')",
        "INSERT IGNORE INTO users (email) VALUES ('b@x'), ('B@X'), ('old@x')",
        "INSERT INTO users (email) VALUES ('OLD@x'), ('fresh@x') \
         ON DUPLICATE KEY UPDATE email = VALUES(email)",
        // UPDATE of a key column: the new value is claimed, the old one freed.
        "UPDATE friends SET note = 'other column' WHERE a = 3",
        "UPDATE friends SET a = 1, b = 2 WHERE a = 7",
        "UPDATE friends SET a = 70 WHERE a = 7",
        "INSERT INTO friends (a, b, note) VALUES (7, 8, 'free again')",
        "UPDATE friends SET a = 70 WHERE a = 70 AND b = 8",
        "UPDATE friends SET a = 70, note = 'same key' WHERE a = 70 AND b = 8",
        "UPDATE friends SET a = NULL WHERE a = 70 AND b = 8",
        "INSERT INTO friends (a, b, note) VALUES (70, 8, 'after null')",
        "UPDATE users SET email = 'OLD@X' WHERE email = 'old@x'",
        "UPDATE users SET email = 'new@x' WHERE email = 'b@x'",
        "UPDATE users SET email = 'B@x' WHERE email = 'nobody@x'",
        "INSERT INTO users (email) VALUES ('b@x')",
        "INSERT INTO users (email) VALUES ('new@x')",
        // Several rows: one value for all of them meets itself; NULL meets nothing.
        "UPDATE users SET email = 'many@x' WHERE email LIKE '%@x'",
        "UPDATE friends SET a = NULL, note = 'nulled' WHERE b = 2",
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'after nulling')",
    ];
    for sql in script {
        same(&mut b, sql);
    }
    for t in ["friends", "users"] {
        assert_eq!(rows(&mut b.through, t), rows(&mut b.direct, t), "{t}");
    }
    // A rolled-back transaction leaves its values free.
    for sql in [
        "BEGIN",
        "INSERT INTO friends (a, b, note) VALUES (20, 20, 'tx')",
        "INSERT INTO friends (a, b, note) VALUES (20, 20, 'tx2')",
        "ROLLBACK",
        "INSERT INTO friends (a, b, note) VALUES (20, 20, 'after')",
        "BEGIN",
        "INSERT INTO friends (a, b, note) VALUES (21, 21, 'kept')",
        "INSERT INTO friends (a, b, note) VALUES (21, 21, 'dup')",
        "COMMIT",
    ] {
        same(&mut b, sql);
    }
    // Prepared, as drivers send it.
    for (a, bb) in [(30, 30), (30, 30), (1, 2)] {
        let sql = "INSERT INTO friends (a, b, note) VALUES (?, ?, 'prep')";
        assert_eq!(
            prepared(&mut b.through, sql, (a, bb)),
            prepared(&mut b.direct, sql, (a, bb))
        );
    }
    for t in ["friends", "users"] {
        assert_eq!(rows(&mut b.through, t), rows(&mut b.direct, t), "{t}");
    }
    // RETURNING, as ORMs insert several rows: the written rows only, in statement order.
    for sql in [
        "INSERT INTO friends (a, b, note) VALUES (60, 60, 'r1'), (61, 61, 'r2') RETURNING a, b, note",
        "INSERT IGNORE INTO friends (a, b, note) VALUES (62, 62, 'r3'), (60, 60, 'again'), \
         (63, 63, 'r4') RETURNING a, b",
        "INSERT INTO friends (a, b, note) VALUES (64, 64, 'r5'), (61, 61, 'dup') RETURNING a",
    ] {
        let run = |c: &mut mysql::Conn| match c.query::<mysql::Row, _>(sql) {
            Ok(rows) => format!(
                "{:?} warnings={}",
                rows.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
                c.warnings()
            ),
            Err(mysql::Error::MySqlError(e)) => format!("err {} {}", e.code, e.message),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(run(&mut b.through), run(&mut b.direct), "{sql}");
    }
    // A prepared UPDATE of the key, as drivers send it.
    for (to, from) in [("p1@x", "new@x"), ("b@x", "p1@x"), ("p2@x", "p1@x")] {
        let sql = "UPDATE users SET email = ? WHERE email = ?";
        assert_eq!(
            prepared(&mut b.through, sql, (to, from)),
            prepared(&mut b.direct, sql, (to, from)),
            "{to} <- {from}"
        );
    }
    for t in ["friends", "users"] {
        assert_eq!(rows(&mut b.through, t), rows(&mut b.direct, t), "{t}");
    }
    // The generated id is the client's, as after AUTO_INCREMENT.
    b.through
        .query_drop("INSERT INTO friends (a, b, note) VALUES (40, 40, 'id')")
        .unwrap();
    let id = b.through.last_insert_id();
    let found: Option<u64> = b
        .through
        .query_first("SELECT id FROM friends WHERE a = 40")
        .unwrap();
    assert_eq!(found, Some(id));
}

#[test]
fn insert_select_into_a_table_with_global_keys_answers_as_one_server() {
    let mut b = start();
    // The source: a table of the default backend (shard0), the same rows as on the one server.
    let source = [
        "CREATE TABLE src (a INT, b INT, note VARCHAR(20))",
        "INSERT INTO src VALUES (1, 2, 's1'), (3, 4, 's2'), (1, 2, 's3'), (11, 12, 's4'), \
         (NULL, 5, 's5')",
    ];
    for sql in source {
        b.direct.query_drop(sql).unwrap();
        common::direct(&b.shards[0]).query_drop(sql).unwrap();
    }
    for sql in [
        "INSERT INTO friends (a, b, note) SELECT a, b, note FROM src WHERE note = 's1'",
        // A duplicate of a row already stored, and one inside the SELECT: nothing is kept.
        "INSERT INTO friends (a, b, note) SELECT a, b, note FROM src",
        "INSERT INTO friends (a, b, note) SELECT a, b, note FROM src WHERE note <> 's1'",
        "INSERT IGNORE INTO friends (a, b, note) SELECT a, b, note FROM src",
        "REPLACE INTO friends (a, b, note) SELECT a, b, CONCAT(note, 'r') FROM src WHERE a = 3",
        "INSERT INTO friends (a, b, note) SELECT a, b, note FROM src WHERE a = 99",
        "INSERT INTO friends SELECT NULL, a + 100, b, note FROM src WHERE a IS NOT NULL",
        "INSERT INTO users (email) SELECT 'sel@x'",
        "INSERT INTO users (email) SELECT 'SEL@x'",
        "INSERT IGNORE INTO users (email) SELECT CONCAT(note, '@x') FROM src ORDER BY note",
        "INSERT INTO users (email) SELECT CONCAT(note, '@x') FROM src WHERE note = 's2'",
    ] {
        let want = outcome(&mut b.direct, sql);
        let got = outcome(&mut b.through, sql);
        assert_eq!(got, want, "{sql}");
    }
    // Refused for every placed table: its UPDATE may name the SELECT's columns.
    let sql = "INSERT INTO friends (a, b, note) SELECT a, b, note FROM src \
               ON DUPLICATE KEY UPDATE note = 'x'";
    let got = outcome(&mut b.through, sql);
    assert!(got.starts_with("err 1235"), "{sql}: {got}");
    for t in ["friends", "users"] {
        assert_eq!(rows(&mut b.through, t), rows(&mut b.direct, t), "{t}");
    }
    // Generated ids as one server reports them: LAST_INSERT_ID() is the statement's first.
    let sql = "INSERT INTO friends (a, b, note) SELECT a + 200, b, note FROM src WHERE a = 11";
    b.through.query_drop(sql).unwrap();
    let id: u64 = b
        .through
        .query_first("SELECT LAST_INSERT_ID()")
        .unwrap()
        .unwrap();
    let stored: u64 = b
        .through
        .query_first("SELECT id FROM friends WHERE a = 211")
        .unwrap()
        .unwrap();
    assert_eq!(id, stored);
}

#[test]
fn two_sessions_inserting_one_value_at_once_store_it_once() {
    let b = start();
    let mut first = b.g.conn();
    first.query_drop("BEGIN").unwrap();
    first
        .query_drop("INSERT INTO users (email) VALUES ('race@x')")
        .unwrap();
    let mut second = b.g.conn();
    let racer = std::thread::spawn(move || {
        outcome(&mut second, "INSERT INTO users (email) VALUES ('race@x')")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !racer.is_finished(),
        "the second insert must wait for the first"
    );
    first.query_drop("COMMIT").unwrap();
    let got = racer.join().unwrap();
    assert_eq!(got, "err 1062 Duplicate entry 'race@x' for key 'email'");
    let n: u64 = first
        .query_first("SELECT COUNT(*) FROM users WHERE email = 'race@x'")
        .unwrap()
        .unwrap();
    assert_eq!(n, 1);
    // An UPDATE's new value is claimed too: an INSERT of it waits, then meets the row.
    first.query_drop("BEGIN").unwrap();
    first
        .query_drop("UPDATE users SET email = 'moved@x' WHERE email = 'race@x'")
        .unwrap();
    let mut third = b.g.conn();
    let racer = std::thread::spawn(move || {
        outcome(&mut third, "INSERT INTO users (email) VALUES ('moved@x')")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(!racer.is_finished(), "the insert must wait for the update");
    first.query_drop("COMMIT").unwrap();
    assert_eq!(
        racer.join().unwrap(),
        "err 1062 Duplicate entry 'moved@x' for key 'email'"
    );
    // The old value is free again.
    first
        .query_drop("INSERT INTO users (email) VALUES ('race@x')")
        .unwrap();
    // Many sessions at once, half of them the same values: each value stored once.
    let mut racers = Vec::new();
    for t in 0..6 {
        let mut c = b.g.conn();
        racers.push(std::thread::spawn(move || {
            let mut stored = 0;
            for i in 0..20 {
                let v = if t % 2 == 0 { i } else { 100 * t + i };
                if c.query_drop(format!("INSERT INTO users (email) VALUES ('u{v}@x')"))
                    .is_ok()
                {
                    stored += 1;
                }
            }
            stored
        }));
    }
    let stored: u64 = racers.into_iter().map(|r| r.join().unwrap()).sum();
    let distinct: u64 = first
        .query_first("SELECT COUNT(DISTINCT email) FROM users WHERE email LIKE 'u%@x'")
        .unwrap()
        .unwrap();
    let all: u64 = first
        .query_first("SELECT COUNT(*) FROM users WHERE email LIKE 'u%@x'")
        .unwrap()
        .unwrap();
    assert_eq!((all, distinct, stored), (80, 80, 80));
}

#[test]
fn shapes_the_lookup_cannot_follow_are_refused_and_existing_duplicates_keep_idgate_from_starting() {
    let mut b = start();
    b.through
        .query_drop("INSERT INTO friends (a, b) VALUES (1, 2), (3, 2)")
        .unwrap();
    for sql in [
        // A value that depends on when it is evaluated.
        "INSERT INTO users (email) VALUES (CONCAT(NOW(), '@x'))",
        "INSERT INTO users (email) VALUES ('z@x') ON DUPLICATE KEY UPDATE email = 'w@x'",
        // Part of a key: the row could end with a value nobody claimed.
        "INSERT INTO friends (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE a = VALUES(a)",
        "ALTER TABLE friends ADD UNIQUE KEY by_note (note)",
        // Several rows at once could meet each other's new values.
        "UPDATE friends SET a = 99 WHERE b = 2",
        "UPDATE users SET email = CONCAT(email, '.') WHERE email = 'old@x'",
        "LOAD DATA LOCAL INFILE '/nonexistent' INTO TABLE users (email)",
    ] {
        match b.through.query_drop(sql) {
            Err(mysql::Error::MySqlError(e)) => {
                assert_eq!(e.code, 1235, "{sql}: {}", e.message);
                assert!(e.message.contains("unique"), "{}", e.message);
                assert!(!e.message.contains("  "), "a gap in: {}", e.message);
            }
            other => panic!("{sql}: {other:?}"),
        }
    }
    // Other columns change as usual.
    b.through
        .query_drop("UPDATE friends SET note = 'changed' WHERE note = 'nothing'")
        .unwrap();
    b.through.query_drop("SELECT 1").unwrap();
    // The same value on two shards before the lookup exists: idgate names it and stops.
    let shards = [common::start_db(), common::start_db()];
    for (i, s) in shards.iter().enumerate() {
        let mut c = common::direct(s);
        c.query_drop(USERS).unwrap();
        c.query_drop(format!("INSERT INTO users VALUES ({i}, 'twice@x')"))
            .unwrap();
    }
    let said = idgate_proc::refused_start(
        &[("shard0", &shards[0]), ("shard1", &shards[1])],
        &tables().replace("  friends:", "  unused:"),
    );
    assert!(
        said.contains("already holds rows with the same value of unique key `email`"),
        "{said}"
    );
}

#[test]
fn a_table_created_through_idgate_gets_its_lookups_and_dropping_it_drops_them() {
    let shards = [common::start_db(), common::start_db()];
    let yaml = tables().replace("  friends:", "  teams:");
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &[("shard0", &shards[0]), ("shard1", &shards[1])],
            &yaml,
        )
    });
    let mut c = g.conn();
    c.query_drop(
        "CREATE TABLE teams (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(30), \
         UNIQUE KEY name (name))",
    )
    .unwrap();
    let dup = |c: &mut mysql::Conn| {
        for i in 0..6 {
            c.query_drop(format!("INSERT INTO teams (name) VALUES ('t{i}')"))
                .unwrap();
        }
        (0..6)
            .map(|i| outcome(c, &format!("INSERT INTO teams (name) VALUES ('t{i}')")))
            .collect::<Vec<_>>()
    };
    for (i, got) in dup(&mut c).into_iter().enumerate() {
        assert_eq!(
            got,
            format!("err 1062 Duplicate entry 't{i}' for key 'name'")
        );
    }
    // Dropped and made again with another key: the old lookup is gone with its values.
    c.query_drop("DROP TABLE teams").unwrap();
    c.query_drop(
        "CREATE TABLE teams (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(30), \
         city VARCHAR(30), UNIQUE KEY name (name, city))",
    )
    .unwrap();
    c.query_drop("INSERT INTO teams (name, city) VALUES ('t0', 'x'), ('t0', 'y')")
        .unwrap();
    assert_eq!(
        outcome(&mut c, "INSERT INTO teams (name, city) VALUES ('t0', 'y')"),
        "err 1062 Duplicate entry 't0-y' for key 'name'"
    );
    // A key added to a table with rows needs a fill: refused with what to do.
    assert_eq!(
        common::answers::error_of(&mut c, "CREATE UNIQUE INDEX by_city ON teams (city)").0,
        1235
    );
    c.query_drop("DROP TABLE teams").unwrap();
    let left: u64 = common::direct(&shards[0])
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'idgate_unique' \
             AND TABLE_NAME LIKE '%teams%'",
        )
        .unwrap()
        .unwrap();
    assert_eq!(left, 0, "the dropped table's lookups are gone");
}

#[test]
fn the_lookup_of_a_table_with_rows_is_filled_page_by_page_from_every_shard() {
    let shards = [common::start_db(), common::start_db()];
    for (i, s) in shards.iter().enumerate() {
        let mut c = common::direct(s);
        c.query_drop(USERS).unwrap();
        // 12,500 rows a shard: more than one page of the fill on each.
        c.query_drop(format!(
            "INSERT INTO users (id, email) SELECT seq * 2 + {i}, CONCAT('u', seq * 2 + {i}, '@x') \
             FROM seq_1_to_12500"
        ))
        .unwrap();
    }
    let yaml = tables().replace("  friends:", "  unused:");
    let g = Idgate::start_with(|port| {
        idgate_proc::config_for(
            port,
            &[("shard0", &shards[0]), ("shard1", &shards[1])],
            &yaml,
        )
    });
    let mut c = g.conn();
    let db: String = c.query_first("SELECT DATABASE()").unwrap().unwrap();
    let n: u64 = common::direct(&shards[0])
        .query_first(format!(
            "SELECT COUNT(*) FROM idgate_unique.`{db}__users__email`"
        ))
        .unwrap()
        .unwrap();
    assert_eq!(n, 25_000);
    // Each value names the shard its row is on.
    let owners: Vec<(String, u64)> = common::direct(&shards[0])
        .query(format!(
            "SELECT idgate_owner, COUNT(*) FROM idgate_unique.`{db}__users__email` \
             GROUP BY idgate_owner ORDER BY 1"
        ))
        .unwrap();
    assert_eq!(
        owners,
        [
            ("shard0".to_string(), 12_500),
            ("shard1".to_string(), 12_500)
        ]
    );
    // Values from the last pages of either shard are held.
    for v in [24_999, 25_000, 3, 2] {
        assert_eq!(
            outcome(
                &mut c,
                &format!("INSERT INTO users (email) VALUES ('U{v}@X')")
            ),
            format!("err 1062 Duplicate entry 'U{v}@X' for key 'email'")
        );
    }
    c.query_drop("INSERT INTO users (email) VALUES ('fresh@x')")
        .unwrap();
}

/// The rows of `users` whose `email` is `value`, through idgate; the same read as a prepared
/// statement (binary protocol) must give the same.
fn emails_through(c: &mut mysql::Conn, value: &str) -> Vec<(u64, String)> {
    let text: Vec<(u64, String)> = c
        .query(format!(
            "SELECT id, email FROM users WHERE email = '{value}'"
        ))
        .unwrap();
    let prepared: Vec<(u64, String)> = c
        .exec("SELECT id, email FROM users WHERE email = ?", (value,))
        .unwrap();
    assert_eq!(prepared, text, "{value}");
    text
}

/// The shard holding the row with `email`, read on the shards directly.
fn shard_holding(b: &Both, email: &str) -> usize {
    let on: Vec<usize> = (0..b.shards.len())
        .filter(|&i| {
            common::direct(&b.shards[i])
                .query_first::<u64, _>(format!("SELECT id FROM users WHERE email = '{email}'"))
                .unwrap()
                .is_some()
        })
        .collect();
    assert_eq!(on.len(), 1, "{email} on {on:?}");
    on[0]
}

/// Writes a second row with `email` straight onto a shard that does not hold it, behind
/// idgate's back: a statement sent to every shard sees both, one the lookup sends to the
/// owner sees one.
fn plant_twin(b: &Both, email: &str, id: u64) {
    let other = (shard_holding(b, email) + 1) % b.shards.len();
    common::direct(&b.shards[other])
        .query_drop(format!(
            "INSERT INTO users (id, email) VALUES ({id}, '{email}')"
        ))
        .unwrap();
}

#[test]
fn a_key_value_is_read_on_the_shard_its_lookup_names() {
    // Over two shards idgate asks both at once; the lookup picks one of three or more.
    let mut b = start_over("", 3);
    for e in ["a@x", "b@x", "c@x", "d@x"] {
        same(&mut b, &format!("INSERT INTO users (email) VALUES ('{e}')"));
    }
    // As one server answers, in the shapes ORMs send (the collation is case-insensitive).
    for sql in [
        "SELECT email FROM users WHERE email = 'A@x'",
        "SELECT email FROM users WHERE email = 'a@x' LIMIT 21",
        "SELECT email FROM users WHERE email = 'b@x' ORDER BY id LIMIT 1",
        "SELECT email, COUNT(*) FROM users WHERE email = 'c@x' GROUP BY email",
        "SELECT email FROM users WHERE email = 'nobody@x'",
        "SELECT COUNT(*) FROM users WHERE email = 'nobody@x'",
        "SELECT a, b FROM friends WHERE a = 1 AND b = 2",
    ] {
        let want: Vec<mysql::Row> = b.direct.query(sql).unwrap();
        let got: Vec<mysql::Row> = b.through.query(sql).unwrap();
        assert_eq!(
            format!(
                "{:?}",
                got.into_iter().map(mysql::Row::unwrap).collect::<Vec<_>>()
            ),
            format!(
                "{:?}",
                want.into_iter().map(mysql::Row::unwrap).collect::<Vec<_>>()
            ),
            "{sql}"
        );
    }
    // Values written through idgate, and the row that was there at start, are read on their
    // owner's shard alone: a twin planted on the other shard is not seen by `=`.
    for (e, id) in [("a@x", 900_001), ("old@x", 900_002)] {
        plant_twin(&b, e, id);
        assert_eq!(emails_through(&mut b.through, e).len(), 1, "{e}");
        let all: Vec<u64> = b
            .through
            .query(format!("SELECT id FROM users WHERE email LIKE '{e}'"))
            .unwrap();
        assert_eq!(all.len(), 2, "{e}: LIKE reads every shard");
    }
    // A value moved by an UPDATE of the key names the row's shard.
    b.through
        .query_drop("UPDATE users SET email = 'moved@x' WHERE email = 'b@x'")
        .unwrap();
    plant_twin(&b, "moved@x", 900_003);
    assert_eq!(emails_through(&mut b.through, "moved@x").len(), 1);
    // A deleted row's value taken again names the new row's shard.
    b.through
        .query_drop("DELETE FROM users WHERE email = 'c@x'")
        .unwrap();
    for i in 0..3 {
        // New ids land on both shards: the value's new row is wherever its id put it.
        b.through
            .query_drop(format!("INSERT INTO users (email) VALUES ('f{i}@x')"))
            .unwrap();
    }
    b.through
        .query_drop("INSERT INTO users (email) VALUES ('c@x')")
        .unwrap();
    plant_twin(&b, "c@x", 900_004);
    assert_eq!(emails_through(&mut b.through, "c@x").len(), 1);
    // An owner without the row (it moved behind idgate's back) is a hint only: every shard
    // answers then.
    let home = shard_holding(&b, "d@x");
    let id: u64 = common::direct(&b.shards[home])
        .query_first("SELECT id FROM users WHERE email = 'd@x'")
        .unwrap()
        .unwrap();
    common::direct(&b.shards[home])
        .query_drop("DELETE FROM users WHERE email = 'd@x'")
        .unwrap();
    common::direct(&b.shards[(home + 1) % 3])
        .query_drop(format!(
            "INSERT INTO users (id, email) VALUES ({id}, 'd@x')"
        ))
        .unwrap();
    assert_eq!(
        emails_through(&mut b.through, "d@x"),
        [(id, "d@x".to_string())]
    );
    assert!(emails_through(&mut b.through, "nobody@x").is_empty());
    // UPDATE and DELETE by a whole key change the owner's row alone (a twin planted behind
    // idgate's back stays as it was), and answer as one server.
    for sql in [
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'first'), (3, 4, 'second')",
        "UPDATE friends SET note = 'again' WHERE a = 1 AND b = 2",
        "UPDATE friends SET note = 'again' WHERE a = 1 AND b = 2",
        "UPDATE friends SET note = 'none' WHERE a = 9 AND b = 9",
        "DELETE FROM friends WHERE a = 9 AND b = 9",
    ] {
        same(&mut b, sql);
    }
    let id: u64 = b
        .through
        .query_first("SELECT id FROM friends WHERE a = 1 AND b = 2")
        .unwrap()
        .unwrap();
    let home = (0..3)
        .find(|&i| {
            common::direct(&b.shards[i])
                .query_first::<u64, _>(format!("SELECT id FROM friends WHERE id = {id}"))
                .unwrap()
                .is_some()
        })
        .unwrap();
    common::direct(&b.shards[(home + 1) % 3])
        .query_drop("INSERT INTO friends (id, a, b, note) VALUES (900100, 1, 2, 'twin')")
        .unwrap();
    assert_eq!(
        outcome(
            &mut b.through,
            "UPDATE friends SET note = 'owner' WHERE a = 1 AND b = 2"
        ),
        "ok affected=1 info=\"Rows matched: 1  Changed: 1  Warnings: 0\" warnings=0"
    );
    assert_eq!(
        outcome(&mut b.through, "DELETE FROM friends WHERE a = 1 AND b = 2"),
        "ok affected=1 info=\"\" warnings=0"
    );
    let twin: Vec<String> = common::direct(&b.shards[(home + 1) % 3])
        .query("SELECT note FROM friends WHERE a = 1 AND b = 2")
        .unwrap();
    assert_eq!(twin, ["twin"]);
    // An owner without the row: every shard is asked ('d@x' moved behind idgate's back).
    assert_eq!(
        outcome(&mut b.through, "DELETE FROM users WHERE email = 'd@x'"),
        "ok affected=1 info=\"\" warnings=0"
    );
    // In a transaction, the session's own uncommitted row is found; after ROLLBACK it is gone.
    for c in [&mut b.direct, &mut b.through] {
        c.query_drop("BEGIN").unwrap();
        c.query_drop("INSERT INTO users (email) VALUES ('t@x')")
            .unwrap();
        assert_eq!(emails_through(c, "t@x").len(), 1);
        c.query_drop("ROLLBACK").unwrap();
        assert!(emails_through(c, "t@x").is_empty());
    }
    assert!(emails_through(&mut b.through, "d@x").is_empty());
    // EXPLAIN ROUTE shows the lookup's read first.
    let plan: Vec<(String, String, String)> = b
        .through
        .query("EXPLAIN ROUTE SELECT * FROM users WHERE email = 'a@x'")
        .unwrap();
    assert!(
        plan[0]
            .1
            .starts_with("SELECT idgate_owner FROM `idgate_unique`."),
        "{plan:?}"
    );
    assert_eq!(plan.len(), 2 + 3, "{plan:?}");
    let plan: Vec<(String, String, String)> = b
        .through
        .query("EXPLAIN ROUTE DELETE FROM users WHERE email = 'a@x'")
        .unwrap();
    assert!(
        plan[1].2.starts_with("its counts are the answer"),
        "{plan:?}"
    );
}

#[test]
fn key_values_given_as_expressions_are_claimed_as_the_row_holds_them() {
    let mut b = start();
    for sql in [
        "INSERT INTO users (email) VALUES (LOWER('Ex@X'))",
        "INSERT INTO users (email) VALUES ('ex@x')",
        "INSERT INTO users (email) VALUES (CONCAT('e', 'x@x'))",
        "INSERT IGNORE INTO users (email) VALUES (CONCAT('e', 'x@x')), (REVERSE('x@ye'))",
        "INSERT INTO friends (a, b, note) VALUES (1 + 1, 40, 'x'), (2, 40, 'y')",
        "INSERT INTO friends (a, b, note) VALUES (ABS(-7), 40, 'x')",
        "REPLACE INTO friends (a, b, note) VALUES (3 + 4, 40, 'replaced')",
        "INSERT INTO users SET email = UPPER('set@x')",
    ] {
        same(&mut b, sql);
    }
    assert_eq!(rows(&mut b.through, "users"), rows(&mut b.direct, "users"));
    assert_eq!(
        rows(&mut b.through, "friends"),
        rows(&mut b.direct, "friends")
    );
    // A random value is evaluated once: the row holds the value its lookup claimed.
    b.through
        .query_drop("INSERT INTO users (email) VALUES (CONCAT('u-', UUID(), '@x'))")
        .unwrap();
    let made: String = b
        .through
        .query_first("SELECT email FROM users WHERE email LIKE 'u-%'")
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome(
            &mut b.through,
            &format!("INSERT INTO users (email) VALUES ('{made}')")
        ),
        format!("err 1062 Duplicate entry '{made}' for key 'email'")
    );
    // Values tied to the moment or the row are refused, saying why.
    for (sql, why) in [
        (
            "INSERT INTO users (email) VALUES (CONCAT(NOW(), '@x'))",
            "`NOW`",
        ),
        (
            "INSERT INTO users (email) VALUES (CONCAT(@who, '@x'))",
            "a variable",
        ),
        (
            "INSERT INTO friends (a, b) VALUES (5, a + 1)",
            "a column of the row",
        ),
    ] {
        let (code, msg) = common::answers::error_of(&mut b.through, sql);
        assert_eq!(code, 1235, "{sql}: {msg}");
        assert!(msg.contains(why), "{sql}: {msg}");
    }
}

/// An answer's error code and message (`None`: not an error).
fn raw_error(packets: &[Vec<u8>]) -> Option<(u16, String)> {
    let p = packets.first()?;
    (p.first() == Some(&0xff)).then(|| {
        (
            u16::from_le_bytes([p[1], p[2]]),
            String::from_utf8_lossy(&p[9..]).into_owned(),
        )
    })
}

#[test]
fn a_client_in_latin1_meets_duplicates_as_one_server() {
    // Bytes that are not UTF-8 (é, è, É and ê in latin1): the lookup must see them as the
    // shards do, in the client's character set.
    let b = start();
    let (mut direct, mut through) = common::raw::direct_and_through(&b._one, &b.g);
    let script: [&[u8]; 8] = [
        b"SET NAMES latin1",
        b"INSERT INTO users (email) VALUES ('\xe9@x')",
        b"INSERT INTO users (email) VALUES ('\xe9@x')",
        b"INSERT INTO users (email) VALUES ('\xe8@x')",
        b"INSERT INTO users (email) VALUES ('\xc9@X')",
        b"UPDATE users SET email = '\xea@x' WHERE email = '\xe8@x'",
        b"INSERT INTO users (email) VALUES ('\xea@x')",
        b"INSERT INTO users (email) VALUES ('\xe8@x')",
    ];
    for sql in script {
        let want = raw_error(&direct.query(sql));
        let got = raw_error(&through.query(sql));
        assert_eq!(got, want, "{}", String::from_utf8_lossy(sql));
    }
    // utf8mb4_general_ci takes é, è and ê for e: one row is left, as on one server.
    let mut c = b.g.conn();
    let emails: Vec<String> = c.query("SELECT email FROM users ORDER BY email").unwrap();
    assert_eq!(emails, ["ê@x", "old@x"]);
    let mut one = common::direct(&b._one);
    let want: Vec<String> = one.query("SELECT email FROM users ORDER BY email").unwrap();
    assert_eq!(emails, want);
}

#[test]
fn an_orm_meets_integrity_errors_where_one_server_raises_them() {
    use common::clients::{
        assert_has, client_args, differential, require_python_modules, require_tool, source_dir,
    };
    let python = require_tool("python3", "python3");
    require_python_modules("pymysql, sqlalchemy", "pymysql sqlalchemy");
    let yaml = tables().replace("  friends:", "  orm_members:");
    let ts = common::two_shards(&yaml, &[]);
    let t = differential(
        "unique_global",
        "sqlalchemy",
        common::shared_db(),
        &ts.g,
        Duration::from_secs(120),
        |t| {
            let mut cmd = std::process::Command::new(&python);
            cmd.arg(source_dir().join("py_unique_orm.py"));
            client_args(&mut cmd, t);
            cmd
        },
    );
    for line in [
        "get_or_create ann@x: created=False email=ann@x",
        "insert bob@x again: IntegrityError 1062 Duplicate entry 'bob@x' for key 'email'",
        "update bob onto ann@x: IntegrityError 1062 Duplicate entry 'ann@x' for key 'email'",
        "insert bob@x after the move: committed",
        "done",
    ] {
        assert_has(&t, line);
    }
}

/// The insert id and LAST_INSERT_ID() after IGNORE and upserts name the same row as on one
/// server (each side's ids are its own, so a row is named by its key), with and without
/// CLIENT_FOUND_ROWS.
#[test]
fn upserts_report_the_row_one_server_reports() {
    let b = start();
    let found_rows = |port: u16, user: &str, password: &str| {
        mysql::Conn::new(
            mysql::OptsBuilder::new()
                .ip_or_hostname(Some("127.0.0.1"))
                .tcp_port(port)
                .user(Some(user))
                .pass(Some(password))
                .db_name(Some(common::DATABASE))
                .additional_capabilities(mysql::consts::CapabilityFlags::CLIENT_FOUND_ROWS),
        )
        .unwrap()
    };
    let pairs = [
        (common::direct(&b._one), b.g.conn()),
        (
            found_rows(b._one.port, common::USER, common::PASSWORD),
            found_rows(b.g.port, "app", "app-secret"),
        ),
    ];
    fn learned(c: &mut mysql::Conn, sql: &str) -> String {
        if let Err(e) = c.query_drop(sql) {
            return format!("{e}");
        }
        let (affected, id) = (c.affected_rows(), c.last_insert_id());
        let lid: u64 = c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
        let mut name = |id: u64| -> String {
            if id == 0 {
                return "0".into();
            }
            c.query_first(format!(
                "SELECT CONCAT(a, '-', b) FROM friends WHERE id = {id}"
            ))
            .unwrap()
            .unwrap_or_else(|| format!("no row has id {id}"))
        };
        format!(
            "affected {affected}, insert id {}, LAST_INSERT_ID() {}",
            name(id),
            name(lid)
        )
    }
    let sequence = [
        "INSERT INTO friends (a, b, note) VALUES (1, 1, 'a'), (1, 2, 'b')",
        "INSERT IGNORE INTO friends (a, b, note) VALUES (1, 1, 'x'), (1, 3, 'c'), (1, 4, 'd')",
        "INSERT IGNORE INTO friends (a, b, note) VALUES (1, 1, 'x')",
        "INSERT IGNORE INTO friends (a, b, note) VALUES (1, 1, 'x'), (1, 2, 'y')",
        "INSERT INTO friends (a, b, note) VALUES (1, 2, 'x') ON DUPLICATE KEY UPDATE note = 'u'",
        "INSERT INTO friends (a, b, note) VALUES (1, 1, 'x'), (1, 5, 'e') ON DUPLICATE KEY UPDATE note = 'v'",
        "INSERT INTO friends (a, b, note) VALUES (1, 1, 'x'), (1, 2, 'x') ON DUPLICATE KEY UPDATE note = note",
        "INSERT INTO friends (a, b, note) VALUES (1, 3, 'x') ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)",
        "INSERT INTO friends (a, b, note) VALUES (1, 4, 'd') ON DUPLICATE KEY UPDATE note = note",
        "INSERT INTO friends (a, b, note) VALUES (1, 6, 'f') ON DUPLICATE KEY UPDATE note = note",
    ];
    for (mut direct, mut through) in pairs {
        for c in [&mut direct, &mut through] {
            c.query_drop("DELETE FROM friends").unwrap();
        }
        for sql in sequence {
            let want = learned(&mut direct, sql);
            let got = learned(&mut through, sql);
            assert_eq!(got, want, "{sql}");
        }
        assert_eq!(rows(&mut through, "friends"), rows(&mut direct, "friends"));
    }
}
