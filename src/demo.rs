//! `idgate demo`: two throwaway MariaDB shards, idgate on the embedded demo configuration, a short
//! showcase through idgate, then serving until Ctrl-C.

use std::process::ExitCode;

use mysql_async::prelude::Queryable;

use crate::config::{Config, EMBEDDED_DEMO};
use crate::testbed::MariaDb;

const SHOWCASE: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS demo_orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id BIGINT NOT NULL, item VARCHAR(64) NOT NULL)",
    "INSERT INTO demo_orders (user_id, item) VALUES (7, 'tea'), (8, 'coffee'), (9, 'cake')",
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
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listen = cfg.listen.clone();
    let code = rt.block_on(async move {
        let stop = crate::server::signal_stop();
        let server = tokio::spawn(crate::server::run(cfg, stop));
        if let Err(e) = showcase(&listen).await {
            eprintln!("showcase failed: {e}");
        }
        let (host, port) = listen.rsplit_once(':').unwrap_or(("127.0.0.1", "3307"));
        println!("\nidgate is serving on {listen}. Connect with:\n");
        println!("    mysql -h{host} -P{port} -udemo -pdemo idgate_test\n");
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

/// Runs a few statements through idgate and prints what the client sees.
async fn showcase(listen: &str) -> Result<(), mysql_async::Error> {
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
    for sql in SHOWCASE {
        println!("mysql> {sql};");
        conn.query_drop(*sql).await?;
        println!(
            "  affected rows: {}, last insert id: {}",
            conn.affected_rows(),
            conn.last_insert_id().unwrap_or(0)
        );
    }
    let rows: Vec<(u64, u64, String)> = conn
        .query("SELECT id, user_id, item FROM demo_orders ORDER BY id")
        .await?;
    println!("mysql> SELECT id, user_id, item FROM demo_orders ORDER BY id;");
    for (id, user, item) in rows {
        println!("  id={id:<20} user_id={user:<4} item={item}");
    }
    conn.disconnect().await?;
    Ok(())
}
