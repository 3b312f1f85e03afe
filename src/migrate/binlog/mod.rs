//! Streaming a source backend's binlog from a GTID position, as a MariaDB replica asks for it:
//! `@mariadb_slave_capability = 4` for real GTID events, `@slave_connect_state` for where to
//! start (COM_BINLOG_DUMP with no file name; MySQL's COM_BINLOG_DUMP_GTID is not MariaDB's),
//! heartbeats while idle, and every event's CRC32 checked.

pub mod follow;
pub mod gtid;
pub mod hold;
pub mod values;

use std::time::Duration;

use mysql_async::binlog::events::Event;
use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStream, BinlogStreamRequest, Conn, OptsBuilder};
use mysql_common::binlog::consts::BinlogChecksumAlg;

use crate::config::Backend;
use gtid::Position;

/// Longest wait to connect and ask for the stream.
const OPEN_TIMEOUT: Duration = Duration::from_secs(10);
/// The heartbeat the source sends while it has nothing to send.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// The stream of `backend`'s binlog after `from`, read as replica `server_id`.
pub async fn open(
    backend: &str,
    cfg: &Backend,
    server_id: u32,
    from: &Position,
) -> Result<BinlogStream, String> {
    let named = |e: mysql_async::Error| format!("binlog of `{backend}`: {e}");
    let base = OptsBuilder::default()
        .ip_or_hostname(cfg.host.clone())
        .tcp_port(cfg.port)
        .user(Some(cfg.user.clone()))
        .pass(Some(cfg.password.clone()));
    let open = async {
        let tls = crate::tls::sequence_store::ssl_opts(&cfg.tls);
        let mut conn = match Conn::new(base.clone().ssl_opts(tls)).await {
            Err(e) if crate::tls::sequence_store::retry_plain(&cfg.tls, &e) => {
                Conn::new(base.clone()).await.map_err(named)?
            }
            r => r.map_err(named)?,
        };
        let position = from.to_string();
        for sql in [
            "SET @mariadb_slave_capability = 4".to_string(),
            format!(
                "SET @slave_connect_state = {}",
                crate::exec::metadata::quote_literal(&position)
            ),
            "SET @slave_gtid_strict_mode = 0, @slave_gtid_ignore_duplicates = 0".to_string(),
            format!("SET @master_heartbeat_period = {}", HEARTBEAT.as_nanos()),
        ] {
            conn.query_drop(sql).await.map_err(named)?;
        }
        conn.get_binlog_stream(BinlogStreamRequest::new(server_id))
            .await
            .map_err(named)
    };
    tokio::time::timeout(OPEN_TIMEOUT, open)
        .await
        .unwrap_or_else(|_| Err(format!("binlog of `{backend}`: no answer within 10 s")))
}

/// `backend`'s binlog position now (`@@gtid_binlog_pos`).
pub async fn position_now(backend: &str, cfg: &Backend) -> Result<Position, String> {
    let mut c = crate::exec::BackendConn::connect(backend, cfg, Default::default(), OPEN_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    let r = crate::migrate::source::rows(&mut c, "SELECT @@global.gtid_binlog_pos").await;
    c.close().await;
    let text = r?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .unwrap_or_default();
    Position::parse(&text)
}

/// Whether the event's CRC32 (when the stream carries checksums) matches its bytes.
pub fn checksum_ok(event: &Event) -> bool {
    match event.footer().get_checksum_alg() {
        Ok(Some(BinlogChecksumAlg::BINLOG_CHECKSUM_ALG_CRC32)) => {
            event.checksum().is_none_or(|c| {
                u32::from_le_bytes(c)
                    == event.calc_checksum(BinlogChecksumAlg::BINLOG_CHECKSUM_ALG_CRC32)
            })
        }
        _ => true,
    }
}

/// A replica server id for one job's stream from one source: the same for every idgate
/// instance, so a stream taken over from a stalled instance pushes the old one off the source.
pub fn server_id(table_key: &str, source: &str, source_server_id: u32) -> u32 {
    let h = crate::route::algorithm::fnv1a(format!("{table_key}\0{source}").as_bytes());
    let id = 1_000_000_000 + (h % 1_000_000_000) as u32;
    if id == source_server_id {
        id + 1
    } else {
        id
    }
}
