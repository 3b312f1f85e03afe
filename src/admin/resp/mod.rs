//! The ID service over the Redis protocol (RESP2, RESP3 after `HELLO 3`), as Youzan's March
//! serves ids: `INCR gen`, `INCRBY gen n`. Bounded on every side: connections
//! (`max_connections`, `max_connections_per_host`, idle ones closed to make room), the time to
//! log in (`login_timeout_ms`), a request once begun (`request_timeout_ms`), silence
//! (`idle_timeout_ms`, also for a client that stops reading replies), request size
//! (`max_frame_bytes`).

mod commands;
pub mod frame;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::{debug, warn};

use self::commands::{Conn, Then};
use self::frame::Reply;
use crate::config::ops::IdServiceConfig;
use crate::limits::conn_table::{ConnTable, Slot};
use crate::metrics::OpenGuard;
use crate::proxy::Proxy;
use crate::tls::listener::Stream;
use tokio_rustls::TlsAcceptor;

/// Serves `listener` until `stop` turns true; open connections are closed then.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    proxy: Arc<Proxy>,
    cfg: IdServiceConfig,
    mut stop: watch::Receiver<bool>,
) {
    let table = ConnTable::new(
        cfg.max_connections,
        cfg.max_connections_per_host.min(cfg.max_connections),
        proxy.metrics.table_counts("id_resp"),
    );
    let ids = AtomicU64::new(1);
    let cfg = Arc::new(cfg);
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((mut stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let Some(slot) = table.admit(peer.ip()) else {
                        // Redis's words, in plain TCP only (over TLS they would be garbage to
                        // the client, which sees the connection closed); the refusal must not
                        // wait on a client that never reads.
                        if tls.is_none() {
                            let _ = tokio::time::timeout(Duration::from_millis(100),
                                stream.write_all(b"-ERR max number of clients reached\r\n")).await;
                        }
                        continue;
                    };
                    let (proxy, cfg, tls) = (proxy.clone(), cfg.clone(), tls.clone());
                    let id = ids.fetch_add(1, Relaxed);
                    conns.spawn(open(stream, peer, tls, slot, proxy, cfg, id));
                }
                Err(e) => {
                    warn!(error = %e, "RESP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = crate::stop::stopped(&mut stop) => break,
        }
    }
    conns.abort_all();
}

/// A connection given a slot: its TLS handshake if any (within the login time, and given up if
/// the table closes it meanwhile), then its requests.
async fn open(
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    tls: Option<TlsAcceptor>,
    slot: Slot,
    proxy: Arc<Proxy>,
    cfg: Arc<IdServiceConfig>,
    id: u64,
) {
    let _open = OpenGuard::new(&proxy.metrics.id_service_connections_open);
    let login = Duration::from_millis(cfg.login_timeout_ms);
    let login_by = Instant::now() + login;
    let stream = tokio::select! {
        s = crate::tls::listener::accept(tls.as_ref(), stream, login) => s,
        _ = slot.handle.evicted() => return,
    };
    let stream = match stream {
        Ok(s) => s,
        Err(e) => {
            debug!(error = %e, "RESP TLS handshake failed");
            return;
        }
    };
    let host = peer.ip().to_string();
    let who = (id, host, login_by);
    if let Err(e) = connection(stream, &proxy, &cfg, who, &slot).await {
        debug!(error = %e, "RESP connection ended");
    }
}

/// One client: read requests (pipelined ones too), answer each, until QUIT, EOF, an error, a
/// deadline, or the connection table closing it to make room. `login_by` counts from the
/// accept, so a TLS handshake spends the same login time.
async fn connection(
    mut stream: Stream,
    proxy: &Proxy,
    cfg: &IdServiceConfig,
    (id, host, login_by): (u64, String, Instant),
    slot: &Slot,
) -> std::io::Result<()> {
    let idle = Duration::from_millis(cfg.idle_timeout_ms);
    let request = Duration::from_millis(cfg.request_timeout_ms);
    let mut conn = Conn::new(proxy, id, cfg.max_count, host);
    let mut input = BytesMut::with_capacity(4096);
    let mut output = BytesMut::with_capacity(4096);
    // When the first byte of the request still incomplete in `input` came.
    let mut begun: Option<Instant> = None;
    loop {
        let mut close = false;
        loop {
            match frame::parse(&input, cfg.max_frame_bytes) {
                Ok(None) => break,
                Ok(Some((ranges, used))) => {
                    begun = None;
                    if ranges.is_empty() {
                        input.advance(used);
                        continue;
                    }
                    // The arguments as slices of `input`, on the stack: no allocation.
                    let mut argv: [&[u8]; frame::MAX_ARGS] = [&[]; frame::MAX_ARGS];
                    let n = frame::args(&input, &ranges, &mut argv);
                    let (reply, then) = conn.run(&argv[..n]).await;
                    input.advance(used);
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
            // Over TLS a shutdown writes close_notify: bounded like any write to the client.
            let _ = bounded(Duration::from_secs(1), stream.shutdown()).await;
            return Ok(());
        }
        let now = Instant::now();
        let mut until = if input.is_empty() {
            now + idle
        } else {
            *begun.get_or_insert(now) + request
        };
        if !conn.authenticated() {
            until = until.min(login_by);
        }
        // Waiting for a request before logging in: closing it loses nothing.
        slot.handle
            .set_idle(input.is_empty() && !conn.authenticated());
        input.reserve(4096);
        let n = tokio::select! {
            read = tokio::time::timeout_at(until, stream.read_buf(&mut input)) => read
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, deadline_name(&conn, begun)))??,
            _ = slot.handle.evicted() => return Ok(()),
        };
        slot.handle.set_idle(false);
        if n == 0 {
            return Ok(());
        }
    }
}

/// Which bound a connection passed, for the log.
fn deadline_name(conn: &Conn<'_>, begun: Option<Instant>) -> &'static str {
    match (conn.authenticated(), begun) {
        (false, _) => "not logged in within login_timeout_ms",
        (true, Some(_)) => "request not complete within request_timeout_ms",
        (true, None) => "idle longer than idle_timeout_ms",
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
