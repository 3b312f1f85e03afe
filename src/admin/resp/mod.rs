//! The ID service over the Redis protocol (RESP2, RESP3 after `HELLO 3`), as Youzan's March
//! serves ids: `INCR gen`, `INCRBY gen n`. Bounded on every side: connections
//! (`max_connections`), silence (`idle_timeout_ms`, also for a client that stops reading
//! replies), request size (`max_frame_bytes`).

mod commands;
pub mod frame;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tracing::{debug, warn};

use self::commands::{Conn, Then};
use self::frame::Reply;
use crate::admin::metrics::OpenGuard;
use crate::config::ops::IdServiceConfig;
use crate::proxy::Proxy;

/// Serves `listener` until `stop` turns true; open connections are closed then.
pub async fn serve(
    listener: TcpListener,
    proxy: Arc<Proxy>,
    cfg: IdServiceConfig,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(cfg.max_connections));
    let ids = AtomicU64::new(1);
    let cfg = Arc::new(cfg);
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((mut stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        // Redis's words; the refusal must not wait on a client that never reads.
                        let _ = tokio::time::timeout(Duration::from_millis(100),
                            stream.write_all(b"-ERR max number of clients reached\r\n")).await;
                        continue;
                    };
                    let (proxy, cfg) = (proxy.clone(), cfg.clone());
                    let id = ids.fetch_add(1, Relaxed);
                    conns.spawn(async move {
                        let _open = OpenGuard::new(&proxy.metrics.id_service_connections_open);
                        let host = peer.ip().to_string();
                        if let Err(e) = connection(stream, &proxy, &cfg, id, host).await {
                            debug!(error = %e, "RESP connection ended");
                        }
                        drop(slot);
                    });
                }
                Err(e) => {
                    warn!(error = %e, "RESP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = crate::server::stopped(&mut stop) => break,
        }
    }
    conns.abort_all();
}

/// One client: read requests (pipelined ones too), answer each, until QUIT, EOF or an error.
async fn connection(
    mut stream: TcpStream,
    proxy: &Proxy,
    cfg: &IdServiceConfig,
    id: u64,
    host: String,
) -> std::io::Result<()> {
    let idle = Duration::from_millis(cfg.idle_timeout_ms);
    let mut conn = Conn::new(proxy, id, cfg.max_count, host);
    let mut input = BytesMut::with_capacity(4096);
    let mut output = BytesMut::with_capacity(4096);
    loop {
        let mut close = false;
        loop {
            match frame::parse(&input, cfg.max_frame_bytes) {
                Ok(None) => break,
                Ok(Some((args, used))) => {
                    input.advance(used);
                    if args.is_empty() {
                        continue;
                    }
                    let (reply, then) = conn.run(&args).await;
                    encode(reply, conn.proto, &mut output)?;
                    if then == Then::Close {
                        close = true;
                        break;
                    }
                }
                Err(e) => {
                    encode(Reply::err(format!("ERR {e}")), conn.proto, &mut output)?;
                    close = true;
                    break;
                }
            }
        }
        if !output.is_empty() {
            bounded(idle, stream.write_all(&output)).await??;
            output.clear();
        }
        if close {
            let _ = stream.shutdown().await;
            return Ok(());
        }
        input.reserve(4096);
        let n = bounded(idle, stream.read_buf(&mut input)).await??;
        if n == 0 {
            return Ok(());
        }
    }
}

fn encode(reply: Reply, proto: u8, out: &mut BytesMut) -> std::io::Result<()> {
    reply
        .encode(proto, out)
        .map_err(|e| std::io::Error::other(e.to_string()))
}

async fn bounded<T>(
    limit: Duration,
    f: impl std::future::Future<Output = T>,
) -> std::io::Result<T> {
    tokio::time::timeout(limit, f)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "idle timeout"))
}
