//! Statement shapes over tables sharded across two MariaDB servers that one MariaDB answers:
//! through idgate they answer alike, or, where idgate cannot answer exactly, get ERROR 1235
//! saying what to do (never a syntax error or an unknown column or table).
//!
//! - multi-table UPDATE (`UPDATE a o, b ev SET …`, `UPDATE a JOIN b …`): run on each shard when
//!   each shard holds every pair of rows that join, passed through when every table is on the
//!   default backend, refused otherwise;
//! - HAVING on an aggregate's alias (also when idgate lifts the aggregates into a derived
//!   table) and ORDER BY / GROUP BY a scalar subquery;
//! - recursive common table expressions over a sharded table (refused) and beside one;
//! - EXPLAIN ROUTE of the writes refused into a `unique: per_shard` table over several shards.
//!
//! Every comparison runs against a reference database on one server holding all the rows, in
//! the text and the binary protocol, under the default sql_mode and under
//! `ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES`. One set of servers serves the whole file.

mod common;

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use common::answers::collect_with;
use mysql::prelude::Queryable;

const TABLES: &str = "tables:
  sd_orders:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  sd_events:
    sharding:
      columns: [order_id]
      algorithm: mod
      shards: [shard0, shard1]
  sd_notes:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  sd_countries:
    broadcast: true
  sd_tree:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  sd_links:
    unique: per_shard
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

/// (table, columns, rows): `sd_events` placed as `sd_orders` by its order, `sd_notes` by its
/// own id (so a join on the order meets rows across shards), `sd_plain*` unconfigured (on the
/// default backend only).
const DATA: &[(&str, &str, &str)] = &[
    (
        "sd_orders",
        "(id INT PRIMARY KEY, x INT, country INT, label VARCHAR(20))",
        "(1, 0, 1, 'a'), (2, 0, 2, 'b'), (3, 0, 1, 'c'), (4, 0, 2, 'd'), (5, 0, 2, 'e'), \
         (6, 0, 3, 'f')",
    ),
    (
        "sd_events",
        "(id INT, order_id INT, y INT, PRIMARY KEY (id, order_id))",
        "(1, 1, 10), (2, 2, 20), (3, 3, 30), (4, 4, 40), (5, 5, 50), (6, 1, 11), (7, 2, 21)",
    ),
    (
        "sd_notes",
        "(id INT PRIMARY KEY, order_id INT, y INT)",
        "(1, 2, 100), (2, 3, 200), (3, 4, 300), (4, 1, 400)",
    ),
    (
        "sd_countries",
        "(id INT PRIMARY KEY, name VARCHAR(20), rate INT)",
        "(1, 'one', 7), (2, 'two', 8), (3, 'three', 9)",
    ),
    (
        "sd_plain",
        "(id INT PRIMARY KEY, x INT)",
        "(1, 0), (2, 0), (3, 0)",
    ),
    (
        "sd_plain_src",
        "(id INT PRIMARY KEY, plain_id INT, y INT)",
        "(1, 1, 5), (2, 2, 6), (3, 2, 7)",
    ),
    (
        "sd_tree",
        "(id INT PRIMARY KEY, parent INT, k INT, v INT, amount DECIMAL(10,2))",
        "(1, NULL, 1, 5, 1.50), (2, 1, 1, 7, 2.25), (3, 1, 2, 3, 10.00), (4, 2, 2, 20, 0.75), \
         (5, 4, 3, 1, 3.00), (6, 5, 3, 2, 4.10), (7, 3, 4, 9, 9.99)",
    ),
    (
        "sd_links",
        "(id INT PRIMARY KEY, code INT, UNIQUE KEY (code))",
        "(1, 10), (2, 20)",
    ),
];

const MODES: [&str; 2] = ["", "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES"];

struct Servers {
    s: common::TwoShards,
    /// Tests take turns: they write tables the others read.
    turn: Mutex<()>,
}

/// The shards and idgate, the tables created through idgate and filled, and a database on
/// the second server holding the same rows whole.
fn servers() -> &'static Servers {
    static S: OnceLock<Servers> = OnceLock::new();
    S.get_or_init(|| {
        let s = common::two_shards(TABLES, &[]);
        let mut g = s.g.conn();
        for (t, cols, rows) in DATA {
            g.query_drop(format!("CREATE TABLE {t} {cols}")).unwrap();
            g.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
                .unwrap();
        }
        let mut r = common::direct(&s.dbs[1]);
        r.query_drop("CREATE DATABASE sd_ref").unwrap();
        Servers {
            s,
            turn: Mutex::new(()),
        }
    })
}

/// A connection to the reference database, with every table there as `DATA` has it.
fn reference(s: &Servers) -> mysql::Conn {
    let mut r = common::direct(&s.s.dbs[1]);
    r.query_drop("USE sd_ref").unwrap();
    for (t, cols, rows) in DATA {
        r.query_drop(format!("DROP TABLE IF EXISTS {t}")).unwrap();
        r.query_drop(format!("CREATE TABLE {t} {cols}")).unwrap();
        r.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .unwrap();
    }
    r
}

/// Through idgate, every table back as `DATA` has it.
fn reset(g: &mut mysql::Conn) {
    for (t, _, rows) in DATA {
        g.query_drop(format!("DELETE FROM {t}")).unwrap();
        g.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .unwrap();
    }
}

type Answer = Result<(Vec<String>, Vec<Vec<Option<Vec<u8>>>>), (u16, String)>;

/// Column names with their types, and rows (text protocol, or binary with `params`).
fn answer(c: &mut mysql::Conn, sql: &str, params: Option<mysql::Params>) -> Answer {
    let describe = |col: &mysql::Column| format!("{} {:?}", col.name_str(), col.column_type());
    let res = match params {
        None => c.query_iter(sql).map(|r| collect_with(r, sql, describe)),
        Some(p) => c.exec_iter(sql, p).map(|r| collect_with(r, sql, describe)),
    };
    match res {
        Ok(a) => a,
        Err(mysql::Error::MySqlError(e)) => Err((e.code, e.message)),
        Err(e) => panic!("{sql}: {e}"),
    }
}

fn same(ordered: bool, want: &Answer, got: &Answer) -> Option<String> {
    match (want, got) {
        (Err(w), Err(g)) if w.0 == g.0 => None,
        (Ok((wc, wr)), Ok((gc, gr))) => {
            let (mut w, mut g) = (wr.clone(), gr.clone());
            if !ordered {
                w.sort();
                g.sort();
            }
            (wc != gc || w != g).then(|| format!("want {wc:?} {w:?}\n got {gc:?} {g:?}"))
        }
        _ => Some(format!("want {want:?}\n got {got:?}")),
    }
}

fn set_mode(conns: &mut [&mut mysql::Conn], mode: &str) {
    for c in conns {
        c.query_drop(format!("SET SESSION sql_mode = '{mode}'"))
            .unwrap();
    }
}

/// What a write tells the client: affected rows, info, warnings; or the error's code.
type WriteAnswer = Result<(u64, String, u16), u16>;

fn write(c: &mut mysql::Conn, sql: &str, params: Option<mysql::Params>) -> WriteAnswer {
    let done = match params {
        None => c.query_drop(sql),
        Some(p) => c.exec_drop(sql, p),
    };
    match done {
        Ok(()) => Ok((c.affected_rows(), c.info_str().into_owned(), c.warnings())),
        Err(mysql::Error::MySqlError(e)) => Err(e.code),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// Every table's rows on the reference and through idgate: the differences.
fn tables_differ(r: &mut mysql::Conn, g: &mut mysql::Conn) -> Vec<String> {
    DATA.iter()
        .filter_map(|(t, _, _)| {
            let sql = format!("SELECT * FROM {t} ORDER BY id");
            same(true, &answer(r, &sql, None), &answer(g, &sql, None))
                .map(|why| format!("table {t}: {why}"))
        })
        .collect()
}

/// Multi-table UPDATEs that run as on one server: placed so that each shard holds every pair
/// of rows that join, or on the default backend alone. Each with its parameters when run
/// prepared (`None`: text only).
const UPDATES: &[(&str, Option<&[i64]>)] = &[
    // The owner's shape: comma join, aliases, the join in WHERE (sharded alike).
    (
        "UPDATE sd_orders o, sd_events ev SET o.x = ev.y WHERE o.id = ev.order_id",
        None,
    ),
    (
        "UPDATE sd_orders o, sd_events ev SET o.x = o.x + ev.y WHERE o.id = ev.order_id AND ev.y > ?",
        Some(&[15]),
    ),
    (
        "UPDATE sd_orders o JOIN sd_events ev ON o.id = ev.order_id SET o.x = ev.y + 1, ev.y = ev.y * 2",
        None,
    ),
    (
        "UPDATE sd_orders AS o INNER JOIN sd_events AS ev ON ev.order_id = o.id SET ev.y = o.x WHERE o.id = ?",
        Some(&[2]),
    ),
    (
        "UPDATE sd_events ev, sd_orders o SET o.label = CONCAT(o.label, '+') WHERE ev.order_id = o.id AND ev.id > ?",
        Some(&[5]),
    ),
    // A LEFT JOIN keeping the sharded side.
    (
        "UPDATE sd_orders o LEFT JOIN sd_events ev ON ev.order_id = o.id SET o.x = COALESCE(ev.y, -1)",
        None,
    ),
    // With a broadcast table (its column read, never written); the condition on its column
    // pins nothing of the orders' shards.
    (
        "UPDATE sd_orders o, sd_countries c SET o.x = c.rate WHERE o.country = c.id",
        None,
    ),
    (
        "UPDATE sd_orders o JOIN sd_countries c ON o.country = c.id SET o.x = 100 + o.id WHERE c.id = ?",
        Some(&[2]),
    ),
    (
        "UPDATE sd_orders o JOIN sd_countries c ON o.country = c.id SET o.x = 200 WHERE c.id IN (1, 3)",
        None,
    ),
    // Three tables, two sharded alike and one broadcast.
    (
        "UPDATE sd_orders o, sd_events ev, sd_countries c SET o.x = ev.y + c.rate, ev.y = c.rate WHERE o.id = ev.order_id AND o.country = c.id",
        None,
    ),
    (
        "UPDATE sd_countries c JOIN sd_orders o ON o.country = c.id JOIN sd_events ev ON ev.order_id = o.id SET ev.y = ev.y + c.rate WHERE o.x > ?",
        Some(&[9]),
    ),
    // Pinned to one shard by the target's own key.
    (
        "UPDATE sd_orders o, sd_events ev SET o.x = ev.y WHERE o.id = ev.order_id AND o.id = ?",
        Some(&[3]),
    ),
    // Every table on the default backend: passed through.
    (
        "UPDATE sd_plain p, sd_plain_src s SET p.x = s.y WHERE p.id = s.plain_id",
        None,
    ),
    (
        "UPDATE sd_plain p JOIN sd_plain_src s ON p.id = s.plain_id SET p.x = p.x + s.y WHERE s.y > ?",
        Some(&[5]),
    ),
    // Nothing matches; the same value again (matched, not changed).
    (
        "UPDATE sd_orders o, sd_events ev SET o.x = ev.y WHERE o.id = ev.order_id AND ev.y < 0",
        None,
    ),
    (
        "UPDATE sd_orders o, sd_countries c SET o.x = c.rate WHERE o.country = c.id",
        None,
    ),
    // An overflowing value: a warning (clipped), or under STRICT_TRANS_TABLES ERROR 1264 and
    // no row changed on any shard.
    (
        "UPDATE sd_orders o, sd_events ev SET o.x = ev.y * 100000000000 WHERE o.id = ev.order_id AND ev.id <= 5",
        None,
    ),
    // MariaDB's own error: an unknown column.
    (
        "UPDATE sd_orders o, sd_events ev SET o.nope = 1 WHERE o.id = ev.order_id",
        None,
    ),
    // A LIMIT on one shard's rows is the LIMIT.
    (
        "UPDATE sd_orders o, sd_events ev SET o.x = 1 WHERE o.id = ev.order_id AND o.id = ? LIMIT 1",
        Some(&[1]),
    ),
];

/// Multi-table UPDATEs idgate cannot run exactly: ERROR 1235 with what to do.
const REFUSED_UPDATES: &[(&str, &str)] = &[
    // The join meets rows across shards (notes are placed by their own id).
    (
        "UPDATE sd_orders o, sd_notes n SET o.x = n.y WHERE o.id = n.order_id",
        "SELECT the new values first and UPDATE each table by its key",
    ),
    (
        "UPDATE sd_orders o JOIN sd_notes n ON o.id = n.order_id SET n.y = o.x",
        "SELECT the new values first and UPDATE each table by its key",
    ),
    // A table of the default backend with a sharded one.
    (
        "UPDATE sd_orders o, sd_plain p SET o.x = p.x WHERE o.id = p.id",
        "SELECT the new values first and UPDATE each table by its key",
    ),
    // A LIMIT over the rows of several shards (the join's rows, counted across them).
    (
        "UPDATE sd_orders o, sd_events ev SET o.x = 1 WHERE o.id = ev.order_id LIMIT 1",
        "pin it to one shard",
    ),
    // A parenthesized join: which table `c` is, idgate does not read.
    (
        "UPDATE sd_orders o JOIN (sd_events ev JOIN sd_countries c ON c.id = ev.id) ON o.id = ev.order_id SET c.rate = 1",
        "write the tables one after another",
    ),
    // Writing the broadcast table would change each backend's copy by its own shard's rows.
    (
        "UPDATE sd_orders o, sd_countries c SET c.rate = o.x WHERE o.country = c.id",
        "UPDATE `sd_countries` on its own",
    ),
    (
        "UPDATE sd_orders o, sd_countries c SET x = c.rate WHERE o.country = c.id",
        "must name the table of each column it assigns",
    ),
];

#[test]
fn multi_table_updates_answer_as_one_server_or_are_refused() {
    let s = servers();
    let _turn = s.turn.lock().unwrap_or_else(|e| e.into_inner());
    let mut g = s.s.g.conn();
    let mut failures = Vec::new();
    // Statements that changed rows on the reference: the comparison saw writes, not only errors.
    let mut written = 0;
    for mode in MODES {
        for prepared in [false, true] {
            reset(&mut g);
            let mut r = reference(s);
            set_mode(&mut [&mut r, &mut g], mode);
            for (sql, params) in UPDATES {
                if prepared && params.is_none() {
                    continue;
                }
                // As text, the values written in; the reference always runs that text.
                let mut text_sql = sql.to_string();
                for v in params.unwrap_or_default() {
                    text_sql = text_sql.replacen('?', &v.to_string(), 1);
                }
                let (want, got) = match prepared {
                    true => {
                        let p = params
                            .unwrap_or_default()
                            .iter()
                            .map(|v| mysql::Value::Int(*v));
                        let p = mysql::Params::Positional(p.collect());
                        (write(&mut r, &text_sql, None), write(&mut g, sql, Some(p)))
                    }
                    false => (
                        write(&mut r, &text_sql, None),
                        write(&mut g, &text_sql, None),
                    ),
                };
                // Prepared, a client sees no info string: compare counts and warnings then.
                let (want, got) = match prepared {
                    true => (
                        want.map(|(n, _, w)| (n, String::new(), w)),
                        got.map(|(n, _, w)| (n, String::new(), w)),
                    ),
                    false => (want, got),
                };
                written += usize::from(want.as_ref().is_ok_and(|w| w.0 > 0));
                if want != got {
                    failures.push(format!(
                        "[{mode}] prepared={prepared} {sql}\nwant {want:?}\n got {got:?}"
                    ));
                }
                for why in tables_differ(&mut r, &mut g) {
                    failures.push(format!("[{mode}] prepared={prepared} after {sql}\n{why}"));
                }
            }
            for (sql, advice) in REFUSED_UPDATES {
                match write(&mut g, sql, None) {
                    Err(1235) => {}
                    other => failures.push(format!("[{mode}] {sql}: want 1235, got {other:?}")),
                }
                let (code, message) = common::answers::error_of(&mut g, sql);
                if code != 1235 || !message.contains(advice) {
                    failures.push(format!("[{mode}] {sql}: {code} {message}"));
                }
                // Refused before any shard ran it.
                for why in tables_differ(&mut r, &mut g) {
                    failures.push(format!("[{mode}] after refused {sql}\n{why}"));
                }
            }
        }
    }
    // Each shard ran its part: the shape is routed, not refused or forwarded.
    let route: Vec<(String, String, String)> = g
        .query("EXPLAIN ROUTE UPDATE sd_orders o, sd_events ev SET o.x = ev.y WHERE o.id = ev.order_id")
        .unwrap();
    let backends: Vec<&str> = route.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(backends, ["shard0", "shard1"], "{route:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(written >= 30, "{written} statements wrote rows");
}

/// SELECTs whose HAVING names an aggregate's alias or whose ORDER BY / GROUP BY is a scalar
/// subquery, and joins whose WHERE names a broadcast table's column; `true`: the statement
/// orders every row itself.
const READS: &[(&str, bool)] = &[
    ("SELECT k, SUM(v) AS total FROM sd_tree GROUP BY k HAVING total > 10", false),
    ("SELECT k, SUM(v) AS total FROM sd_tree GROUP BY k HAVING total > 10 ORDER BY total DESC", true),
    ("SELECT k, SUM(v) AS total FROM sd_tree GROUP BY k HAVING total > (SELECT AVG(v) FROM sd_tree)", false),
    ("SELECT k, SUM(amount) AS total FROM sd_tree GROUP BY k HAVING total > (SELECT AVG(amount) FROM sd_tree) ORDER BY k", true),
    ("SELECT k, COUNT(*) AS n FROM sd_tree GROUP BY k HAVING n > 1 ORDER BY k", true),
    ("SELECT k, SUM(v) AS total FROM sd_tree GROUP BY 1 HAVING total > 10 ORDER BY 1", true),
    ("SELECT k AS kk, SUM(v) total FROM sd_tree GROUP BY kk HAVING total > 10 ORDER BY kk", true),
    ("SELECT k, SUM(v) AS total FROM sd_tree GROUP BY k HAVING total > 10 ORDER BY total LIMIT 1", true),
    ("SELECT k, SUM(v) AS total FROM sd_tree GROUP BY k HAVING total BETWEEN 10 AND 30 ORDER BY k", true),
    ("SELECT k, AVG(v) AS a FROM sd_tree GROUP BY k HAVING a > 4 ORDER BY k", true),
    // A join the gateway runs (notes are placed by their own id).
    ("SELECT o.country, SUM(n.y) AS total FROM sd_orders o JOIN sd_notes n ON n.order_id = o.id GROUP BY o.country HAVING total > 150 ORDER BY o.country", true),
    // Items computing on aggregates: idgate lifts the aggregates into a derived table, the
    // HAVING over the client's aliases goes with the items.
    ("SELECT k, SUM(v) * 2 AS total FROM sd_tree GROUP BY k HAVING total > 10", false),
    ("SELECT k, SUM(v) * 2 AS total FROM sd_tree GROUP BY k HAVING total > (SELECT AVG(v) FROM sd_tree) ORDER BY total", true),
    ("SELECT k, MAX(v) + 1 AS m, SUM(v) AS s FROM sd_tree GROUP BY k HAVING s > 10 AND m < 21 ORDER BY k", true),
    ("SELECT k, COUNT(*) + 0 AS n FROM sd_tree GROUP BY k HAVING n > 1 AND MIN(v) > 1 ORDER BY k", true),
    ("SELECT k, SUM(amount) / COUNT(*) AS mean FROM sd_tree GROUP BY k HAVING mean > 3 ORDER BY mean", true),
    ("SELECT k, SUM(v) * 2 AS v FROM sd_tree GROUP BY k HAVING v > 10 ORDER BY k", true),
    ("SELECT k, SUM(v) * 2 AS total FROM sd_tree GROUP BY k HAVING k > 1 ORDER BY k", true),
    ("SELECT k, SUM(v) * 2 AS total FROM sd_tree GROUP BY k HAVING total > 10 ORDER BY total DESC LIMIT 1", true),
    // ORDER BY / GROUP BY a scalar subquery (its value a constant for the whole statement).
    ("SELECT id FROM sd_tree ORDER BY (SELECT MAX(v) FROM sd_tree)", false),
    ("SELECT id FROM sd_tree ORDER BY (SELECT MAX(v) FROM sd_tree), id", true),
    ("SELECT id FROM sd_tree ORDER BY (SELECT MAX(v) FROM sd_tree) DESC, id DESC", true),
    ("SELECT id, v FROM sd_tree ORDER BY id, (SELECT MIN(v) FROM sd_tree)", true),
    ("SELECT k, SUM(v) FROM sd_tree GROUP BY k ORDER BY (SELECT MIN(v) FROM sd_tree), k", true),
    ("SELECT COUNT(*), SUM(v) FROM sd_tree GROUP BY (SELECT MAX(k) FROM sd_tree)", false),
    ("SELECT id FROM sd_tree WHERE v > 2 ORDER BY (SELECT MAX(v) FROM sd_tree) + id", true),
    // A condition on the broadcast table's column: every shard's matching orders.
    ("SELECT o.id FROM sd_orders o JOIN sd_countries c ON o.country = c.id WHERE c.id = 2", false),
    ("SELECT o.id, c.name FROM sd_orders o JOIN sd_countries c ON o.country = c.id WHERE c.id IN (1, 3) ORDER BY o.id", true),
    ("SELECT COUNT(*) FROM sd_orders o, sd_countries c WHERE o.country = c.id AND c.id = 2", false),
    // A recursive CTE reading no sharded table, joined to one; one over the broadcast table.
    ("WITH RECURSIVE n AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM n WHERE i < 4) SELECT t.id, t.v FROM sd_tree t JOIN n ON t.id = n.i", false),
    ("WITH RECURSIVE c AS (SELECT id, rate FROM sd_countries WHERE id = 1 UNION ALL SELECT s.id, s.rate FROM sd_countries s JOIN c ON s.id = c.id + 1) SELECT * FROM c", false),
];

/// The same statements prepared: their literals as parameters.
const PREPARED_READS: &[(&str, &[i64], bool)] = &[
    ("SELECT k, SUM(v) AS total FROM sd_tree GROUP BY k HAVING total > ?", &[10], false),
    ("SELECT k, SUM(v) * 2 AS total FROM sd_tree GROUP BY k HAVING total > ? ORDER BY k", &[10], true),
    ("SELECT k, SUM(v) AS total FROM sd_tree WHERE v > ? GROUP BY k HAVING total > (SELECT AVG(v) FROM sd_tree)", &[1], false),
    ("SELECT id FROM sd_tree WHERE id > ? ORDER BY (SELECT MAX(v) FROM sd_tree), id", &[2], true),
    ("SELECT o.id FROM sd_orders o JOIN sd_countries c ON o.country = c.id WHERE c.id = ?", &[2], false),
];

#[test]
fn having_aliases_and_subquery_sort_keys_answer_as_one_server() {
    let s = servers();
    let _turn = s.turn.lock().unwrap_or_else(|e| e.into_inner());
    let mut g = s.s.g.conn();
    reset(&mut g);
    let mut r = reference(s);
    let mut failures = Vec::new();
    let mut compared = 0;
    for mode in MODES {
        set_mode(&mut [&mut r, &mut g], mode);
        for (sql, ordered) in READS {
            let want = answer(&mut r, sql, None);
            let got = answer(&mut g, sql, None);
            if let Ok((_, rows)) = &want {
                assert!(!rows.is_empty(), "{sql}: the reference gives no rows");
                compared += 1;
            }
            if let Some(why) = same(*ordered, &want, &got) {
                failures.push(format!("[{mode}] {sql}\n{why}"));
            }
            let want = answer(&mut r, sql, Some(mysql::Params::Empty));
            let got = answer(&mut g, sql, Some(mysql::Params::Empty));
            if let Some(why) = same(*ordered, &want, &got) {
                failures.push(format!("[{mode}] prepared {sql}\n{why}"));
            }
        }
        for (sql, params, ordered) in PREPARED_READS {
            let p = || {
                mysql::Params::Positional(params.iter().map(|v| mysql::Value::Int(*v)).collect())
            };
            let want = answer(&mut r, sql, Some(p()));
            let got = answer(&mut g, sql, Some(p()));
            if let Some(why) = same(*ordered, &want, &got) {
                failures.push(format!("[{mode}] prepared {sql} {params:?}\n{why}"));
            }
        }
    }
    // Most shapes answer under both modes: rows were compared, not only errors.
    assert!(compared >= 2 * READS.len() - 6, "{compared} compared");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn recursive_ctes_over_a_sharded_table_are_refused_saying_why() {
    let s = servers();
    let _turn = s.turn.lock().unwrap_or_else(|e| e.into_inner());
    let mut g = s.s.g.conn();
    let mut r = reference(s);
    let shapes = [
        "WITH RECURSIVE r AS (SELECT id, parent FROM sd_tree WHERE id = 1 UNION ALL SELECT t.id, t.parent FROM sd_tree t JOIN r ON t.parent = r.id) SELECT * FROM r",
        "WITH RECURSIVE r AS (SELECT id, parent FROM sd_tree WHERE id = 1 UNION ALL SELECT sd_tree.id, sd_tree.parent FROM sd_tree JOIN r ON sd_tree.parent = r.id) SELECT * FROM r",
        "WITH RECURSIVE r (id, depth) AS (SELECT id, 0 FROM sd_tree WHERE parent IS NULL UNION ALL SELECT t.id, r.depth + 1 FROM r, sd_tree t WHERE t.parent = r.id) SELECT depth, COUNT(*) FROM r GROUP BY depth",
    ];
    for mode in MODES {
        set_mode(&mut [&mut r, &mut g], mode);
        for sql in shapes {
            // One server answers (the whole tree under the root)…
            let want = answer(&mut r, sql, None);
            assert!(
                want.as_ref().is_ok_and(|(_, rows)| rows.len() > 1),
                "{sql}: {want:?}"
            );
            // …idgate, which would recurse over each shard's rows alone, refuses.
            for prepared in [false, true] {
                let got = answer(&mut g, sql, prepared.then_some(mysql::Params::Empty));
                match got {
                    Err((1235, m))
                        if m.contains("recursive common table expression")
                            && m.contains("`sd_tree`")
                            && m.contains("configure `sd_tree` as broadcast") => {}
                    other => panic!("[{mode}] prepared={prepared} {sql}: {other:?}"),
                }
            }
            let (code, message) =
                common::answers::error_of(&mut g, &format!("EXPLAIN ROUTE {sql}"));
            assert_eq!(code, 1235, "{message}");
        }
    }
}

/// The writes refused into `sd_links` (`unique: per_shard`, two shards); EXPLAIN ROUTE of each
/// gets the same error as running it.
#[test]
fn explain_route_shows_per_shard_key_writes_refused() {
    let s = servers();
    let _turn = s.turn.lock().unwrap_or_else(|e| e.into_inner());
    let opts =
        mysql::OptsBuilder::from_opts(mysql::Opts::from_url(&s.s.g.url(common::DATABASE)).unwrap())
            .local_infile_handler(Some(mysql::LocalInfileHandler::new(|_, w| {
                w.write_all(b"3\t30\n")
            })));
    let mut g = mysql::Conn::new(opts).unwrap();
    reset(&mut g);
    let refused = [
        (
            "INSERT IGNORE INTO sd_links VALUES (3, 10)",
            "INSERT IGNORE into `sd_links`",
        ),
        (
            "REPLACE INTO sd_links VALUES (3, 10)",
            "REPLACE into `sd_links`",
        ),
        (
            "REPLACE INTO sd_links SET id = 3, code = 10",
            "REPLACE into `sd_links`",
        ),
        (
            "INSERT INTO sd_links VALUES (3, 10) ON DUPLICATE KEY UPDATE code = 11",
            "INSERT ... ON DUPLICATE KEY UPDATE into `sd_links`",
        ),
        (
            "INSERT IGNORE INTO sd_links SELECT id + 10, v FROM sd_tree",
            "INSERT IGNORE into `sd_links`",
        ),
        (
            "LOAD DATA LOCAL INFILE 'links.tsv' INTO TABLE sd_links",
            "LOAD DATA LOCAL into `sd_links`",
        ),
        (
            "LOAD DATA LOCAL INFILE 'links.tsv' REPLACE INTO TABLE sd_links",
            "LOAD DATA ... REPLACE into `sd_links`",
        ),
    ];
    for (sql, what) in refused {
        let run = common::answers::error_of(&mut g, sql);
        assert_eq!(run.0, 1235, "{sql}: {run:?}");
        assert!(run.1.contains(what), "{sql}: {run:?}");
        let explained = common::answers::error_of(&mut g, &format!("EXPLAIN ROUTE {sql}"));
        assert_eq!(explained, run, "EXPLAIN ROUTE {sql}");
    }
    // What runs is explained as before: a plain INSERT, a LOAD DATA into a table without
    // per-shard keys.
    for (sql, rows) in [
        ("INSERT INTO sd_links VALUES (3, 30)", 1),
        ("LOAD DATA LOCAL INFILE 'tree.tsv' INTO TABLE sd_tree", 2),
    ] {
        let route: Vec<(String, String, String)> = g.query(format!("EXPLAIN ROUTE {sql}")).unwrap();
        assert!(
            route.len() >= rows && route.iter().all(|r| r.0.starts_with("shard")),
            "{sql}: {route:?}"
        );
    }
    // Nothing was written.
    let n: Option<u64> = g.query_first("SELECT COUNT(*) FROM sd_links").unwrap();
    assert_eq!(n, Some(2));
}

/// With a default backend that is not one of the table's shards (it holds no copy of the
/// table), a prepared recursive CTE over the sharded table is refused at PREPARE with the
/// same 1235 as in the text protocol, not the default backend's "doesn't exist" (1146).
#[test]
fn a_prepared_recursive_cte_is_refused_where_the_default_backend_lacks_the_table() {
    let (_dbs, g) = common::three_shards(
        "tables:
  far_tree:
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard1, shard2]
",
    );
    let mut c = g.conn();
    c.query_drop("CREATE TABLE far_tree (id INT PRIMARY KEY, parent INT)")
        .unwrap();
    c.query_drop("INSERT INTO far_tree VALUES (1, NULL), (2, 1), (3, 2), (4, 1)")
        .unwrap();
    let sql = "WITH RECURSIVE r AS (SELECT id, parent FROM far_tree WHERE id = 1 UNION ALL \
               SELECT x.id, x.parent FROM far_tree x JOIN r ON x.parent = r.id) SELECT id FROM r";
    for prepared in [false, true] {
        let got = answer(&mut c, sql, prepared.then_some(mysql::Params::Empty));
        match got {
            Err((1235, m)) if m.contains("recursive common table expression") => {}
            other => panic!("prepared={prepared}: {other:?}"),
        }
    }
    // The session goes on.
    let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM far_tree").unwrap();
    assert_eq!(n, Some(4));
}
