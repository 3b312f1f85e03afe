//! `IDGATE MIGRATE`: a live table copied onto a new placement from a consistent snapshot and
//! kept up to date from its binlog while the application writes, against real MariaDB servers
//! with binlogs; CANCEL leaving everything as it was; a job surviving a killed idgate; and every
//! bad request refused with a clear error and nothing changed.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::migration::{admin_idgate, binlog_db, dump, status, wait_caught_up};
use common::{direct, start_db, Idgate, MariaDb};
use mysql::prelude::Queryable;

const GENERATORS: &str = "generators:\n  acc_seq:\n    kind: segment\n    step: 100\n";

const ACCOUNTS: &str = "CREATE TABLE accounts (\
    id BIGINT AUTO_INCREMENT PRIMARY KEY, \
    name VARCHAR(40) CHARACTER SET latin1, \
    note TEXT, \
    data VARBINARY(16), \
    amount DECIMAL(12,2), \
    ts TIMESTAMP(6) NULL, \
    flags SET('a','b','c'), \
    kind ENUM('x','y'), \
    u INT UNSIGNED, \
    tiny TINYINT UNSIGNED, \
    created DATETIME)";

/// `n` rows with every kind of value, some NULL.
fn fill(c: &mut mysql::Conn, n: u64) {
    c.query_drop(ACCOUNTS).unwrap();
    c.query_drop(format!(
        "INSERT INTO accounts (name, note, data, amount, ts, flags, kind, u, tiny, created) \
         SELECT CONCAT('n', seq, IF(seq % 7 = 0, _latin1 X'E9', '')), \
                IF(seq % 5 = 0, NULL, CONCAT('ñote ', seq, ' ✓')), \
                UNHEX(LPAD(HEX(seq), 8, '0')), seq / 100, \
                FROM_UNIXTIME(1700000000 + seq + 0.25), \
                ELT(1 + seq % 4, '', 'a', 'b,c', 'a,b,c'), ELT(1 + seq % 2, 'x', 'y'), \
                4000000000 - seq, 200 + seq % 50, '2024-02-29 12:34:56' \
         FROM seq_1_to_{n}"
    ))
    .unwrap();
}

const COLUMNS: &str = "id, HEX(name), note, HEX(data), amount, ts, flags, kind, u, tiny, created";

/// The source's rows, and each target shard's rows, checked to be where `mod` puts them.
fn assert_same_rows(source: &MariaDb, shards: &[&MariaDb]) {
    let mut src = direct(source);
    let want = dump(
        &mut src,
        &format!("SELECT {COLUMNS} FROM accounts ORDER BY id"),
    );
    let mut got = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        let mut c = direct(s);
        let rows = dump(
            &mut c,
            &format!("SELECT {COLUMNS} FROM accounts ORDER BY id"),
        );
        for r in &rows {
            let id: u64 = r[0].parse().unwrap();
            assert_eq!(id as usize % shards.len(), i, "row {id} on the wrong shard");
        }
        got.extend(rows);
    }
    got.sort_by_key(|r| r[0].parse::<u64>().unwrap());
    assert_eq!(got.len(), want.len(), "row counts differ");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
}

/// Inserts, updates and deletes through idgate until told to stop; counts what it did.
fn writer(g: &Idgate, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    let mut c = g.conn();
    std::thread::spawn(move || {
        let mut k: u64 = 0;
        while !stop.load(Ordering::Relaxed) {
            k += 1;
            c.query_drop(format!(
                "INSERT INTO accounts (name, note, amount, ts, flags, kind, u, tiny) VALUES \
                 ('w{k}', 'written during the move', {k}.5, NOW(6), 'b', 'y', {k}, 7)"
            ))
            .unwrap();
            let id = 1 + (k * 7919) % 90_000;
            c.query_drop(format!(
                "UPDATE accounts SET amount = amount + 1, note = CONCAT('upd ', {k}), \
                 flags = 'a,c' WHERE id = {id}"
            ))
            .unwrap();
            if k.is_multiple_of(3) {
                c.query_drop(format!("DELETE FROM accounts WHERE id = {}", id + 1))
                    .unwrap();
            }
            // A change of the primary key moves the row.
            if k.is_multiple_of(50) {
                c.query_drop(format!(
                    "UPDATE IGNORE accounts SET id = id + 1000000 WHERE id = {}",
                    id + 2
                ))
                .unwrap();
            }
            done.fetch_add(1, Ordering::Relaxed);
        }
    })
}

/// `accounts` with `rows` rows on `shard0` (with a binlog), `shard1` and `shard2` (with binlogs
/// when the test streams back from them), and an admin idgate over the three.
fn three_servers(rows: u64, binlog_targets: bool) -> (Vec<MariaDb>, Idgate) {
    let target = || {
        if binlog_targets {
            binlog_db()
        } else {
            start_db()
        }
    };
    let dbs = vec![binlog_db(), target(), target()];
    fill(&mut direct(&dbs[0]), rows);
    let g = {
        let backends = [
            ("shard0", &dbs[0]),
            ("shard1", &dbs[1]),
            ("shard2", &dbs[2]),
        ];
        admin_idgate(&backends, GENERATORS)
    };
    (dbs, g)
}

/// Runs `IDGATE MIGRATE <what> accounts`, again while the new placement is measured behind
/// (a writer keeps it busy); returns the OK packet's info.
fn step(g: &Idgate, admin: &mut mysql::Conn, what: &str) -> String {
    loop {
        match admin.query_drop(format!("IDGATE MIGRATE {what} accounts")) {
            Ok(()) => return admin.info_str().to_string(),
            Err(e) if e.to_string().contains("behind") => {
                std::thread::sleep(Duration::from_millis(500))
            }
            Err(e) => panic!("{what}: {e}; idgate's log:\n{}", g.log()),
        }
    }
}

fn start_stmt(shards: &str) -> String {
    format!(
        "IDGATE MIGRATE START accounts TO '{{generator: acc_seq, sharding: {{columns: [id], \
         algorithm: mod, shards: [{shards}]}}}}'"
    )
}

#[test]
fn a_live_table_is_copied_onto_shards_and_kept_up_to_date_while_the_application_writes() {
    let (dbs, g) = three_servers(100_000, false);
    let (db0, db1, db2) = (&dbs[0], &dbs[1], &dbs[2]);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let w = writer(&g, stop.clone(), done.clone());
    std::thread::sleep(Duration::from_millis(300));

    let mut admin = g.conn();
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    let s = status(&mut admin, "accounts").unwrap();
    assert!(
        ["copying", "catching_up", "ready"].contains(&s.phase.as_str()),
        "{s:?}"
    );
    // Writes go on through the copy and the catch-up.
    let until = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let s = status(&mut admin, "accounts").unwrap();
        assert!(s.phase != "failed", "{s:?}");
        if s.phase == "ready" {
            break;
        }
        assert!(std::time::Instant::now() < until, "never ready: {s:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    w.join().unwrap();
    assert!(done.load(Ordering::Relaxed) > 20, "the writer wrote");

    let s = wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    assert!(s.rows_copied >= 90_000, "{s:?}");
    // Copied: all of it, nothing left of the copy.
    assert_eq!((s.percent, s.eta_seconds), (Some(100), Some(0)), "{s:?}");
    assert_same_rows(db0, &[db1, db2]);
    // VERIFY agrees, and finds a row changed behind idgate's back on the new placement.
    let diffs: Vec<mysql::Row> = admin.query("IDGATE MIGRATE VERIFY accounts").unwrap();
    assert!(diffs.is_empty(), "{diffs:?}");
    let mut on2 = direct(db2);
    let victim: u64 = on2
        .query_first("SELECT id FROM accounts WHERE id > 50000 ORDER BY id LIMIT 1")
        .unwrap()
        .unwrap();
    on2.query_drop(format!(
        "UPDATE accounts SET note = 'tampered' WHERE id = {victim}"
    ))
    .unwrap();
    let diffs: Vec<(String, String, String, u64, u64)> =
        admin.query("IDGATE MIGRATE VERIFY accounts").unwrap();
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    let (source, first, last, _, _) = &diffs[0];
    assert_eq!(source, "shard0");
    let (first, last): (u64, u64) = (first.parse().unwrap(), last.parse().unwrap());
    assert!(first <= victim && victim <= last, "{diffs:?}");

    // Until the switch the application still reads and writes the table where it was.
    let n: u64 = g
        .conn()
        .query_first("SELECT COUNT(*) FROM accounts")
        .unwrap()
        .unwrap();
    let m: u64 = direct(db0)
        .query_first("SELECT COUNT(*) FROM accounts")
        .unwrap()
        .unwrap();
    assert_eq!(n, m);
    // SHOW IDGATE MIGRATIONS lists it too.
    let listed: Vec<mysql::Row> = admin.query("SHOW IDGATE MIGRATIONS").unwrap();
    assert_eq!(listed.len(), 1);
}

/// Rows the writers of the VERIFY test leave alone: the test changes them on a new shard.
fn protected(id: u64) -> bool {
    id % 1000 == 500
}

/// As [`writer`], over every key of the `rows` filled ones (from a point `seed` sets) but the
/// [`protected`] ones.
fn spread_writer(
    g: &Idgate,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    seed: u64,
    rows: u64,
) -> std::thread::JoinHandle<()> {
    let mut c = g.conn();
    std::thread::spawn(move || {
        let mut k: u64 = 0;
        while !stop.load(Ordering::Relaxed) {
            k += 1;
            c.query_drop(format!(
                "INSERT INTO accounts (name, note, amount, ts, flags, kind, u, tiny) VALUES \
                 ('w{seed}-{k}', 'written during verify', {k}.5, NOW(6), 'b', 'y', {k}, {seed})"
            ))
            .unwrap();
            let id = 1 + (k * 7919 + seed * 104_729) % rows;
            if !(id..=id + 2).any(protected) {
                c.query_drop(format!(
                    "UPDATE accounts SET amount = amount + 1, note = CONCAT('upd ', {seed}, '-', \
                     {k}), flags = 'a,c' WHERE id = {id}"
                ))
                .unwrap();
                if k.is_multiple_of(3) {
                    c.query_drop(format!("DELETE FROM accounts WHERE id = {}", id + 1))
                        .unwrap();
                }
                if k.is_multiple_of(50) {
                    c.query_drop(format!(
                        "UPDATE IGNORE accounts SET id = id + 1000000 WHERE id = {}",
                        id + 2
                    ))
                    .unwrap();
                }
            }
            done.fetch_add(1, Ordering::Relaxed);
        }
    })
}

type Diff = (String, String, String, u64, u64);

/// `IDGATE MIGRATE VERIFY accounts` while the writers go on (they must be writing).
fn verify_under_load(g: &Idgate, admin: &mut mysql::Conn, done: &AtomicU64) -> Vec<Diff> {
    let before = done.load(Ordering::Relaxed);
    let diffs: Vec<Diff> = admin
        .query("IDGATE MIGRATE VERIFY accounts")
        .unwrap_or_else(|e| panic!("VERIFY: {e}; idgate's log:\n{}", g.log()));
    assert!(
        done.load(Ordering::Relaxed) > before + 20,
        "the writers wrote during VERIFY"
    );
    diffs
}

#[test]
fn verify_under_writers_over_every_key_answers_only_the_rows_changed_on_a_new_shard() {
    const ROWS: u64 = 20_000;
    let (dbs, g) = three_servers(ROWS, false);
    let (db0, db1, db2) = (&dbs[0], &dbs[1], &dbs[2]);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (1..=4)
        .map(|seed| spread_writer(&g, stop.clone(), done.clone(), seed, ROWS))
        .collect();
    let mut admin = g.conn();
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(120);
    while status(&mut admin, "accounts").unwrap().phase != "ready" {
        assert!(std::time::Instant::now() < until, "never ready");
        std::thread::sleep(Duration::from_millis(200));
    }

    // The move is right: VERIFY, run again and again while every key is being written, finds
    // nothing.
    for run in 0..3 {
        let diffs = verify_under_load(&g, &mut admin, &done);
        assert!(diffs.is_empty(), "VERIFY run {run} under writes: {diffs:?}");
    }

    // Behind idgate's back, on the new shards: a row changed, a row gone, a row that the
    // source never had (past every key the source has).
    let (changed, gone, extra) = (5_500u64, 12_500u64, 9_000_000_001u64);
    direct(db1)
        .query_drop(format!(
            "UPDATE accounts SET note = 'tampered' WHERE id = {changed}"
        ))
        .unwrap();
    direct(db1)
        .query_drop(format!("DELETE FROM accounts WHERE id = {gone}"))
        .unwrap();
    direct(db2)
        .query_drop(format!(
            "INSERT INTO accounts (id, name) VALUES ({extra}, 'not on the source')"
        ))
        .unwrap();
    let check = |diffs: &[Diff], when: &str| {
        assert_eq!(diffs.len(), 3, "{when}: {diffs:?}");
        let keys = |d: &Diff| -> (u64, Option<u64>) { (d.1.parse().unwrap(), d.2.parse().ok()) };
        let holds = |d: &Diff, id: u64| {
            let (first, last) = keys(d);
            first <= id && last.is_none_or(|l| id <= l)
        };
        let of = |id: u64| {
            diffs
                .iter()
                .find(|d| d.0 == "shard0" && holds(d, id))
                .unwrap_or_else(|| panic!("{when}: no range holds {id}: {diffs:?}"))
        };
        let d = of(changed);
        assert_eq!(d.3, d.4, "{when}: the changed row is on both sides: {d:?}");
        let d = of(gone);
        assert_eq!(d.3, d.4 + 1, "{when}: one row missing: {d:?}");
        // The last range reaches past the largest key.
        let d = diffs.iter().max_by_key(|d| keys(d).0).unwrap();
        assert_eq!(d.4, d.3 + 1, "{when}: one row too many: {d:?}");
    };
    for run in 0..2 {
        let diffs = verify_under_load(&g, &mut admin, &done);
        check(&diffs, &format!("VERIFY run {run} under writes"));
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    let diffs: Vec<Diff> = admin.query("IDGATE MIGRATE VERIFY accounts").unwrap();
    check(&diffs, "VERIFY after the writes");
    // Without the three rows, the shards hold exactly the source's rows.
    let untampered = format!("id NOT IN ({changed}, {gone}, {extra})");
    let mut src = direct(db0);
    let want = dump(
        &mut src,
        &format!("SELECT {COLUMNS} FROM accounts WHERE {untampered} ORDER BY id"),
    );
    let mut got = Vec::new();
    for s in [db1, db2] {
        got.extend(dump(
            &mut direct(s),
            &format!("SELECT {COLUMNS} FROM accounts WHERE {untampered} ORDER BY id"),
        ));
    }
    got.sort_by_key(|r| r[0].parse::<u64>().unwrap());
    assert_eq!(got.len(), want.len(), "row counts differ");
    assert!(got == want, "the shards' rows differ from the source's");
}

#[test]
fn cancel_leaves_everything_as_it_was_and_a_new_start_works() {
    let (dbs, g) = three_servers(5_000, false);
    let (db0, db1, db2) = (&dbs[0], &dbs[1], &dbs[2]);
    let mut admin = g.conn();
    // shard1 holds an empty `accounts` already: it is emptied again, not dropped.
    direct(db1).query_drop(ACCOUNTS).unwrap();
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    admin.query_drop("IDGATE MIGRATE CANCEL accounts").unwrap();
    assert_eq!(status(&mut admin, "accounts").unwrap().phase, "cancelled");
    let left: u64 = direct(db1)
        .query_first("SELECT COUNT(*) FROM accounts")
        .unwrap()
        .unwrap();
    assert_eq!(left, 0);
    let tables: Vec<String> = direct(db2).query("SHOW TABLES LIKE 'accounts'").unwrap();
    assert!(tables.is_empty(), "the table idgate created is dropped");
    let n: u64 = direct(db0)
        .query_first("SELECT COUNT(*) FROM accounts")
        .unwrap()
        .unwrap();
    assert_eq!(n, 5_000, "the source is untouched");
    // A cancelled job can be started again.
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    assert_same_rows(db0, &[db1, db2]);
}

#[test]
fn a_job_survives_a_killed_idgate_and_is_taken_over_where_it_was() {
    let (dbs, g) = three_servers(100_000, false);
    let (db0, db1, db2) = (&dbs[0], &dbs[1], &dbs[2]);
    let mut admin = g.conn();
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    // Killed in the middle of the copy.
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while status(&mut admin, "accounts").unwrap().rows_copied < 10_000 {
        assert!(std::time::Instant::now() < until);
        std::thread::sleep(Duration::from_millis(50));
    }
    g.kill();
    // Changes made while no idgate runs are applied when the job goes on.
    let mut src = direct(db0);
    src.query_drop("DELETE FROM accounts WHERE id % 10 = 3")
        .unwrap();
    src.query_drop("UPDATE accounts SET note = 'after the kill' WHERE id % 10 = 4")
        .unwrap();
    g.restart();
    let mut admin = g.conn();
    let s = wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(90));
    assert_eq!(s.last_error, None);
    assert_same_rows(db0, &[db1, db2]);
}

fn refusal(c: &mut mysql::Conn, sql: &str) -> (u16, String) {
    match c.query_drop(sql) {
        Err(mysql::Error::MySqlError(e)) => (e.code, e.message),
        other => panic!("{sql}: expected an error, got {other:?}"),
    }
}

#[test]
fn bad_requests_get_clear_errors_and_change_nothing() {
    let (db0, db1) = (binlog_db(), start_db());
    let plain = start_db(); // no binlog
    fill(&mut direct(&db0), 100);
    direct(&db0)
        .query_drop("CREATE TABLE people (id BIGINT PRIMARY KEY, email VARCHAR(64), UNIQUE KEY by_email (email))")
        .unwrap();
    direct(&plain)
        .query_drop("CREATE TABLE ledger (id BIGINT PRIMARY KEY)")
        .unwrap();
    let g = admin_idgate(
        &[("shard0", &db0), ("shard1", &db1), ("plain", &plain)],
        &format!(
            "{GENERATORS}tables:\n  ledger:\n    sharding:\n      columns: [id]\n      \
             algorithm: mod\n      shards: [plain]\n"
        ),
    );
    let mut admin = g.conn();
    let (code, msg) = refusal(&mut admin, "IDGATE MIGRATE START nosuch TO '{}'");
    assert_eq!(code, 1146, "{msg}");
    let (code, msg) = refusal(
        &mut admin,
        "IDGATE MIGRATE START accounts TO '{sharding: {columns: [id], algorithm: mod, shards: [nowhere]}}'",
    );
    assert_eq!(code, 1105);
    assert!(msg.contains("nowhere"), "{msg}");
    let (_, msg) = refusal(
        &mut admin,
        "IDGATE MIGRATE START accounts TO '{sharding: [}'",
    );
    assert!(msg.contains("not a valid `tables:` entry"), "{msg}");
    let (code, msg) = refusal(&mut admin, "IDGATE MIGRATE START accounts");
    assert_eq!(code, 1064, "{msg}");
    let (_, msg) = refusal(
        &mut admin,
        "IDGATE MIGRATE START people TO '{sharding: {columns: [id], algorithm: mod, shards: [shard1]}}'",
    );
    assert!(
        msg.contains("by_email") && msg.contains("unique: per_shard"),
        "{msg}"
    );
    // A source without a row-based binlog.
    let (_, msg) = refusal(
        &mut admin,
        "IDGATE MIGRATE START ledger TO '{sharding: {columns: [id], algorithm: mod, shards: [shard1]}}'",
    );
    assert!(msg.contains("log_bin"), "{msg}");
    // A second START, and steps this version does not have.
    admin
        .query_drop(
            "IDGATE MIGRATE START accounts TO '{generator: acc_seq, sharding: {columns: [id], algorithm: mod, shards: [shard1]}}'",
        )
        .unwrap();
    let (_, msg) = refusal(
        &mut admin,
        "IDGATE MIGRATE START accounts TO '{sharding: {columns: [id], algorithm: mod, shards: [shard1]}}'",
    );
    assert!(msg.contains("already"), "{msg}");
    // The phase is `copying` until a second lag measure, a second or more after START.
    let (_, msg) = refusal(&mut admin, "IDGATE MIGRATE SWITCH accounts");
    assert!(
        msg.contains("not ready") && msg.contains("unchanged"),
        "{msg}"
    );
    let (_, msg) = refusal(&mut admin, "IDGATE MIGRATE REVERSE accounts");
    assert!(msg.contains("REVERSE follows SWITCH"), "{msg}");
    let (_, msg) = refusal(&mut admin, "IDGATE MIGRATE COMPLETE accounts");
    assert!(msg.contains("COMPLETE follows SWITCH"), "{msg}");
    let (_, msg) = refusal(&mut admin, "IDGATE MIGRATE CANCEL people");
    assert!(msg.contains("no migration"), "{msg}");
    // Others are told what grants the right.
    let url = format!("mysql://nopw:@127.0.0.1:{}/{}", g.port, common::DATABASE);
    let mut other = mysql::Conn::new(mysql::Opts::from_url(&url).unwrap()).unwrap();
    let (code, _) = refusal(&mut other, "IDGATE MIGRATE STATUS");
    assert_eq!(code, 1227);
    // Nothing was created for the refused requests.
    let t: Vec<String> = direct(&db1).query("SHOW TABLES LIKE 'people'").unwrap();
    assert!(t.is_empty());
    admin.query_drop("IDGATE MIGRATE CANCEL accounts").unwrap();
}

/// Rows of `orders` joined to their `items`, read through idgate.
fn joined(c: &mut mysql::Conn) -> Vec<Vec<String>> {
    dump(
        c,
        "SELECT o.id, o.v, i.id, i.qty FROM orders o JOIN items i ON i.order_id = o.id \
         ORDER BY i.id",
    )
}

#[test]
fn a_split_from_two_shards_to_four_copies_only_the_rows_that_move_and_colocated_tables_move_along()
{
    let dbs: Vec<MariaDb> = (0..2)
        .map(|_| binlog_db())
        .chain((0..2).map(|_| start_db()))
        .collect();
    for db in &dbs[..2] {
        direct(db)
            .query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, v INT, note VARCHAR(20))")
            .unwrap();
        direct(db)
            .query_drop("CREATE TABLE items (id BIGINT PRIMARY KEY, order_id BIGINT, qty INT)")
            .unwrap();
    }
    // `items` is placed alike `orders` (by its order): START of one moves both.
    let tables = format!(
        "{GENERATORS}tables:\n  orders:\n    generator: acc_seq\n    sharding:\n      columns: [id]\n      \
         algorithm: mod\n      shards: [shard1, shard2]\n  items:\n    generator: acc_seq\n    \
         sharding:\n      columns: [order_id]\n      algorithm: mod\n      shards: [shard1, shard2]\n"
    );
    let names = ["shard1", "shard2", "shard3", "shard4"];
    let backends: Vec<(&str, &MariaDb)> = names.iter().copied().zip(dbs.iter()).collect();
    let g = admin_idgate(&backends, &tables);
    let mut app = g.conn();
    for k in 0..40 {
        let values: Vec<String> = (0..100)
            .map(|i| format!("({}, 'r{k}-{i}')", k * 100 + i))
            .collect();
        app.query_drop(format!(
            "INSERT INTO orders (v, note) VALUES {}",
            values.join(", ")
        ))
        .unwrap();
    }
    app.query_drop("INSERT INTO items (order_id, qty) SELECT id, v FROM orders WHERE id % 3 = 0")
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let w = {
        let mut c = g.conn();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                k += 1;
                c.query_drop(format!("INSERT INTO orders (v, note) VALUES ({k}, 'live')"))
                    .unwrap();
                let id: u64 = c.last_insert_id();
                c.query_drop(format!(
                    "INSERT INTO items (order_id, qty) VALUES ({id}, {k})"
                ))
                .unwrap();
                c.query_drop(format!(
                    "UPDATE items SET qty = qty + 1 WHERE order_id = {}",
                    id - k % 5
                ))
                .unwrap();
                c.query_drop(format!(
                    "UPDATE orders SET v = v + 1 WHERE id = {}",
                    id - k % 7
                ))
                .unwrap();
                if k.is_multiple_of(4) {
                    c.query_drop(format!("DELETE FROM orders WHERE id = {}", id - 13))
                        .unwrap();
                }
            }
        })
    };
    let mut admin = g.conn();
    admin
        .query_drop(
            "IDGATE MIGRATE START orders TO '{generator: acc_seq, sharding: {columns: [id], \
             algorithm: mod, shards: [shard1, shard2, shard3, shard4]}}'",
        )
        .unwrap();
    assert!(
        admin.info_str().contains(".items`, placed alike"),
        "{}",
        admin.info_str()
    );
    std::thread::sleep(Duration::from_secs(3));
    // VERIFY of both tables, from two sources each, while the writer goes on: nothing differs.
    for t in ["orders", "items"] {
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while !matches!(
            status(&mut admin, t).unwrap().phase.as_str(),
            "catching_up" | "ready"
        ) {
            assert!(std::time::Instant::now() < until, "{t} never copied");
            std::thread::sleep(Duration::from_millis(200));
        }
        let diffs: Vec<mysql::Row> = admin.query(format!("IDGATE MIGRATE VERIFY {t}")).unwrap();
        assert!(diffs.is_empty(), "{t}: {diffs:?}");
    }
    stop.store(true, Ordering::Relaxed);
    w.join().unwrap();
    let s = wait_caught_up(&g, &mut admin, "orders", Duration::from_secs(60));
    wait_caught_up(&g, &mut admin, "items", Duration::from_secs(60));
    let items = |db: &MariaDb, filter: &str| {
        dump(
            &mut direct(db),
            &format!("SELECT id, order_id, qty FROM items WHERE {filter} ORDER BY id"),
        )
    };
    assert_eq!(items(&dbs[2], "TRUE"), items(&dbs[0], "order_id % 4 = 2"));
    assert_eq!(items(&dbs[3], "TRUE"), items(&dbs[1], "order_id % 4 = 3"));
    assert!(!items(&dbs[3], "TRUE").is_empty());
    let joined_before = joined(&mut app);
    assert!(joined_before.len() > 1000, "{}", joined_before.len());
    // Only the rows whose shard changes were copied: those of shard1 and shard2 with id % 4 in
    // {2, 3}.
    let all = |db: &MariaDb, filter: &str| {
        dump(
            &mut direct(db),
            &format!("SELECT id, v, note FROM orders WHERE {filter} ORDER BY id"),
        )
    };
    let moving = all(&dbs[0], "id % 4 = 2").len() + all(&dbs[1], "id % 4 = 3").len();
    assert!(
        s.rows_copied as usize <= moving + 200,
        "{s:?}, {moving} rows move"
    );
    assert_eq!(all(&dbs[2], "TRUE"), all(&dbs[0], "id % 4 = 2"));
    assert_eq!(all(&dbs[3], "TRUE"), all(&dbs[1], "id % 4 = 3"));
    assert!(!all(&dbs[2], "TRUE").is_empty());

    // After the switch each row is read from its new shard; COMPLETE deletes what moved away.
    let before: u64 = app
        .query_first("SELECT COUNT(*) FROM orders")
        .unwrap()
        .unwrap();
    admin.query_drop("IDGATE MIGRATE SWITCH orders").unwrap();
    assert!(
        admin.info_str().contains("together with `"),
        "{}",
        admin.info_str()
    );
    // Until COMPLETE the old shards keep the moved rows, fenced, in the renamed table; a view
    // named as the table shows the rows each keeps.
    let err = direct(&dbs[0])
        .query_drop("UPDATE orders_idgate_all SET v = 0 WHERE id % 4 = 2")
        .unwrap_err();
    assert!(err.to_string().contains("idgate moved this row"), "{err}");
    let err = direct(&dbs[1])
        .query_drop("UPDATE items_idgate_all SET qty = 0 WHERE order_id % 4 = 3")
        .unwrap_err();
    assert!(err.to_string().contains("idgate moved this row"), "{err}");
    let err = direct(&dbs[0])
        .query_drop("INSERT INTO orders (id, v) VALUES (1000002, 1)")
        .unwrap_err();
    assert!(err.to_string().contains("idgate moved this row"), "{err}");
    assert!(all(&dbs[0], "id % 4 = 2").is_empty());
    // Both switched at once: their join still runs per shard. The rows that moved off shard1
    // and shard2 stay there until COMPLETE, unseen.
    assert_eq!(joined(&mut app), joined_before);
    let between: u64 = app
        .query_first("SELECT COUNT(*) FROM orders")
        .unwrap()
        .unwrap();
    assert_eq!(between, before);
    let oid = joined_before[0][0].clone();
    let one = dump(
        &mut app,
        &format!(
            "SELECT o.id, o.v, i.id, i.qty FROM orders o JOIN items i ON i.order_id = o.id \
             WHERE o.id = {oid} ORDER BY i.id"
        ),
    );
    let want: Vec<Vec<String>> = joined_before
        .iter()
        .filter(|r| r[0] == oid)
        .cloned()
        .collect();
    assert_eq!(one, want);
    direct(&dbs[0])
        .query_drop("UPDATE orders SET v = v WHERE id % 4 = 0")
        .unwrap();
    admin.query_drop("IDGATE MIGRATE COMPLETE orders").unwrap();
    assert!(
        admin.info_str().contains("moved rows deleted"),
        "{}",
        admin.info_str()
    );
    assert_eq!(status(&mut admin, "items").unwrap().phase, "complete");
    for (i, db) in dbs.iter().enumerate() {
        let off = all(db, &format!("id % 4 <> {i}"));
        assert!(
            off.is_empty(),
            "shard{} keeps rows of others: {off:?}",
            i + 1
        );
        let off = items(db, &format!("order_id % 4 <> {i}"));
        assert!(off.is_empty(), "shard{} keeps items of others", i + 1);
        let left: Vec<String> = direct(db).query("SHOW TABLES LIKE '%idgate%'").unwrap();
        assert!(left.is_empty(), "{left:?}");
    }
    let after: u64 = app
        .query_first("SELECT COUNT(*) FROM orders")
        .unwrap()
        .unwrap();
    assert_eq!(after, before);
    app.query_drop("INSERT INTO orders (v, note) VALUES (1, 'after')")
        .unwrap();
    let id = app.last_insert_id();
    assert_eq!(all(&dbs[(id % 4) as usize], &format!("id = {id}")).len(), 1);
}

/// What the application was told: each acknowledged row's note, `None` once deleted.
type Model = std::collections::BTreeMap<u64, Option<String>>;

/// Inserts, updates and deletes through idgate, recording every acknowledged change; any error
/// is kept for the test to show.
fn modelled_writer(
    g: &Idgate,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(Model, Vec<String>)> {
    modelled_writer_on(g, stop, false)
}

/// [`modelled_writer`]; `prepared`: through statements prepared on the server (once, before
/// any move, as a driver's statement cache keeps them). An UPDATE or DELETE that changes no
/// row counts as an error: each writer changes only rows it was told exist.
fn modelled_writer_on(
    g: &Idgate,
    stop: Arc<AtomicBool>,
    prepared: bool,
) -> std::thread::JoinHandle<(Model, Vec<String>)> {
    let mut c = g.conn();
    std::thread::spawn(move || {
        let run = |c: &mut mysql::Conn, sql: &str, params: Vec<mysql::Value>| {
            let r = if prepared {
                c.exec_drop(sql, params)
            } else {
                let mut text = sql.to_string();
                for p in &params {
                    text = text.replacen('?', &p.as_sql(false), 1);
                }
                c.query_drop(text)
            };
            r.map(|()| c.affected_rows()).map_err(|e| e.to_string())
        };
        let mut model = Model::new();
        let mut errors = Vec::new();
        let mut k: u64 = 0;
        while !stop.load(Ordering::Relaxed) {
            k += 1;
            let note = format!("w{k}");
            let insert = "INSERT INTO accounts (name, note, u) VALUES ('live', ?, ?)";
            match run(&mut c, insert, vec![note.clone().into(), k.into()]) {
                Ok(_) => {
                    model.insert(c.last_insert_id(), Some(note));
                }
                Err(e) => errors.push(e),
            }
            let ids: Vec<u64> = model
                .iter()
                .filter(|(_, v)| v.is_some())
                .map(|(id, _)| *id)
                .collect();
            if ids.len() > 10 {
                let id = ids[(k as usize * 7919) % ids.len()];
                let note = format!("u{k}");
                let update = "UPDATE accounts SET note = ? WHERE id = ?";
                match run(&mut c, update, vec![note.clone().into(), id.into()]) {
                    Ok(1) => {
                        model.insert(id, Some(note));
                    }
                    Ok(n) => errors.push(format!("the UPDATE of row {id} changed {n} rows")),
                    Err(e) => errors.push(e),
                }
                if k.is_multiple_of(5) {
                    let id = ids[(k as usize * 104_729) % ids.len()];
                    match run(&mut c, "DELETE FROM accounts WHERE id = ?", vec![id.into()]) {
                        Ok(1) => {
                            model.insert(id, None);
                        }
                        Ok(n) => errors.push(format!("the DELETE of row {id} removed {n} rows")),
                        Err(e) => errors.push(e),
                    }
                }
            }
        }
        (model, errors)
    })
}

#[test]
fn switch_moves_the_table_with_statements_held_and_nothing_lost_then_complete_ends_it() {
    let dbs = [binlog_db(), start_db(), start_db()];
    fill(&mut direct(&dbs[0]), 20_000);
    let admin_port = common::free_port().unwrap();
    let g = admin_idgate(
        &[
            ("shard0", &dbs[0]),
            ("shard1", &dbs[1]),
            ("shard2", &dbs[2]),
        ],
        &format!("{GENERATORS}admin:\n  listen: 127.0.0.1:{admin_port}\n"),
    );
    let (db0, db1, db2) = (&dbs[0], &dbs[1], &dbs[2]);
    let stop = Arc::new(AtomicBool::new(false));
    let w = modelled_writer(&g, stop.clone());
    // Statements prepared on the server before the move: idgate runs them where the table is
    // once it has moved.
    let wp = modelled_writer_on(&g, stop.clone(), true);
    let mut admin = g.conn();
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    // The writers go on through the switch.
    let info = step(&g, &mut admin, "SWITCH");
    let held_ms: u64 = info
        .split("held for ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{info}"));
    assert!(held_ms < 5_000, "writes held {held_ms} ms");
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let (mut model, errors) = w.join().unwrap();
    assert!(errors.is_empty(), "the application saw errors: {errors:?}");
    let (prepared_model, errors) = wp.join().unwrap();
    assert!(
        errors.is_empty(),
        "the prepared statements' client saw errors: {errors:?}"
    );
    assert!(prepared_model.keys().all(|id| !model.contains_key(id)));
    model.extend(prepared_model);
    assert_eq!(status(&mut admin, "accounts").unwrap().phase, "switched");

    // Every acknowledged write is on the new placement, once, on its shard.
    let rows = |db: &MariaDb| {
        dump(
            &mut direct(db),
            "SELECT id, note FROM accounts WHERE name = 'live' ORDER BY id",
        )
    };
    let mut got = std::collections::BTreeMap::new();
    for (i, db) in [&db1, &db2].iter().enumerate() {
        for r in rows(db) {
            let id: u64 = r[0].parse().unwrap();
            assert_eq!(id as usize % 2, i, "row {id} on the wrong shard");
            assert!(got.insert(id, r[1].clone()).is_none(), "row {id} twice");
        }
    }
    let want: std::collections::BTreeMap<u64, String> = model
        .iter()
        .filter_map(|(id, v)| Some((*id, v.clone()?)))
        .collect();
    assert_eq!(
        got, want,
        "the new placement differs from what the application was told"
    );
    // Ids after the switch come from the generator, above every id the source handed out.
    let n: u64 = g
        .conn()
        .query_first("SELECT COUNT(*) FROM accounts WHERE name = 'live'")
        .unwrap()
        .unwrap();
    assert_eq!(
        n as usize,
        want.len(),
        "reads through idgate see the new placement"
    );

    // The configuration file still says otherwise: idgate reports the entry to put there.
    let tables: Vec<mysql::Row> = admin.query("SHOW IDGATE TABLES").unwrap();
    let row = tables
        .iter()
        .find(|r| {
            r.get::<String, _>("Name")
                .is_some_and(|n| n == "accounts" || n.ends_with(".accounts"))
        })
        .expect("accounts in SHOW IDGATE TABLES");
    assert_eq!(
        row.get::<String, _>("Placed_by").as_deref(),
        Some("IDGATE MIGRATE")
    );
    let paste: String = row.get("Configuration_entry").unwrap();
    assert!(
        paste.contains("accounts: {") && paste.contains("shard1, shard2"),
        "{paste}"
    );
    let ready = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .arg(format!("http://127.0.0.1:{admin_port}/ready"))
        .output()
        .expect("run curl");
    let ready = String::from_utf8_lossy(&ready.stdout);
    assert!(
        ready.contains("\"ready\":true") && ready.contains(&paste),
        "{ready}"
    );
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_idgate"))
        .args(["check-config", "--placements", "--config"])
        .arg(&g.config_path)
        .output()
        .expect("run idgate check-config --placements");
    let printed = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && printed.contains(&format!("#   {paste}")),
        "{printed}{}",
        String::from_utf8_lossy(&check.stderr)
    );

    // The old placement is fenced against writers that bypass idgate.
    let err = direct(db0)
        .query_drop("INSERT INTO accounts (name) VALUES ('direct')")
        .unwrap_err();
    assert!(err.to_string().contains("idgate moved this row"), "{err}");

    let (code, msg) = refusal(&mut admin, "IDGATE MIGRATE CANCEL accounts");
    assert_eq!(code, 1105, "{msg}");
    admin
        .query_drop("IDGATE MIGRATE COMPLETE accounts")
        .unwrap();
    assert_eq!(status(&mut admin, "accounts").unwrap().phase, "complete");
    let t: Vec<String> = direct(db0).query("SHOW TABLES LIKE 'accounts%'").unwrap();
    assert_eq!(t, vec!["accounts_idgate_old".to_string()]);

    // A restarted idgate routes the table by its new placement, which only the store holds.
    g.restart();
    let mut app = g.conn();
    app.query_drop("INSERT INTO accounts (name, note) VALUES ('after', 'restart')")
        .unwrap();
    let id = app.last_insert_id();
    assert!(id > *model.keys().max().unwrap(), "{id}");
    let on: u64 = direct([&db1, &db2][id as usize % 2])
        .query_first(format!("SELECT COUNT(*) FROM accounts WHERE id = {id}"))
        .unwrap()
        .unwrap();
    assert_eq!(on, 1);
}

#[test]
fn a_second_instance_follows_the_switch_and_nothing_acknowledged_is_lost() {
    let (db0, db1, db2) = (binlog_db(), start_db(), start_db());
    fill(&mut direct(&db0), 5_000);
    let backends = [("shard0", &db0), ("shard1", &db1), ("shard2", &db2)];
    let a = admin_idgate(&backends, GENERATORS);
    let b = admin_idgate(&backends, GENERATORS);
    let stop = Arc::new(AtomicBool::new(false));
    let wa = modelled_writer(&a, stop.clone());
    let wb = modelled_writer(&b, stop.clone());
    let mut admin = a.conn();
    // shard0 keeps the table: the view there hides the moved rows after SWITCH.
    admin.query_drop(start_stmt("shard0, shard1")).unwrap();
    wait_caught_up(&a, &mut admin, "accounts", Duration::from_secs(60));
    loop {
        match admin.query_drop("IDGATE MIGRATE SWITCH accounts") {
            Ok(()) => break,
            Err(e) if e.to_string().contains("behind") => {
                std::thread::sleep(Duration::from_millis(500))
            }
            Err(e) => panic!("{e}"),
        }
    }
    // The other instance learns the new placement from the store within a few seconds.
    let mut other = b.conn();
    let until = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let tables: Vec<mysql::Row> = other.query("SHOW IDGATE TABLES").unwrap_or_default();
        if !tables.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the second instance never followed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let (ma, ea) = wa.join().unwrap();
    let (mb, eb) = wb.join().unwrap();
    assert!(
        ea.is_empty(),
        "the switching instance's client saw errors: {ea:?}"
    );
    // The other instance held its statements during the switch too, then followed.
    assert!(
        eb.is_empty(),
        "the other instance's client saw errors: {eb:?}"
    );
    let mut want = std::collections::BTreeMap::new();
    for (id, v) in ma.into_iter().chain(mb) {
        match v {
            Some(note) => {
                want.insert(id, note);
            }
            None => {
                want.remove(&id);
            }
        }
    }
    let mut got = std::collections::BTreeMap::new();
    for db in [&db0, &db1] {
        for r in dump(
            &mut direct(db),
            "SELECT id, note FROM accounts WHERE name = 'live'",
        ) {
            assert!(got
                .insert(r[0].parse::<u64>().unwrap(), r[1].clone())
                .is_none());
        }
    }
    // Each writer changes only rows it inserted: what it was told is what is there.
    assert_eq!(got, want);
}

#[test]
fn verify_switch_and_reverse_asked_of_another_instance_run_where_the_job_runs() {
    let dbs = [binlog_db(), binlog_db(), binlog_db()];
    fill(&mut direct(&dbs[0]), 2_000);
    let backends = [
        ("shard0", &dbs[0]),
        ("shard1", &dbs[1]),
        ("shard2", &dbs[2]),
    ];
    let a = admin_idgate(&backends, GENERATORS);
    let b = admin_idgate(&backends, GENERATORS);
    let mut on_a = a.conn();
    on_a.query_drop(start_stmt("shard1, shard2")).unwrap();
    wait_caught_up(&a, &mut on_a, "accounts", Duration::from_secs(60));
    // Every step asked of b: a runs the job, so a does it and b answers with a's answer.
    let mut on_b = b.conn();
    let differ: Vec<mysql::Row> = on_b
        .query("IDGATE MIGRATE VERIFY accounts")
        .unwrap_or_else(|e| panic!("{e}; a's log:\n{}", a.log()));
    assert!(differ.is_empty(), "the copy differs: {differ:?}");
    let info = step(&b, &mut on_b, "SWITCH");
    assert!(info.contains("switched to its new placement"), "{info}");
    // b routes by the new placement at once: its writes land there, without a fence error.
    let tables: Vec<mysql::Row> = on_b.query("SHOW IDGATE TABLES").unwrap();
    assert!(!tables.is_empty(), "b does not route the moved table yet");
    on_b.query_drop("INSERT INTO accounts (name, note) VALUES ('via-b', 'after')")
        .unwrap();
    let id = on_b.last_insert_id();
    assert!(
        holds(&dbs[1], id) || holds(&dbs[2], id),
        "row {id} is not on the new shards"
    );
    let info = step(&b, &mut on_b, "REVERSE");
    assert!(info.contains("back on its old placement"), "{info}");
    // A step for a job no live instance runs is still refused, naming what to do.
    let (code, message) = refusal(&mut on_b, "IDGATE MIGRATE SWITCH accounts");
    assert_eq!(code, 1105);
    assert!(message.contains("SWITCH needs it `ready`"), "{message}");
}

#[test]
fn a_job_killed_in_catch_up_or_in_switch_resumes_and_a_half_made_switch_is_undone() {
    let (dbs, g) = three_servers(3_000, false);
    let (db0, db1, db2) = (&dbs[0], &dbs[1], &dbs[2]);
    let mut admin = g.conn();
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    // Killed while catching up: changes made meanwhile are applied when it goes on.
    g.kill();
    let mut src = direct(db0);
    src.query_drop("UPDATE accounts SET note = 'while down' WHERE id % 3 = 0")
        .unwrap();
    src.query_drop("DELETE FROM accounts WHERE id % 7 = 0")
        .unwrap();
    // As if killed in the middle of a switch: the store (on shard0) says `switching`, and the
    // fence is up.
    src.query_drop("UPDATE idgate.idgate_migrations SET phase = 'switching'")
        .unwrap();
    src.query_drop(
        "CREATE TRIGGER idgate_fence_ins_accounts BEFORE INSERT ON accounts FOR EACH ROW \
         SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'idgate moved this row'",
    )
    .unwrap();
    g.restart();
    let mut admin = g.conn();
    let s = wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(90));
    assert_eq!(s.last_error, None);
    // The half-made switch was undone: the old placement takes writes again.
    direct(db0)
        .query_drop("INSERT INTO accounts (name) VALUES ('after the restart')")
        .unwrap();
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(30));
    assert_same_rows(db0, &[db1, db2]);
    // And the switch can be made whole now; the fenced old table keeps what it had.
    admin.query_drop("IDGATE MIGRATE SWITCH accounts").unwrap();
    assert_same_rows(db0, &[db1, db2]);
}

#[test]
fn reverse_after_switch_under_load_loses_nothing_and_a_new_start_works() {
    // The new placement's backends keep binlogs too: the stream back reads them.
    let (dbs, g) = three_servers(5_000, true);
    let (db0, db1, db2) = (&dbs[0], &dbs[1], &dbs[2]);
    let stop = Arc::new(AtomicBool::new(false));
    let w = modelled_writer(&g, stop.clone());
    let mut admin = g.conn();
    // shard0 keeps the table: between SWITCH and REVERSE it shows only the rows it keeps.
    admin.query_drop(start_stmt("shard0, shard1")).unwrap();
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    step(&g, &mut admin, "SWITCH");
    let ids: Vec<u64> = g.conn().query("SELECT id FROM accounts").unwrap();
    let distinct: std::collections::BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(ids.len(), distinct.len(), "a row read twice after SWITCH");
    // Written on the new placement, then streamed back.
    std::thread::sleep(Duration::from_secs(3));
    let info = step(&g, &mut admin, "REVERSE");
    assert!(info.contains("back on its old placement"), "{info}");
    assert_eq!(status(&mut admin, "accounts").unwrap().phase, "reversed");
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let (model, errors) = w.join().unwrap();
    assert!(errors.is_empty(), "the application saw errors: {errors:?}");

    // The old placement holds every acknowledged change, made before, during and after.
    let got: std::collections::BTreeMap<u64, String> = dump(
        &mut direct(db0),
        "SELECT id, note FROM accounts WHERE name = 'live' ORDER BY id",
    )
    .into_iter()
    .map(|r| (r[0].parse().unwrap(), r[1].clone()))
    .collect();
    let want: std::collections::BTreeMap<u64, String> = model
        .iter()
        .filter_map(|(id, v)| Some((*id, v.clone()?)))
        .collect();
    assert_eq!(got, want);
    // Its AUTO_INCREMENT is above the ids handed out while the table was moved.
    let mut app = g.conn();
    app.query_drop("INSERT INTO accounts (name) VALUES ('back')")
        .unwrap();
    assert!(app.last_insert_id() > *model.keys().max().unwrap());
    // The new placement is gone; the old one takes direct writes again.
    for db in [&db1, &db2] {
        let t: Vec<String> = direct(db).query("SHOW TABLES LIKE 'accounts'").unwrap();
        assert!(t.is_empty());
    }
    direct(db0)
        .query_drop("INSERT INTO accounts (name) VALUES ('direct')")
        .unwrap();

    // And the table can be moved again.
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    assert_same_rows(db0, &[db1, db2]);
}

/// Whether shard `db` holds the row `id` of `accounts`.
fn holds(db: &MariaDb, id: u64) -> bool {
    let n: u64 = direct(db)
        .query_first(format!("SELECT COUNT(*) FROM accounts WHERE id = {id}"))
        .unwrap()
        .unwrap();
    n == 1
}

/// Waits until shard `db` holds the row `id` (a marker written after what the test checks).
fn wait_for_row(g: &Idgate, db: &MariaDb, id: u64) {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while !holds(db, id) {
        assert!(
            std::time::Instant::now() < until,
            "row {id} never arrived; idgate's log:\n{}",
            g.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn xa_transactions_on_the_source_reach_the_shards_only_when_committed_across_a_broken_stream() {
    let (dbs, g) = three_servers(1_000, false);
    let (db0, db1, db2) = (&dbs[0], &dbs[1], &dbs[2]);
    let mut admin = g.conn();
    admin.query_drop(start_stmt("shard1, shard2")).unwrap();
    wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    let mut a = direct(db0);
    a.query_drop("XA START 'a'").unwrap();
    a.query_drop("INSERT INTO accounts (id, name) VALUES (500001, 'xa a')")
        .unwrap();
    a.query_drop("UPDATE accounts SET note = 'xa a' WHERE id = 4")
        .unwrap();
    a.query_drop("XA END 'a'").unwrap();
    a.query_drop("XA PREPARE 'a'").unwrap();
    let mut b = direct(db0);
    b.query_drop("XA START 'b'").unwrap();
    b.query_drop("DELETE FROM accounts WHERE id = 6").unwrap();
    b.query_drop("XA END 'b'").unwrap();
    b.query_drop("XA PREPARE 'b'").unwrap();
    // A committed row after both PREPAREs: once it is on its shard, they were read.
    let mut src = direct(db0);
    src.query_drop("INSERT INTO accounts (id, name) VALUES (500003, 'marker 1')")
        .unwrap();
    wait_for_row(&g, db2, 500003);
    assert!(!holds(db2, 500001), "a prepared INSERT was applied");
    assert!(holds(db1, 6), "a prepared DELETE was applied");

    // The stream breaks while both wait: it starts again before them and reads them again.
    let dumps: Vec<u64> = src
        .query("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'")
        .unwrap();
    assert!(!dumps.is_empty(), "no binlog dump thread on the source");
    for id in dumps {
        src.query_drop(format!("KILL {id}")).unwrap();
    }
    src.query_drop("INSERT INTO accounts (id, name) VALUES (500005, 'marker 2')")
        .unwrap();
    wait_for_row(&g, db2, 500005);
    assert!(!holds(db2, 500001) && holds(db1, 6));

    a.query_drop("XA COMMIT 'a'").unwrap();
    b.query_drop("XA ROLLBACK 'b'").unwrap();
    let s = wait_caught_up(&g, &mut admin, "accounts", Duration::from_secs(60));
    assert_eq!(s.phase, "ready");
    assert_same_rows(db0, &[db1, db2]);
    assert!(holds(db2, 500001) && holds(db1, 6));
}

#[test]
fn an_adoption_under_pymysql_and_connector_j_writers_keeps_every_acknowledged_insert_once() {
    use common::history::{self, IdOrder};
    use common::writers::Writers;
    let (db0, db1, db2) = (binlog_db(), start_db(), start_db());
    let mut c0 = direct(&db0);
    c0.query_drop(
        "CREATE TABLE events (id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id BIGINT NOT NULL, \
         note VARCHAR(40) NOT NULL, UNIQUE KEY (note))",
    )
    .unwrap();
    c0.query_drop(
        "INSERT INTO events (user_id, note) SELECT seq, CONCAT('seed', seq) FROM seq_1_to_20000",
    )
    .unwrap();
    let backends = [("shard0", &db0), ("shard1", &db1), ("shard2", &db2)];
    let g = admin_idgate(&backends, GENERATORS);
    // Three PyMySQL and two Connector/J clients insert through idgate (single rows and
    // batches), each attempt logged, from before START until after SWITCH.
    let w = Writers::start("migrate-adoption", g.port, &["events"], 3, 2);
    std::thread::sleep(Duration::from_secs(1));
    let mut admin = g.conn();
    admin
        .query_drop(
            "IDGATE MIGRATE START events TO '{generator: acc_seq, unique: per_shard, sharding: \
             {columns: [id], algorithm: mod, shards: [shard1, shard2]}}'",
        )
        .unwrap();
    wait_caught_up(&g, &mut admin, "events", Duration::from_secs(60));
    admin.query_drop("IDGATE MIGRATE SWITCH events").unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let attempts = w.stop();
    admin.query_drop("IDGATE MIGRATE COMPLETE events").unwrap();

    let mut rows = history::read_rows(&[&db1, &db2], "events");
    let seeds: Vec<_> = rows
        .iter()
        .filter(|(n, _)| n.starts_with("seed"))
        .map(|(_, v)| v.clone())
        .collect();
    assert_eq!(
        seeds.len(),
        20_000,
        "every row from before the move is there"
    );
    for v in &seeds {
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].id as usize % 2, v[0].shard, "{v:?}");
    }
    rows.retain(|n, _| !n.starts_with("seed"));
    let report = history::check(
        &attempts,
        &std::collections::HashMap::from([("events".to_string(), rows)]),
        |_, id| (id % 2) as usize,
        |_| IdOrder::Block,
    );
    let summary = report.summary("adoption under PyMySQL and Connector/J writers");
    assert!(
        report.problems.is_empty(),
        "{summary}\n{:?}",
        report.problems
    );
    assert!(report.errors.is_empty(), "{summary}");
    assert!(report.acknowledged > 100, "{summary}");
    println!("{summary}");
}
