//! Serves an axum router on a listener under bounds a hostile client cannot get round: the
//! connection table (in all and per host, closing idle connections to make room), a deadline
//! for a request's headers (hyper's, which also bounds the wait between kept-alive requests),
//! capped header bytes (431) and declared body length (413).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, warn};

use super::http_conn::{BoundedConn, Peer};
use crate::limits::conn_table::{Slot, TableCounts};
use crate::limits::ConnTable;

/// The bounds of one HTTP listener.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub per_host: usize,
    /// No progress for this long closes a connection.
    pub idle: Duration,
    /// A new connection's first byte must come within this.
    pub login: Duration,
    /// A request's headers must be complete within this of the wait for them starting.
    pub request: Duration,
    /// Most bytes of a request's headers, and of its declared body.
    pub max_bytes: usize,
}

/// hyper's smallest read buffer (it refuses a smaller one); headers have their own exact cap.
const MIN_READ_BUFFER: usize = 8192;
/// How long requests in flight may finish after the listener was told to stop.
const GRACE: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` (HTTPS when `tls` is given) until `stop` turns true.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    limits: Limits,
    counts: TableCounts,
    mut stop: watch::Receiver<bool>,
) {
    let table = ConnTable::new(
        limits.max_connections,
        limits.per_host.min(limits.max_connections),
        counts,
    );
    let limits = Arc::new(limits);
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    match table.admit(peer.ip()) {
                        Some(slot) => {
                            let tls = tls.clone();
                            let (app, limits, stop) = (app.clone(), limits.clone(), stop.clone());
                            conns.spawn(open(stream, peer, tls, slot, app, limits, stop));
                        }
                        // Over TLS a plain-text answer would only be garbage to the client:
                        // the connection is closed instead.
                        None if tls.is_some() => drop(stream),
                        None => {
                            conns.spawn(refuse(stream));
                        }
                    }
                }
                Err(e) => {
                    warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = crate::stop::stopped(&mut stop) => break,
        }
    }
    let drained = async { while conns.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(GRACE, drained).await;
    conns.abort_all();
}

/// A connection given a slot: its TLS handshake if any (within the login time, and given up if
/// the table closes it meanwhile), then its requests.
async fn open(
    stream: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    slot: Slot,
    app: Router,
    limits: Arc<Limits>,
    stop: watch::Receiver<bool>,
) {
    let first_by = Instant::now() + limits.login;
    let stream = tokio::select! {
        s = crate::tls::listener::accept(tls.as_ref(), stream, limits.login) => s,
        _ = slot.handle.evicted() => return,
    };
    match stream {
        Ok(stream) => {
            let io = BoundedConn::new(stream, slot, limits.idle, first_by);
            connection(io, peer, app, limits, stop).await;
        }
        Err(e) => debug!(error = %e, %peer, "HTTPS handshake failed"),
    }
}

async fn connection(
    io: BoundedConn,
    peer: SocketAddr,
    app: Router,
    limits: Arc<Limits>,
    mut stop: watch::Receiver<bool>,
) {
    let service = WithPeer {
        app,
        peer: Peer(peer),
        max_body: limits.max_bytes,
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.request)
        .max_header_size(limits.max_bytes)
        .max_buf_size(limits.max_bytes.max(MIN_READ_BUFFER))
        // A connection closed to make room reads as EOF; an answer already being written (it
        // counts as idle from its first bytes) is finished rather than cut off.
        .half_close(true)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let r = tokio::select! {
        r = conn.as_mut() => r,
        _ = crate::stop::stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = r {
        debug!(error = %e, %peer, "HTTP connection ended");
    }
}

/// Every connection slot is taken by working connections: say so and close, never waiting on
/// a client that does not read.
async fn refuse(mut stream: TcpStream) {
    const BODY: &str = "too many connections; try again\n";
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-type: text/plain\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(
        Duration::from_millis(100),
        stream.write_all(answer.as_bytes()),
    )
    .await;
}

/// The router, with the peer's address for the handlers and a body cap checked on the declared
/// length before any of the body is read (the handlers read none).
#[derive(Clone)]
struct WithPeer {
    app: Router,
    peer: Peer,
    max_body: usize,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for WithPeer {
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, mut req: Request<Incoming>) -> Answer {
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body as u64) {
            let too_large = (
                StatusCode::PAYLOAD_TOO_LARGE,
                [(header::CONNECTION, "close")],
                format!("request body larger than {} bytes\n", self.max_body),
            )
                .into_response();
            return Box::pin(std::future::ready(Ok(too_large)));
        }
        req.extensions_mut().insert(ConnectInfo(self.peer));
        let mut app = self.app.clone();
        let req = req.map(Body::new);
        Box::pin(async move { tower_service::Service::call(&mut app, req).await })
    }
}
