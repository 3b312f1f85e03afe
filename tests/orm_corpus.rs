//! The statements ORMs print (Django, SQLAlchemy, Hibernate; `tests/corpus/orm_queries.txt`) over
//! a sharded schema answer exactly as one MariaDB holding every row: columns and rows, in the
//! text protocol with literals and as prepared statements with the same values as parameters.
//! Shapes the corpus marks as refused must get ERROR 1235 and leave the session usable, so the
//! marks stay honest as idgate learns new shapes.

mod common;

use common::rng::Rng;

use common::answers::*;
use mysql::prelude::Queryable;
use mysql::Value;

const TABLES: &str = "tables:
  app_author:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  app_book:
    unique: per_shard
    sharding:
      columns: [author_id]
      algorithm: mod
      shards: [shard0, shard1]
  app_review:
    sharding:
      columns: [id]
      algorithm: hash
      shards: [shard0, shard1, shard2]
  app_genre:
    broadcast: true
";

const DDL: &[&str] = &[
    "CREATE TABLE app_author (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, \
     email VARCHAR(100), age INT, rating DECIMAL(3,1), joined DATETIME NOT NULL, \
     active TINYINT(1) NOT NULL)",
    "CREATE TABLE app_book (id BIGINT PRIMARY KEY, author_id BIGINT NOT NULL, \
     title VARCHAR(200) NOT NULL, genre VARCHAR(20), price DECIMAL(8,2), pages INT, \
     published DATE, KEY (author_id))",
    "CREATE TABLE app_review (id BIGINT PRIMARY KEY, book_id BIGINT NOT NULL, stars INT NOT NULL, \
     body TEXT)",
    "CREATE TABLE app_genre (code VARCHAR(20) PRIMARY KEY, label VARCHAR(40) NOT NULL)",
    "CREATE TABLE app_setting (name VARCHAR(40) PRIMARY KEY, value VARCHAR(100))",
];

const FIRST: &[&str] = &[
    "Ann", "ann", "Bo", "Chen", "Dana", "Émile", "Zoë", "ZOË", "Li",
];
const LAST: &[&str] = &["Smith", "smith ", "O'Neil", "Ng", "Müller", "van Dijk"];
const WORDS: &[&str] = &[
    "the", "The", "night", "Garden", "of", "Öl", "stars", "A", "war", "peace", "zz", "river",
];
const GENRES: &[&str] = &["'scifi'", "'fantasy'", "'history'", "'poetry'", "'crime'"];

/// `INSERT … VALUES` for every table, the same rows for the reference and through idgate.
fn data() -> Vec<String> {
    let mut r = Rng(2024);
    let authors: Vec<String> = (1..=120)
        .map(|id| {
            let name = format!("{} {}", r.pick(FIRST), r.pick(LAST)).replace('\'', "''");
            let email = r.or_null(15, |_| format!("'a{id}@example.org'"));
            let age = r.or_null(10, |r| (18 + r.below(62)).to_string());
            let rating = r.or_null(20, |r| format!("{}.{}", r.below(5), r.below(10)));
            let joined = format!(
                "'2020-0{}-1{} 0{}:30:00'",
                1 + r.below(9),
                r.below(10),
                r.below(10)
            );
            format!(
                "({id}, '{name}', {email}, {age}, {rating}, {joined}, {})",
                r.below(2)
            )
        })
        .collect();
    let books: Vec<String> = (1..=600)
        .map(|id| {
            let words = 1 + r.below(if id % 50 == 0 { 40 } else { 5 });
            let title = (0..words)
                .map(|_| r.pick(WORDS))
                .collect::<Vec<_>>()
                .join(" ");
            let title: String = title.chars().take(200).collect();
            let genre = r.or_null(12, |r| r.pick(GENRES).to_string());
            let price = r.or_null(10, |r| {
                format!(
                    "{}.{}",
                    r.below(60),
                    ["00", "50", "99"][r.below(3) as usize]
                )
            });
            let pages = r.or_null(10, |r| (50 + r.below(850)).to_string());
            let published = r.or_null(10, |r| {
                format!(
                    "'20{}-0{}-2{}'",
                    15 + r.below(10),
                    1 + r.below(9),
                    r.below(9)
                )
            });
            format!(
                "({id}, {}, '{title}', {genre}, {price}, {pages}, {published})",
                1 + r.below(130)
            )
        })
        .collect();
    let reviews: Vec<String> = (1..=900)
        .map(|id| {
            let body = r.or_null(30, |r| {
                format!("'{}'", "good ".repeat(r.below(80) as usize))
            });
            format!("({id}, {}, {}, {body})", 1 + r.below(650), 1 + r.below(5))
        })
        .collect();
    vec![
        format!("INSERT INTO app_author VALUES {}", authors.join(", ")),
        format!("INSERT INTO app_book VALUES {}", books.join(", ")),
        format!("INSERT INTO app_review VALUES {}", reviews.join(", ")),
        "INSERT INTO app_genre VALUES ('scifi', 'Science fiction'), ('fantasy', 'Fantasy'), \
         ('history', 'history'), ('poetry', 'Poetry'), ('crime', 'Crime')"
            .into(),
        "INSERT INTO app_setting VALUES ('site', 'books'), ('theme', NULL), ('Zone', 'UTC')".into(),
    ]
}

/// The values each template parameter takes, one per run of the template.
fn values(name: &str) -> [&'static str; 4] {
    match name {
        "aid" => ["5", "64", "111", "129"],
        "id" => ["17", "42", "99", "3"],
        "ids" => ["1, 2, 3, 4", "10, 20, 30", "7", "50, 51, 52, 53, 54, 55"],
        "age" => ["30", "45", "60", "18"],
        "genre" => ["'scifi'", "'fantasy'", "'history'", "'poetry'"],
        "price" => ["10", "25.5", "40", "0"],
        "pages" => ["100", "300", "450", "800"],
        "limit" => ["10", "20", "5", "1"],
        "offset" => ["0", "20", "40", "7"],
        "stars" => ["1", "3", "4", "5"],
        "rating" => ["4.0", "2.5", "3.0", "4.5"],
        "pattern" => ["'%the%'", "'%A%'", "'%zz%'", "'%öl%'"],
        other => panic!("the corpus uses an unknown parameter {{{other}}}"),
    }
}

/// A literal's value as a prepared statement's parameter.
fn param(literal: &str) -> Value {
    if let Some(s) = literal
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
    {
        return Value::Bytes(s.as_bytes().to_vec());
    }
    match literal.parse::<i64>() {
        Ok(i) => Value::Int(i),
        Err(_) => Value::Double(literal.parse().expect("a numeric corpus value")),
    }
}

/// One corpus line run with value set `k`: the text statement, and the prepared one with its
/// parameters.
fn instantiate(template: &str, k: usize) -> (String, String, Vec<Value>) {
    let (mut text, mut prepared, mut params) = (String::new(), String::new(), Vec::new());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').expect("an unclosed {parameter}") + open;
        text.push_str(&rest[..open]);
        prepared.push_str(&rest[..open]);
        let v = values(&rest[open + 1..close])[k];
        text.push_str(v);
        let list: Vec<&str> = v.split(", ").collect();
        prepared.push_str(&vec!["?"; list.len()].join(", "));
        params.extend(list.into_iter().map(param));
        rest = &rest[close + 1..];
    }
    text.push_str(rest);
    prepared.push_str(rest);
    (text, prepared, params)
}

/// Whether `sql` has `word` outside parentheses and quotes (its own clause, not a subquery's).
fn top_level(sql: &str, word: &str) -> bool {
    let (mut depth, mut quote) = (0i32, None);
    let upper = sql.to_ascii_uppercase();
    let bytes = upper.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'\'' | b'`' | b'"') => quote = Some(b),
            (None, b'(') => depth += 1,
            (None, b')') => depth -= 1,
            (None, _) if depth == 0 && upper[i..].starts_with(word) => return true,
            _ => {}
        }
    }
    false
}

struct Entry {
    line: usize,
    template: String,
    /// Refused (ERROR 1235) as a text query, and as a prepared statement.
    refused: (bool, bool),
    fold: bool,
    /// Column flags that follow from the server's plan are not compared.
    plan_flags: bool,
    /// Doubles computed in another order (variances combined from shards) compare to 9
    /// significant digits.
    float: bool,
    /// Evaluated over literal tables of fetched rows (a join in the gateway): column names and
    /// values compare, not the columns' types, lengths or flags.
    literal_types: bool,
}

/// `a` with only the columns' names.
fn names_only(a: Answer) -> Answer {
    a.map(|(meta, rows)| {
        let meta = meta
            .into_iter()
            .map(|m| m.split(' ').next().unwrap_or_default().to_string())
            .collect();
        (meta, rows)
    })
}

/// `a` without the column flags that follow from the server's plan: which keys a column is part
/// of, and BINARY on a number.
fn without_plan_flags(a: Answer) -> Answer {
    a.map(|(meta, rows)| {
        let meta = meta
            .into_iter()
            .map(|m| {
                let numeric = m.contains(" cs=63 ") && !m.contains("STRING") && !m.contains("BLOB");
                let Some((head, flags)) = m.split_once("flags=ColumnFlags(") else {
                    return m;
                };
                let kept: Vec<&str> = flags
                    .trim_end_matches(')')
                    .split(" | ")
                    .filter(|f| !(f.ends_with("KEY_FLAG") || numeric && *f == "BINARY_FLAG"))
                    .filter(|f| *f != "0x0")
                    .collect();
                let kept = if kept.is_empty() {
                    "0x0".to_string()
                } else {
                    kept.join(" | ")
                };
                format!("{head}flags=ColumnFlags({kept})")
            })
            .collect();
        (meta, rows)
    })
}

/// `a` with every binary-protocol double rounded to 9 significant digits.
fn rounded(a: Answer) -> Answer {
    a.map(|(meta, rows)| {
        let rows = rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|v| {
                        let text = v.as_deref().map(String::from_utf8_lossy);
                        let x = text
                            .as_deref()
                            .and_then(|t| t.strip_prefix("Double("))
                            .and_then(|t| t.strip_suffix(')'))
                            .and_then(|t| t.parse::<f64>().ok());
                        match x {
                            Some(x) => Some(format!("{x:.8e}").into_bytes()),
                            None => v,
                        }
                    })
                    .collect()
            })
            .collect();
        (meta, rows)
    })
}

fn corpus() -> Vec<Entry> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/orm_queries.txt");
    let text = std::fs::read_to_string(&path).expect("read the ORM corpus");
    let mut out = Vec::new();
    for (n, l) in text.lines().enumerate() {
        if l.trim().is_empty() || l.starts_with('#') {
            continue;
        }
        let (mut rest, mut tags) = (l, Vec::new());
        while let Some(t) = rest.strip_prefix('[') {
            let (tag, after) = t.split_once("] ").expect("a tag is `[name] `");
            tags.push(tag);
            rest = after;
        }
        for t in &tags {
            assert!(
                [
                    "refused",
                    "text-only",
                    "fold",
                    "plan-flags",
                    "float",
                    "literal-types"
                ]
                .contains(t),
                "line {}: unknown tag [{t}]",
                n + 1
            );
        }
        let has = |t: &str| tags.contains(&t);
        out.push(Entry {
            line: n + 1,
            template: rest.to_string(),
            refused: (has("refused"), has("refused") || has("text-only")),
            fold: has("fold"),
            plan_flags: has("plan-flags"),
            float: has("float"),
            literal_types: has("literal-types"),
        });
    }
    out
}

struct Setup {
    dbs: Vec<common::MariaDb>,
    g: common::Idgate,
}

/// Three MariaDB servers (the first also holds the reference database `orm_ref`) and idgate,
/// loaded once for every test of this file.
fn setup() -> &'static Setup {
    static SETUP: std::sync::OnceLock<Setup> = std::sync::OnceLock::new();
    SETUP.get_or_init(load)
}

fn load() -> Setup {
    let (dbs, g) = common::three_shards(TABLES);
    let mut reference = common::direct(&dbs[0]);
    reference
        .query_drop("CREATE DATABASE orm_ref")
        .expect("reference database");
    reference.query_drop("USE orm_ref").expect("use orm_ref");
    let mut c = g.conn();
    for sql in DDL {
        reference.query_drop(*sql).expect("reference DDL");
        c.query_drop(*sql).expect("DDL through idgate");
    }
    for sql in data() {
        reference.query_drop(&sql).expect("reference rows");
        c.query_drop(&sql).expect("rows through idgate");
    }
    Setup { dbs, g }
}

/// The table an UPDATE or DELETE changes (the corpus's writes change one table).
fn write_target(sql: &str) -> Option<String> {
    let mut words = sql.split_whitespace();
    let table = match words.next()?.to_ascii_uppercase().as_str() {
        "UPDATE" => words.next()?,
        "DELETE" => words.nth(1)?,
        _ => return None,
    };
    Some(table.trim_matches('`').to_string())
}

/// The OK packet of a write and the rows of `table` afterwards.
type WriteAnswer = Result<(u64, String, Answer), (u16, String)>;

fn write_answer(
    c: &mut mysql::Conn,
    sql: &str,
    params: Option<&[Value]>,
    table: &str,
) -> WriteAnswer {
    let done = match params {
        None => c.query_drop(sql),
        Some(p) => c.exec_drop(sql, p.to_vec()),
    };
    let ok = match done {
        Ok(()) => (c.affected_rows(), c.info_str().into_owned()),
        Err(mysql::Error::MySqlError(e)) => return Err((e.code, e.message)),
        Err(e) => panic!("{sql}: {e}"),
    };
    Ok((
        ok.0,
        ok.1,
        run(c, &format!("SELECT * FROM {table} ORDER BY id")),
    ))
}

/// A write of the corpus, in both protocols, each inside a transaction rolled back afterwards
/// (the other statements read the rows as loaded): the OK packets (affected rows, info text)
/// and the rows left must be one server's.
fn compare_write(
    reference: &mut mysql::Conn,
    c: &mut mysql::Conn,
    line: usize,
    table: &str,
    text: &str,
    prepared: &str,
    params: &[Value],
) -> Vec<String> {
    let mut failures = Vec::new();
    for (how, sql, params) in [("text", text, None), ("prepared", prepared, Some(params))] {
        let answer = |conn: &mut mysql::Conn| {
            conn.query_drop("BEGIN").expect("BEGIN");
            let a = write_answer(conn, sql, params, table);
            conn.query_drop("ROLLBACK").expect("ROLLBACK");
            a
        };
        let want = answer(reference);
        assert!(
            want.is_ok(),
            "line {line}: the reference rejects {sql}: {want:?}"
        );
        let got = answer(c);
        if got != want {
            let short = |a: &WriteAnswer| {
                a.as_ref()
                    .map(|(n, info, _)| (*n, info.clone()))
                    .map_err(Clone::clone)
            };
            failures.push(format!(
                "line {line} ({how}): {text}\nwant {:?}\n got {:?}",
                short(&want),
                short(&got)
            ));
        }
    }
    failures
}

#[test]
fn orm_statements_answer_as_one_server() {
    let s = setup();
    let mut reference = common::direct(&s.dbs[0]);
    reference.query_drop("USE orm_ref").expect("use orm_ref");
    let mut c = s.g.conn();

    let entries = corpus();
    assert!(entries.len() >= 50, "the corpus lost statements");
    let (mut compared, mut refused) = (0, 0);
    let mut failures = Vec::new();
    for e in &entries {
        let runs = if e.template.contains('{') { 4 } else { 1 };
        for k in 0..runs {
            let (text, prepared, params) = instantiate(&e.template, k);
            if let Some(table) = write_target(&text) {
                compared += 2;
                failures.extend(compare_write(
                    &mut reference,
                    &mut c,
                    e.line,
                    &table,
                    &text,
                    &prepared,
                    &params,
                ));
                continue;
            }
            let case = Case {
                sql: text.clone(),
                ordered: top_level(&text, "ORDER BY"),
                fold: e.fold,
                count_only: top_level(&text, "LIMIT") && !top_level(&text, "ORDER BY"),
            };
            let want = run(&mut reference, &text);
            assert!(
                want.is_ok(),
                "line {}: the reference rejects {text}: {want:?}",
                e.line
            );
            let got = run(&mut c, &text);
            let want_p = run_prepared(&mut reference, &prepared, params.clone().into());
            let got_p = run_prepared(&mut c, &prepared, params.into());
            for (how, want, got, refuses) in [
                ("text", want, got, e.refused.0),
                ("prepared", want_p, got_p, e.refused.1),
            ] {
                compared += 1;
                let (want, got) = if e.plan_flags {
                    (without_plan_flags(want), without_plan_flags(got))
                } else {
                    (want, got)
                };
                let (want, got) = if e.literal_types {
                    (names_only(want), names_only(got))
                } else {
                    (want, got)
                };
                let (want, got) = if e.float {
                    (rounded(want), rounded(got))
                } else {
                    (want, got)
                };
                if refuses {
                    refused += 1;
                    if !matches!(&got, Err((1235, _))) {
                        failures.push(format!(
                            "line {} ({how}): marked refused, but idgate answered {:?}\n{text}",
                            e.line,
                            got.as_ref().map(|a| a.1.len())
                        ));
                    }
                } else if let Some(why) = differs(&case, &want, &got) {
                    failures.push(format!("line {} ({how}): {text}\n{why}", e.line));
                }
            }
        }
        // Whatever the answer, the session goes on.
        let one: Option<i64> = c.query_first("SELECT 1").expect("the session goes on");
        assert_eq!(one, Some(1));
    }
    eprintln!("{compared} answers compared, {refused} of them refusals as marked");
    assert!(
        failures.is_empty(),
        "{} of {compared} ORM statements differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn hibernate_pages_and_distinct_counts_through_connector_j() {
    use common::clients::*;
    let (java, classpath) = compile_java("JdbcOrm.java");
    let s = setup();
    let transcript = |port: u16, user: &str, password: &str, db: &str| {
        let mut cmd = std::process::Command::new(&java);
        cmd.arg("-Dfile.encoding=UTF-8")
            .arg("-cp")
            .arg(&classpath)
            .arg("JdbcOrm")
            .args(["127.0.0.1", &port.to_string(), user, password, db]);
        run(cmd, "JdbcOrm", std::time::Duration::from_secs(120))
    };
    let direct = transcript(s.dbs[0].port, common::USER, common::PASSWORD, "orm_ref");
    assert_eq!(direct.code, Some(0), "JdbcOrm directly: {}", direct.stderr);
    let through = transcript(
        s.g.port,
        common::idgate_proc::APP_USER,
        common::idgate_proc::APP_PASSWORD,
        common::DATABASE,
    );
    assert!(
        through.code == Some(0) && through.stdout == direct.stdout,
        "JdbcOrm through idgate (exit {:?}) differs:\n{}\nstderr:\n{}",
        through.code,
        diff(&direct.stdout, &through.stdout),
        through.stderr
    );
    assert_has(&direct.stdout, "done");
    // The walk covered several pages in both protocols.
    for mode in ["client-prep", "server-prep"] {
        assert_has(&direct.stdout, &format!("{mode} page>45.0@25 columns: id/BIGINT(20,0)0 title/VARCHAR(200,0)0 price/DECIMAL(8,2)1"));
    }
}
