//! SELECTs that reach several shards answer exactly as one MariaDB holding every row: the same
//! generated rows go into one MariaDB directly and, through idgate, into tables sharded over two
//! shards (mod) and three shards (hash, range); a few hundred generated queries (points,
//! ranges, ORDER BY on every column type with NULLs and ties, LIMIT/OFFSET, aggregates, GROUP BY,
//! HAVING, DISTINCT, AVG) must give the same rows and column metadata both ways; expressions
//! over aggregates the same rows. Shapes idgate cannot merge get ERROR 1235 and the session
//! goes on.

mod common;

use common::rng::Rng;

use common::answers::*;

use mysql::prelude::Queryable;

const TABLES: &str = "tables:
  m2:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  h3:
    sharding:
      columns: [id]
      algorithm: hash
      shards: [shard0, shard1, shard2]
  r3:
    sharding:
      columns: [id]
      algorithm: range
      bounds: [100, 220]
      shards: [shard0, shard1, shard2]
  m2c:
    unique: per_shard
    sharding:
      columns: [ref_id]
      algorithm: mod
      shards: [shard0, shard1]
  h3c:
    unique: per_shard
    sharding:
      columns: [ref_id]
      algorithm: hash
      shards: [shard0, shard1, shard2]
  gone:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

const CHILD_COLUMNS: &str = "(cid INT PRIMARY KEY, ref_id INT, amount DECIMAL(8,2))";

/// Rows of the child tables: several per parent row, some with no parent.
fn child_rows() -> String {
    let mut r = Rng(99);
    (1..=400)
        .map(|cid| {
            format!(
                "({cid}, {}, {}.{:02})",
                1 + r.below(330),
                r.below(20),
                r.below(100)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

const COLUMNS: &str = "(id INT PRIMARY KEY, i INT, b BIGINT, d DECIMAL(12,3), f DOUBLE, \
    v VARCHAR(20) COLLATE utf8mb4_general_ci, dt DATE, ts DATETIME, tm TIME, e ENUM('b','a'))";

const WORDS: &[&str] = &[
    "apple", "Apple", "APPLE ", "apple  ", "banana", "Banana ", "ch", "Ch ", "cherry", "", " x",
    "zeta", "Zeta", "ähre", "Ähre", "a\\tb",
];

fn rows(n: u64) -> Vec<String> {
    let mut r = Rng(7);
    let mut out = Vec::new();
    for id in 1..=n {
        let mut cols = vec![id.to_string()];
        let values = [
            format!("{}", r.below(11) as i64 - 5),
            format!("{}", (r.below(7) as i64 - 3) * 1_000_000_000_007),
            format!("{}.{:03}", r.below(100) as i64 - 50, r.below(8) * 125),
            format!("{}", (r.below(160) as f64 - 80.0) * 0.25),
            format!("'{}'", r.pick(WORDS)),
            format!("'2024-{:02}-{:02}'", 1 + r.below(3), 1 + r.below(4)),
            format!(
                "'2024-01-0{} {:02}:{:02}:00'",
                1 + r.below(3),
                r.below(24),
                15 * r.below(2)
            ),
            format!(
                "'{}{}:{:02}:00'",
                if r.chance(30) { "-" } else { "" },
                r.below(130),
                30 * r.below(2)
            ),
            format!("'{}'", r.pick(&["a", "b"])),
        ];
        for v in values {
            cols.push(if r.chance(12) { "NULL".to_string() } else { v });
        }
        out.push(format!("({})", cols.join(", ")));
    }
    out
}

const SORTABLE: &[&str] = &["i", "b", "d", "f", "v", "dt", "ts", "tm"];

fn where_clause(r: &mut Rng) -> String {
    match r.below(6) {
        0 => format!(
            " WHERE id BETWEEN {} AND {}",
            r.below(150),
            150 + r.below(150)
        ),
        1 => format!(" WHERE i > {}", r.below(6) as i64 - 3),
        2 => " WHERE v IS NOT NULL".to_string(),
        3 => format!(
            " WHERE id IN ({}, {}, {}, {})",
            1 + r.below(300),
            1 + r.below(300),
            1 + r.below(300),
            1 + r.below(300)
        ),
        _ => String::new(),
    }
}

fn limit_clause(r: &mut Rng) -> String {
    match r.below(5) {
        0 => format!(" LIMIT {}", r.below(20)),
        1 => format!(" LIMIT {}, {}", r.below(30), 1 + r.below(20)),
        2 => format!(" LIMIT {} OFFSET {}", 1 + r.below(20), r.below(300)),
        _ => String::new(),
    }
}

fn dir(r: &mut Rng) -> &'static str {
    ["", " ASC", " DESC"][r.below(3) as usize]
}

fn generate(n: usize) -> Vec<Case> {
    let mut r = Rng(42);
    let mut out = Vec::new();
    while out.len() < n {
        let w = where_clause(&mut r);
        let c = r.pick(SORTABLE);
        match r.below(14) {
            0 => out.push(case(format!("SELECT * FROM T WHERE id = {}", 1 + r.below(300)), false)),
            1 => out.push(case(format!("SELECT id, v, d FROM T{w}"), false)),
            2 | 3 => {
                let (sel, key) = match r.below(4) {
                    0 => ("*".to_string(), c.to_string()),
                    1 => (format!("id, {c} AS k"), "k".to_string()),
                    2 => (format!("{c}, id"), "1".to_string()),
                    _ => ("id, f".to_string(), c.to_string()),
                };
                let d1 = dir(&mut r);
                let d2 = dir(&mut r);
                let l = limit_clause(&mut r);
                out.push(case(
                    format!("SELECT {sel} FROM T{w} ORDER BY {key}{d1}, id{d2}{l}"),
                    true,
                ));
            }
            4 => {
                let l = limit_clause(&mut r);
                out.push(case(
                    format!("SELECT id, v FROM T{w} ORDER BY i + 1 DESC, {c}, id{l}"),
                    true,
                ));
            }
            5 => out.push(Case {
                sql: format!("SELECT id FROM T{w} LIMIT {}", r.below(40)),
                ordered: false,
                fold: false,
                count_only: true,
            }),
            // MIN/MAX of strings equal in the collation ('zeta', 'Zeta') may be either.
            6 => out.push(Case {
                fold: c == "v",
                ..case(
                    format!(
                        "SELECT COUNT(*), COUNT({c}), SUM(i), SUM(d), SUM(f), MIN({c}), MAX({c}), AVG(i), AVG(d), AVG(f), AVG(b) FROM T{w}"
                    ),
                    false,
                )
            }),
            7 | 8 => {
                let g = r.pick(&["i", "dt", "d", "tm", "i, dt", "b"]);
                let having = match r.below(6) {
                    0 => format!(" HAVING COUNT(*) > {}", r.below(10)),
                    1 => format!(" HAVING SUM(i) > {} AND n BETWEEN 2 AND 40", r.below(10) as i64 - 5),
                    2 => " HAVING AVG(d) IS NOT NULL OR MAX(f) < 0".to_string(),
                    3 => " HAVING MIN(i) IN (-5, 0, 3) OR NOT (SUM(d) / n >= 1.5)".to_string(),
                    _ => String::new(),
                };
                let (order, ordered) = match r.below(4) {
                    0 => (String::new(), true),
                    1 => (format!(" ORDER BY n DESC, {g}"), true),
                    // Ordered by the group keys alone: the shards stop at OFFSET + LIMIT groups.
                    2 => {
                        let keys: Vec<String> =
                            g.rsplit(", ").map(|k| format!("{k}{}", dir(&mut r))).collect();
                        (format!(" ORDER BY {}", keys.join(", ")), true)
                    }
                    _ => (" ORDER BY AVG(f) DESC, SUM(b)".to_string(), false),
                };
                let l = if ordered { limit_clause(&mut r) } else { String::new() };
                out.push(case(
                    format!(
                        "SELECT {g}, COUNT(*) AS n, SUM(d), AVG(d), AVG(i), MIN(ts), MAX(tm), SUM(f), AVG(f) FROM T{w} GROUP BY {g}{having}{order}{l}"
                    ),
                    ordered,
                ));
            }
            9 => out.push(Case {
                sql: format!(
                    "SELECT LOWER(RTRIM(v)), COUNT(*), AVG(i), MIN(v), MAX(v) FROM T{w} GROUP BY v{}",
                    ["", " ORDER BY v DESC", " ORDER BY COUNT(*), v"][r.below(3) as usize]
                ),
                ordered: true,
                fold: true,
                count_only: false,
            }),
            10 => out.push(case(format!("SELECT DISTINCT i FROM T{w}"), false)),
            11 => out.push(Case {
                sql: format!(
                    "SELECT DISTINCT {c}, i FROM T{w} ORDER BY {c}{}, i{}",
                    dir(&mut r),
                    limit_clause(&mut r)
                ),
                ordered: true,
                fold: c == "v",
                count_only: false,
            }),
            12 => out.push(Case {
                sql: format!("SELECT DISTINCT v FROM T{w}"),
                ordered: false,
                fold: true,
                count_only: false,
            }),
            _ => out.push(case(
                format!("SELECT i, COUNT(*) AS n FROM T{w} GROUP BY i ORDER BY n DESC, i LIMIT {}", 1 + r.below(5)),
                true,
            )),
        }
    }
    out
}

struct Setup {
    dbs: Vec<common::MariaDb>,
    g: common::Idgate,
}

/// Three MariaDB servers and idgate, loaded once for every test of this file.
fn setup() -> &'static Setup {
    static SETUP: std::sync::OnceLock<Setup> = std::sync::OnceLock::new();
    SETUP.get_or_init(load)
}

fn load() -> Setup {
    let (dbs, g) = common::three_shards(TABLES);
    let data = rows(300).join(", ");
    let mut reference = common::direct(&dbs[0]);
    reference
        .query_drop(format!("CREATE TABLE ref {COLUMNS}"))
        .unwrap();
    reference
        .query_drop(format!("INSERT INTO ref VALUES {data}"))
        .unwrap();
    reference
        .query_drop(format!("CREATE TABLE refc {CHILD_COLUMNS}"))
        .unwrap();
    let children = child_rows();
    reference
        .query_drop(format!("INSERT INTO refc VALUES {children}"))
        .unwrap();
    let mut c = g.conn();
    for t in ["m2", "h3", "r3"] {
        c.query_drop(format!("CREATE TABLE {t} {COLUMNS}")).unwrap();
        c.query_drop(format!("INSERT INTO {t} VALUES {data}"))
            .unwrap();
    }
    for t in ["m2c", "h3c"] {
        c.query_drop(format!("CREATE TABLE {t} {CHILD_COLUMNS}"))
            .unwrap();
        c.query_drop(format!("INSERT INTO {t} VALUES {children}"))
            .unwrap();
    }
    Setup { dbs, g }
}

#[test]
fn scattered_selects_answer_as_one_server() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let cases = generate(600);
    let mut failures = Vec::new();
    let mut compared = 0;
    for (n, case) in cases.iter().enumerate() {
        let want = run(&mut reference, &case.sql.replace(" T", " ref"));
        assert!(want.is_ok(), "the reference rejects {}: {want:?}", case.sql);
        // Each query against one of the sharded layouts, in turn.
        let table = ["m2", "h3", "r3"][n % 3];
        let sql = case.sql.replace(" T", &format!(" {table}"));
        let got = run(&mut c, &sql);
        compared += 1;
        if let Some(why) = differs(case, &want, &got) {
            failures.push(format!("{sql}\n{why}"));
        }
        // Every fourth query also as a prepared statement, rows in the binary protocol.
        if n % 4 == 0 {
            let want = run_prepared(
                &mut reference,
                &case.sql.replace(" T", " ref"),
                mysql::Params::Empty,
            );
            let got = run_prepared(&mut c, &sql, mysql::Params::Empty);
            compared += 1;
            if let Some(why) = differs(case, &want, &got) {
                failures.push(format!("prepared: {sql}\n{why}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} queries differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn shapes_idgate_cannot_merge_get_1235_and_the_session_goes_on() {
    let s = setup();
    let mut c = s.g.conn();
    for (sql, names) in [
        ("SELECT JSON_ARRAYAGG(i) FROM h3", "JSON_ARRAYAGG()"),
        (
            "SELECT i, STDDEV_POP(b) * 2 FROM m2 GROUP BY i",
            "STDDEV_POP()",
        ),
        (
            "SELECT i, RANK() OVER (ORDER BY i) FROM r3 GROUP BY i WITH ROLLUP",
            "ROLLUP",
        ),
        // An expression over an aggregate that also reads a column neither grouped nor
        // aggregated (MariaDB takes any row's): not lifted into a derived table.
        (
            "SELECT i, SUM(i) + f FROM m2 GROUP BY i",
            "expression over SUM()",
        ),
        ("SELECT DISTINCT i FROM m2 ORDER BY id", "DISTINCT"),
        (
            "SELECT i, JSON_OBJECTAGG(v, f) FROM h3 GROUP BY i",
            "JSON_OBJECTAGG()",
        ),
        ("SELECT id FROM m2 ORDER BY e, id", "ENUM"),
        (
            "SELECT v, COUNT(*) FROM h3 GROUP BY v HAVING v = 'apple'",
            "HAVING comparing strings",
        ),
        ("SELECT i FROM m2 GROUP BY i WITH ROLLUP", "ROLLUP"),
    ] {
        match c.query_drop(sql) {
            Err(mysql::Error::MySqlError(e)) => {
                assert_eq!((e.code, e.state.as_str()), (1235, "42000"), "{sql}: {e:?}");
                assert!(e.message.contains(names), "{sql}: {}", e.message);
            }
            other => panic!("{sql}: expected ERROR 1235, got {other:?}"),
        }
        let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM m2").unwrap();
        assert_eq!(n, Some(300), "after {sql}");
    }
    // Pinned to one shard, anything goes: the shard answers as it is.
    let one: Option<u64> = c
        .query_first("SELECT JSON_LENGTH(JSON_ARRAYAGG(id)) FROM h3 WHERE id = 5")
        .unwrap();
    assert_eq!(one, Some(1));
    // A merge inside a multi-statement query keeps the next result set.
    let mut r = c
        .query_iter("SELECT i, COUNT(*) FROM m2 GROUP BY i ORDER BY i LIMIT 2; SELECT 7")
        .unwrap();
    let first: Vec<mysql::Row> = r.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(first.len(), 2);
    let second: Vec<mysql::Row> = r.iter().unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(second.len(), 1);
}

/// Lifted statements whose columns idgate still types otherwise than one server (names and
/// values match): COUNT(*) read back from a literal table is an INT where it is small enough
/// (MariaDB types `CAST(16 AS SIGNED)` by its length), and GROUP_CONCAT's BLOB a VARCHAR. See
/// the book's differences page.
const NARROWER: &[&str] = &[
    "SELECT i, MAX(b) - MIN(b) AS span, COUNT(*) AS n FROM T WHERE id > 20 GROUP BY i \
     HAVING COUNT(*) > 1 ORDER BY span DESC, n, i LIMIT 5",
    "SELECT i, GROUP_CONCAT(v ORDER BY id) AS g FROM T GROUP BY i ORDER BY 2, 1",
    "SELECT i, COUNT(*) AS n, SUM(COUNT(*)) OVER () AS total, \
     ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, i) AS rn FROM T GROUP BY i ORDER BY i",
];

#[test]
fn expressions_over_aggregates_and_windows_answer_as_one_server() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    // Evaluated by MariaDB over a derived table of the merged aggregates (or of the rows a
    // window sees): the same names, types and values (the declared length, decimals and flags
    // of a literal table's columns may differ).
    let mut failures = Vec::new();
    let values = |r: Answer| {
        r.map(|(cols, rows)| {
            (
                cols.iter()
                    .map(|c| c.split(" dec=").next().unwrap_or("").to_string())
                    .collect::<Vec<_>>(),
                rows,
            )
        })
    };
    for table in ["m2", "h3", "r3"] {
        for sql in [
            "SELECT i, SUM(i) + 1 AS s1 FROM T GROUP BY i ORDER BY i",
            "SELECT COALESCE(AVG(d), 0) * 2 FROM T",
            "SELECT i, MAX(b) - MIN(b) AS span, COUNT(*) AS n FROM T WHERE id > 20 GROUP BY i \
             HAVING COUNT(*) > 1 ORDER BY span DESC, n, i LIMIT 5",
            "SELECT MOD(SUM(i), 7), LEAST(MAX(id), 100) FROM T WHERE i IS NOT NULL",
            "SELECT dt, COUNT(*) * 10 AS tens FROM T GROUP BY dt ORDER BY tens DESC, dt LIMIT 3",
            "SELECT i, GROUP_CONCAT(v ORDER BY id) AS g FROM T GROUP BY i ORDER BY 2, 1",
            "SELECT i, LENGTH(GROUP_CONCAT(v ORDER BY id)) AS n, BIT_OR(b) | 1 FROM T GROUP BY i ORDER BY i",
            // Over datetimes: a DATETIME stays a DATETIME, also when the aggregate is NULL.
            "SELECT i, MAX(ts) + INTERVAL 1 DAY AS m FROM T GROUP BY i ORDER BY i",
            "SELECT MAX(ts) + INTERVAL 1 DAY, MIN(dt) + INTERVAL 0 DAY, MAX(tm) + INTERVAL 0 SECOND \
             FROM T WHERE id > 1000",
            "SELECT COALESCE(MAX(ts), MIN(ts)) AS m, COUNT(*) + 1 FROM T WHERE id = 3",
            // Window functions over the groups (MariaDB runs them after grouping).
            "SELECT i, RANK() OVER (ORDER BY i DESC) AS r FROM T GROUP BY i ORDER BY i",
            "SELECT i, COUNT(*) AS n, SUM(COUNT(*)) OVER () AS total, \
             ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, i) AS rn FROM T GROUP BY i ORDER BY i",
            "SELECT dt, MAX(b) - MIN(b) AS span, AVG(SUM(d)) OVER (ORDER BY dt ROWS 1 PRECEDING) \
             AS moving FROM T WHERE dt IS NOT NULL GROUP BY dt ORDER BY dt LIMIT 8",
            // Window functions over the table's rows, evaluated by MariaDB.
            "SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM T WHERE id > 30 ORDER BY id LIMIT 20",
            "SELECT id, i, SUM(b) OVER (PARTITION BY i ORDER BY id) AS run FROM T WHERE i IS NOT NULL \
             ORDER BY id LIMIT 30",
        ] {
            let (mut want, mut got) = (
                values(run(&mut reference, &sql.replace(" T", " ref"))),
                values(run(&mut c, &sql.replace(" T", &format!(" {table}")))),
            );
            assert!(want.is_ok(), "the reference rejects {sql}: {want:?}");
            if NARROWER.contains(&sql) {
                // Known: names and values match, the type does not (see NARROWER).
                for (cols, _) in [&mut want, &mut got].into_iter().flatten() {
                    for col in cols.iter_mut() {
                        col.truncate(col.find(" MYSQL_TYPE_").unwrap_or(col.len()));
                    }
                }
            }
            if got != want {
                let cols = |a: &Answer| a.as_ref().map(|(c, _)| c.clone()).unwrap_or_default();
                failures.push(format!("{table}: {sql}\n want {:?}\n  got {:?}", cols(&want), cols(&got)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn prepared_merges_bind_their_parameters() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let sql = "SELECT i, COUNT(*) AS n, AVG(d), MIN(dt), MAX(tm) FROM T WHERE id > ? GROUP BY i \
               HAVING n > ? ORDER BY n DESC, i LIMIT ?, ?";
    let q = case(sql.to_string(), true);
    for (from, at_least, skip, take) in [(0, 1, 0, 5), (120, 3, 2, 4), (250, 0, 0, 100)] {
        let params = || {
            mysql::Params::Positional(vec![from.into(), at_least.into(), skip.into(), take.into()])
        };
        let want = run_prepared(&mut reference, &sql.replace(" T", " ref"), params());
        for t in ["m2", "h3", "r3"] {
            let got = run_prepared(&mut c, &sql.replace(" T", &format!(" {t}")), params());
            assert!(
                differs(&q, &want, &got).is_none(),
                "{t} {from}: {:?}",
                differs(&q, &want, &got)
            );
        }
    }
}

#[test]
fn tables_sharded_alike_join_on_their_sharding_columns_per_shard() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let cases = [
        case("SELECT t.id, t.v, c.amount FROM T t JOIN C c ON c.ref_id = t.id ORDER BY c.amount DESC, c.cid".into(), true),
        case("SELECT t.i, COUNT(*) AS n, SUM(c.amount), AVG(c.amount) FROM T t JOIN C c ON t.id = c.ref_id GROUP BY t.i".into(), true),
        case("SELECT t.id, c.cid FROM T t LEFT JOIN C c ON c.ref_id = t.id WHERE t.id < 60".into(), false),
        case("SELECT COUNT(*), MAX(c.amount) FROM T t, C c WHERE t.id = c.ref_id AND c.amount > 3".into(), false),
        case("SELECT c.ref_id, t.dt FROM C c JOIN T t ON t.id = c.ref_id ORDER BY c.ref_id, c.cid LIMIT 7, 20".into(), true),
    ];
    for q in &cases {
        let want = run(
            &mut reference,
            &q.sql.replace(" T ", " ref ").replace(" C ", " refc "),
        );
        assert!(want.is_ok(), "{}: {want:?}", q.sql);
        for (t, child) in [("m2", "m2c"), ("h3", "h3c")] {
            let sql = q
                .sql
                .replace(" T ", &format!(" {t} "))
                .replace(" C ", &format!(" {child} "));
            let got = run(&mut c, &sql);
            assert!(
                differs(q, &want, &got).is_none(),
                "{sql}\n{}",
                differs(q, &want, &got).unwrap_or_default()
            );
        }
    }
    // Joins off the sharding columns run in the gateway (tests/cross_shard_joins.rs), as text
    // queries and as prepared statements.
    for sql in [
        "SELECT COUNT(*) FROM m2 t JOIN m2c c ON c.cid = t.id",
        "SELECT COUNT(*) FROM m2 t JOIN h3c c ON c.ref_id = t.id",
        "SELECT COUNT(*) FROM m2 a JOIN m2 b ON a.i = b.i",
    ] {
        let reference_sql = sql
            .replace("m2c", "refc")
            .replace("h3c", "refc")
            .replace("m2 ", "ref ");
        let want = run(&mut reference, &reference_sql);
        let got = run(&mut c, sql);
        assert!(
            want.is_ok() && format!("{want:?}") == format!("{got:?}"),
            "{sql}: {want:?} {got:?}"
        );
        let want: Option<u64> = reference.exec_first(&reference_sql, ()).unwrap();
        let got = c.exec_first::<u64, _, _>(sql, ());
        assert!(
            matches!(&got, Ok(n) if *n == want && n.is_some()),
            "{sql}: {want:?} {got:?}"
        );
    }
    // ANY of a subquery over a sharded table runs it first (tests/subqueries.rs).
    let sql = "SELECT COUNT(*) FROM m2 WHERE id = ANY (SELECT ref_id FROM m2c)";
    let want = run(
        &mut reference,
        &sql.replace("m2c", "refc").replace("m2 ", "ref "),
    );
    assert!(want.is_ok() && want == run(&mut c, sql), "{sql}: {want:?}");
}

#[test]
fn merged_answers_are_byte_identical_in_both_protocols() {
    let s = setup();
    // Columns computed by expressions carry no table name, so MariaDB's own answer for `ref`
    // must match idgate's for the sharded tables byte for byte (classic EOF framing).
    // Also for a client that agreed on MariaDB's extended metadata and session tracking: its
    // column definitions carry one more field, which idgate reads past and keeps.
    let extended = idgate::exec::backend::LoginFlags {
        extended_metadata: true,
        session_track: true,
        found_rows: false,
    };
    for flags in [Default::default(), extended] {
        merged_answers_match(s, flags);
    }
}

fn merged_answers_match(s: &Setup, flags: idgate::exec::backend::LoginFlags) {
    let (mut reference, mut through) = common::raw::direct_and_through_with(&s.dbs[0], &s.g, flags);
    for sql in [
        "SELECT i + 0 AS k, COUNT(*), SUM(d), AVG(d), MIN(dt), MAX(ts), MIN(tm), SUM(f), AVG(b) \
         FROM T GROUP BY i ORDER BY k",
        "SELECT CONCAT(v, '') AS s, i * 1, dt + INTERVAL 0 DAY, tm + INTERVAL 0 SECOND FROM T \
         ORDER BY s DESC, id LIMIT 5, 40",
        "SELECT DISTINCT i * 2 FROM T ORDER BY 1 DESC",
        "SELECT COUNT(*), AVG(i), MAX(d) FROM T HAVING COUNT(*) > 5",
    ] {
        let want = reference.query(sql.replace(" T ", " ref ").as_bytes());
        let (id, _) = reference.prepare(sql.replace(" T ", " ref ").as_bytes());
        let want_bin = reference.execute(id, &[]);
        for t in ["m2", "h3", "r3"] {
            let q = sql.replace(" T ", &format!(" {t} "));
            let got = through.query(q.as_bytes());
            assert!(
                got == want,
                "{q}\nwant:\n{}\ngot:\n{}",
                common::raw::show(&want),
                common::raw::show(&got)
            );
            let (id, _) = through.prepare(q.as_bytes());
            let got_bin = through.execute(id, &[]);
            assert!(
                got_bin == want_bin,
                "prepared {q}\nwant:\n{}\ngot:\n{}",
                common::raw::show(&want_bin),
                common::raw::show(&got_bin)
            );
        }
    }
}

#[test]
fn a_shard_failing_mid_merge_gives_its_error_and_the_session_goes_on() {
    let s = setup();
    let mut c = s.g.conn();
    c.query_drop("CREATE TABLE gone (id INT PRIMARY KEY, k INT)")
        .unwrap();
    c.query_drop("INSERT INTO gone VALUES (1, 1), (2, 2), (3, 1), (4, 2)")
        .unwrap();
    common::direct(&s.dbs[1])
        .query_drop("DROP TABLE gone")
        .unwrap();
    for sql in [
        "SELECT id FROM gone ORDER BY k, id LIMIT 1, 2",
        "SELECT k, COUNT(*) FROM gone GROUP BY k",
        "SELECT DISTINCT k FROM gone",
    ] {
        match c.query_drop(sql) {
            Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1146, "{sql}: {e:?}"),
            other => panic!("{sql}: expected ERROR 1146, got {other:?}"),
        }
        let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM m2").unwrap();
        assert_eq!(n, Some(300), "after {sql}");
    }
}

/// A grouped merge reads its shards as their rows arrive: with `shard0`'s statement held behind
/// a table lock, `shard1` still sends all of its answer (more than the sockets between them
/// buffer) and is done, and the answer is right once `shard0` goes on. Read shard after shard,
/// `shard1` would wait on a full socket until `shard0` answered.
#[test]
fn a_grouped_merge_reads_each_shard_as_its_rows_arrive() {
    const DDL: &str = "CREATE TABLE fat (id INT PRIMARY KEY, k INT, pad VARCHAR(1000))";
    let s = common::two_shards(
        "merge_memory_limit: 1073741824\ntables:\n  fat:\n    sharding:\n      columns: [id]\n      algorithm: mod\n      shards: [shard0, shard1]\n",
        &[DDL],
    );
    // 40,000 groups of about 1 KB on shard1 (odd ids), a few on shard0 (even ids).
    let mut d1 = common::direct(&s.dbs[1]);
    d1.query_drop(
        "INSERT INTO fat SELECT 2 * seq + 1, seq, REPEAT(CHAR(97 + seq % 26), 1000) \
         FROM seq_0_to_39999",
    )
    .unwrap();
    let mut d0 = common::direct(&s.dbs[0]);
    d0.query_drop("INSERT INTO fat VALUES (2, 7, 'a'), (4, 7, 'b'), (6, 8, 'c')")
        .unwrap();
    d0.query_drop("LOCK TABLES fat WRITE").unwrap();

    let url = s.g.url(common::DATABASE);
    let client = std::thread::spawn(move || {
        let mut c = mysql::Conn::new(mysql::Opts::from_url(&url).unwrap()).unwrap();
        c.query::<(i64, i64, String), _>(
            "SELECT k, COUNT(*), MAX(pad) FROM fat GROUP BY k ORDER BY COUNT(*) DESC, k LIMIT 3",
        )
        .unwrap()
    });
    let mut watch = common::direct(&s.dbs[1]);
    let mut busy = || -> u64 {
        watch
            .query_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE INFO LIKE 'SELECT k, COUNT(*)%' AND ID <> CONNECTION_ID()",
            )
            .unwrap()
            .unwrap()
    };
    let mut started = false;
    let mut done = false;
    for _ in 0..600 {
        let n = busy();
        started |= n > 0;
        if started && n == 0 {
            done = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let waiting: u64 = d0
        .query_first(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE INFO LIKE 'SELECT k, COUNT(*)%'",
        )
        .unwrap()
        .unwrap();
    d0.query_drop("UNLOCK TABLES").unwrap();
    let rows = client.join().unwrap();
    assert_eq!(waiting, 1, "shard0's statement was not waiting on the lock");
    assert!(
        done,
        "shard1 never finished sending while shard0 was held (started: {started})"
    );
    assert_eq!(
        rows,
        vec![
            (7, 3, "h".repeat(1000)),
            (8, 2, "i".repeat(1000)),
            (0, 1, "a".repeat(1000)),
        ]
    );
}

/// Every statement idgate writes to the shards is valid under the session's sql_mode: with
/// ONLY_FULL_GROUP_BY (MySQL 8's default, common on MariaDB) the merges answer as one server
/// does, and a statement one server refuses with ERROR 1055 is refused so through idgate too.
#[test]
fn merges_answer_as_one_server_under_only_full_group_by() {
    let s = setup();
    let fold = |sql: &str, ordered: bool| Case {
        fold: true,
        ..case(sql.to_string(), ordered)
    };
    let mut cases = vec![
        case(
            "SELECT ASCII(v) AS a, COUNT(*) FROM T GROUP BY a".into(),
            true,
        ),
        case("SELECT GROUP_CONCAT(v ORDER BY id) FROM T".into(), true),
        case(
            "SELECT GROUP_CONCAT(DISTINCT i ORDER BY i DESC) FROM T".into(),
            true,
        ),
        case(
            "SELECT i, GROUP_CONCAT(v ORDER BY id) AS g FROM T GROUP BY i".into(),
            true,
        ),
        fold("SELECT LOWER(v) AS l, COUNT(*) FROM T GROUP BY l", true),
        case(
            "SELECT COUNT(*) FROM T GROUP BY LOWER(v) ORDER BY LOWER(v)".into(),
            true,
        ),
        case(
            "SELECT COUNT(DISTINCT LOWER(v)), COUNT(DISTINCT i) FROM T".into(),
            false,
        ),
        case(
            "SELECT i, COUNT(*) FROM T GROUP BY 1 ORDER BY 1 DESC".into(),
            true,
        ),
        case(
            "SELECT i + 1 AS k, SUM(d), MIN(v) FROM T GROUP BY k ORDER BY k".into(),
            true,
        ),
        fold(
            "SELECT COUNT(*), MAX(v) FROM T GROUP BY i, dt ORDER BY i, dt",
            true,
        ),
        case(
            "SELECT dt, MAX(ts) FROM T GROUP BY dt HAVING COUNT(*) > 1".into(),
            true,
        ),
        case("SELECT SUM(i) FROM T GROUP BY i HAVING i > 0".into(), true),
        case("SELECT COUNT(*) FROM T ORDER BY MAX(v)".into(), false),
        // Refused by one server under ONLY_FULL_GROUP_BY (ERROR 1055 / 1140); otherwise any
        // row's `v` is the group's.
        Case {
            count_only: true,
            ..case("SELECT v, i, COUNT(*) FROM T GROUP BY i".into(), false)
        },
        Case {
            count_only: true,
            ..case("SELECT v, COUNT(*) FROM T".into(), false)
        },
    ];
    cases.extend(generate(240));
    let mut failures = Vec::new();
    let mut refused = 0;
    for mode in [None, Some("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES")] {
        let mut c = s.g.conn();
        let mut reference = common::direct(&s.dbs[0]);
        if let Some(m) = mode {
            for conn in [&mut c, &mut reference] {
                conn.query_drop(format!("SET SESSION sql_mode = '{m}'"))
                    .unwrap();
            }
        }
        for (n, q) in cases.iter().enumerate() {
            let want = run(&mut reference, &q.sql.replace(" T", " ref"));
            if let Err((code, _)) = &want {
                assert!(
                    mode.is_some() && [1055, 1140].contains(code),
                    "the reference rejects {} in sql_mode {mode:?}: {want:?}",
                    q.sql
                );
                refused += 1;
            }
            let table = ["m2", "h3", "r3"][n % 3];
            let sql = q.sql.replace(" T", &format!(" {table}"));
            if let Some(why) = differs(q, &want, &run(&mut c, &sql)) {
                failures.push(format!("sql_mode {mode:?}: {sql}\n{why}"));
            }
        }
    }
    assert!(refused >= 2, "one server refused only {refused} statements");
    assert!(
        failures.is_empty(),
        "{} queries differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
