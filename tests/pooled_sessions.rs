//! A session that takes a pooled backend connection starts as a new direct connection would:
//! from the backend's global variables as they are at its login, not as they were when the
//! connection's previous session ended.

mod common;

use std::time::Duration;

use common::Idgate;
use mysql::prelude::Queryable;

#[test]
fn a_pooled_connection_carries_no_stale_session_defaults() {
    let db = common::start_db();
    // One connection in the pool, so the second session surely gets the first one's.
    let g = Idgate::start_with(|port| {
        common::idgate_proc::config_for(port, &[("shard0", &db)], "")
            .replace("max_connections: 64", "max_connections: 1")
    });
    let mut root = common::direct(&db);
    let strict: String = root
        .query_first("SELECT @@GLOBAL.sql_mode")
        .unwrap()
        .unwrap();
    assert!(strict.contains("STRICT_TRANS_TABLES"), "{strict}");
    root.query_drop("CREATE TABLE tiny (v TINYINT)").unwrap();
    let packet: u64 = root
        .query_first("SELECT @@GLOBAL.max_allowed_packet")
        .unwrap()
        .unwrap();

    for round in 0..3 {
        root.query_drop("SET GLOBAL sql_mode = ''").unwrap();
        root.query_drop("SET GLOBAL max_allowed_packet = 4194304")
            .unwrap();
        {
            let mut a = g.conn();
            let mode: String = a.query_first("SELECT @@SESSION.sql_mode").unwrap().unwrap();
            assert_eq!(
                mode, "",
                "round {round}: session A sees the global of its login"
            );
        }
        // Session A has left; its connection goes back to the pool (reset there).
        std::thread::sleep(Duration::from_millis(300));
        root.query_drop(format!("SET GLOBAL sql_mode = '{strict}'"))
            .unwrap();
        root.query_drop(format!("SET GLOBAL max_allowed_packet = {packet}"))
            .unwrap();

        let mut b = g.conn();
        let mode: String = b.query_first("SELECT @@SESSION.sql_mode").unwrap().unwrap();
        assert_eq!(
            mode, strict,
            "round {round}: session B must see today's global"
        );
        let got: u64 = b
            .query_first("SELECT @@SESSION.max_allowed_packet")
            .unwrap()
            .unwrap();
        assert_eq!(got, packet, "round {round}");
        // Strict mode is in force: an out-of-range value is refused as MariaDB refuses it.
        let err = b.query_drop("INSERT INTO tiny VALUES (1000)").unwrap_err();
        match err {
            mysql::Error::MySqlError(e) => assert_eq!(e.code, 1264, "{}", e.message),
            other => panic!("{other}"),
        }
        // So is a recursive CTE whose column overflows its type (it answered rows under the
        // stale mode).
        let cte = "WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n * 1000 FROM c \
                   WHERE n < 1000000000000) SELECT n FROM c";
        match b.query::<mysql::Row, _>(cte) {
            Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1264, "{}", e.message),
            other => panic!("round {round}: {cte}: expected 1264, got {other:?}"),
        }
    }
    let n: u64 = root
        .query_first("SELECT COUNT(*) FROM tiny")
        .unwrap()
        .unwrap();
    assert_eq!(n, 0);
}
