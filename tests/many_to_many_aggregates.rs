//! Aggregates over a many-to-many join of sharded tables answer as one MariaDB holding every
//! row. The data is Django's aggregation tests' authors and their friends through the link
//! table `aggregation_author_friends`, both sharded by their own id (so the joins run in the
//! gateway), with the link table's `UNIQUE (from_author_id, to_author_id)` held across the
//! shards (`unique: global`). Each statement (Django's shapes and close variants: LEFT and
//! INNER joins, the self-join through the link table, SUM/COUNT/COUNT DISTINCT/MAX/AVG,
//! grouped and not, nested in a derived table) runs on one server and through idgate, under
//! two layouts (mod and hash) and two sql_modes; the column names, types and rows must agree.
//!
//! Django's many-to-many `add()` writes link rows with INSERT IGNORE and relies on that key to
//! leave out pairs already there. With `unique: global` the same adds through idgate leave the
//! same link rows (and so the same aggregates); with `unique: per_shard` over several shards
//! each shard would check the key for its own rows only and keep a duplicate of a pair held by
//! the other shard (which then counts twice in every join), so such a statement is refused.

mod common;

use common::answers::error_of;
use mysql::prelude::Queryable;

const AUTHOR: &str = "(id INT PRIMARY KEY, name VARCHAR(255) NOT NULL, age INT NOT NULL)";
const FRIENDS: &str = "(id INT PRIMARY KEY, from_author_id INT NOT NULL, \
    to_author_id INT NOT NULL, UNIQUE KEY pair (from_author_id, to_author_id))";
const AUTHORS: &str = "(1, 'Adrian Holovaty', 34), (2, 'Jacob Kaplan-Moss', 35), \
    (3, 'Brad Dayley', 45), (4, 'James Bennett', 29), (5, 'Jeffrey Forcier', 37), \
    (6, 'Paul Bissex', 29), (7, 'Wesley J. Chun', 25), (8, 'Peter Norvig', 57), \
    (9, 'Stuart Russell', 46)";
const FRIENDSHIPS: &str = "(1, 1, 2), (2, 1, 4), (3, 2, 1), (4, 2, 7), (5, 4, 1), (6, 5, 6), \
    (7, 5, 7), (8, 6, 5), (9, 6, 7), (10, 7, 2), (11, 7, 5), (12, 7, 6), (13, 8, 9), (14, 9, 8)";

/// Both tables sharded by their own id with `algorithm` over two shards.
fn tables(algorithm: &str) -> String {
    format!(
        "tables:
  aggregation_author:
    sharding:
      columns: [id]
      algorithm: {algorithm}
      shards: [shard0, shard1]
  aggregation_author_friends:
    unique: global
    sharding:
      columns: [id]
      algorithm: {algorithm}
      shards: [shard0, shard1]
"
    )
}

/// Django's SQL (as its MySQL backend writes it) for `annotate(combined=Sum(F("age") +
/// F("friends__age")))` and the joins it makes: the author, the link table, the friend (`T3`).
const JOINED: &str = "FROM `aggregation_author` LEFT OUTER JOIN `aggregation_author_friends` \
    ON (`aggregation_author`.`id` = `aggregation_author_friends`.`from_author_id`) \
    LEFT OUTER JOIN `aggregation_author` T3 ON (`aggregation_author_friends`.`to_author_id` = T3.`id`)";
const LINKED: &str = "FROM `aggregation_author` LEFT OUTER JOIN `aggregation_author_friends` \
    ON (`aggregation_author`.`id` = `aggregation_author_friends`.`from_author_id`)";
const INNER: &str = "FROM aggregation_author a JOIN aggregation_author_friends f \
    ON f.from_author_id = a.id JOIN aggregation_author t ON t.id = f.to_author_id";

/// The statements, `{J}` the self-join through the link table, `{L}` the author with its link
/// rows, `{I}` the inner self-join; `true`: the query orders its rows itself.
const CASES: &[(&str, bool)] = &[
    // test_aggregate_over_complex_annotation: 176, 352, 352 and 954.
    ("SELECT MAX(`combined`) FROM (SELECT SUM((`aggregation_author`.`age` + T3.`age`)) AS `combined` {J} GROUP BY `aggregation_author`.`id` ORDER BY NULL) subquery", false),
    ("SELECT (MAX(`combined`) * 2) AS `max_combined_age_doubled` FROM (SELECT SUM((`aggregation_author`.`age` + T3.`age`)) AS `combined` {J} GROUP BY `aggregation_author`.`id`) subquery", false),
    ("SELECT (MAX(`combined`) + MAX(`combined`)) AS `d`, SUM(`combined`) AS `sum_combined_age` FROM (SELECT `aggregation_author`.`id` AS `col1`, SUM((`aggregation_author`.`age` + T3.`age`)) AS `combined` {J} GROUP BY `aggregation_author`.`id`) subquery", false),
    // The annotation itself, grouped by the author (and by all its columns).
    ("SELECT `aggregation_author`.`id`, `aggregation_author`.`name`, `aggregation_author`.`age`, SUM((`aggregation_author`.`age` + T3.`age`)) AS `combined_ages` {J} GROUP BY `aggregation_author`.`id` ORDER BY `aggregation_author`.`name` ASC", true),
    ("SELECT `aggregation_author`.`id`, `aggregation_author`.`name`, `aggregation_author`.`age`, SUM((`aggregation_author`.`age` + T3.`age`)) AS `combined_ages` {J} GROUP BY `aggregation_author`.`id`, `aggregation_author`.`name`, `aggregation_author`.`age` ORDER BY `aggregation_author`.`name` ASC", true),
    // test_annotation: Count("friends__id") of one author (2), not grouped.
    ("SELECT COUNT(`aggregation_author_friends`.`to_author_id`) AS `friends__id__count` {L} WHERE `aggregation_author`.`id` = 1", false),
    ("SELECT COUNT(`aggregation_author_friends`.`to_author_id`) AS `friends__id__count` {L} WHERE `aggregation_author`.`id` = 3", false),
    ("SELECT COUNT(`aggregation_author_friends`.`to_author_id`) AS `friends__id__count` {L}", false),
    // Count("friends__id", distinct=True) filtered to 0, and as a per-author annotation.
    ("SELECT `aggregation_author`.`id`, `aggregation_author`.`name`, `aggregation_author`.`age`, COUNT(DISTINCT `aggregation_author_friends`.`to_author_id`) AS `num_friends` {L} GROUP BY `aggregation_author`.`id` HAVING COUNT(DISTINCT `aggregation_author_friends`.`to_author_id`) = 0 ORDER BY `aggregation_author`.`id` ASC", true),
    ("SELECT `aggregation_author`.`id`, COUNT(`aggregation_author_friends`.`to_author_id`) AS `n`, COUNT(DISTINCT `aggregation_author_friends`.`to_author_id`) AS `d` {L} GROUP BY `aggregation_author`.`id` ORDER BY `n` DESC, `aggregation_author`.`id`", true),
    // Avg("friends__age") per author; MAX and COUNT DISTINCT over the friends.
    ("SELECT `aggregation_author`.`name`, AVG(T3.`age`) AS `friends__age__avg` {J} GROUP BY `aggregation_author`.`id` ORDER BY `aggregation_author`.`name` ASC", true),
    ("SELECT MAX(T3.`age`), MIN(T3.`age`), COUNT(DISTINCT T3.`id`), COUNT(*), COUNT(T3.`id`), SUM(T3.`age`) {J}", false),
    // Inner joins: authors without friends drop out; not grouped, grouped, grouped by the friend.
    ("SELECT COUNT(*), SUM(a.age + t.age), MAX(a.age + t.age), COUNT(DISTINCT a.id), COUNT(DISTINCT t.id) {I}", false),
    ("SELECT a.id, COUNT(*) AS n, SUM(a.age + t.age) AS s, MAX(t.age) AS m {I} GROUP BY a.id ORDER BY a.id", true),
    ("SELECT t.name, COUNT(*) AS n, GROUP_CONCAT(a.name ORDER BY a.name) AS fans {I} GROUP BY t.name ORDER BY t.name", true),
    ("SELECT a.id, COUNT(*) AS n {I} WHERE t.age > 30 GROUP BY a.id HAVING COUNT(*) > 1 ORDER BY a.id", true),
    // Nested in derived tables as Django's aggregate() over annotations writes them.
    ("SELECT COUNT(*), SUM(n), MAX(s) FROM (SELECT a.id, COUNT(f.id) AS n, SUM(a.age + t.age) AS s FROM aggregation_author a LEFT JOIN aggregation_author_friends f ON f.from_author_id = a.id LEFT JOIN aggregation_author t ON t.id = f.to_author_id GROUP BY a.id) sub", false),
    ("SELECT COUNT(*) FROM (SELECT a.id, COUNT(f.id) AS c FROM aggregation_author a LEFT JOIN aggregation_author_friends f ON f.from_author_id = a.id GROUP BY a.id HAVING c > 1) sub", false),
    ("SELECT AVG(`num_friends`) FROM (SELECT COUNT(DISTINCT f.to_author_id) AS `num_friends` FROM aggregation_author a LEFT JOIN aggregation_author_friends f ON f.from_author_id = a.id GROUP BY a.id) sub", false),
    // The link table drives; the reverse direction of the relation.
    ("SELECT f.to_author_id, COUNT(*) AS n, SUM(a.age) AS s FROM aggregation_author_friends f JOIN aggregation_author a ON a.id = f.from_author_id GROUP BY f.to_author_id ORDER BY f.to_author_id", true),
    ("SELECT a.name, COUNT(f.id) FROM aggregation_author_friends f RIGHT JOIN aggregation_author a ON a.id = f.to_author_id GROUP BY a.id, a.name ORDER BY a.name", true),
];

fn fill(sql: &str) -> String {
    sql.replace("{J}", JOINED)
        .replace("{L}", LINKED)
        .replace("{I}", INNER)
}

/// Column names with their types, and rows; or the error's code.
type Answer = Result<(Vec<String>, Vec<Vec<Option<Vec<u8>>>>), u16>;

/// What `sql` gives: each column's name and type (a column idgate computes over fetched rows may
/// declare another length or NOT NULL flag: the book's differences page), and the rows.
fn run(c: &mut mysql::Conn, sql: &str) -> Answer {
    let describe = |col: &mysql::Column| format!("{} {:?}", col.name_str(), col.column_type());
    match c.query_iter(sql) {
        Ok(r) => common::answers::collect_with(r, sql, describe).map_err(|(code, _)| code),
        Err(mysql::Error::MySqlError(e)) => Err(e.code),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// Every case under `sql_mode` on `reference` and through `idgate`; the differences.
fn differences(
    reference: &mut mysql::Conn,
    idgate: &mut mysql::Conn,
    sql_mode: &str,
) -> Vec<String> {
    let set = format!("SET SESSION sql_mode = '{sql_mode}'");
    reference.query_drop(&set).unwrap();
    idgate.query_drop(&set).unwrap();
    let mut failures = Vec::new();
    let mut compared = 0;
    for (sql, ordered) in CASES {
        let sql = fill(sql);
        let want = run(reference, &sql);
        let got = run(idgate, &sql);
        // Under ONLY_FULL_GROUP_BY MariaDB refuses a column grouped only through the key
        // (1055): idgate must give the same error.
        if matches!((&want, &got), (Err(w), Err(g)) if w == g) {
            continue;
        }
        let (Ok((wc, mut w)), Ok((gc, mut g))) = (want.clone(), got.clone()) else {
            failures.push(format!("[{sql_mode}] {sql}\nwant {want:?}\n got {got:?}"));
            continue;
        };
        assert!(!w.is_empty(), "{sql}: the reference gives no rows");
        compared += 1;
        if !ordered {
            w.sort();
            g.sort();
        }
        if wc != gc || w != g {
            failures.push(format!(
                "[{sql_mode}] {sql}\nwant {wc:?} {w:?}\n got {gc:?} {g:?}"
            ));
        }
    }
    // Most shapes answer under either mode: rows were compared, not only errors.
    assert!(
        compared >= CASES.len() - 4,
        "[{sql_mode}] {compared} compared"
    );
    failures
}

#[test]
fn aggregates_over_the_many_to_many_join_answer_as_one_server() {
    let mut failures = Vec::new();
    for algorithm in ["mod", "hash"] {
        let s = common::two_shards(&tables(algorithm), &[]);
        let mut idgate = s.g.conn();
        let data = [
            ("aggregation_author", AUTHOR, AUTHORS),
            ("aggregation_author_friends", FRIENDS, FRIENDSHIPS),
        ];
        for (t, cols, rows) in data {
            idgate
                .query_drop(format!("CREATE TABLE {t} {cols}"))
                .unwrap();
            idgate
                .query_drop(format!("INSERT INTO {t} VALUES {rows}"))
                .unwrap();
        }
        // Each shard holds a part of both tables: the joins meet rows across the shards.
        for db in &s.dbs {
            let mut shard = common::direct(db);
            for (t, _, _) in data {
                let n: Option<u64> = shard
                    .query_first(format!("SELECT COUNT(*) FROM {t}"))
                    .unwrap();
                assert!(n.is_some_and(|n| n > 0), "{algorithm}: {t} {n:?}");
            }
        }
        let mut reference = common::answers::reference_copy(&s.dbs[1], &data);
        for mode in ["", "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES"] {
            failures.extend(
                differences(&mut reference, &mut idgate, mode)
                    .into_iter()
                    .map(|f| format!("{algorithm}: {f}")),
            );
        }
        // The join runs in the gateway, each table fetched from both shards; nested in a
        // derived table, first, its rows bound in.
        for (case, nested) in [(3, false), (0, true)] {
            let sql = fill(CASES[case].0);
            let route: Vec<(String, String, String)> =
                idgate.query(format!("EXPLAIN ROUTE {sql}")).unwrap();
            let steps = route.iter().filter(|r| r.2.contains("join step")).count();
            assert_eq!(steps, 4, "{algorithm}: {route:?}");
            assert!(
                !nested
                    || route
                        .iter()
                        .all(|r| r.2.contains("derived table") || r.2.contains("outer statement")),
                "{algorithm}: {route:?}"
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Django's `setUpTestData` friendships: `authors[a].friends.add(authors[b], …)`.
const ADDS: &[(usize, &[usize])] = &[
    (1, &[2, 4]),
    (2, &[1, 7]),
    (4, &[1]),
    (5, &[6, 7]),
    (6, &[5, 7]),
    (7, &[2, 5, 6]),
    (8, &[9]),
];

/// Django's tables (ids AUTO_INCREMENT, filled by idgate's generator through idgate).
const DJANGO_DDL: &[&str] = &[
    "CREATE TABLE `aggregation_author` (`id` integer AUTO_INCREMENT NOT NULL PRIMARY KEY, \
     `name` varchar(100) NOT NULL, `age` integer NOT NULL)",
    "CREATE TABLE `aggregation_author_friends` (`id` integer AUTO_INCREMENT NOT NULL PRIMARY KEY, \
     `from_author_id` integer NOT NULL, `to_author_id` integer NOT NULL, CONSTRAINT \
     `aggregation_author_friends_from_author_id_to_author_id_uniq` UNIQUE (`from_author_id`, \
     `to_author_id`))",
];

/// Sharded by id mod 2, ids from a segment generator, the link table's key held `unique`.
fn django_tables(unique: &str) -> String {
    format!(
        "generators:
  seq:
    kind: segment
    step: 100
tables:
  aggregation_author:
    generator: seq
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  aggregation_author_friends:
    generator: seq
    unique: {unique}
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
"
    )
}

/// Creates Django's tables and authors on `c`; the authors' ids.
fn django_authors(c: &mut mysql::Conn) -> Vec<u64> {
    for ddl in DJANGO_DDL {
        c.query_drop(ddl).unwrap();
    }
    let authors = AUTHORS.trim_start_matches('(').trim_end_matches(')');
    authors
        .split("), (")
        .map(|a| {
            let (_, rest) = a.split_once(", ").unwrap();
            let (name, age) = rest.rsplit_once(", ").unwrap();
            c.query_drop(format!(
                "INSERT INTO `aggregation_author` (`name`, `age`) VALUES ({name}, {age})"
            ))
            .unwrap();
            c.last_insert_id()
        })
        .collect()
}

/// The INSERT IGNOREs Django's symmetrical `add()` writes: the pairs one way, then the other.
fn django_adds(ids: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    for (from, tos) in ADDS {
        let a = ids[from - 1];
        let there: Vec<String> = tos
            .iter()
            .map(|t| format!("({a}, {})", ids[t - 1]))
            .collect();
        let back: Vec<String> = tos
            .iter()
            .map(|t| format!("({}, {a})", ids[t - 1]))
            .collect();
        for pairs in [there, back] {
            out.push(format!(
                "INSERT IGNORE INTO `aggregation_author_friends` (`from_author_id`, \
                 `to_author_id`) VALUES {}",
                pairs.join(", ")
            ));
        }
    }
    out
}

/// Statements whose answers do not depend on the ids the authors got.
const BY_NAME: &[&str] = &[
    "SELECT a.name, t.name FROM aggregation_author_friends f JOIN aggregation_author a ON a.id = f.from_author_id JOIN aggregation_author t ON t.id = f.to_author_id ORDER BY a.name, t.name",
    "SELECT MAX(`combined`) FROM (SELECT SUM((`aggregation_author`.`age` + T3.`age`)) AS `combined` {J} GROUP BY `aggregation_author`.`id`) subquery",
    "SELECT `aggregation_author`.`name`, COUNT(`aggregation_author_friends`.`to_author_id`) AS `friends__id__count` {L} GROUP BY `aggregation_author`.`id` ORDER BY `aggregation_author`.`name`",
    "SELECT COUNT(*) FROM aggregation_author_friends",
];

#[test]
fn django_adds_keep_one_link_row_per_pair_as_one_server() {
    let s = common::two_shards(&django_tables("global"), &[]);
    let mut idgate = s.g.conn();
    let mut reference = common::direct(&s.dbs[1]);
    reference.query_drop("CREATE DATABASE ref").unwrap();
    reference.query_drop("USE ref").unwrap();
    let (mine, theirs) = (django_authors(&mut idgate), django_authors(&mut reference));
    for (m, t) in django_adds(&mine).iter().zip(django_adds(&theirs)) {
        reference.query_drop(&t).unwrap();
        idgate.query_drop(m).unwrap();
        assert_eq!(idgate.affected_rows(), reference.affected_rows(), "{m}");
    }
    for sql in BY_NAME {
        let sql = fill(sql);
        assert_eq!(run(&mut idgate, &sql), run(&mut reference, &sql), "{sql}");
    }
    let count = fill(CASES[5].0).replace("= 1", &format!("= {}", mine[0]));
    let n: Option<i64> = idgate.query_first(count).unwrap();
    assert_eq!(n, Some(2));
}

#[test]
fn ignore_replace_upserts_and_loads_into_per_shard_keys_over_shards_are_refused() {
    let s = common::two_shards(&django_tables("per_shard"), &[]);
    let mut idgate = s.g.conn();
    let ids = django_authors(&mut idgate);
    let (a, b) = (ids[0], ids[1]);
    idgate
        .query_drop(format!(
            "INSERT INTO aggregation_author_friends (from_author_id, to_author_id) VALUES ({a}, {b})"
        ))
        .unwrap();
    for (sql, what) in [
        (format!("INSERT IGNORE INTO `aggregation_author_friends` (`from_author_id`, `to_author_id`) VALUES ({a}, {b}), ({b}, {a})"), "INSERT IGNORE"),
        (format!("REPLACE INTO aggregation_author_friends (from_author_id, to_author_id) VALUES ({a}, {b})"), "REPLACE"),
        (format!("INSERT INTO aggregation_author_friends (from_author_id, to_author_id) VALUES ({a}, {b}) ON DUPLICATE KEY UPDATE to_author_id = to_author_id"), "ON DUPLICATE KEY UPDATE"),
        (format!("INSERT IGNORE INTO aggregation_author_friends (from_author_id, to_author_id) SELECT {a}, {b}"), "INSERT IGNORE"),
    ] {
        let (code, msg) = error_of(&mut idgate, &sql);
        assert_eq!(code, 1235, "{sql}: {msg}");
        assert!(
            msg.contains(what)
                && msg.contains("`aggregation_author_friends`")
                && msg.contains("unique: global"),
            "{sql}: {msg}"
        );
        // Prepared: the same refusal.
        match idgate.exec_drop(&sql, ()) {
            Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1235, "{sql}: {}", e.message),
            other => panic!("{sql}: prepared gave {other:?}"),
        }
    }
    // LOAD DATA LOCAL skips (or REPLACE replaces) a row whose key is there: refused before the
    // file is asked for.
    for (sql, what) in [
        ("LOAD DATA LOCAL INFILE 'links.tsv' INTO TABLE aggregation_author_friends (from_author_id, to_author_id)", "LOAD DATA LOCAL"),
        ("LOAD DATA LOCAL INFILE 'links.tsv' REPLACE INTO TABLE aggregation_author_friends (from_author_id, to_author_id)", "LOAD DATA ... REPLACE"),
    ] {
        let (code, msg) = error_of(&mut idgate, sql);
        assert_eq!(code, 1235, "{sql}: {msg}");
        assert!(msg.contains(what) && msg.contains("unique: global"), "{sql}: {msg}");
    }
    // Nothing was written; the session goes on.
    let n: Option<u64> = idgate
        .query_first("SELECT COUNT(*) FROM aggregation_author_friends")
        .unwrap();
    assert_eq!(n, Some(1));
    // A plain INSERT still runs (a duplicate across shards is what `unique: per_shard` accepts).
    idgate
        .query_drop(format!(
            "INSERT INTO aggregation_author_friends (from_author_id, to_author_id) VALUES ({b}, {a})"
        ))
        .unwrap();
}
