//! COUNT/SUM/AVG(DISTINCT …), GROUP_CONCAT, STD/VARIANCE and BIT_AND/OR/XOR over several shards
//! answer as one MariaDB holding every row: the same generated rows (NULLs, ties, mixed-case and
//! long strings) go into one MariaDB directly and, through idgate, into tables sharded over two
//! shards (mod) and three (hash); generated queries of every shape (with and without GROUP BY,
//! HAVING, ORDER BY, LIMIT; ORM spellings) must give the same rows and column metadata, in the
//! text protocol and as prepared statements.

mod common;

use common::rng::Rng;

use mysql::prelude::Queryable;
use mysql::Value;

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
";

const COLUMNS: &str = "(id INT PRIMARY KEY, g INT, i INT, b BIGINT, u BIGINT UNSIGNED, \
    d DECIMAL(10,3), f DOUBLE, v VARCHAR(60) COLLATE utf8mb4_general_ci, w VARBINARY(20))";

/// Mixed case, trailing spaces, non-ASCII and one long value (no commas: a GROUP_CONCAT
/// without ORDER BY is compared piece by piece).
const WORDS: &[&str] = &[
    "apple",
    "Apple",
    "APPLE ",
    "banana",
    "Banana",
    "cherry",
    "",
    "zeta",
    "ähre",
    "Ähre",
    "a long value that goes on and on and on to fifty-some chars",
];

fn rows(n: u64) -> Vec<String> {
    let mut r = Rng(11);
    (1..=n)
        .map(|id| {
            let vals = [
                format!("{}", r.below(6)),
                format!("{}", r.below(13) as i64 - 6),
                format!("{}", (r.below(9) as i64 - 4) * 1_000_000_007),
                format!("{}", r.below(1 << 20) * 4096),
                format!("{}.{:03}", r.below(60) as i64 - 30, r.below(8) * 125),
                format!("{}", (r.below(80) as f64 - 40.0) * 0.37),
                format!("'{}'", r.pick(WORDS)),
                format!("'{}'", r.pick(&["x", "X", "y", "yy"])),
            ]
            .map(|v| if r.below(100) < 12 { "NULL".into() } else { v });
            format!("({id}, {})", vals.join(", "))
        })
        .collect()
}

/// A query over table `T` and how its answers compare.
#[derive(Default)]
struct Case {
    sql: String,
    /// The ORDER BY fixes the order of every row.
    ordered: bool,
    /// Columns of STD/VARIANCE: equal within floating-point error (MariaDB adds row by row,
    /// idgate combines the shards' partial variances; the last bits may differ).
    approx: Vec<usize>,
    /// GROUP_CONCAT columns without ORDER BY: MariaDB's piece order is the scan order, so the
    /// pieces compare as a multiset.
    pieces: Vec<usize>,
    /// MAX of a _ci string and GROUP_CONCAT ordered by one: with ties ('apple', 'Apple') the
    /// values (pieces split at '|') compare as the collation sees them, in order.
    folded: Vec<usize>,
}

fn case(sql: String, ordered: bool) -> Case {
    Case {
        sql,
        ordered,
        ..Case::default()
    }
}

fn where_clause(r: &mut Rng) -> String {
    match r.below(5) {
        0 => format!(
            " WHERE id BETWEEN {} AND {}",
            r.below(100),
            100 + r.below(150)
        ),
        1 => format!(" WHERE i > {}", r.below(8) as i64 - 3),
        2 => " WHERE id > 1000".to_string(),
        _ => String::new(),
    }
}

fn generate(n: usize) -> Vec<Case> {
    let mut r = Rng(5);
    let mut out = Vec::new();
    while out.len() < n {
        let w = where_clause(&mut r);
        let c = r.pick(&["i", "b", "d", "f", "v", "u", "w"]);
        match r.below(9) {
            0 => out.push(Case {
                sql: format!(
                    "SELECT COUNT(DISTINCT {c}), SUM(DISTINCT i), AVG(DISTINCT d), SUM(DISTINCT f), \
                     AVG(DISTINCT b), COUNT(*), SUM(d), MIN(v), MAX(i), AVG(i) FROM T{w}"
                ),
                approx: vec![3],
                ..Case::default()
            }),
            1 | 2 => {
                let having = match r.below(4) {
                    0 => format!(" HAVING COUNT(DISTINCT v) > {}", r.below(5)),
                    1 => " HAVING SUM(DISTINCT i) BETWEEN -3 AND 10 OR n > 40".to_string(),
                    _ => String::new(),
                };
                let (order, ordered) = match r.below(3) {
                    0 => (" ORDER BY COUNT(DISTINCT v, i) DESC, g".to_string(), true),
                    1 => (" ORDER BY 2, g DESC".to_string(), true),
                    _ => (String::new(), true),
                };
                let l = if r.below(2) == 0 {
                    format!(" LIMIT {}", 1 + r.below(4))
                } else {
                    String::new()
                };
                out.push(Case {
                    sql: format!(
                        "SELECT g, COUNT(DISTINCT {c}) AS dc, COUNT(DISTINCT v, i), SUM(DISTINCT d), \
                         AVG(DISTINCT i), AVG(f), COUNT(*) AS n, MAX(v) FROM T{w} GROUP BY g{having}{order}{l}"
                    ),
                    ordered,
                    approx: vec![5],
                    folded: vec![7],
                    ..Case::default()
                })
            }
            3 => out.push(Case {
                sql: format!(
                    "SELECT g, STD(i), STDDEV_SAMP(d), VAR_POP(f), VAR_SAMP(i), VARIANCE(d), \
                     STDDEV_POP(f), STDDEV(b), COUNT(i) FROM T{w} GROUP BY g{}",
                    ["", " HAVING STD(i) > 3", " ORDER BY VAR_SAMP(i) DESC, g"][r.below(3) as usize]
                ),
                ordered: true,
                approx: vec![1, 2, 3, 4, 5, 6, 7],
                ..Case::default()
            }),
            4 => out.push(Case {
                sql: format!("SELECT VAR_SAMP(i), STD(f), STDDEV_SAMP(u), COUNT(*) FROM T{w}"),
                approx: vec![0, 1, 2],
                ..Case::default()
            }),
            5 => out.push(case(
                format!(
                    "SELECT g, BIT_AND(i), BIT_OR(i), BIT_XOR(b), BIT_AND(u), BIT_OR(u), BIT_XOR(i) \
                     FROM T{w} GROUP BY g{}",
                    ["", " HAVING BIT_OR(i) > 7", " ORDER BY BIT_XOR(i), g"][r.below(3) as usize]
                ),
                true,
            )),
            6 => out.push(case(
                format!("SELECT BIT_AND(i), BIT_OR(u), BIT_XOR(b), BIT_AND(g) FROM T{w}"),
                false,
            )),
            7 => {
                let (gc, pieces) = match r.below(6) {
                    0 => ("GROUP_CONCAT(v ORDER BY v DESC, id SEPARATOR '|')", vec![]),
                    1 => ("GROUP_CONCAT(id ORDER BY id)", vec![]),
                    2 => ("GROUP_CONCAT(i, v ORDER BY id DESC SEPARATOR '; ')", vec![]),
                    3 => ("GROUP_CONCAT(DISTINCT i ORDER BY i DESC)", vec![]),
                    4 => ("GROUP_CONCAT(DISTINCT b)", vec![]),
                    _ => ("GROUP_CONCAT(w)", vec![1]),
                };
                let order = [
                    "",
                    " ORDER BY g DESC",
                    " HAVING COUNT(DISTINCT w) > 1 ORDER BY COUNT(*), g",
                ][r.below(3) as usize];
                out.push(Case {
                    sql: format!("SELECT g, {gc}, COUNT(*) FROM T{w} GROUP BY g{order}"),
                    ordered: true,
                    pieces,
                    ..Case::default()
                });
            }
            _ => out.push(case(
                format!(
                    "SELECT GROUP_CONCAT(v ORDER BY id SEPARATOR ''), GROUP_CONCAT(DISTINCT w ORDER BY w), \
                     COUNT(DISTINCT w) FROM T{w}"
                ),
                false,
            )),
        }
    }
    // As ORMs spell them.
    for sql in [
        "select count(distinct t0_.v) as col_0_0_ from T t0_",
        "SELECT COUNT(DISTINCT `x`.`v`) AS `__count` FROM T `x`",
        "SELECT `x`.`g`, COUNT(DISTINCT `x`.`i`) AS `n` FROM T `x` GROUP BY `x`.`g` ORDER BY `x`.`g` ASC",
        "SELECT g, GROUP_CONCAT(v ORDER BY v DESC, id SEPARATOR '|') FROM T GROUP BY g",
        "SELECT COUNT(DISTINCT i), COUNT(DISTINCT v) FROM T WHERE id < 0",
    ] {
        out.push(case(sql.to_string(), true));
    }
    out.push(Case {
        sql: "SELECT g, GROUP_CONCAT(v ORDER BY v DESC SEPARATOR '|') FROM T GROUP BY g".into(),
        ordered: true,
        folded: vec![1],
        ..Case::default()
    });
    out
}

type Answer = Result<(Vec<String>, Vec<Vec<Option<Vec<u8>>>>), (u16, String)>;

fn run(c: &mut mysql::Conn, sql: &str, prepared: bool) -> Answer {
    let r = if prepared {
        c.exec_iter(sql, ()).map(|r| collect(r, sql))
    } else {
        c.query_iter(sql).map(|r| collect(r, sql))
    };
    match r {
        Ok(a) => a,
        Err(mysql::Error::MySqlError(e)) => Err((e.code, e.message)),
        Err(e) => panic!("{sql}: {e}"),
    }
}

fn collect<P: mysql::prelude::Protocol>(
    mut res: mysql::QueryResult<'_, '_, '_, P>,
    sql: &str,
) -> Answer {
    let meta = res
        .columns()
        .as_ref()
        .iter()
        .map(|col| {
            format!(
                "{} {:?} dec={} len={} cs={} flags={:?}",
                col.name_str(),
                col.column_type(),
                col.decimals(),
                col.column_length(),
                col.character_set(),
                col.flags()
            )
        })
        .collect();
    let mut rows = Vec::new();
    for row in res.by_ref() {
        let row = match row {
            Ok(r) => r,
            Err(mysql::Error::MySqlError(e)) => return Err((e.code, e.message)),
            Err(e) => panic!("{sql}: {e}"),
        };
        rows.push(
            row.unwrap()
                .into_iter()
                .map(|v| match v {
                    Value::NULL => None,
                    Value::Bytes(b) => Some(b),
                    Value::Int(i) => Some(i.to_string().into_bytes()),
                    Value::UInt(u) => Some(u.to_string().into_bytes()),
                    Value::Double(f) => Some(f.to_string().into_bytes()),
                    Value::Float(f) => Some(f.to_string().into_bytes()),
                    other => Some(format!("{other:?}").into_bytes()),
                })
                .collect(),
        );
    }
    Ok((meta, rows))
}

/// Two doubles printed by MariaDB and idgate agree up to floating-point error (or, printed
/// at fixed decimals, up to one unit of the last one).
fn close(a: &[u8], b: &[u8]) -> bool {
    let (Ok(x), Ok(y)) = (
        String::from_utf8_lossy(a).parse::<f64>(),
        String::from_utf8_lossy(b).parse::<f64>(),
    ) else {
        return a == b;
    };
    let unit = match String::from_utf8_lossy(a).split_once('.') {
        Some((_, frac)) if frac.len() < 15 => 10f64.powi(-(frac.len() as i32)) * 1.000001,
        _ => 0.0,
    };
    (x - y).abs() <= (1e-9 * x.abs().max(1.0)).max(unit)
}

fn same_value(c: &Case, col: usize, a: &Option<Vec<u8>>, b: &Option<Vec<u8>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if c.approx.contains(&col) => close(a, b),
        (Some(a), Some(b)) if c.folded.contains(&col) => {
            let fold = |v: &[u8]| {
                String::from_utf8_lossy(v)
                    .split('|')
                    .map(|p| p.to_lowercase().trim_end().to_string())
                    .collect::<Vec<_>>()
            };
            fold(a) == fold(b)
        }
        (Some(a), Some(b)) if c.pieces.contains(&col) => {
            let split = |v: &[u8]| {
                let mut p: Vec<Vec<u8>> = v.split(|x| *x == b',').map(<[u8]>::to_vec).collect();
                p.sort();
                p
            };
            split(a) == split(b)
        }
        _ => a == b,
    }
}

fn differs(c: &Case, want: &Answer, got: &Answer) -> Option<String> {
    let (want, got) = match (want, got) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return Some(format!("want {want:?}\n got {got:?}")),
    };
    if want.0 != got.0 {
        return Some(format!("columns: want {:?}\n got {:?}", want.0, got.0));
    }
    let sorted = |rows: &Vec<Vec<Option<Vec<u8>>>>| {
        let mut rows = rows.clone();
        if !c.ordered {
            rows.sort();
        }
        rows
    };
    let (w, g) = (sorted(&want.1), sorted(&got.1));
    let same = w.len() == g.len()
        && w.iter().zip(&g).all(|(a, b)| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .enumerate()
                    .all(|(i, (x, y))| same_value(c, i, x, y))
        });
    if same {
        return None;
    }
    let show = |rows: &[Vec<Option<Vec<u8>>>]| {
        rows.iter()
            .take(10)
            .map(|r| {
                r.iter()
                    .map(|v| {
                        v.as_ref()
                            .map(|b| String::from_utf8_lossy(b).into_owned())
                            .unwrap_or("NULL".into())
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect::<Vec<_>>()
            .join("\n  ")
    };
    Some(format!(
        "{} rows, want {}\nwant:\n  {}\ngot:\n  {}",
        g.len(),
        w.len(),
        show(&w),
        show(&g)
    ))
}

struct Setup {
    dbs: Vec<common::MariaDb>,
    g: common::Idgate,
}

fn setup() -> &'static Setup {
    static SETUP: std::sync::OnceLock<Setup> = std::sync::OnceLock::new();
    SETUP.get_or_init(|| {
        let (dbs, g) = common::three_shards(TABLES);
        let data = rows(240).join(", ");
        let mut reference = common::direct(&dbs[0]);
        reference
            .query_drop(format!("CREATE TABLE ref {COLUMNS}"))
            .unwrap();
        reference
            .query_drop(format!("INSERT INTO ref VALUES {data}"))
            .unwrap();
        let mut c = g.conn();
        for t in ["m2", "h3"] {
            c.query_drop(format!("CREATE TABLE {t} {COLUMNS}")).unwrap();
            c.query_drop(format!("INSERT INTO {t} VALUES {data}"))
                .unwrap();
        }
        Setup { dbs, g }
    })
}

#[test]
fn distinct_aggregates_group_concat_variances_and_bits_answer_as_one_server() {
    let s = setup();
    let mut c = s.g.conn();
    let mut reference = common::direct(&s.dbs[0]);
    let cases = generate(160);
    let mut failures = Vec::new();
    let mut compared = 0;
    for (n, case) in cases.iter().enumerate() {
        for prepared in [false, true] {
            let want = run(&mut reference, &case.sql.replace(" T", " ref"), prepared);
            assert!(want.is_ok(), "the reference rejects {}: {want:?}", case.sql);
            let table = ["m2", "h3"][(n + usize::from(prepared)) % 2];
            let sql = case.sql.replace(" T", &format!(" {table}"));
            let got = run(&mut c, &sql, prepared);
            compared += 1;
            if let Some(why) = differs(case, &want, &got) {
                let how = if prepared { "prepared" } else { "text" };
                failures.push(format!("{how}: {sql}\n{why}"));
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

/// GROUP_CONCAT past the session's group_concat_max_len: the same cut values, the same column
/// type (VARCHAR below 512 characters, else TEXT) and the same warning count in the EOF, byte
/// for byte. (The warnings' text lives on the shards; SHOW WARNINGS goes to one of them.)
#[test]
fn group_concat_is_cut_at_the_sessions_max_len_with_its_warning_count() {
    let s = setup();
    let (mut reference, mut through) = common::raw::direct_and_through(&s.dbs[0], &s.g);
    for len in [20, 7, 2000] {
        let set = format!("SET SESSION group_concat_max_len = {len}");
        reference.query(set.as_bytes());
        through.query(set.as_bytes());
        for sql in [
            "SELECT g + 0 AS k, GROUP_CONCAT(v ORDER BY v, id) FROM T GROUP BY k ORDER BY k",
            "SELECT g * 1 AS k, GROUP_CONCAT(DISTINCT i ORDER BY i SEPARATOR '--') AS c, \
             GROUP_CONCAT(id ORDER BY id DESC) FROM T GROUP BY k",
            "SELECT GROUP_CONCAT(v ORDER BY id SEPARATOR '') FROM T WHERE v LIKE 'ä%'",
        ] {
            let want = reference.query(sql.replace(" T ", " ref ").as_bytes());
            let (id, _) = reference.prepare(sql.replace(" T ", " ref ").as_bytes());
            let want_bin = reference.execute(id, &[]);
            for t in ["m2", "h3"] {
                let q = sql.replace(" T ", &format!(" {t} "));
                let got = through.query(q.as_bytes());
                assert!(
                    got == want,
                    "{len}: {q}\nwant:\n{}\ngot:\n{}",
                    common::raw::show(&want),
                    common::raw::show(&got)
                );
                let (id, _) = through.prepare(q.as_bytes());
                let got_bin = through.execute(id, &[]);
                assert!(
                    got_bin == want_bin,
                    "{len}: prepared {q}\nwant:\n{}\ngot:\n{}",
                    common::raw::show(&want_bin),
                    common::raw::show(&got_bin)
                );
            }
        }
    }
}

/// The distinct values idgate holds count against merge_memory_limit: past it, ERROR 1037 and
/// the session goes on.
#[test]
fn count_distinct_past_merge_memory_limit_fails_clearly_and_the_session_goes_on() {
    let s = setup();
    let g = common::Idgate::start_with(|port| {
        common::idgate_proc::config_for(
            port,
            &[
                ("shard0", &s.dbs[0]),
                ("shard1", &s.dbs[1]),
                ("shard2", &s.dbs[2]),
            ],
            &format!("merge_memory_limit: 16384\n{TABLES}"),
        )
    });
    let mut c = g.conn();
    // One group, 240 distinct ids: only the distinct set outgrows 16 KiB.
    match c.query_drop("SELECT COUNT(DISTINCT id) FROM m2") {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!((e.code, e.state.as_str()), (1037, "HY001"), "{e:?}");
            assert!(
                e.message.contains("merge_memory_limit (16384 bytes)"),
                "{}",
                e.message
            );
        }
        other => panic!("expected ERROR 1037, got {other:?}"),
    }
    let n: Option<u64> = c.query_first("SELECT COUNT(DISTINCT g) FROM h3").unwrap();
    assert_eq!(n, Some(6));
    let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM m2").unwrap();
    assert_eq!(n, Some(240));
}
