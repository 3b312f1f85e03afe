//! `LAST_INSERT_ID()` after every order of INSERTs: single- and multi-row, on one shard or
//! several, into tables of different generators (segment ids sharded by id, biased ids sharded by
//! slot, snowflake ids on the default backend), text and prepared, with other statements between.
//! After each INSERT that generated ids, `SELECT LAST_INSERT_ID()` must answer the OK packet's
//! insert id (its first id, as AUTO_INCREMENT does) and that id must be the INSERT's first row;
//! statements that generate nothing leave it alone. The same sequences run against one MariaDB
//! with AUTO_INCREMENT tables must show the same relations (checked the same way).

mod common;

use mysql::prelude::Queryable;
use mysql::Conn;

const TABLES: &str = "generators:
  seq:
    kind: segment
    step: 1000
  bias:
    kind: biased
    worker_id: 5
    slot_bits: 4
    bias_column: user_id
  snow:
    kind: snowflake
    worker_id: 6
tables:
  kit_orders:
    generator: seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  bias_orders:
    unique: per_shard
    generator: bias
    sharding:
      columns: [id, user_id]
      algorithm: slot
      shards: [shard0, shard1]
  snow_log:
    generator: snow
";

const DDL: &[&str] = &[
    "CREATE TABLE kit_orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id BIGINT, note VARCHAR(40))",
    "CREATE TABLE bias_orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id BIGINT, note VARCHAR(40))",
    "CREATE TABLE snow_log (id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id BIGINT, note VARCHAR(40))",
];

/// One statement of a sequence: its table, the notes of its rows (the first row's note is the
/// one `LAST_INSERT_ID()` must lead to) and whether it runs as a prepared statement.
struct Insert {
    table: &'static str,
    rows: &'static [(u64, &'static str)],
    prepared: bool,
}

/// The shapes every order is drawn from. bias user 1 lands on shard1, user 2 on shard0; kit ids
/// are consecutive, so two rows always reach both shards.
const SHAPES: &[Insert] = &[
    Insert {
        table: "bias_orders",
        rows: &[(1, "b1")],
        prepared: false,
    },
    Insert {
        table: "bias_orders",
        rows: &[(2, "b2"), (1, "b3")],
        prepared: false,
    },
    Insert {
        table: "kit_orders",
        rows: &[(5, "k1"), (6, "k2")],
        prepared: false,
    },
    Insert {
        table: "kit_orders",
        rows: &[(7, "k3")],
        prepared: false,
    },
    Insert {
        table: "snow_log",
        rows: &[(8, "s1"), (9, "s2")],
        prepared: false,
    },
    Insert {
        table: "kit_orders",
        rows: &[(5, "k4"), (6, "k5"), (7, "k6")],
        prepared: true,
    },
    Insert {
        table: "bias_orders",
        rows: &[(1, "b4")],
        prepared: true,
    },
];

/// Statements between INSERTs that must not move LAST_INSERT_ID().
const BETWEEN: &[&str] = &[
    "SELECT COUNT(*) FROM kit_orders",
    "SELECT note FROM bias_orders WHERE user_id = 1 LIMIT 1",
    "UPDATE kit_orders SET note = note WHERE id = 1",
    "INSERT IGNORE INTO kit_orders (id, user_id, note) VALUES (99999999, 1, 'explicit')",
];

fn run_insert(c: &mut Conn, ins: &Insert, tag: usize) -> u64 {
    let note = |n: &str| format!("{n}-{tag}");
    if ins.prepared {
        let placeholders = vec!["(?, ?)"; ins.rows.len()].join(", ");
        let sql = format!(
            "INSERT INTO {} (user_id, note) VALUES {placeholders}",
            ins.table
        );
        let params: Vec<mysql::Value> = ins
            .rows
            .iter()
            .flat_map(|(u, n)| [mysql::Value::from(*u), mysql::Value::from(note(n))])
            .collect();
        c.exec_drop(sql, params).unwrap();
    } else {
        let values: Vec<String> = ins
            .rows
            .iter()
            .map(|(u, n)| format!("({u}, '{}')", note(n)))
            .collect();
        c.query_drop(format!(
            "INSERT INTO {} (user_id, note) VALUES {}",
            ins.table,
            values.join(", ")
        ))
        .unwrap();
    }
    c.last_insert_id()
}

fn last_insert_id(c: &mut Conn) -> u64 {
    c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap()
}

/// Runs every ordered triple of shapes on `c`, with a neutral statement after each; returns the
/// number of checks made. Panics with the sequence on the first mismatch.
fn check_all_orders(c: &mut Conn, who: &str) -> usize {
    let mut checks = 0;
    let mut tag = 0;
    for a in 0..SHAPES.len() {
        for b in 0..SHAPES.len() {
            for d in 0..SHAPES.len() {
                let seq = [a, b, d];
                let mut expected: Option<(u64, String, &str)> = None;
                for (step, &i) in seq.iter().enumerate() {
                    tag += 1;
                    let ins = &SHAPES[i];
                    let id = run_insert(c, ins, tag);
                    assert!(id > 0, "{who} {seq:?}: no insert id");
                    expected = Some((id, format!("{}-{tag}", ins.rows[0].1), ins.table));
                    // A neutral statement after every other INSERT.
                    let neutral = match tag % 2 {
                        0 => BETWEEN[(tag / 2 + step) % BETWEEN.len()],
                        _ => "",
                    };
                    if !neutral.is_empty() {
                        c.query_drop(neutral).unwrap();
                    }
                    // Asking LAST_INSERT_ID() carries a pending value to the default backend;
                    // ask only at the end of the sequence so INSERTs follow each other directly.
                    if step < seq.len() - 1 {
                        continue;
                    }
                    let (id, note, table) = expected.as_ref().unwrap();
                    let lid = last_insert_id(c);
                    assert_eq!(
                        lid, *id,
                        "{who}: order {seq:?} (step {step}, after `{neutral}`): LAST_INSERT_ID() \
                         is not the last INSERT's first id"
                    );
                    let got: Option<String> = c
                        .query_first(format!("SELECT note FROM {table} WHERE id = {lid}"))
                        .unwrap();
                    assert_eq!(
                        got.as_deref(),
                        Some(note.as_str()),
                        "{who}: order {seq:?}: LAST_INSERT_ID() leads to the wrong row"
                    );
                    checks += 1;
                }
                assert!(expected.is_some());
            }
        }
    }
    checks
}

#[test]
fn last_insert_id_follows_the_last_insert_in_every_order() {
    let s = common::two_shards(TABLES, DDL);
    // The same sequences against one MariaDB with AUTO_INCREMENT: the relations hold there.
    let direct_db = common::start_db();
    let mut direct = common::direct(&direct_db);
    for sql in DDL {
        direct.query_drop(*sql).unwrap();
    }
    let direct_checks = check_all_orders(&mut direct, "MariaDB");
    let mut through = s.g.conn();
    let checks = check_all_orders(&mut through, "idgate");
    assert_eq!(checks, direct_checks);
    assert_eq!(checks, SHAPES.len().pow(3));
    // The multi-shard INSERTs did reach both shards.
    for db in &s.dbs {
        let n: u64 = common::direct(db)
            .query_first("SELECT COUNT(*) FROM kit_orders")
            .unwrap()
            .unwrap();
        assert!(n > 0);
    }
}

/// The sequence from the report: a biased row on the second shard, then a two-row INSERT whose
/// first row lands on the default shard.
#[test]
fn multi_shard_insert_after_an_insert_elsewhere() {
    let s = common::two_shards(TABLES, DDL);
    let mut c = s.g.conn();
    // Segment ids count up from 1; a single-row INSERT every other round shifts the two-row
    // INSERT's first id between the shards, so both cases run.
    for round in 0..4 {
        c.query_drop("INSERT INTO bias_orders (user_id, note) VALUES (1, 'a')")
            .unwrap();
        let bias_id = c.last_insert_id();
        c.query_drop("INSERT INTO kit_orders (user_id, note) VALUES (5, 'x'), (6, 'y')")
            .unwrap();
        let first = c.last_insert_id();
        assert_ne!(first, bias_id);
        assert_eq!(
            last_insert_id(&mut c),
            first,
            "round {round}: first id {first} on shard{}",
            first % 2
        );
        if round % 2 == 0 {
            c.query_drop("INSERT INTO kit_orders (user_id, note) VALUES (7, 'z')")
                .unwrap();
        }
    }
}
