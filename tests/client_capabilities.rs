//! Capabilities a client chooses at login that change the answers' bytes: session-state
//! tracking (CLIENT_SESSION_TRACK) and MariaDB's extended column metadata. A client that asks for
//! them gets, through idgate, the same packets as from MariaDB directly.

mod common;

use common::raw::{direct_and_through_with, show, Raw};
use idgate::exec::backend::LoginFlags;
use mysql::prelude::Queryable;

fn same(direct: &mut Raw, through: &mut Raw, sql: &str) {
    let want = direct.query(sql.as_bytes());
    let got = through.query(sql.as_bytes());
    assert!(
        want == got,
        "{sql}\ndirect:\n{}\nthrough idgate:\n{}",
        show(&want),
        show(&got)
    );
}

/// The session-state block of an OK packet (after its info text), if it has one.
fn state_block(ok: &[u8]) -> Option<&[u8]> {
    let status = u16::from_le_bytes([*ok.get(3)?, *ok.get(4)?]);
    (ok.first() == Some(&0) && status & 0x4000 != 0).then(|| &ok[7..])
}

#[test]
fn session_state_changes_reach_the_client_as_from_mariadb() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    let flags = LoginFlags {
        session_track: true,
        ..Default::default()
    };
    let (mut direct, mut through) = direct_and_through_with(db, &g, flags);
    for sql in [
        "SET SESSION session_track_schema = ON",
        "SET SESSION session_track_state_change = ON",
        "SET SESSION session_track_system_variables = 'time_zone,sql_mode,autocommit'",
        "SET time_zone = '+02:00'",
        "SET @tracked = 1",
        "SET SESSION sql_mode = 'STRICT_ALL_TABLES'",
        "SELECT @@time_zone, @tracked",
        "SET time_zone = 'SYSTEM'",
    ] {
        same(&mut direct, &mut through, sql);
    }
    // The tracked change really is in the answer (not an empty block on both sides).
    let ok = through.query(b"SET time_zone = '+03:00'");
    let block = state_block(&ok[0]).expect("SERVER_SESSION_STATE_CHANGED with its block");
    assert!(block.windows(6).any(|w| w == b"+03:00"), "{}", show(&ok));
    // A schema change is tracked too (the database exists on both sides).
    same(
        &mut direct,
        &mut through,
        &format!("USE {}", common::DATABASE),
    );
    // OK packets idgate writes itself never claim a state change they do not carry.
    let ping = through.command(&[0x0e], idgate::exec::relay::Reply::Single);
    assert_eq!(state_block(&ping[0]), None, "{}", show(&ping));
}

#[test]
fn extended_metadata_reaches_the_client_as_from_mariadb() {
    let db = common::shared_db();
    let g = common::Idgate::start(db);
    common::direct(db)
        .query_drop(
            "CREATE OR REPLACE TABLE t_ext_meta (id INT PRIMARY KEY, j JSON, p POINT, \
             ip INET6, u UUID)",
        )
        .unwrap();
    common::direct(db)
        .query_drop(
            "INSERT INTO t_ext_meta VALUES (1, '{\"a\": 1}', POINT(1, 2), '::1', \
             '00000000-0000-0000-0000-000000000001')",
        )
        .unwrap();
    let flags = LoginFlags {
        extended_metadata: true,
        ..Default::default()
    };
    let (mut direct, mut through) = direct_and_through_with(db, &g, flags);
    let sql = "SELECT j, p, ip, u FROM t_ext_meta";
    same(&mut direct, &mut through, sql);
    let answer = through.query(sql.as_bytes());
    assert!(
        answer[1].windows(4).any(|w| w == b"json"),
        "{}",
        show(&answer)
    );
    // Prepared: the statement's column definitions, and its binary rows.
    let (want_id, want) = direct.prepare(b"SELECT j, p, ip FROM t_ext_meta WHERE id = ?");
    let (got_id, got) = through.prepare(b"SELECT j, p, ip FROM t_ext_meta WHERE id = ?");
    assert!(
        want == got,
        "direct:\n{}\nthrough:\n{}",
        show(&want),
        show(&got)
    );
    let want = direct.execute(want_id, &[1.into()]);
    let got = through.execute(got_id, &[1.into()]);
    assert!(
        want == got,
        "direct:\n{}\nthrough:\n{}",
        show(&want),
        show(&got)
    );
    // Column definitions idgate writes itself carry the field as MariaDB's do.
    let want = direct.query(b"SHOW PROCESSLIST");
    let got = through.query(b"SHOW PROCESSLIST");
    assert_eq!(want[..10], got[..10], "column count and definitions");
    // Without the capability, the same columns come without it, as from MariaDB.
    let (mut direct, mut through) = direct_and_through_with(db, &g, LoginFlags::default());
    same(&mut direct, &mut through, sql);
    let answer = through.query(sql.as_bytes());
    assert!(!answer[1].windows(4).any(|w| w == b"json"));
}
