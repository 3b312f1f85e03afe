//! An UPDATE of a `unique: global` key's column against a fake cursor: the row read on the
//! shards, its new value claimed for the shard holding it, a value another row holds answered
//! with MariaDB's 1062 before anything changes, and the old value released after the UPDATE.

use super::fake_cursor::{block_on, FakeCursor};
use super::unique_fixtures::{by_email, no_rows, ok, one_row, rows, users};
use super::unique_key_update::update_row;
use super::unique_write::{open, Failure};
use crate::exec::primitives::bulk_write::BulkOk;
use crate::route::Tables;
use crate::unique::lookup_table;

/// `ann@x` as `HEX(email)` reads it back.
const ANN_HEX: &[u8] = b"616E6E4078";

fn select(condition: &str) -> Vec<u8> {
    let read = lookup_table::read_expr(&by_email().columns[0]);
    format!("SELECT {read} FROM `app`.`users` WHERE {condition} LIMIT 2 FOR UPDATE").into_bytes()
}

fn update(c: &mut FakeCursor, stmt: &str) -> Result<BulkOk, Failure> {
    let parts = crate::sql::update_parts(stmt.as_bytes()).expect("an UPDATE of one table");
    let (rule, key) = (users(), by_email());
    let shards = rule.backends().to_vec();
    let mut w = block_on(open(c, ["s0"].into_iter(), &shards))
        .expect("goes on")
        .expect("leased");
    let condition = parts.condition.clone().map(|r| &stmt.as_bytes()[r]);
    let read = key.columns.clone();
    let keys = [&key];
    let run = update_row(
        c,
        &mut w,
        stmt.as_bytes(),
        &parts,
        &rule,
        "app",
        &keys,
        &read,
        condition,
    );
    block_on(run).expect("goes on")
}

fn sent(c: &FakeCursor) -> Vec<(&str, String)> {
    c.sent
        .iter()
        .filter(|(_, s)| s != "START TRANSACTION")
        .map(|(b, s)| (b.as_str(), s.clone()))
        .collect()
}

fn text(sql: Vec<u8>) -> String {
    String::from_utf8(sql).expect("text")
}

#[test]
fn a_new_value_is_claimed_for_the_row_s_shard_and_the_old_one_released_after() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "UPDATE users SET email = 'bob@x' WHERE id = 7";
    c.answer_write_on("s0", &select("id = 7"), no_rows());
    c.answer_write_on("s1", &select("id = 7"), rows(&[ANN_HEX]));
    let Ok(done) = update(&mut c, stmt) else {
        panic!("updated");
    };
    // One row changed: each shard's OK counted once (the fake says 1 on each).
    assert_eq!(done.affected, 2);
    let key = by_email();
    let old = lookup_table::literal_from_read(&key.columns[0], ANN_HEX);
    assert_eq!(old, b"_utf8mb4 X'616E6E4078'");
    assert_eq!(
        sent(&c),
        [
            ("s0", text(select("id = 7"))),
            ("s1", text(select("id = 7"))),
            (
                "s0",
                text(lookup_table::claim_sql(&key, &[b"'bob@x'".to_vec()], "s1"))
            ),
            ("s0", stmt.to_string()),
            ("s1", stmt.to_string()),
            ("s0", text(lookup_table::release_sql(&key, &[old]))),
        ]
    );
}

#[test]
fn a_value_another_row_holds_is_a_duplicate_and_nothing_changes() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "UPDATE users SET email = 'bob@x' WHERE id = 7";
    c.answer_write_on("s0", &select("id = 7"), rows(&[ANN_HEX]));
    c.answer_write_on("s1", &select("id = 7"), no_rows());
    let key = by_email();
    let new = [b"'bob@x'".to_vec()];
    c.answer_write(&lookup_table::claim_sql(&key, &new, "s0"), ok(2));
    let other = lookup_table::other_holder_sql(&key, &new, b"id = 7");
    c.answer_write_on("s0", &other, no_rows());
    c.answer_write_on("s1", &other, one_row());
    let Err(Failure::Sql(e)) = update(&mut c, stmt) else {
        panic!("a duplicate");
    };
    assert_eq!(
        (e.code, e.message.as_str()),
        (1062, "Duplicate entry 'bob@x' for key 'by_email'")
    );
    assert!(sent(&c).iter().all(|(_, s)| s != stmt), "{:?}", c.sent);
}

#[test]
fn the_value_the_row_holds_already_stays_its_own() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "UPDATE users SET email = 'ann@x' WHERE id = 7";
    c.answer_write_on("s0", &select("id = 7"), rows(&[ANN_HEX]));
    c.answer_write_on("s1", &select("id = 7"), no_rows());
    let key = by_email();
    let new = [b"'ann@x'".to_vec()];
    c.answer_write(&lookup_table::claim_sql(&key, &new, "s0"), ok(2));
    let other = lookup_table::other_holder_sql(&key, &new, b"id = 7");
    c.answer_write_on("s0", &other, no_rows());
    c.answer_write_on("s1", &other, no_rows());
    let Ok(_) = update(&mut c, stmt) else {
        panic!("updated");
    };
    let own = text(lookup_table::own_sql(&key, &new, "s0"));
    let sent = sent(&c);
    assert!(
        sent.iter().any(|(b, s)| *b == "s0" && *s == own),
        "{sent:?}"
    );
    // Nothing is released: the row still holds its value.
    let release = "DELETE FROM `app`.`users__by_email`";
    assert!(
        sent.iter().all(|(_, s)| !s.starts_with(release)),
        "{sent:?}"
    );
}

#[test]
fn two_rows_set_to_one_value_meet_each_other() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "UPDATE users SET email = 'bob@x' WHERE id IN (7, 8)";
    c.answer_write_on("s0", &select("id IN (7, 8)"), rows(&[ANN_HEX]));
    c.answer_write_on("s1", &select("id IN (7, 8)"), rows(&[b"63617440"]));
    let Err(Failure::Sql(e)) = update(&mut c, stmt) else {
        panic!("a duplicate");
    };
    assert_eq!(e.code, 1062, "{}", e.message);
    assert!(c.sent.iter().all(|(_, s)| s != stmt), "{:?}", c.sent);
}
