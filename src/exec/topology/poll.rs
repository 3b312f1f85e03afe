//! One node's poll: `@@read_only`, its GTID positions and its replication state, over a
//! connection kept between polls (opened again after any failure). Every poll is bounded.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder, Row};

use super::roles::{Answer, Replication, Seen};
use crate::config::Backend;

pub struct NodePoller {
    opts: OptsBuilder,
    tls: crate::config::tls::BackendTls,
    conn: Option<Conn>,
}

impl NodePoller {
    /// A poller of `addr` (validated `host:port`), with the backend's account and TLS.
    pub fn new(addr: &str, cfg: &Backend) -> NodePoller {
        NodePoller {
            opts: node_opts(addr, cfg),
            tls: cfg.tls.clone(),
            conn: None,
        }
    }

    pub async fn poll(&mut self, bound: Duration) -> Seen {
        match tokio::time::timeout(bound, self.ask()).await {
            Ok(Ok(a)) => Seen::Answered(a),
            Ok(Err(e)) => {
                self.conn = None;
                Seen::Failed(e.to_string())
            }
            Err(_) => {
                self.conn = None;
                Seen::Failed(format!("no answer within {} ms", bound.as_millis()))
            }
        }
    }

    /// Ends backend thread `id` on this node (`KILL CONNECTION`), within `bound`: a connection of
    /// idgate's that a session opened while this node was the primary.
    pub async fn kill(&mut self, id: u32, bound: Duration) -> Result<(), String> {
        let kill = async {
            let conn = match self.conn.take() {
                Some(c) => c,
                None => self.connect().await?,
            };
            let conn = self.conn.insert(conn);
            match conn.query_drop(format!("KILL CONNECTION {id}")).await {
                // 1094: already gone.
                Err(mysql_async::Error::Server(e)) if e.code == 1094 => Ok(()),
                r => r,
            }
        };
        match tokio::time::timeout(bound, kill).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer within {} ms", bound.as_millis())),
        }
    }

    async fn connect(&self) -> Result<Conn, mysql_async::Error> {
        open(&self.opts, &self.tls).await
    }

    async fn ask(&mut self) -> Result<Answer, mysql_async::Error> {
        let conn = match self.conn.take() {
            Some(c) => c,
            None => self.connect().await?,
        };
        let conn = self.conn.insert(conn);
        let vars: Option<(i64, String, String)> = conn
            .query_first("SELECT @@read_only, @@gtid_binlog_pos, @@gtid_slave_pos")
            .await?;
        let (read_only, gtid_binlog_pos, gtid_slave_pos) = vars.unwrap_or_default();
        // A missing privilege leaves the replication state unknown, not the node down.
        let replication = match conn.query::<Row, _>("SHOW ALL SLAVES STATUS").await {
            Ok(rows) => Ok(rows.first().map(replication)),
            Err(mysql_async::Error::Server(e)) => Err(format!(
                "{} (idgate's account needs the REPLICA MONITOR or SUPER privilege)",
                e.message
            )),
            Err(e) => return Err(e),
        };
        Ok(Answer {
            read_only: read_only != 0,
            gtid_binlog_pos,
            gtid_slave_pos,
            replication,
        })
    }
}

/// How idgate logs in to node `addr` (a validated `host:port`) of the group of `cfg`.
fn node_opts(addr: &str, cfg: &Backend) -> OptsBuilder {
    let (host, port) = addr.rsplit_once(':').unwrap_or((addr, "3306"));
    OptsBuilder::default()
        .ip_or_hostname(host.to_string())
        .tcp_port(port.parse().unwrap_or(3306))
        .user(Some(cfg.user.clone()))
        .pass(Some(cfg.password.clone()))
        .prefer_socket(false)
}

async fn open(
    opts: &OptsBuilder,
    tls: &crate::config::tls::BackendTls,
) -> Result<Conn, mysql_async::Error> {
    let ssl = crate::tls::sequence_store::ssl_opts(tls);
    match Conn::new(opts.clone().ssl_opts(ssl)).await {
        // `preferred` TLS falls back to plain TCP with a server that offers none.
        Err(e) if crate::tls::sequence_store::retry_plain(tls, &e) => {
            Conn::new(opts.clone().ssl_opts(None)).await
        }
        r => r,
    }
}

/// A connection of idgate's own to node `addr` of the group of `cfg`, opened within `bound`.
pub(super) async fn connect_node(
    addr: &str,
    cfg: &Backend,
    bound: std::time::Duration,
) -> Result<Conn, String> {
    match tokio::time::timeout(bound, open(&node_opts(addr, cfg), &cfg.tls)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(format!("{addr}: {e}")),
        Err(_) => Err(format!(
            "{addr}: no connection within {} ms",
            bound.as_millis()
        )),
    }
}

fn replication(row: &Row) -> Replication {
    let text = |name: &str| -> Option<String> {
        row.get_opt::<Option<String>, _>(name)
            .and_then(Result::ok)
            .flatten()
    };
    Replication {
        io_running: text("Slave_IO_Running").as_deref() == Some("Yes"),
        sql_running: text("Slave_SQL_Running").as_deref() == Some("Yes"),
        lag_s: text("Seconds_Behind_Master").and_then(|s| s.parse().ok()),
        source: format!(
            "{}:{}",
            text("Master_Host").unwrap_or_default(),
            text("Master_Port").unwrap_or_default()
        ),
    }
}
