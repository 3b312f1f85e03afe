//! The rows of an INSERT into a `unique: global` table against a fake cursor: what is claimed in
//! the lookup, which shard each row goes to (its own, or the one holding its value), and what
//! the statement's OK counts, for each kind of INSERT.

use super::fake_cursor::{block_on, FakeCursor};
use super::unique_fixtures::{by_email, no_rows, ok, one_row, users};
use super::unique_insert_rows::{write_rows, Tally};
use super::unique_write::{open, Failure};
use crate::route::insert::RowId;
use crate::route::Tables;
use crate::unique::lookup_table;
use crate::wire::packets;

const EMAIL: &[u8] = b"'ann@x'";

fn text(sql: Vec<u8>) -> String {
    String::from_utf8(sql).expect("text")
}

/// Writes one row of `stmt` with id 7 and the email 'ann@x', its own shard `own`.
fn write_one(c: &mut FakeCursor, stmt: &str, own: &str) -> Result<Tally, Failure> {
    let a = crate::sql::analyze_insert(stmt.as_bytes()).expect("an INSERT");
    let (rule, key) = (users(), by_email());
    let shards = rule.backends().to_vec();
    let mut w = block_on(open(c, ["s0"].into_iter(), &shards))
        .expect("goes on")
        .expect("leased");
    let rows = [(own.to_string(), format!("{stmt} /* row */").into_bytes())];
    let values = vec![vec![Some(vec![EMAIL.to_vec()])]];
    let ids = [RowId::Generated(7)];
    let keys = std::slice::from_ref(&key);
    let run = write_rows(c, &mut w, (&a, false), &rule, keys, &rows, &values, &ids);
    block_on(run).expect("goes on")
}

/// The value `'ann@x'` has an entry already; `holding` says which shards hold a row with it.
fn entry_exists(c: &mut FakeCursor, own: &str, holding: &[&str]) {
    let key = by_email();
    c.answer_write(
        &lookup_table::claim_sql(&key, &[EMAIL.to_vec()], own),
        ok(2),
    );
    let holder = lookup_table::holder_sql(&key, &[EMAIL.to_vec()]);
    for shard in ["s0", "s1"] {
        let rows = if holding.contains(&shard) {
            one_row()
        } else {
            no_rows()
        };
        c.answer_write_on(shard, &holder, rows);
    }
}

#[test]
fn a_new_value_is_claimed_for_the_row_s_own_shard_and_the_row_goes_there() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "INSERT INTO users (email) VALUES ('ann@x')";
    let Ok(t) = write_one(&mut c, stmt, "s1") else {
        panic!("written");
    };
    assert_eq!((t.affected, t.duplicates, t.first_written), (1, 0, Some(7)));
    let claim = text(lookup_table::claim_sql(
        &by_email(),
        &[EMAIL.to_vec()],
        "s1",
    ));
    // The entry names the row's shard, `s1` (written as hex).
    assert!(claim.contains(", X'7331')"), "{claim}");
    let sent: Vec<(&str, &str)> = c.sent.iter().map(|(b, s)| (&**b, &**s)).collect();
    assert_eq!(
        sent,
        [
            ("s0", "START TRANSACTION"),
            ("s0", &*claim),
            ("s1", "START TRANSACTION"),
            ("s1", &*format!("{stmt} /* row */")),
        ]
    );
}

#[test]
fn a_value_a_row_holds_sends_the_row_to_that_shard_which_answers_the_duplicate() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "INSERT INTO users (email) VALUES ('ann@x')";
    entry_exists(&mut c, "s0", &["s1"]);
    c.refuse_statement(&format!("{stmt} /* row */"));
    let Err(Failure::Packet(p)) = write_one(&mut c, stmt, "s0") else {
        panic!("the holding shard's 1062 is the answer");
    };
    assert_eq!(packets::parse_err(&p).0, 1062);
    // Asked on each shard in turn; the row went to s1, which holds the value, not to s0.
    let row_went: Vec<&str> = c
        .sent
        .iter()
        .filter(|(_, s)| s.ends_with("/* row */"))
        .map(|(b, _)| b.as_str())
        .collect();
    assert_eq!(row_went, ["s1"]);
}

#[test]
fn ignore_counts_the_held_value_as_a_duplicate_and_moves_no_owner() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "INSERT IGNORE INTO users (email) VALUES ('ann@x')";
    entry_exists(&mut c, "s0", &["s1"]);
    c.answer_write_on("s1", format!("{stmt} /* row */").as_bytes(), ok(0));
    let Ok(t) = write_one(&mut c, stmt, "s0") else {
        panic!("answered");
    };
    assert_eq!((t.affected, t.duplicates, t.first_written), (0, 1, None));
    let own = text(lookup_table::own_sql(&by_email(), &[EMAIL.to_vec()], "s0"));
    assert!(c.sent.iter().all(|(_, s)| *s != own), "{:?}", c.sent);
}

#[test]
fn a_stale_entry_is_taken_over_and_names_the_new_row_s_shard() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "INSERT INTO users (email) VALUES ('ann@x')";
    entry_exists(&mut c, "s1", &[]);
    let Ok(t) = write_one(&mut c, stmt, "s1") else {
        panic!("written");
    };
    assert_eq!((t.affected, t.duplicates, t.first_written), (1, 0, Some(7)));
    let own = text(lookup_table::own_sql(&by_email(), &[EMAIL.to_vec()], "s1"));
    let last = c.sent.last().expect("sent");
    assert_eq!((last.0.as_str(), last.1.as_str()), ("s0", own.as_str()));
}

#[test]
fn replace_deletes_the_holding_row_elsewhere_and_counts_it() {
    let mut c = FakeCursor::new(Tables::new(Vec::new()));
    let stmt = "REPLACE INTO users (email) VALUES ('ann@x')";
    entry_exists(&mut c, "s0", &["s1"]);
    let delete = lookup_table::delete_holder_sql(&by_email(), &[EMAIL.to_vec()]);
    c.answer_write_on("s1", &delete, ok(1));
    let Ok(t) = write_one(&mut c, stmt, "s0") else {
        panic!("written");
    };
    // MariaDB's REPLACE that deleted one row and wrote one: 2 affected, 1 duplicate.
    assert_eq!((t.affected, t.duplicates), (2, 1));
    let delete = text(delete);
    let order: Vec<(&str, &str)> = c
        .sent
        .iter()
        .filter(|(_, s)| *s == delete || s.ends_with("/* row */"))
        .map(|(b, s)| (b.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            ("s1", delete.as_str()),
            ("s0", &*format!("{stmt} /* row */"))
        ]
    );
}
