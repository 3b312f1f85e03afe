//! What the tests of the `unique: global` primitives share: a table `users` sharded over `s0`
//! and `s1` whose key `by_email` has its lookup on `s0`, and the answers shards give.

use mysql_common::constants::StatusFlags;

use crate::exec::collect::Collected;
use crate::route::test_rules::{rule, sharded};
use crate::route::TableRule;
use crate::unique::{GlobalKey, KeyColumn};
use crate::wire::packets;

pub fn users() -> TableRule {
    rule("users", Some("seq"), sharded("id", &["s0", "s1"]))
}

pub fn by_email() -> GlobalKey {
    GlobalKey {
        schema: "app".into(),
        table: "users".into(),
        name: "by_email".into(),
        columns: vec![KeyColumn {
            name: "email".into(),
            column_type: "varchar(40)".into(),
            charset: Some("utf8mb4".into()),
            collation: Some("utf8mb4_general_ci".into()),
            sub_part: None,
            default: None,
        }],
        backend: "s0".into(),
        lookup: "`app`.`users__by_email`".into(),
    }
}

pub fn ok(affected: u64) -> Collected {
    let mut p = Vec::new();
    packets::ok(
        &mut p,
        packets::OK_HEADER,
        affected,
        0,
        StatusFlags::empty(),
        0,
        b"",
    );
    Collected::Ok(p)
}

/// A result set of one column, a row per value (text protocol; values under 251 bytes).
pub fn rows(values: &[&[u8]]) -> Collected {
    Collected::Rows {
        columns: vec![b"c".to_vec()],
        rows: values
            .iter()
            .map(|v| [&[v.len() as u8][..], v].concat())
            .collect(),
        eof: Vec::new(),
    }
}

pub fn one_row() -> Collected {
    rows(&[b"1"])
}

pub fn no_rows() -> Collected {
    rows(&[])
}
