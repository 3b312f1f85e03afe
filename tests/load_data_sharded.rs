//! LOAD DATA LOCAL INFILE into a sharded table whose ids idgate generates: PyMySQL loads the same
//! files directly into an AUTO_INCREMENT table and through idgate, and must see the same counts,
//! warnings, LAST_INSERT_ID() behaviour and rows (ids aside); every row lands on the shard its
//! id picks; a load inside a transaction rolls back whole; forms idgate cannot carry are refused
//! before the file is asked for.

mod common;

use std::process::Command;
use std::time::Duration;

use common::clients::*;
use common::{direct, DATABASE};
use mysql::prelude::Queryable;

const TABLES: &str = "generators:
  ld_seq:
    kind: segment
    step: 1000
tables:
  ld_orders:
    generator: ld_seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  ld_tags:
    generator: ld_seq
    sharding:
      columns: [grp]
      algorithm: mod
      shards: [shard0, shard1]
";

/// Rows a LOAD leaves out as duplicates: the key holds on one shard, as the table is sharded by
/// its first column.
const TAGS_DDL: &str = "CREATE TABLE ld_tags (id BIGINT PRIMARY KEY AUTO_INCREMENT, grp INT, \
                        tag VARCHAR(20), UNIQUE KEY (grp, tag))";

/// The shards keep AUTO_INCREMENT on the id column, as a table adopted from one server does:
/// the files' 0 ids ask for an id there as they do on the direct table.
const SHARD_DDL: &str = "CREATE TABLE ld_orders (id BIGINT PRIMARY KEY AUTO_INCREMENT, batch INT, \
                         note VARCHAR(100), qty INT)";
const DIRECT_DDL: &str =
    "CREATE TABLE ld_orders (id BIGINT PRIMARY KEY AUTO_INCREMENT, batch INT, \
                          note VARCHAR(100), qty INT)";

#[test]
fn pymysql_loads_a_sharded_table_like_an_auto_increment_one() {
    let python = require_tool("python3", "python3");
    require_python_modules("pymysql", "pymysql");
    let reference = common::start_db();
    direct(&reference).query_drop(DIRECT_DDL).unwrap();
    direct(&reference).query_drop(TAGS_DDL).unwrap();
    let ts = common::two_shards(TABLES, &[SHARD_DDL, TAGS_DDL]);
    let t = differential(
        "load_data",
        "py_load_data",
        &reference,
        &ts.g,
        Duration::from_secs(300),
        |t| {
            let mut cmd = Command::new(&python);
            cmd.arg(source_dir().join("py_load_data.py"));
            client_args(&mut cmd, t);
            cmd
        },
    );
    for line in [
        "tsv: affected=3005 info='Records: 3005  Deleted: 0  Skipped: 0  Warnings: 3' warnings=3",
        "csv: affected=5 info='Records: 5  Deleted: 0  Skipped: 0  Warnings: 0' warnings=0",
        "csv: explicit row ('explicit', 4)",
        "txn: after rollback=(0, 0, 0)",
        "txn: after commit=(50, 50, 108079651525)",
        "tsv: rows=(3005, 3005, 6604649129956) lid_is_first=True",
        "csv: rows=(5, 5, 11122562908) lid_is_first=True",
        // The second file's first row is left out: the next one's id is LAST_INSERT_ID().
        "left out: LOAD DATA LOCAL INFILE 't2.tsv' INTO TAB: affected=2 insert id=0 \
         LAST_INSERT_ID()=2-c",
        "left out: LOAD DATA LOCAL INFILE 't3.tsv' IGNORE I: affected=0 insert id=0 \
         LAST_INSERT_ID()=2-c",
        "left out: INSERT IGNORE INTO ld_tags (grp, tag) SE: affected=2 insert id=2-e \
         LAST_INSERT_ID()=2-e",
        "left out: INSERT IGNORE INTO ld_tags (grp, tag) SE: affected=0 insert id=0 \
         LAST_INSERT_ID()=2-e",
        "total rows 3060",
        "done",
    ] {
        assert_has(&t, line);
    }
    // Every row is on the shard its id picks, and the rows are split between both.
    let mut total = 0;
    for (k, db) in ts.dbs.iter().enumerate() {
        let (n, misplaced): (u64, u64) = direct(db)
            .query_first(format!(
                "SELECT COUNT(*), COALESCE(SUM(id % 2 <> {k}), 0) FROM {DATABASE}.ld_orders"
            ))
            .unwrap()
            .unwrap();
        assert_eq!(misplaced, 0, "rows on shard{k} that belong elsewhere");
        assert!(n > 1000, "shard{k} got only {n} rows");
        total += n;
    }
    assert_eq!(total, 3060);
}

#[test]
fn forms_idgate_cannot_carry_are_refused_before_the_file_is_asked_for() {
    let ts = common::two_shards(TABLES, &[SHARD_DDL]);
    let mut c = ts.g.conn();
    for (sql, says) in [
        (
            "LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE ld_orders (batch, @n, qty) SET note = UPPER(@n)",
            "a SET clause",
        ),
        (
            "LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE ld_orders PARTITION (p0)",
            "PARTITION",
        ),
    ] {
        match c.query_drop(sql).unwrap_err() {
            mysql::Error::MySqlError(e) => {
                assert_eq!(e.code, 1235, "{e:?}");
                assert!(e.message.contains(says), "{e:?}");
            }
            other => panic!("expected ERROR 1235, got {other}"),
        }
        assert_eq!(c.query_first::<i32, _>("SELECT 7").unwrap(), Some(7));
    }
    // LOAD DATA without LOCAL reads a file on the default backend's host: still refused.
    match c
        .query_drop("LOAD DATA INFILE '/tmp/rows.tsv' INTO TABLE ld_orders")
        .unwrap_err()
    {
        mysql::Error::MySqlError(e) => assert_eq!(e.code, 1235, "{e:?}"),
        other => panic!("expected ERROR 1235, got {other}"),
    }
    for db in &ts.dbs {
        let n: u64 = direct(db)
            .query_first("SELECT COUNT(*) FROM ld_orders")
            .unwrap()
            .unwrap();
        assert_eq!(n, 0);
    }
}
