//! `idgate demo`: two throwaway MariaDB shards, idgate on the embedded demo configuration, a short
//! showcase through idgate, then serving until Ctrl-C.

use std::process::ExitCode;

use mysql_async::prelude::Queryable;

use crate::config::{Config, EMBEDDED_DEMO};
use crate::testbed::MariaDb;

/// Tables the demo creates on every shard (DDL goes to each backend directly).
const TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS users (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL)",
    "CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, item VARCHAR(64) NOT NULL)",
];

pub fn run() -> ExitCode {
    let cfg = match Config::from_yaml(EMBEDDED_DEMO) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("embedded demo config: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut shards = Vec::new();
    for (name, b) in &cfg.backends {
        eprintln!(
            "starting throwaway MariaDB `{name}` on 127.0.0.1:{} ...",
            b.value.port
        );
        match MariaDb::start_on(b.value.port) {
            Ok(db) => shards.push(db),
            Err(e) => {
                eprintln!("cannot start MariaDB for `{name}`: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(crate::server::WORKER_STACK_BYTES)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listen = cfg.listen.clone();
    let shard_urls: Vec<(String, String)> = cfg
        .backends
        .iter()
        .map(|(name, b)| {
            let b = &b.value;
            let url = format!(
                "mysql://{}:{}@{}:{}/{}",
                b.user,
                b.password,
                b.host,
                b.port,
                crate::testbed::mariadb::DATABASE
            );
            (name.clone(), url)
        })
        .collect();
    let code = rt.block_on(async move {
        let stop = crate::stop::signal_stop();
        let server = tokio::spawn(crate::server::run(cfg, stop));
        if let Err(e) = showcase(&listen, &shard_urls).await {
            eprintln!("showcase failed: {e}");
        }
        let (host, port) = listen.rsplit_once(':').unwrap_or(("127.0.0.1", "3307"));
        println!("\nidgate is serving on {listen}. Connect with:\n");
        println!("    mysql -h{host} -P{port} -udemo -pdemo idgate_test\n");
        println!("and try:\n");
        println!("    INSERT INTO users (name) VALUES ('eve'); SELECT LAST_INSERT_ID();");
        println!("    EXPLAIN ROUTE SELECT * FROM orders WHERE user_id = 1000;");
        println!("    SHOW IDGATE GENERATORS;\n");
        println!("    curl -s http://127.0.0.1:9307/metrics | grep idgate_generator");
        println!("    redis-cli -p 6307 --user demo --pass demo INCR user_ids");
        println!("    curl -u demo:demo http://127.0.0.1:8307/api/segment/get/user_ids\n");
        println!("Press Ctrl-C to stop idgate and remove the throwaway shards.");
        match server.await {
            Ok(Ok(())) => ExitCode::SUCCESS,
            Ok(Err(e)) => {
                eprintln!("idgate: {e}");
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("idgate: {e}");
                ExitCode::FAILURE
            }
        }
    });
    drop(shards);
    code
}

/// Creates the demo tables on each shard, inserts users and orders through idgate, and shows
/// the ids each row got and the shard it landed on.
async fn showcase(listen: &str, shards: &[(String, String)]) -> Result<(), mysql_async::Error> {
    for (_, url) in shards {
        let mut c = mysql_async::Conn::from_url(url.as_str()).await?;
        for ddl in TABLES {
            c.query_drop(*ddl).await?;
        }
        c.disconnect().await?;
    }
    let url = format!("mysql://demo:demo@{listen}/idgate_test");
    let mut conn = None;
    for _ in 0..100 {
        match mysql_async::Conn::from_url(url.as_str()).await {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
    let mut conn = match conn {
        Some(c) => c,
        None => mysql_async::Conn::from_url(url.as_str()).await?,
    };
    let run = |sql: String| {
        println!("mysql> {sql};");
        sql
    };
    conn.query_drop(run(
        "INSERT INTO users (name) VALUES ('ada'), ('grace'), ('linus')".into(),
    ))
    .await?;
    let first = conn.last_insert_id().unwrap_or(0);
    println!(
        "  3 rows, generated ids {first}..={}, LAST_INSERT_ID() = {first}",
        first + 2
    );
    for (i, item) in ["tea", "coffee", "cake", "scones"].iter().enumerate() {
        let user = first + (i as u64 % 3);
        conn.query_drop(run(format!(
            "INSERT INTO orders (user_id, item) VALUES ({user}, '{item}')"
        )))
        .await?;
        println!("  order id {}", conn.last_insert_id().unwrap_or(0));
    }
    println!("\nReads through idgate (routed by sharding key, or merged across shards):");
    let sql = format!("SELECT id, item FROM orders WHERE user_id = {first} ORDER BY id");
    let rows: Vec<(u64, String)> = conn.query(run(sql)).await?;
    for (id, item) in rows {
        println!("  id={id:<20} item={item}");
    }
    let rows: Vec<(u64, String)> = conn
        .query(run("SELECT id, name FROM users ORDER BY id".into()))
        .await?;
    for (id, name) in rows {
        println!("  id={id:<6} name={name}");
    }
    let n: Option<u64> = conn
        .query_first(run("SELECT COUNT(*) FROM orders".into()))
        .await?;
    println!("  {}", n.unwrap_or(0));
    // Each order sits on its user's shard, so the join runs on every shard and merges.
    let sql = "SELECT u.name, COUNT(*) AS orders FROM users u JOIN orders o ON o.user_id = u.id \
               GROUP BY u.name ORDER BY orders DESC, u.name";
    let rows: Vec<(String, u64)> = conn.query(run(sql.into())).await?;
    for (name, n) in rows {
        println!("  name={name:<6} orders={n}");
    }
    let rows: Vec<(u64, u64)> = conn
        .query(run(
            "SELECT user_id, COUNT(*) FROM orders GROUP BY user_id ORDER BY user_id".into(),
        ))
        .await?;
    for (user, n) in rows {
        println!("  user_id={user:<6} orders={n}");
    }
    conn.disconnect().await?;
    println!("\nWhere the rows landed (read from each shard directly):");
    for (name, url) in shards {
        let mut c = mysql_async::Conn::from_url(url.as_str()).await?;
        let users: Vec<(u64, String)> = c.query("SELECT id, name FROM users ORDER BY id").await?;
        let orders: Vec<(u64, u64, String)> = c
            .query("SELECT id, user_id, item FROM orders ORDER BY id")
            .await?;
        println!("  {name}:");
        for (id, name) in users {
            println!("    users  id={id:<20} name={name}");
        }
        for (id, user, item) in orders {
            println!("    orders id={id:<20} user_id={user:<6} item={item:<8} (id & 15 = {}, user_id & 15 = {})", id & 15, user & 15);
        }
        c.disconnect().await?;
    }
    Ok(())
}
