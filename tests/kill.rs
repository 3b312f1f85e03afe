//! `KILL [CONNECTION | QUERY] id` through idgate takes the ids idgate gives its sessions (the
//! connection id a client got at login, which `mysql` and Connector/J send when a statement is
//! cancelled) and stops that session's work on every backend it holds, over one backend and over
//! two shards; never a backend thread that happens to carry the same number. `CONNECTION_ID()`
//! and `SHOW PROCESSLIST` show those ids, and `KILL USER` takes an idgate user.

mod common;

use std::time::{Duration, Instant};

use common::idgate_proc::{config_for, APP_PASSWORD, APP_USER};
use common::{Idgate, MariaDb, ORDERS_MOD_2};
use mysql::prelude::Queryable;

fn error_code(r: mysql::Result<()>) -> Option<u16> {
    match r {
        Err(mysql::Error::MySqlError(e)) => Some(e.code),
        _ => None,
    }
}

/// Runs `sql` on a session of its own in a thread; returns the session's id, and the thread's
/// answer (an error code, or none) with how long it took.
fn running(
    g: &Idgate,
    sql: &'static str,
) -> (u32, std::thread::JoinHandle<(Option<u16>, Duration)>) {
    let mut c = g.conn();
    let id = c.connection_id();
    let h = std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = c.query_drop(sql);
        let code = error_code(r);
        // The session is still usable after its statement was killed.
        if code == Some(1317) {
            let one: Option<i64> = c.query_first("SELECT 1").unwrap();
            assert_eq!(one, Some(1));
        }
        (code, t0.elapsed())
    });
    (id, h)
}

/// Waits until `sql`'s statement runs on some backend of `dbs`.
fn wait_running(dbs: &[&MariaDb], marker: &str) {
    let t0 = Instant::now();
    loop {
        let n: u64 = dbs
            .iter()
            .map(|db| {
                common::direct(db)
                    .query_first::<u64, _>(format!(
                        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%{marker}%' AND INFO NOT LIKE '%PROCESSLIST%'"
                    ))
                    .unwrap()
                    .unwrap_or(0)
            })
            .sum();
        if n > 0 {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{marker} never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_query_stops_the_sessions_statement_over_one_backend() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let (id, h) = running(&g, "SELECT SLEEP(60) AS kill_one_backend");
    wait_running(&[db], "kill_one_backend");
    let mut killer = g.conn();
    killer.query_drop(format!("KILL QUERY {id}")).unwrap();
    let (_, took) = h.join().unwrap();
    assert!(
        took < Duration::from_secs(30),
        "the statement ran on for {took:?}"
    );

    // KILL CONNECTION ends the session: its next statement finds no connection.
    let mut victim = g.conn();
    let vid = victim.connection_id();
    killer.query_drop(format!("KILL CONNECTION {vid}")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(victim.query_drop("SELECT 1").is_err());

    // Unknown ids and other users' sessions get MariaDB's errors.
    assert_eq!(error_code(killer.query_drop("KILL 4000000")), Some(1094));
    let other = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(g.port)
        .user(Some("nopw"))
        .pass(Some(""));
    let mut stranger = mysql::Conn::new(other).unwrap();
    let mine = g.conn();
    assert_eq!(
        error_code(stranger.query_drop(format!("KILL QUERY {}", mine.connection_id()))),
        Some(1095)
    );
    let _ = (APP_USER, APP_PASSWORD);
}

/// The query id the default backend gives the statement carrying `marker`.
fn query_id(db: &MariaDb, marker: &str) -> u64 {
    common::direct(db)
        .query_first(format!(
            "SELECT QUERY_ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%{marker}%' \
             AND INFO NOT LIKE '%PROCESSLIST%'"
        ))
        .unwrap()
        .unwrap_or_else(|| panic!("{marker} is not running"))
}

#[test]
fn kill_query_id_takes_the_backends_query_ids_of_idgates_sessions() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let (_, h) = running(&g, "SELECT SLEEP(60) AS kill_by_query_id");
    wait_running(&[db], "kill_by_query_id");
    let q = query_id(db, "kill_by_query_id");
    // Another user's statement: MariaDB's 1979; an unknown id: 1957.
    let other = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(g.port)
        .user(Some("nopw"))
        .pass(Some(""));
    let mut stranger = mysql::Conn::new(other).unwrap();
    let refused = stranger.query_drop(format!("KILL QUERY ID {q}"));
    assert!(
        matches!(&refused, Err(mysql::Error::MySqlError(e)) if e.code == 1979 && e.message == format!("You are not owner of query {q}")),
        "{refused:?}"
    );
    let mut killer = g.conn();
    let unknown = killer.query_drop("KILL QUERY ID 4000000000");
    assert!(
        matches!(&unknown, Err(mysql::Error::MySqlError(e)) if e.code == 1957 && e.message == "Unknown query id: 4000000000"),
        "{unknown:?}"
    );
    killer.query_drop(format!("KILL QUERY ID {q}")).unwrap();
    let (_, took) = h.join().unwrap();
    assert!(
        took < Duration::from_secs(30),
        "the statement ran on for {took:?}"
    );

    // A backend thread that is no session of idgate's is never killed through it.
    let mut outside = common::direct(db);
    let t = std::thread::spawn(move || {
        let t0 = Instant::now();
        let _ = outside.query_drop("SELECT SLEEP(3) AS kill_outside_idgate");
        t0.elapsed()
    });
    wait_running(&[db], "kill_outside_idgate");
    let q = query_id(db, "kill_outside_idgate");
    assert_eq!(
        error_code(killer.query_drop(format!("KILL QUERY ID {q}"))),
        Some(1957)
    );
    assert!(
        t.join().unwrap() >= Duration::from_millis(2900),
        "a foreign statement was killed"
    );
}

/// (name, type, flags, charset, length, decimals) of each column of `sql`'s answer.
fn columns_of(c: &mut mysql::Conn, sql: &str) -> Vec<String> {
    let r = c.query_iter(sql).unwrap();
    r.columns()
        .as_ref()
        .iter()
        .map(|col| {
            format!(
                "{} {:?} {:?} {} {} {}",
                col.name_str(),
                col.column_type(),
                col.flags(),
                col.character_set(),
                col.column_length(),
                col.decimals()
            )
        })
        .collect()
}

#[test]
fn connection_id_and_processlist_show_the_ids_kill_takes() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let mut me = g.conn();
    let my_id = me.connection_id();
    let said: Option<u32> = me.query_first("SELECT CONNECTION_ID()").unwrap();
    assert_eq!(
        said,
        Some(my_id),
        "CONNECTION_ID() is not the handshake's id"
    );
    let said: Option<u32> = me.query_first("select connection_id( ) as me;").unwrap();
    assert_eq!(said, Some(my_id));
    // Prepared on the server (the binary protocol): the same id, described as MariaDB
    // describes it, on every execution.
    let stmt = me.prep("SELECT CONNECTION_ID() AS me").unwrap();
    for _ in 0..2 {
        let said: Option<u32> = me.exec_first(&stmt, ()).unwrap();
        assert_eq!(
            said,
            Some(my_id),
            "a prepared CONNECTION_ID() is not the session's id"
        );
    }
    let prepared_columns = |c: &mut mysql::Conn, sql: &str| {
        let stmt = c.prep(sql).unwrap();
        let r = c.exec_iter(&stmt, ()).unwrap();
        let cols: Vec<String> = r
            .columns()
            .as_ref()
            .iter()
            .map(|c| {
                format!(
                    "{} {:?} {:?} len {} decimals {} charset {}",
                    c.name_str(),
                    c.column_type(),
                    c.flags(),
                    c.column_length(),
                    c.decimals(),
                    c.character_set()
                )
            })
            .collect();
        drop(r);
        cols
    };
    // Prepared, both are described as MariaDB describes them.
    for sql in ["SELECT CONNECTION_ID()", "SHOW FULL PROCESSLIST"] {
        assert_eq!(
            prepared_columns(&mut me, sql),
            prepared_columns(&mut common::direct(db), sql),
            "prepared {sql}"
        );
    }
    // A prepared SHOW PROCESSLIST lists the sessions under idgate's ids too.
    let stmt = me.prep("SHOW PROCESSLIST").unwrap();
    for _ in 0..2 {
        let rows: Vec<(u64, String, Option<String>)> = me
            .exec_map(&stmt, (), |r: mysql::Row| {
                let (id, user, info) = (r.get(0), r.get(1), r.get(7));
                (id.unwrap(), user.unwrap(), info.unwrap())
            })
            .unwrap();
        assert!(
            rows.iter().any(|(id, _, info)| *id == u64::from(my_id)
                && info.as_deref() == Some("SHOW PROCESSLIST")),
            "{rows:?}"
        );
    }
    // Described as MariaDB describes it.
    let mut direct = common::direct(db);
    for sql in [
        "SELECT CONNECTION_ID()",
        "SELECT CONNECTION_ID() AS me",
        "SHOW PROCESSLIST",
        "SHOW FULL PROCESSLIST",
    ] {
        assert_eq!(
            columns_of(&mut me, sql),
            columns_of(&mut direct, sql),
            "{sql}"
        );
    }

    // A busy session shows its statement (read from its backend thread) under idgate's id.
    let padding = "x".repeat(150);
    let sql: &'static str =
        Box::leak(format!("SELECT SLEEP(60) AS plist_marker /* {padding} */").into_boxed_str());
    let (busy, h) = running(&g, sql);
    wait_running(&[db], "plist_marker");
    type Process = (
        u64,
        String,
        String,
        Option<String>,
        String,
        u64,
        String,
        Option<String>,
        String,
    );
    let full: Vec<Process> = me.query("SHOW FULL PROCESSLIST").unwrap();
    let short: Vec<Process> = me.query("SHOW PROCESSLIST").unwrap();
    let row = |rows: &[Process], id: u32| {
        rows.iter()
            .find(|r| r.0 == u64::from(id))
            .cloned()
            .unwrap_or_else(|| panic!("no row for session {id}: {rows:?}"))
    };
    let b = row(&full, busy);
    assert_eq!((b.1.as_str(), b.4.as_str()), (APP_USER, "Query"), "{b:?}");
    assert_eq!(b.7.as_deref(), Some(sql), "{b:?}");
    assert_eq!(b.6, "User sleep", "{b:?}");
    let b = row(&short, busy);
    assert_eq!(
        b.7.as_deref().map(|i| i.chars().count()),
        Some(100),
        "{b:?}"
    );
    let mine = row(&full, my_id);
    assert_eq!(mine.7.as_deref(), Some("SHOW FULL PROCESSLIST"), "{mine:?}");
    assert_eq!(mine.4, "Query");
    // Only the caller's user's sessions, the same in both forms.
    assert!(full.iter().all(|r| r.1 == APP_USER), "{full:?}");
    let ids = |rows: &[Process]| rows.iter().map(|r| r.0).collect::<Vec<_>>();
    assert_eq!(ids(&full), ids(&short));
    // information_schema.PROCESSLIST shows the same sessions under the same ids (the ones KILL
    // takes), the busy one with its statement and its backend thread's query id, and it can be
    // filtered, aliased and qualified as the table it stands for.
    type Listed = (u64, String, String, Option<String>, u64);
    let listed: Vec<Listed> = me
        .query(
            "SELECT ID, USER, COMMAND, INFO, QUERY_ID FROM information_schema.PROCESSLIST \
             ORDER BY ID",
        )
        .unwrap();
    let mut want = ids(&full);
    want.sort_unstable();
    assert_eq!(listed.iter().map(|r| r.0).collect::<Vec<_>>(), want);
    let b = listed.iter().find(|r| r.0 == u64::from(busy)).unwrap();
    assert_eq!(
        (b.2.as_str(), b.3.as_deref()),
        ("Query", Some(sql)),
        "{b:?}"
    );
    assert!(b.4 > 0, "{b:?}");
    let mine = listed.iter().find(|r| r.0 == u64::from(my_id)).unwrap();
    assert!(
        mine.3
            .as_deref()
            .is_some_and(|i| i.contains("information_schema.PROCESSLIST")),
        "{mine:?}"
    );
    let qualified: Option<(String, i64)> = me
        .query_first(format!(
            "SELECT information_schema.processlist.STATE, `information_schema`.`processlist`.TIME \
             >= 0 FROM information_schema.processlist WHERE processlist.ID = {busy}"
        ))
        .unwrap();
    assert_eq!(qualified, Some(("User sleep".to_string(), 1)));
    let aliased: Option<String> = me
        .query_first(format!(
            "SELECT p.USER FROM information_schema.PROCESSLIST AS p WHERE p.ID = {busy}"
        ))
        .unwrap();
    assert_eq!(aliased.as_deref(), Some(APP_USER));
    // CONNECTION_ID() there is the session's idgate id too, and a select item keeps its name.
    let own = me
        .query_iter("SELECT ID, CONNECTION_ID() FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        .unwrap();
    let names: Vec<String> = own
        .columns()
        .as_ref()
        .iter()
        .map(|c| c.name_str().into_owned())
        .collect();
    let rows: Vec<(u64, u64)> = own.map(|r| mysql::from_row(r.unwrap())).collect();
    assert_eq!(names, ["ID", "CONNECTION_ID()"]);
    assert_eq!(rows, [(u64::from(my_id), u64::from(my_id))]);
    // Another user sees its own sessions only, as on MariaDB without PROCESS.
    let other = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(g.port)
        .user(Some("nopw"))
        .pass(Some(""));
    let mut stranger = mysql::Conn::new(other).unwrap();
    let theirs: Vec<Process> = stranger.query("SHOW PROCESSLIST").unwrap();
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0].0, u64::from(stranger.connection_id()));

    // KILL USER: another user's sessions are passed over without an error (0 killed), as
    // MariaDB does; the user's own are killed and counted, the caller's session included.
    stranger.query_drop("KILL QUERY USER app").unwrap();
    assert_eq!(stranger.affected_rows(), 0);
    let (second, h2) = running(&g, "SELECT SLEEP(60) AS plist_second");
    wait_running(&[db], "plist_second");
    me.query_drop("KILL QUERY USER 'app'@'%'").unwrap();
    assert!(me.affected_rows() >= 3, "{}", me.affected_rows());
    // A killed SLEEP ends early (MariaDB answers it with 1 or with 1317, by timing).
    for h in [h, h2] {
        let (_, took) = h.join().unwrap();
        assert!(took < Duration::from_secs(30), "{took:?}");
    }
    let _ = second;
    me.query_drop("KILL USER app@'localhost'").unwrap();
    assert_eq!(me.affected_rows(), 0, "idgate's accounts are app@'%'");
    // KILL USER of one's own user ends the caller's session too, after its answer.
    let mut victim = g.conn();
    me.query_drop("KILL CONNECTION USER CURRENT_USER()")
        .unwrap();
    assert!(me.affected_rows() >= 2, "{}", me.affected_rows());
    std::thread::sleep(Duration::from_millis(200));
    assert!(victim.query_drop("SELECT 1").is_err());
    assert!(me.query_drop("SELECT 1").is_err());
    let mut after = g.conn();
    assert_eq!(after.query_first::<i64, _>("SELECT 1").unwrap(), Some(1));
}

#[test]
fn kill_query_reaches_every_shard_of_the_session() {
    let dbs = [common::start_db(), common::start_db()];
    for db in &dbs {
        common::direct(db)
            .query_drop("CREATE TABLE orders (id BIGINT PRIMARY KEY, v INT)")
            .unwrap();
        common::direct(db)
            .query_drop("INSERT INTO orders VALUES (1, 1), (2, 2)")
            .unwrap();
    }
    let g = Idgate::start_with(|port| {
        config_for(
            port,
            &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
            ORDERS_MOD_2,
        )
    });
    // A SELECT of a sharded table reading @@pseudo_thread_id is still routed to every shard.
    let rows: Vec<(i64, i64)> = g
        .conn()
        .query("SELECT v, @@pseudo_thread_id > 0 FROM orders")
        .unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    // A scatter that sleeps on both shards.
    let (id, h) = running(&g, "SELECT v, SLEEP(30) AS kill_shards FROM orders");
    wait_running(&[&dbs[0], &dbs[1]], "kill_shards");
    g.conn().query_drop(format!("KILL QUERY {id}")).unwrap();
    let (_, took) = h.join().unwrap();
    assert!(
        took < Duration::from_secs(20),
        "the scatter ran on for {took:?}"
    );
    for db in &dbs {
        let n: u64 = common::direct(db)
            .query_first("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%kill_shards%' AND INFO NOT LIKE '%PROCESSLIST%'")
            .unwrap()
            .unwrap();
        assert_eq!(n, 0, "a shard still runs the killed statement");
    }
}

#[test]
fn connector_j_statement_cancel_kills_through_idgate_as_directly() {
    use common::clients::*;
    let (java, classpath) = compile_java("JdbcCancel.java");
    let g = Idgate::start(common::shared_db());
    let t = differential(
        "kill",
        "jdbc_cancel",
        common::shared_db(),
        &g,
        Duration::from_secs(120),
        |t| {
            let mut cmd = std::process::Command::new(&java);
            cmd.arg("-cp").arg(&classpath).arg("JdbcCancel");
            client_args(&mut cmd, t);
            cmd
        },
    );
    assert_has(&t, "cancelled within 20 s: true");
    assert_has(&t, "connection still usable: 42");
    assert_has(&t, "done");
}

/// `KILL expr`, which MariaDB's grammar takes: the expression is evaluated as the session's own
/// (`CONNECTION_ID()` and `@@pseudo_thread_id` are the id its client got; user variables and
/// sequences are its own), then the session it names is killed as by `KILL id`.
#[test]
fn kill_takes_an_expression_evaluated_as_the_session() {
    let db = common::shared_db();
    let g = Idgate::start(db);

    // A session killing itself by CONNECTION_ID(): told so, as by MariaDB, and gone.
    for form in [
        "KILL CONNECTION_ID()",
        "KILL CONNECTION @@pseudo_thread_id",
        "KILL 0 + CONNECTION_ID()",
    ] {
        let mut me = g.conn();
        assert_eq!(error_code(me.query_drop(form)), Some(1927), "{form}");
        assert!(me.query_drop("SELECT 1").is_err(), "{form}: still open");
    }

    // Another session, named through a user variable of the killer's own.
    let mut killer = g.conn();
    let (id, h) = running(&g, "SELECT SLEEP(60) AS kill_by_expression");
    wait_running(&[db], "kill_by_expression");
    killer
        .query_drop(format!("SET @victim = {id} - 1"))
        .unwrap();
    killer.query_drop("KILL QUERY @victim + 1").unwrap();
    let (_, took) = h.join().unwrap();
    assert!(took < Duration::from_secs(30), "ran on for {took:?}");

    // What MariaDB refuses or cannot name is answered as MariaDB answers it: a subquery, a
    // sequence, a stored function (1970), an unknown sequence, no such session (1094).
    // (A subquery that reads no table is evaluated.)
    let mut direct = common::direct(db);
    direct
        .query_drop(
            "CREATE SEQUENCE IF NOT EXISTS kill_seq; \
             CREATE FUNCTION IF NOT EXISTS kill_fn() RETURNS INT DETERMINISTIC RETURN 1",
        )
        .unwrap();
    for bad in [
        "KILL (SELECT 1) + LASTVAL(kill_seq)",
        "KILL QUERY (SELECT 1)",
        "KILL (SELECT COUNT(*) FROM information_schema.TABLES)",
        "KILL LASTVAL(no_such_sequence)",
        "KILL NEXT VALUE FOR kill_seq",
        "KILL kill_fn()",
        "KILL 4000000 + 1",
        "KILL 'nothing'",
        "KILL USER()",
        "KILL no_such_function()",
        "KILL QUERY NULL",
        "KILL (SELECT 0 FROM no_such_table)",
    ] {
        let expected = error_code(direct.query_drop(bad));
        assert!(expected.is_some(), "{bad} succeeded directly");
        assert_eq!(error_code(killer.query_drop(bad)), expected, "{bad}");
    }
    direct
        .query_drop("DROP SEQUENCE kill_seq; DROP FUNCTION kill_fn")
        .unwrap();
}

/// A session killed while its statement runs (waiting on another session's table lock, or
/// MariaDB's main.lock_kill: its own ALTER under LOCK TABLES) reads what MariaDB's killed
/// connection gives: no answer and the connection closed (libmariadb's 2013), never an error
/// packet of idgate's own, whose client-side code libmariadb reads as a malformed packet (2027).
#[test]
fn a_session_killed_mid_statement_closes_as_mariadbs_does() {
    use common::clients::*;
    require_python_modules("pymysql", "pymysql");
    let db = common::shared_db();
    let g = Idgate::start(db);
    let t = differential(
        "kill",
        "killed_mid_statement",
        db,
        &g,
        Duration::from_secs(120),
        |t| {
            let mut cmd = std::process::Command::new("python3");
            cmd.arg(source_dir().join("py_kill.py"));
            client_args(&mut cmd, t);
            cmd
        },
    );
    assert_has(
        &t,
        "pymysql waiting statement killed: bytes b'', then closed",
    );
    assert_has(&t, "libmariadb waiting statement killed: reap gives 2013");
    assert_has(&t, "lock_kill: every reap is one mysqltest accepts: True");
    assert_has(&t, "done");
}

/// `@@pseudo_thread_id` in a SELECT is the id the client got, as on MariaDB until the session
/// sets it (then its own value), described as MariaDB describes it, so `KILL` of what it read
/// ends that session (MariaDB's main.loadxml kills a connection by it).
#[test]
fn pseudo_thread_id_reads_the_sessions_id_until_it_sets_its_own() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let reads = [
        "SELECT @@pseudo_thread_id",
        "SELECT @@session.pseudo_thread_id AS p, 1",
        "SELECT @@pseudo_thread_id + 1",
        "SELECT @@pseudo_thread_id + 1 x",
        "SELECT @@LOCAL.Pseudo_Thread_Id FROM DUAL",
        "SELECT COUNT(*) + {me} AS n FROM DUAL WHERE @@pseudo_thread_id = {me}",
    ];
    // What each read answers, relative to the session's own id, and how its columns look.
    let answers = |c: &mut mysql::Conn| {
        let me = i64::from(c.connection_id());
        let mut out = Vec::new();
        for sql in reads {
            let sql = &sql.replace("{me}", &me.to_string());
            let values: Vec<Option<i64>> = c
                .query_map(sql, |r: mysql::Row| r.get::<i64, _>(0))
                .unwrap();
            let relative: Vec<Option<i64>> =
                values.into_iter().map(|v| v.map(|v| v - me)).collect();
            let shown = sql.replace(&me.to_string(), "me");
            out.push(format!("{shown}: {relative:?} {:?}", columns_of(c, sql)));
        }
        // Once set, the session's own value.
        c.query_drop("SET @@pseudo_thread_id = 4242").unwrap();
        let set: Option<u64> = c.query_first("SELECT @@pseudo_thread_id").unwrap();
        out.push(format!("set: {set:?}"));
        out
    };
    let direct = answers(&mut common::direct(db));
    let through = answers(&mut g.conn());
    assert_eq!(through, direct);
    assert!(
        direct[0].starts_with("SELECT @@pseudo_thread_id: [Some(0)]"),
        "{direct:?}"
    );

    // main.loadxml: one session reads its @@pseudo_thread_id, another kills it by that.
    let mut victim = g.conn();
    let id: Option<u64> = victim.query_first("SELECT @@pseudo_thread_id").unwrap();
    let id = id.unwrap();
    assert_eq!(id, u64::from(victim.connection_id()));
    g.conn().query_drop(format!("KILL {id}")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(victim.query_drop("SELECT 1").is_err(), "still open");
}

/// MariaDB's mtr waits for a disconnected session to leave `information_schema.PROCESSLIST`
/// (`wait_until_count_sessions.inc`): through idgate a session is gone from it as promptly as
/// from MariaDB's, whether its client quit or it was killed busy.
#[test]
fn a_disconnected_session_leaves_the_process_list_as_promptly_as_on_mariadb() {
    let db = common::start_db();
    let count = |c: &mut mysql::Conn| -> u64 {
        c.query_first("SELECT COUNT(*) FROM information_schema.PROCESSLIST")
            .unwrap()
            .unwrap()
    };
    // How long each way of leaving takes to show in the count (at most 10 s).
    let leave = |watcher: &mut mysql::Conn, open: &dyn Fn() -> mysql::Conn| -> Vec<Duration> {
        let base = count(watcher);
        let mut out = Vec::new();
        for how in ["quit", "killed busy"] {
            let mut c = open();
            let id = c.connection_id();
            match how {
                "quit" => drop(c),
                _ => {
                    let t = std::thread::spawn(move || {
                        let _ = c.query_drop("SELECT SLEEP(30)");
                    });
                    std::thread::sleep(Duration::from_millis(300));
                    watcher.query_drop(format!("KILL {id}")).unwrap();
                    t.join().unwrap();
                }
            }
            let t0 = Instant::now();
            while count(watcher) != base && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(5));
            }
            out.push(t0.elapsed());
        }
        out
    };
    // MariaDB alone first: idgate's own backend connections stay out of its count.
    let direct = leave(&mut common::direct(&db), &|| common::direct(&db));
    let g = Idgate::start(&db);
    let through = leave(&mut g.conn(), &|| g.conn());
    let limit = Duration::from_secs(10);
    assert!(direct.iter().all(|d| *d < limit), "directly: {direct:?}");
    // Never lingering where MariaDB's are gone (a busy machine's scheduling allowed for).
    for (t, d) in through.iter().zip(&direct) {
        assert!(
            *t < *d + Duration::from_secs(2),
            "through idgate {through:?}, directly {direct:?}"
        );
    }
}
