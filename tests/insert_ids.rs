//! INSERTs into a table whose ids idgate generates look, to the client, exactly like INSERTs into
//! an AUTO_INCREMENT table on MariaDB: same affected rows, insert ids, LAST_INSERT_ID(), warnings
//! and rows.

mod common;

use common::raw::Raw;
use idgate::exec::backend::LoginFlags;
use mysql::prelude::Queryable;

/// The table behind idgate keeps AUTO_INCREMENT on its id column, as a table adopted from one
/// server does (so an explicit 0 asks for an id there as on the direct table), with its own
/// counter far away: an id the backend made itself instead of idgate would show. Created after
/// idgate started, so the generator starts at 1 as the direct table's counter does.
const GENERATED: &str = "CREATE TABLE gen_t (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NOT NULL, n INT DEFAULT 0) AUTO_INCREMENT = 1000000000";
const AUTO_INC: &str = "CREATE TABLE gen_t (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NOT NULL, n INT DEFAULT 0)";

fn segment_config(port: u16, db: &common::MariaDb, tag: &str) -> String {
    common::idgate_proc::config_for(port, &[("shard0", db)], "")
        + &format!(
            "generators:\n  seq:\n    kind: segment\n    tag: {tag}\n    start: 1\n    step: 1000\n\
             tables:\n  gen_t:\n    generator: seq\n"
        )
}

/// What a client sees of one statement, byte for byte: every packet of the answer, then the
/// answer to `SELECT LAST_INSERT_ID(), @@identity, @@last_insert_id`.
/// Column definitions of the id column differ in two flags that come from the table's own DDL
/// (AUTO_INCREMENT vs. a plain BIGINT with no default); everything else must match.
fn step(c: &mut Raw, sql: &str) -> Vec<Vec<u8>> {
    let mut out = c.query(sql.as_bytes());
    // After an error MySQL leaves LAST_INSERT_ID() undefined: compare it only after success.
    if out[0][0] != 0xff {
        out.extend(c.query(b"SELECT LAST_INSERT_ID(), @@identity, @@last_insert_id"));
    }
    normalize(out)
}

/// Masks the AUTO_INCREMENT and NO_DEFAULT_VALUE column flags, which come from the table DDL.
fn normalize(mut packets: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    for p in packets
        .iter_mut()
        .filter(|p| p.starts_with(b"\x03def") && p.len() > 12)
    {
        let at = p.len() - 5;
        let flags = u16::from_le_bytes([p[at], p[at + 1]]) & !(0x0200 | 0x1000);
        p[at..at + 2].copy_from_slice(&flags.to_le_bytes());
    }
    packets
}

fn show(packets: &[Vec<u8>]) -> String {
    packets
        .iter()
        .map(|p| format!("{:?}", String::from_utf8_lossy(p)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A table on one MariaDB with AUTO_INCREMENT (`direct`) and the same table behind idgate,
/// its ids from a segment generator tagged `tag` (`behind`, created after idgate started so the
/// generator starts at 1 as the counter does); a raw client on each.
struct SideBySide {
    direct: Raw,
    through: Raw,
    idgate: common::Idgate,
    _behind: common::MariaDb,
}

impl SideBySide {
    fn start(table: &str, direct: &str, behind: &str, tag: &str) -> SideBySide {
        Self::start_with(table, direct, behind, tag, LoginFlags::default())
    }

    /// As `start`, both clients logging in with `flags` (CLIENT_FOUND_ROWS, …).
    fn start_with(
        table: &str,
        direct: &str,
        behind: &str,
        tag: &str,
        flags: LoginFlags,
    ) -> SideBySide {
        let direct_db = common::shared_db();
        let behind_db = common::start_db();
        let mut setup = common::direct(direct_db);
        setup
            .query_drop(format!("DROP TABLE IF EXISTS {table}"))
            .unwrap();
        setup.query_drop(direct).unwrap();
        let idgate = common::Idgate::start_with(|port| {
            common::idgate_proc::config_for(port, &[("shard0", &behind_db)], "")
                + &format!(
                    "generators:\n  seq:\n    kind: segment\n    tag: {tag}\n    start: 1\n    step: 1000\n\
                     tables:\n  {table}:\n    generator: seq\n"
                )
        });
        common::direct(&behind_db).query_drop(behind).unwrap();
        SideBySide {
            direct: Raw::connect_with(
                direct_db.port,
                (common::USER, common::PASSWORD),
                common::DATABASE,
                flags,
            ),
            through: Raw::connect_with(idgate.port, ("app", "app-secret"), common::DATABASE, flags),
            idgate,
            _behind: behind_db,
        }
    }

    /// Runs `sql` on both sides; every packet of the answers must match.
    fn same(&mut self, sql: &str) {
        let (ds, ps) = (step(&mut self.direct, sql), step(&mut self.through, sql));
        assert_eq!(
            ds,
            ps,
            "`{sql}`\ndirect: {}\nidgate: {}\nidgate log:\n{}",
            show(&ds),
            show(&ps),
            self.idgate.log()
        );
    }
}

const SEQUENCE: &[&str] = &[
    "INSERT INTO gen_t (v) VALUES ('a')",
    "INSERT INTO gen_t (v) VALUES ('b'), ('c'), ('d')",
    "INSERT INTO gen_t (id, v) VALUES (NULL, 'e')",
    "INSERT INTO gen_t (id, v) VALUES (0, 'f')",
    "INSERT INTO gen_t (id, v) VALUES ('0', 'f0')",
    "INSERT INTO gen_t (id, v) VALUES (DEFAULT, 'g')",
    "INSERT INTO gen_t VALUES (NULL, 'h', 1)",
    "INSERT INTO gen_t SET v = 'i'",
    "INSERT INTO gen_t SET id = NULL, v = 'j', n = 2",
    "insert into `gen_t` (`v`, n) value ('k', 3)",
    "INSERT INTO idgate_test.gen_t (v) VALUES /* kept */ ('l')",
    "INSERT INTO gen_t (id, v) VALUES (5, 'dup')",
    "INSERT IGNORE INTO gen_t (id, v) VALUES (5, 'dup')",
    "INSERT INTO gen_t (id, v) VALUES (3, 'x') ON DUPLICATE KEY UPDATE v = 'upd'",
    "INSERT INTO gen_t (id, v) VALUES (4, 'y') AS new ON DUPLICATE KEY UPDATE v = new.v",
    "REPLACE INTO gen_t (id, v) VALUES (2, 'r')",
    "INSERT INTO gen_t (v) VALUES ('m') RETURNING id, v",
    "INSERT INTO gen_t (v) VALUES ('n'); INSERT INTO gen_t (v) VALUES ('o'), ('p')",
    "SELECT 1",
    "INSERT INTO gen_t (id, v) VALUES (1000, 'explicit')",
    "SELECT id, v, n FROM gen_t ORDER BY id",
];

#[test]
fn insert_shapes_match_auto_increment() {
    let mut t = SideBySide::start("gen_t", AUTO_INC, GENERATED, "shapes");
    for sql in SEQUENCE {
        t.same(sql);
    }
    // NO_AUTO_VALUE_ON_ZERO: 0 is kept as a value.
    for c in [&mut t.direct, &mut t.through] {
        c.query(b"SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')");
    }
    for sql in [
        "INSERT INTO gen_t (id, v) VALUES (0, 'zero')",
        "SELECT v FROM gen_t WHERE id = 0",
    ] {
        t.same(sql);
    }
}

#[test]
fn generated_ids_are_unique_across_sessions_and_last_insert_id_is_per_session() {
    let db = common::start_db();
    common::direct(&db).query_drop(GENERATED).unwrap();
    let g = common::Idgate::start_with(|port| segment_config(port, &db, "sessions"));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let mut c = g.conn();
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for i in 0..100 {
                    c.query_drop(format!(
                        "INSERT INTO gen_t (v) VALUES ('t{t}r{i}'), ('t{t}r{i}b')"
                    ))
                    .unwrap();
                    let first = c.last_insert_id();
                    let lid: u64 = c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
                    assert_eq!(lid, first, "LAST_INSERT_ID() is this session's");
                    let got: Vec<(u64, String)> = c
                        .query(format!(
                            "SELECT id, v FROM gen_t WHERE id IN ({first}, {})",
                            first + 1
                        ))
                        .unwrap();
                    assert_eq!(
                        got,
                        vec![
                            (first, format!("t{t}r{i}")),
                            (first + 1, format!("t{t}r{i}b"))
                        ]
                    );
                    mine.push(first);
                }
                mine
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 400);
    let count: u64 = common::direct(&db)
        .query_first("SELECT COUNT(DISTINCT id) FROM gen_t")
        .unwrap()
        .unwrap();
    assert_eq!(count, 800);
}

#[test]
fn nextval_hands_out_contiguous_blocks() {
    let db = common::start_db();
    common::direct(&db).query_drop(GENERATED).unwrap();
    let g = common::Idgate::start_with(|port| segment_config(port, &db, "nextval"));
    let mut c = g.conn();
    let a: u64 = c.query_first("SELECT NEXTVAL(seq)").unwrap().unwrap();
    let b: u64 = c.query_first("SELECT NEXT VALUE FOR seq").unwrap().unwrap();
    let block: u64 = c
        .query_first("SELECT NEXT 10 VALUES FROM seq")
        .unwrap()
        .unwrap();
    let after: u64 = c.query_first("SELECT NEXTVAL(seq)").unwrap().unwrap();
    assert_eq!((b, block, after), (a + 1, a + 2, a + 12));
    c.query_drop("INSERT INTO gen_t (v) VALUES ('x')").unwrap();
    assert_eq!(c.last_insert_id(), a + 13);
    match c.query_drop("SELECT NEXTVAL(nope)").unwrap_err() {
        mysql::Error::MySqlError(e) => assert_eq!(e.code, 1146, "{e}"),
        e => panic!("{e}"),
    }
}

#[test]
fn bad_inserts_get_clear_errors_and_the_session_goes_on() {
    let db = common::start_db();
    let mut setup = common::direct(&db);
    setup.query_drop(GENERATED).unwrap();
    setup
        .query_drop("CREATE TABLE strict_t (id BIGINT PRIMARY KEY, v INT)")
        .unwrap();
    let g = common::Idgate::start_with(|port| {
        common::idgate_proc::config_for(port, &[("shard0", &db)], "")
            + "generators:\n  seq:\n    kind: segment\n  flake:\n    kind: snowflake\n    worker_id: 1\n\
               tables:\n  gen_t:\n    generator: seq\n  strict_t:\n    generator: seq\n    explicit_ids: reject\n  small_t:\n    generator: flake\n"
    });
    // Created after idgate started (an existing one keeps it from starting): the INSERT says
    // what to change.
    setup
        .query_drop("CREATE TABLE small_t (id INT PRIMARY KEY, v INT)")
        .unwrap();
    let mut c = g.conn();
    let code = |r: Result<(), mysql::Error>| match r {
        Err(mysql::Error::MySqlError(e)) => (e.code, e.message),
        other => panic!("expected an error, got {other:?}"),
    };
    // INSERT … SELECT works; its ON DUPLICATE KEY UPDATE is refused with what to do instead,
    // and explicit ids obey `explicit_ids: reject` there too.
    c.query_drop("INSERT INTO gen_t (v) SELECT 'x'").unwrap();
    assert_eq!(c.affected_rows(), 1);
    let (n, m) = code(
        c.query_drop("INSERT INTO gen_t (v) SELECT v FROM gen_t ON DUPLICATE KEY UPDATE v = 'y'"),
    );
    assert_eq!(n, 1235, "{m}");
    assert!(m.contains("gen_t") && m.contains("INSERT IGNORE"), "{m}");
    let (_, m) = code(c.query_drop("INSERT INTO strict_t (id, v) SELECT 7, 1"));
    assert!(m.contains("explicit_ids: reject"), "{m}");
    let (n, m) = code(c.query_drop("INSERT INTO strict_t (id, v) VALUES (7, 1)"));
    assert!(m.contains("explicit_ids: reject"), "{n} {m}");
    c.query_drop("INSERT INTO strict_t (v) VALUES (1)").unwrap();
    let (_, m) = code(c.query_drop("INSERT INTO small_t (v) VALUES (1)"));
    assert!(m.contains("BIGINT"), "{m}");
    let (n, _) = code(c.query_drop("INSERT INTO gen_t (v VALUES ('x')"));
    assert_eq!(n, 1064);
    let (n, _) = code(c.query_drop("INSERT INTO gen_t (v) VALUES ('a', 'b')"));
    assert_eq!(n, 1136);
    let (n, _) = code(c.query_drop("INSERT INTO gen_t (nope) VALUES ('a')"));
    assert_eq!(n, 1054);
    c.query_drop("INSERT INTO gen_t (v) VALUES ('fine')")
        .unwrap();
    assert!(c.last_insert_id() > 0);
}

#[test]
fn prepared_inserts_match_auto_increment() {
    use mysql_common::value::Value;
    let direct_db = common::start_db();
    let behind = common::start_db();
    common::direct(&direct_db).query_drop(AUTO_INC).unwrap();
    let g = common::Idgate::start_with(|port| segment_config(port, &behind, "prepared"));
    common::direct(&behind).query_drop(GENERATED).unwrap();
    let mut d = Raw::connect(
        direct_db.port,
        common::USER,
        common::PASSWORD,
        common::DATABASE,
    );
    let mut p = Raw::connect(g.port, "app", "app-secret", common::DATABASE);
    let cases: Vec<(&str, Vec<Vec<Value>>)> = vec![
        (
            "INSERT INTO gen_t (v, n) VALUES (?, ?)",
            vec![
                vec![Value::Bytes(b"a".to_vec()), Value::Int(1)],
                vec![Value::Bytes("ü😀'\\".as_bytes().to_vec()), Value::NULL],
            ],
        ),
        (
            "INSERT INTO gen_t (id, v) VALUES (?, ?)",
            vec![
                vec![Value::NULL, Value::Bytes(b"null id".to_vec())],
                vec![Value::Int(0), Value::Bytes(b"zero id".to_vec())],
            ],
        ),
        (
            "INSERT INTO gen_t (v, n) VALUES (?, ?), (?, ?), ('lit', 7)",
            vec![vec![
                Value::Bytes(b"m1".to_vec()),
                Value::UInt(i32::MAX as u64),
                Value::Bytes(b"m2".to_vec()),
                Value::Int(-5),
            ]],
        ),
        (
            "INSERT INTO gen_t SET v = ?",
            vec![vec![Value::Bytes(b"set".to_vec())]],
        ),
        (
            "INSERT INTO gen_t (v, n) VALUES (?, ?)",
            vec![vec![
                Value::Bytes(b"too big".to_vec()),
                Value::UInt(u32::MAX as u64),
            ]],
        ),
        // Last: an explicit id moves MariaDB's AUTO_INCREMENT counter past it, not idgate's
        // generator (see the book's design notes, docs/src/design.md).
        (
            "INSERT INTO gen_t (id, v) VALUES (?, ?)",
            vec![
                vec![Value::Int(500), Value::Bytes(b"explicit".to_vec())],
                vec![Value::Int(500), Value::Bytes(b"duplicate".to_vec())],
            ],
        ),
    ];
    for (sql, executions) in &cases {
        let (did, dprep) = d.prepare(sql.as_bytes());
        let (pid, pprep) = p.prepare(sql.as_bytes());
        assert_eq!(dprep, pprep, "prepare `{sql}`");
        for params in executions {
            let (ds, ps) = (d.execute(did, params), p.execute(pid, params));
            assert_eq!(
                ds,
                ps,
                "`{sql}` with {params:?}\ndirect: {}\nidgate: {}",
                show(&ds),
                show(&ps)
            );
            // After an error MySQL leaves LAST_INSERT_ID() undefined: compare only after success.
            if ds[0][0] != 0xff {
                let lid = b"SELECT LAST_INSERT_ID()";
                assert_eq!(d.query(lid), p.query(lid), "LAST_INSERT_ID() after `{sql}`");
            }
        }
    }
    let rows = b"SELECT id, v, n FROM gen_t ORDER BY id";
    assert_eq!(normalize(d.query(rows)), normalize(p.query(rows)));
}

/// Upserts through a unique key other than the id, as ORMs write them (`get_or_create`,
/// `id = LAST_INSERT_ID(id)` to learn the existing row's id), answer as on an AUTO_INCREMENT
/// table: affected rows, the insert id of the OK and LAST_INSERT_ID() after it.
#[test]
fn upserts_by_another_unique_key_match_auto_increment() {
    const DIRECT: &str = "CREATE TABLE gen_u (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NOT NULL UNIQUE, n INT DEFAULT 0)";
    const BEHIND: &str = "CREATE TABLE gen_u (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NOT NULL UNIQUE, n INT DEFAULT 0) AUTO_INCREMENT = 1000000000";
    let mut t = SideBySide::start("gen_u", DIRECT, BEHIND, "upserts");
    for sql in [
        "INSERT INTO gen_u (v) VALUES ('a')",
        "INSERT INTO gen_u (v) VALUES ('a') ON DUPLICATE KEY UPDATE n = n + 1",
        "INSERT INTO gen_u (v) VALUES ('a') ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id), n = n + 1",
        "INSERT INTO gen_u (v) VALUES ('a') ON DUPLICATE KEY UPDATE n = n",
        "INSERT INTO gen_u (v) VALUES ('b') ON DUPLICATE KEY UPDATE n = n + 1",
        "INSERT IGNORE INTO gen_u (v) VALUES ('b')",
        // Changes nothing: LAST_INSERT_ID() stays b's.
        "INSERT INTO gen_u (v) VALUES ('a') ON DUPLICATE KEY UPDATE n = n",
        "INSERT INTO gen_u SET v = 'a' ON DUPLICATE KEY UPDATE n = 100",
        "INSERT INTO gen_u (v) VALUES ('c'), ('a') ON DUPLICATE KEY UPDATE n = n + 10",
        "INSERT INTO gen_u (v) VALUE ('e') /* new */ ON DUPLICATE KEY UPDATE n = n + 1",
        // In a multi-statement query: each answer says more results follow.
        "INSERT INTO gen_u (v) VALUES ('f') ON DUPLICATE KEY UPDATE n = n + 1; \
         INSERT INTO gen_u (v) VALUES ('f') ON DUPLICATE KEY UPDATE n = n + 1; \
         INSERT IGNORE INTO gen_u (v) VALUES ('f')",
        "SELECT id, v, n FROM gen_u ORDER BY id",
    ] {
        t.same(sql);
    }
}

/// What a client learns from one statement, the ids named by the rows holding them (each side's
/// ids are its own: MariaDB hands a left-out row's id to the next row, a generator does not):
/// the OK's affected rows, status, warnings and info, or the error; the row its insert id names;
/// the row LAST_INSERT_ID() names after it.
#[derive(Debug, PartialEq)]
struct Learned {
    answer: Result<(u64, u16, u16, Vec<u8>), Vec<u8>>,
    insert_id: String,
    last_insert_id: String,
}

/// Runs `sql` on `c` and names its ids by the `v` of `table`'s row holding them (read on `peek`).
fn learn(c: &mut Raw, peek: &mut mysql::Conn, table: &str, sql: &str) -> Learned {
    let mut name = |id: u64| -> String {
        if id == 0 {
            return "0".into();
        }
        peek.query_first::<String, _>(format!("SELECT v FROM {table} WHERE id = {id}"))
            .unwrap()
            .unwrap_or_else(|| format!("no row has id {id}"))
    };
    let out = c.query(sql.as_bytes());
    let first = &out[0];
    if first[0] == 0xff {
        return Learned {
            answer: Err(first.clone()),
            insert_id: String::new(),
            last_insert_id: String::new(),
        };
    }
    // A result set (RETURNING) is compared whole; it has no insert id.
    let ok = idgate::wire::packets::parse_ok(first).filter(|_| first[0] == 0);
    let answer = match ok {
        Some(ok) => {
            let info = idgate::wire::packets::ok_info(first).to_vec();
            Ok((ok.affected_rows, ok.status, ok.warnings, info))
        }
        None => Err(out.concat()),
    };
    let lid = c.query(b"SELECT LAST_INSERT_ID()");
    // Column count, definition, EOF, then the row: one length-prefixed text value.
    let row = &lid[3];
    let lid: u64 = std::str::from_utf8(&row[1..1 + row[0] as usize])
        .unwrap()
        .parse()
        .unwrap();
    Learned {
        answer,
        insert_id: ok.map_or_else(|| "none".into(), |ok| name(ok.last_insert_id)),
        last_insert_id: name(lid),
    }
}

/// Multi-row IGNORE and upserts whose rows are left out or update existing rows answer as on an
/// AUTO_INCREMENT table: the insert id is the first row actually inserted, else what the
/// backend reports; LAST_INSERT_ID() moves only to a row inserted or one the statement names.
/// With and without CLIENT_FOUND_ROWS (Connector/J's default), which counts a row an upsert
/// matched but left unchanged.
#[test]
fn multi_row_upserts_match_auto_increment() {
    const DIRECT: &str = "CREATE TABLE gen_m (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NOT NULL UNIQUE, n INT DEFAULT 0)";
    const BEHIND: &str = "CREATE TABLE gen_m (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NOT NULL UNIQUE, n INT DEFAULT 0) AUTO_INCREMENT = 1000000000";
    for found_rows in [false, true] {
        let flags = LoginFlags {
            found_rows,
            ..LoginFlags::default()
        };
        let tag = if found_rows { "multi_found" } else { "multi" };
        let mut t = SideBySide::start_with("gen_m", DIRECT, BEHIND, tag, flags);
        let mut peek_direct = common::direct(common::shared_db());
        let mut peek_behind = common::direct(&t._behind);
        for sql in [
            "INSERT INTO gen_m (v) VALUES ('a'), ('b')",
            // The first row is left out, the others inserted.
            "INSERT IGNORE INTO gen_m (v) VALUES ('a'), ('c'), ('d')",
            // Every row left out.
            "INSERT IGNORE INTO gen_m (v) VALUES ('a'), ('b')",
            // The first row updates, the second is inserted.
            "INSERT INTO gen_m (v) VALUES ('a'), ('e') ON DUPLICATE KEY UPDATE n = n + 1",
            // Every row updates.
            "INSERT INTO gen_m (v) VALUES ('a'), ('b') ON DUPLICATE KEY UPDATE n = n + 1",
            // Every row matched, none changed.
            "INSERT INTO gen_m (v) VALUES ('a'), ('b') ON DUPLICATE KEY UPDATE n = n",
            // A row matched and left unchanged, then one inserted.
            "INSERT INTO gen_m (v) VALUES ('a'), ('f') ON DUPLICATE KEY UPDATE n = n",
            // One row matched and left unchanged; then updated.
            "INSERT INTO gen_m (v) VALUES ('b') ON DUPLICATE KEY UPDATE n = n",
            "INSERT INTO gen_m (v) VALUES ('b') ON DUPLICATE KEY UPDATE n = n + 1",
            // One row new, in the middle; the others name themselves.
            "INSERT INTO gen_m (v) VALUES ('a'), ('g'), ('c') ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)",
            // No row new, the update names one.
            "INSERT INTO gen_m (v) VALUES ('c'), ('d') ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)",
            "INSERT IGNORE INTO gen_m (v) VALUES ('h'), ('a')",
            "INSERT IGNORE INTO gen_m (v) VALUES ('a'), ('b'), ('i'), ('j')",
            "INSERT INTO gen_m (v) VALUES ('a') ON DUPLICATE KEY UPDATE v = 'a2'",
            // RETURNING gives the rows inserted; LAST_INSERT_ID() is the first of them.
            "INSERT IGNORE INTO gen_m (v) VALUES ('a2'), ('k'), ('l') RETURNING v",
            "INSERT IGNORE INTO gen_m (v) VALUES ('k'), ('l') RETURNING v, n",
            // IGNORE with an update: two new rows, one matched and left as it was.
            "INSERT IGNORE INTO gen_m (v) VALUES ('y1'), ('y2'), ('a2') ON DUPLICATE KEY UPDATE n = n",
        ] {
            let d = learn(&mut t.direct, &mut peek_direct, "gen_m", sql);
            let p = learn(&mut t.through, &mut peek_behind, "gen_m", sql);
            assert_eq!(
                d,
                p,
                "found_rows: {found_rows}, `{sql}`\nidgate log:\n{}",
                t.idgate.log()
            );
        }
        // Finding the first row inserted leaves the client's connection's warnings as MariaDB
        // does. Its ROW_COUNT() is reset by setting LAST_INSERT_ID() there: asking is refused.
        let sql = b"INSERT IGNORE INTO gen_m (v) VALUES ('b'), ('x1'), ('x2')";
        t.direct.query(sql);
        t.through.query(sql);
        let (d, p) = (
            t.direct.query(b"SHOW WARNINGS"),
            t.through.query(b"SHOW WARNINGS"),
        );
        assert_eq!(d, p, "SHOW WARNINGS: {}", show(&p));
        for c in [&mut t.direct, &mut t.through] {
            c.query(b"INSERT IGNORE INTO gen_m (v) VALUES ('b'), ('x3')");
        }
        let p = t.through.query(b"SELECT ROW_COUNT()");
        assert!(
            p[0].starts_with(&[0xff, 0xd3, 0x04]),
            "ROW_COUNT(): {}",
            show(&p)
        );
        let rows = b"SELECT v, n FROM gen_m ORDER BY v";
        assert_eq!(t.direct.query(rows), t.through.query(rows));
    }
}

/// The same over two shards: each shard inserts, leaves out or updates its own rows, and the
/// client is told what one server would say of the whole statement.
#[test]
fn sharded_upserts_match_auto_increment() {
    const DIRECT: &str = "CREATE TABLE gen_s (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v VARCHAR(20) NOT NULL, n INT DEFAULT 0, UNIQUE (k, v))";
    let shards = [common::start_db(), common::start_db()];
    let mut setup = common::direct(common::shared_db());
    setup.query_drop("DROP TABLE IF EXISTS gen_s").unwrap();
    setup.query_drop(DIRECT).unwrap();
    let idgate = common::Idgate::start_with(|port| {
        common::idgate_proc::config_for(port, &[("shard0", &shards[0]), ("shard1", &shards[1])], "")
            + "generators:\n  seq:\n    kind: segment\n    tag: sharded_upserts\n    start: 1\n    step: 1000\n\
               tables:\n  gen_s:\n    generator: seq\n    sharding:\n      columns: [k]\n      algorithm: mod\n      shards: [shard0, shard1]\n"
            + "  gen_b:\n    generator: seq\n    broadcast: true\n"
    });
    const BROADCAST: &str = "CREATE TABLE gen_b (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NOT NULL UNIQUE, n INT DEFAULT 0)";
    setup.query_drop("DROP TABLE IF EXISTS gen_b").unwrap();
    setup.query_drop(BROADCAST).unwrap();
    for (i, db) in shards.iter().enumerate() {
        let mut c = common::direct(db);
        let counter = (i + 1) * 1_000_000_000;
        c.query_drop(format!("{DIRECT} AUTO_INCREMENT = {counter}"))
            .unwrap();
        c.query_drop(format!("{BROADCAST} AUTO_INCREMENT = {counter}"))
            .unwrap();
    }
    let account = (common::USER, common::PASSWORD);
    let mut direct = Raw::connect_with(
        common::shared_db().port,
        account,
        common::DATABASE,
        LoginFlags::default(),
    );
    let mut through = Raw::connect(idgate.port, "app", "app-secret", common::DATABASE);
    let mut peek_direct = common::direct(common::shared_db());
    let mut peek_through = mysql::Conn::new(
        mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(idgate.port)
            .user(Some("app"))
            .pass(Some("app-secret"))
            .db_name(Some(common::DATABASE)),
    )
    .unwrap();
    for sql in [
        "INSERT INTO gen_s (k, v) VALUES (1, 'a'), (2, 'b')",
        // Row 0 left out on shard1; row 1 new on shard0, row 2 new on shard1.
        "INSERT IGNORE INTO gen_s (k, v) VALUES (1, 'a'), (2, 'c'), (3, 'd')",
        "INSERT IGNORE INTO gen_s (k, v) VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO gen_s (k, v) VALUES (2, 'b'), (1, 'e') ON DUPLICATE KEY UPDATE n = n + 1",
        "INSERT INTO gen_s (k, v) VALUES (1, 'a'), (2, 'b') ON DUPLICATE KEY UPDATE n = n + 1",
        "INSERT INTO gen_s (k, v) VALUES (1, 'a'), (2, 'b') ON DUPLICATE KEY UPDATE n = n",
        "INSERT INTO gen_s (k, v) VALUES (2, 'b'), (1, 'a') ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)",
        "INSERT INTO gen_s (k, v) VALUES (1, 'a'), (4, 'f'), (2, 'b') ON DUPLICATE KEY UPDATE n = n + 1",
        "INSERT IGNORE INTO gen_s (k, v) VALUES (1, 'a'), (2, 'r'), (3, 's') RETURNING k, v",
    ] {
        let d = learn(&mut direct, &mut peek_direct, "gen_s", sql);
        let p = learn(&mut through, &mut peek_through, "gen_s", sql);
        assert_eq!(d, p, "`{sql}`\nidgate log:\n{}", idgate.log());
    }
    // As a prepared statement: row 0 left out on shard1, row 1 new on shard0.
    let prepared = |c: &mut mysql::Conn| {
        c.exec_drop(
            "INSERT IGNORE INTO gen_s (k, v) VALUES (?, ?), (?, ?), (?, ?)",
            (1, "a", 2, "g", 3, "h"),
        )
        .unwrap();
        let (affected, id) = (c.affected_rows(), c.last_insert_id());
        let lid: u64 = c.query_first("SELECT LAST_INSERT_ID()").unwrap().unwrap();
        let name = |c: &mut mysql::Conn, id: u64| -> Option<String> {
            c.exec_first("SELECT v FROM gen_s WHERE id = ?", (id,))
                .unwrap()
        };
        (affected, name(c, id), name(c, lid))
    };
    let d = prepared(&mut peek_direct);
    assert_eq!(d, (2, Some("g".into()), Some("g".into())));
    assert_eq!(prepared(&mut peek_through), d);
    // A broadcast table: every backend holds every row and answers alike.
    for sql in [
        "INSERT INTO gen_b (v) VALUES ('a'), ('b')",
        "INSERT IGNORE INTO gen_b (v) VALUES ('a'), ('c'), ('d')",
        "INSERT IGNORE INTO gen_b (v) VALUES ('a'), ('b')",
        "INSERT INTO gen_b (v) VALUES ('a'), ('e') ON DUPLICATE KEY UPDATE n = n + 1",
        "INSERT INTO gen_b (v) VALUES ('b') ON DUPLICATE KEY UPDATE n = n + 1",
    ] {
        let d = learn(&mut direct, &mut peek_direct, "gen_b", sql);
        let p = learn(&mut through, &mut peek_through, "gen_b", sql);
        assert_eq!(d, p, "`{sql}`\nidgate log:\n{}", idgate.log());
    }
    let rows = b"SELECT k, v, n FROM gen_s ORDER BY k, v";
    assert_eq!(direct.query(rows), through.query(rows));
}

/// A one-row upsert into a table whose backend column is not AUTO_INCREMENT (a table made for
/// idgate), on a shard other than the default backend, still tells what one AUTO_INCREMENT
/// server tells: the updated row's id, 0 for a row left unchanged, the new row's id;
/// LAST_INSERT_ID() moves only for a new row, also after an update that fails.
#[test]
fn one_row_upserts_name_the_matched_row_without_auto_increment_behind() {
    const DIRECT: &str = "CREATE TABLE gen_n (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) NOT NULL UNIQUE, w INT UNIQUE, n INT DEFAULT 0)";
    const BEHIND: &str = "CREATE TABLE gen_n (id BIGINT PRIMARY KEY, v VARCHAR(20) NOT NULL UNIQUE, w INT UNIQUE, n INT DEFAULT 0)";
    let (default, shard) = (common::start_db(), common::start_db());
    for found_rows in [false, true] {
        let tag = if found_rows { "named_found" } else { "named" };
        let mut setup = common::direct(common::shared_db());
        setup.query_drop("DROP TABLE IF EXISTS gen_n").unwrap();
        setup.query_drop(DIRECT).unwrap();
        let mut behind = common::direct(&shard);
        behind.query_drop("DROP TABLE IF EXISTS gen_n").unwrap();
        let idgate = common::Idgate::start_with(|port| {
            common::idgate_proc::config_for(port, &[("shard0", &default), ("shard1", &shard)], "")
                + &format!(
                    "generators:\n  seq:\n    kind: segment\n    tag: {tag}\n    start: 1\n    step: 1000\n\
                     tables:\n  gen_n:\n    generator: seq\n    unique: per_shard\n    sharding:\n      \
                     columns: [id]\n      algorithm: mod\n      shards: [shard1]\n"
                )
        });
        behind.query_drop(BEHIND).unwrap();
        let flags = LoginFlags {
            found_rows,
            ..LoginFlags::default()
        };
        let account = (common::USER, common::PASSWORD);
        let port = common::shared_db().port;
        let mut direct = Raw::connect_with(port, account, common::DATABASE, flags);
        let app = ("app", "app-secret");
        let mut through = Raw::connect_with(idgate.port, app, common::DATABASE, flags);
        let mut peek_direct = common::direct(common::shared_db());
        let mut peek_behind = common::direct(&shard);
        for sql in [
            "INSERT INTO gen_n (v, w) VALUES ('a', 1) ON DUPLICATE KEY UPDATE n = n + 1",
            "INSERT INTO gen_n (v, w) VALUES ('b', 2) ON DUPLICATE KEY UPDATE n = n + 1",
            "INSERT INTO gen_n (v) VALUES ('a') ON DUPLICATE KEY UPDATE n = n + 1",
            "INSERT INTO gen_n (v) VALUES ('a') ON DUPLICATE KEY UPDATE n = n",
            "INSERT INTO gen_n (v) VALUES ('a') ON DUPLICATE KEY UPDATE n = n /* kept */ ;",
            // The update breaks another unique key: an error, LAST_INSERT_ID() as it was.
            "INSERT INTO gen_n (v) VALUES ('a') ON DUPLICATE KEY UPDATE w = 2",
            "SELECT 1",
            "INSERT INTO gen_n (v) VALUES ('c') ON DUPLICATE KEY UPDATE n = n + 1",
            "INSERT INTO gen_n (v) VALUES ('b') ON DUPLICATE KEY UPDATE n = n + 1 -- note",
        ] {
            let d = learn(&mut direct, &mut peek_direct, "gen_n", sql);
            let p = learn(&mut through, &mut peek_behind, "gen_n", sql);
            assert_eq!(
                d,
                p,
                "found_rows: {found_rows}, `{sql}`\nidgate log:\n{}",
                idgate.log()
            );
        }
        let rows = b"SELECT v, w, n FROM gen_n ORDER BY v";
        assert_eq!(direct.query(rows), through.query(rows));
    }
}
