//! LOAD DATA LOCAL INFILE through idgate: the `mysql` CLI, PyMySQL and Connector/J load files directly and
//! through idgate and must see the same output and leave the same table contents; file packets of
//! 16 MiB and more arrive intact; a client that did not agree to send files gets MariaDB's own
//! error; a client that vanishes mid-file leaves nothing loaded and no statement running.

mod common;

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::clients::*;
use common::idgate_proc::{APP_PASSWORD, APP_USER};
use common::{direct, Idgate, MariaDb, DATABASE, PASSWORD, USER};
use idgate::exec::relay::{self, Adjust, Client, Reply};
use idgate::exec::BackendConn;
use idgate::wire::framing::{PacketWriter, MAX_CHUNK};
use mysql::prelude::Queryable;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);

/// Rows `first..first+count` as `id<TAB>text` lines, each text `width` bytes long.
fn tsv(first: u64, count: u64, width: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in first..first + count {
        let mut t = format!("row {i} é ");
        while t.len() < width {
            t.push(char::from(b'a' + (i % 26) as u8));
        }
        writeln!(out, "{i}\t{t}").unwrap();
    }
    out
}

fn contents(db: &MariaDb, table: &str) -> (u64, u64) {
    direct(db)
        .query_first(format!(
            "SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS(',', id, t))), 0) FROM {table}"
        ))
        .unwrap()
        .unwrap()
}

/// One run of the `mysql` CLI with `--local-infile=<local>` and `args`, in `dir`.
fn mysql_cli(t: &Target, dir: &Path, local: bool, sql: &str) -> Run {
    let mut cmd = Command::new(require_tool("mysql", "mariadb-client"));
    cmd.current_dir(dir)
        .arg("--no-defaults")
        .arg(format!("--local-infile={}", local as u8))
        .arg("--force")
        .arg("--max-allowed-packet=64M")
        .arg("-h127.0.0.1")
        .arg(format!("-P{}", t.port))
        .arg(format!("-u{}", t.user))
        .arg(format!("-p{}", t.password))
        .arg(DATABASE)
        .arg("-e")
        .arg(sql);
    run(cmd, &format!("mysql {}", t.name), CLIENT_TIMEOUT)
}

/// The same CLI session directly and through idgate: same stdout, stderr and exit code.
fn cli_both(db: &MariaDb, g: &Idgate, dir: &Path, local: bool, sql: &str) -> Run {
    let direct = mysql_cli(&direct_target(db), dir, local, sql);
    let through = mysql_cli(&idgate_target(g), dir, local, sql);
    assert_eq!(
        (&through.stdout, &through.stderr, through.code),
        (&direct.stdout, &direct.stderr, direct.code),
        "the mysql CLI sees something else through idgate\n{}\nidgate log:\n{}",
        diff(&direct.stdout, &through.stdout),
        g.log()
    );
    through
}

#[test]
fn mysql_cli_loads_like_direct() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let dir = scratch_dir("local_infile", "cli");
    std::fs::write(dir.join("rows.tsv"), tsv(1, 3000, 40)).unwrap();
    // Over 16 MiB, so the CLI streams it in many packets.
    let big = tsv(1, 20_000, 1000);
    assert!(big.len() > 16 << 20);
    std::fs::write(dir.join("big.tsv"), &big).unwrap();
    let check = "SELECT COUNT(*), SUM(CRC32(CONCAT_WS(',', id, t))) FROM li_cli";

    let sql = format!(
        "DROP TABLE IF EXISTS li_cli; CREATE TABLE li_cli (id INT PRIMARY KEY, t MEDIUMTEXT) \
         ENGINE=InnoDB DEFAULT CHARSET=utf8mb4; \
         LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE li_cli; SELECT ROW_COUNT(); SHOW WARNINGS; \
         {check}; SELECT * FROM li_cli WHERE id IN (1, 1500, 3000);"
    );
    let t = cli_both(db, &g, &dir, true, &sql);
    assert_eq!(t.code, Some(0), "{}", t.stderr);
    assert_has(&t.stdout, "3000");
    assert_eq!(contents(db, "li_cli").0, 3000);

    let sql = format!(
        "TRUNCATE li_cli; LOAD DATA LOCAL INFILE 'big.tsv' INTO TABLE li_cli; SELECT ROW_COUNT(); \
         {check};"
    );
    let t = cli_both(db, &g, &dir, true, &sql);
    assert_eq!(t.code, Some(0), "{}", t.stderr);
    assert_has(&t.stdout, "20000");

    // A missing file: the CLI sends an empty file, reads the backend's answer and reports its
    // own error (and stops, even with --force; PyMySQL's session going on is checked below).
    let sql = "LOAD DATA LOCAL INFILE 'missing.tsv' INTO TABLE li_cli;";
    let t = cli_both(db, &g, &dir, true, sql);
    assert!(t.stderr.contains("'missing.tsv' not found"), "{}", t.stderr);

    // Without --local-infile: MariaDB's own refusal (the file is never asked for).
    let sql = "LOAD DATA LOCAL INFILE 'rows.tsv' INTO TABLE li_cli;";
    let t = cli_both(db, &g, &dir, false, sql);
    assert!(t.stderr.contains("ERROR 4166 (HY000)"), "{}", t.stderr);
    assert_eq!(contents(db, "li_cli").0, 20_000);
}

fn py_local_infile(db: &MariaDb, g: &Idgate, name: &str) -> String {
    let python = require_tool("python3", "python3");
    require_python_modules("pymysql", "pymysql");
    differential("local_infile", name, db, g, CLIENT_TIMEOUT, |t| {
        let mut cmd = Command::new(&python);
        cmd.arg(source_dir().join("py_local_infile.py"));
        client_args(&mut cmd, t);
        cmd
    })
}

fn assert_py_transcript(t: &str) {
    for line in [
        "load rows: affected=3000 info=b'2Records: 3000  Deleted: 0  Skipped: 0  Warnings: 0' warnings=0",
        "usable after a missing file",
        "bad row: error code=1644 message=bad row",
        "after rollback: (0, Decimal('0'))",
        "multi result 3: rowcount=1 rows=((10,),)",
        "usable after the multi-statement load",
        "without local_infile: error code=4166 message=The used command is not allowed because the MariaDB server or client has disabled the local infile capability",
        "usable without local_infile",
        "without local_infile, multi: first (('before',),)",
        "usable after the refused batch",
        "done",
    ] {
        assert_has(t, line);
    }
}

#[test]
fn pymysql_loads_like_direct() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let t = py_local_infile(db, &g, "pymysql");
    assert_py_transcript(&t);
}

#[test]
fn connector_j_loads_like_direct() {
    let (java, classpath) = compile_java("JdbcLocalInfile.java");
    let db = common::shared_db();
    let g = Idgate::start(db);
    let t = differential("local_infile", "jdbc", db, &g, CLIENT_TIMEOUT, |t| {
        let mut cmd = Command::new(&java);
        cmd.arg("-Dfile.encoding=UTF-8")
            .arg("-cp")
            .arg(&classpath)
            .arg("JdbcLocalInfile");
        client_args(&mut cmd, t);
        cmd
    });
    for line in [
        "load count: 5000",
        "usable: 42",
        "without allowLocalInfile: error code=4166 sqlstate=HY000",
        "done",
    ] {
        assert_has(&t, line);
    }
    let committed = t.lines().find(|l| l.starts_with("after commit: 5007 rows"));
    assert!(committed.is_some(), "{t}");
}

/// With a sharded table configured, transactions are XA branches: a LOAD on the default backend
/// joins the transaction as a write (loads into the sharded table: `tests/load_data_sharded.rs`).
#[test]
fn sharded_config_xa_transactions() {
    let ts = common::two_shards(
        "tables:\n  li_orders:\n    sharding:\n      columns: [id]\n      algorithm: mod\n      shards: [shard0, shard1]\n",
        &["CREATE TABLE li_orders (id BIGINT PRIMARY KEY, t TEXT)"],
    );
    let t = py_local_infile(&ts.dbs[0], &ts.g, "pymysql_xa");
    assert_py_transcript(&t);
}

/// A raw connection that announces CLIENT_LOCAL_FILES (idgate's own backend client does).
fn raw(rt: &tokio::runtime::Runtime, port: u16, user: &str, password: &str) -> BackendConn {
    common::raw::connect_backend(rt, port, user, password, DATABASE)
}

fn split_packets(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while bytes.len() >= 4 {
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0]) as usize;
        out.push(bytes[4..4 + len].to_vec());
        bytes = &bytes[4 + len..];
    }
    out
}

/// Sends `sql`, expects the request for a file, answers with `parts` as packets (each written
/// as one logical packet, split by the framing when 16 MiB or more) and the empty packet, and
/// returns the request and the answer's packets.
fn raw_load(
    rt: &tokio::runtime::Runtime,
    conn: &mut BackendConn,
    sql: &str,
    parts: &[&[u8]],
) -> (Vec<u8>, Vec<Vec<u8>>) {
    rt.block_on(async {
        let mut p = vec![0x03];
        p.extend_from_slice(sql.as_bytes());
        conn.write_command(&p);
        conn.flush().await.unwrap();
        conn.read().await.unwrap();
        let request = conn.packet.clone();
        assert_eq!(request.first(), Some(&0xfb), "no file request: {request:?}");
        conn.begin_file();
        for part in parts {
            conn.send_file_packet(part).await.unwrap();
        }
        conn.end_file().await.unwrap();
        let mut writer = PacketWriter::new(Vec::<u8>::new());
        let mut client = Client {
            writer: &mut writer,
            deprecate_eof: false,
        };
        relay::relay(conn, &mut client, Reply::Results, Adjust::default())
            .await
            .unwrap();
        writer.flush().await.unwrap();
        (request, split_packets(writer.inner()))
    })
}

#[test]
fn file_packets_of_16_mib_and_more() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let data = tsv(1, 40_000, 1000);
    // One packet over 16 MiB, one of exactly 16 MiB - 1 (followed by an empty continuation
    // chunk), then the rest; rows cross packet boundaries.
    let (a, rest) = data.split_at(17 << 20);
    let (b, c) = rest.split_at(MAX_CHUNK);
    let parts = [a, b, c];
    let sql = "LOAD DATA LOCAL INFILE 'big.tsv' INTO TABLE li_raw";
    let mut answers = Vec::new();
    for (port, user, password) in [(db.port, USER, PASSWORD), (g.port, APP_USER, APP_PASSWORD)] {
        direct(db)
            .query_drop(
                "CREATE OR REPLACE TABLE li_raw (id INT PRIMARY KEY, t TEXT) DEFAULT CHARSET=utf8mb4",
            )
            .unwrap();
        let mut conn = raw(&rt, port, user, password);
        let (request, answer) = raw_load(&rt, &mut conn, sql, &parts);
        assert_eq!(request, b"\xfbbig.tsv");
        answers.push((answer, contents(db, "li_raw")));
        // The connection is in step: a next statement gets its answer.
        let mut w = PacketWriter::new(Vec::<u8>::new());
        rt.block_on(async {
            conn.write_command(b"\x03SELECT 1");
            conn.flush().await.unwrap();
            let mut client = Client {
                writer: &mut w,
                deprecate_eof: false,
            };
            let r = relay::relay(&mut conn, &mut client, Reply::Results, Adjust::default())
                .await
                .unwrap();
            assert!(!r.error);
        });
    }
    assert_eq!(answers[0], answers[1], "direct vs through idgate");
    assert_eq!(answers[1].1 .0, 40_000);
}

#[test]
fn client_vanishing_mid_file_loads_nothing() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    direct(db)
        .query_drop("CREATE OR REPLACE TABLE li_gone (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB")
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut conn = raw(&rt, g.port, APP_USER, APP_PASSWORD);
    rt.block_on(async {
        conn.write_command(b"\x03LOAD DATA LOCAL INFILE 'part.tsv' INTO TABLE li_gone");
        conn.flush().await.unwrap();
        conn.read().await.unwrap();
        assert_eq!(conn.packet.first(), Some(&0xfb));
        conn.begin_file();
        conn.send_file_packet(&tsv(1, 2000, 500)).await.unwrap();
        conn.flush_file().await.unwrap();
    });
    drop(conn); // the client goes away without ending the file

    // idgate closes its backend connection, so the server abandons the statement.
    wait_until_load_ends(db, "part.tsv", &g);
    assert_eq!(contents(db, "li_gone").0, 0);
    let mut c = g.conn();
    assert_eq!(c.query_first::<i32, _>("SELECT 5").unwrap(), Some(5));
}

/// Waits until no `LOAD DATA LOCAL INFILE '<file>'` runs on `db` any more.
fn wait_until_load_ends(db: &MariaDb, file: &str, g: &Idgate) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let running: u64 = direct(db)
            .query_first(format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE INFO LIKE 'LOAD DATA LOCAL INFILE ''{file}''%'"
            ))
            .unwrap()
            .unwrap();
        if running == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the LOAD of {file} still runs on the backend\nidgate log:\n{}",
            g.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The backend connection breaks while the client is sending its file: the client may finish
/// sending, then gets an error saying the backend connection was lost; nothing is loaded.
#[test]
fn backend_lost_mid_file() {
    let db = common::shared_db();
    direct(db)
        .query_drop("CREATE OR REPLACE TABLE li_cut (id INT PRIMARY KEY, t TEXT) ENGINE=InnoDB")
        .unwrap();
    let relay = common::relay::Relay::start(db.port);
    let relay_port = relay.port;
    let g = Idgate::start_with(|port| {
        common::idgate_proc::config_for_ports(port, &[("shard0", relay_port)], "")
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut conn = raw(&rt, g.port, APP_USER, APP_PASSWORD);
    relay.cut_at(b"CUTHERE");
    let mut marked = Vec::new();
    for i in 100_000..110_000 {
        writeln!(marked, "{i}\tCUTHERE CUTHERE CUTHERE").unwrap();
    }
    let answer = rt.block_on(async {
        conn.write_command(b"\x03LOAD DATA LOCAL INFILE 'cut.tsv' INTO TABLE li_cut");
        conn.flush().await.unwrap();
        conn.read().await.unwrap();
        assert_eq!(conn.packet.first(), Some(&0xfb));
        conn.begin_file();
        conn.send_file_packet(&tsv(1, 2000, 100)).await.unwrap();
        conn.flush_file().await.unwrap();
        conn.send_file_packet(&marked).await.unwrap();
        conn.send_file_packet(&tsv(2001, 2000, 100)).await.unwrap();
        conn.end_file().await.unwrap();
        conn.read().await.map(|()| conn.packet.clone())
    });
    let answer = answer.expect("an error packet, not a dropped connection");
    assert_eq!(answer.first(), Some(&0xff), "{answer:?}");
    let code = u16::from_le_bytes([answer[1], answer[2]]);
    let message = String::from_utf8_lossy(&answer[9..]).into_owned();
    assert_eq!(code, 2013, "{message}");
    assert!(message.contains("Lost connection to backend"), "{message}");

    wait_until_load_ends(db, "cut.tsv", &g);
    assert_eq!(contents(db, "li_cut").0, 0);
    let mut c = g.conn();
    assert_eq!(c.query_first::<i32, _>("SELECT 6").unwrap(), Some(6));
}

/// idgate's own statements (`query_drop`) answer a request for a file with an empty file and stay
/// in step rather than wait for a result set that never comes.
#[test]
fn own_statements_decline_file_requests() {
    let db = common::shared_db();
    direct(db)
        .query_drop("CREATE OR REPLACE TABLE li_own (id INT PRIMARY KEY, t TEXT)")
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut conn = raw(&rt, db.port, USER, PASSWORD);
    let rows = rt.block_on(async {
        let guard = Duration::from_secs(60); // against a hang, not a speed check
        tokio::time::timeout(guard, async {
            conn.query_drop("LOAD DATA LOCAL INFILE 'own.tsv' INTO TABLE li_own")
                .await
                .unwrap();
            conn.query_rows("SELECT COUNT(*) FROM li_own")
                .await
                .unwrap()
        })
        .await
        .expect("query_drop waited for a file it should have declined")
    });
    assert_eq!(rows, vec![vec![Some(b"0".to_vec())]]);
}

/// A connection of the Rust client that answers every file request with `rows`.
fn loader(url: &str, rows: Vec<u8>) -> mysql::Conn {
    let opts = mysql::OptsBuilder::from_opts(mysql::Opts::from_url(url).unwrap())
        .local_infile_handler(Some(mysql::LocalInfileHandler::new(move |_, w| {
            w.write_all(&rows)
        })));
    mysql::Conn::new(opts).unwrap()
}

/// LOAD DATA LOCAL as a prepared statement (SQL `PREPARE`/`EXECUTE` and the binary protocol)
/// loads the client's file as it does directly; it loaded nothing and said nothing before.
#[test]
fn prepared_load_local_loads_like_direct() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let dir = scratch_dir("local_infile", "prepared");
    std::fs::write(dir.join("rows.tsv"), tsv(1, 300, 20)).unwrap();
    let sql = "DROP TABLE IF EXISTS li_prep; \
               CREATE TABLE li_prep (id INT PRIMARY KEY, t TEXT) DEFAULT CHARSET=utf8mb4; \
               PREPARE s FROM 'LOAD DATA LOCAL INFILE ''rows.tsv'' INTO TABLE li_prep'; \
               EXECUTE s; SELECT ROW_COUNT(); SELECT COUNT(*) FROM li_prep;";
    let t = cli_both(db, &g, &dir, true, sql);
    assert_eq!(t.code, Some(0), "{}", t.stderr);
    assert_eq!(contents(db, "li_prep").0, 300);

    // The binary protocol: COM_STMT_PREPARE of the LOAD, then COM_STMT_EXECUTE.
    let load = "LOAD DATA LOCAL INFILE 'any.tsv' INTO TABLE li_prep";
    for (url, first) in [(db.url(), 1000), (g.url(DATABASE), 2000)] {
        let mut c = loader(&url, tsv(first, 3, 20));
        let stmt = c.prep(load).unwrap();
        c.exec_drop(&stmt, ()).unwrap();
        assert_eq!(c.affected_rows(), 3, "{url}");
        assert_eq!(c.query_first::<i32, _>("SELECT 6").unwrap(), Some(6));
    }
    assert_eq!(contents(db, "li_prep").0, 306);

    // A client that did not agree to send files gets MariaDB's refusal, never a silent 0 rows.
    let sql = "PREPARE s FROM 'LOAD DATA LOCAL INFILE ''rows.tsv'' INTO TABLE li_prep'; \
               EXECUTE s; SELECT COUNT(*) FROM li_prep;";
    let t = cli_both(db, &g, &dir, false, sql);
    assert!(t.stderr.contains("ERROR 4166 (HY000)"), "{}", t.stderr);
    assert_eq!(contents(db, "li_prep").0, 306);
}
