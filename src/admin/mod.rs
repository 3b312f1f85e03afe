//! The operator's side of idgate: the admin HTTP listener (`/health`, `/ready`, `/generators`,
//! `/metrics`, the console at `/`), the Prometheus registry, and the ID service (HTTP, Leaf-compatible, and the
//! Redis protocol) that hands out ids from the same generators to the same users as SQL.
//! Must not: reach into a session's state; it reads what the proxy, pools and generators publish.

pub mod auth;
pub mod backend_nodes;
pub mod backend_rows;
pub mod console;
pub mod control;
pub mod generators;
pub mod http;
pub mod http_conn;
mod http_serve;
pub mod id_http;
pub mod ids;
pub mod kill;
pub mod metrics;
mod metrics_live;
mod metrics_migrate;
mod metrics_nodes;
pub mod processlist;
pub mod processlist_table;
pub mod ready;
pub mod resp;
pub use crate::exec::result_set;
pub mod slow_log;
pub mod statements;
mod switchover;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::info;

use crate::config::ListenerTls;
use crate::proxy::Proxy;
pub use control::Control;
use tokio_rustls::TlsAcceptor;

/// Binds every configured admin and ID-service listener (so a taken port fails startup) and
/// serves them in the background until `stop` turns true.
pub async fn start(control: &Arc<Control>, stop: watch::Receiver<bool>) -> Result<(), ListenError> {
    let proxy = &control.proxy;
    let cfg = &proxy.config;
    if let Some(admin) = &cfg.admin {
        let listener = bind(&admin.listen).await?;
        let checker = ready::Checker::new(cfg, Duration::from_millis(admin.check_timeout_ms));
        let ring = console::traffic_ring::TrafficRing::new();
        tokio::spawn(console::traffic_ring::sample(
            ring.clone(),
            Arc::downgrade(proxy),
            stop.clone(),
        ));
        let loopback = admin
            .listen
            .parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().is_loopback());
        let app = http::router(control.clone(), checker, ring, loopback);
        info!(listen = %admin.listen, "admin HTTP listener ready");
        let tls = listener_tls(proxy, "admin.tls", &admin.tls, HTTP_ALPN)?;
        let limits = http_serve::Limits {
            max_connections: admin.max_connections,
            per_host: admin.max_connections_per_host,
            idle: Duration::from_millis(admin.idle_timeout_ms),
            login: ADMIN_LOGIN,
            request: Duration::from_millis(admin.request_timeout_ms),
            max_bytes: ADMIN_MAX_BYTES,
        };
        let counts = proxy.metrics.table_counts("admin");
        tokio::spawn(http_serve::serve(
            listener,
            tls,
            app,
            limits,
            counts,
            stop.clone(),
        ));
    }
    if let Some(ids) = &cfg.id_service {
        if let Some(addr) = &ids.http {
            let listener = bind(addr).await?;
            let app = id_http::router(proxy.clone(), ids.max_count);
            info!(listen = %addr, "ID service HTTP listener ready");
            let limits = http_serve::Limits {
                max_connections: ids.max_connections,
                per_host: ids.max_connections_per_host,
                idle: Duration::from_millis(ids.idle_timeout_ms),
                login: Duration::from_millis(ids.login_timeout_ms),
                request: Duration::from_millis(ids.request_timeout_ms),
                max_bytes: ids.max_frame_bytes,
            };
            let tls = listener_tls(proxy, "id_service.tls", &ids.tls, HTTP_ALPN)?;
            let counts = proxy.metrics.table_counts("id_http");
            tokio::spawn(http_serve::serve(
                listener,
                tls,
                app,
                limits,
                counts,
                stop.clone(),
            ));
        }
        if let Some(addr) = &ids.resp {
            let listener = bind(addr).await?;
            info!(listen = %addr, "ID service Redis-protocol listener ready");
            let tls = listener_tls(proxy, "id_service.tls", &ids.tls, &[])?;
            tokio::spawn(resp::serve(
                listener,
                tls,
                proxy.clone(),
                ids.clone(),
                stop.clone(),
            ));
        }
    }
    Ok(())
}

/// HTTPS offers HTTP/1.1 by ALPN (the only version these listeners speak).
/// Why an admin or ID-service listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("tls: {0}")]
    Tls(#[from] crate::tls::TlsError),
}

const HTTP_ALPN: &[&[u8]] = &[b"http/1.1"];

/// A listener's TLS acceptor: the MySQL port's for `true`, its own for `{cert, key}`.
fn listener_tls(
    proxy: &Proxy,
    key: &str,
    tls: &Option<ListenerTls>,
    alpn: &[&[u8]],
) -> Result<Option<TlsAcceptor>, ListenError> {
    match tls {
        None => Ok(None),
        Some(ListenerTls::Shared) => match &proxy.tls {
            Some(a) => Ok(Some(a.shared.clone())),
            // Validation refuses this; never fall back to plain TCP silently.
            None => Err(ListenError::Tls(crate::tls::TlsError::Rejected {
                what: key.to_string(),
                message: "true needs the top-level `tls:`".into(),
            })),
        },
        Some(ListenerTls::Files(f)) => {
            let (acceptor, cert) = crate::tls::listener::acceptor(f, alpn)?;
            proxy.tls_rotations.add(cert);
            Ok(Some(acceptor))
        }
    }
}

async fn bind(addr: &str) -> Result<TcpListener, ListenError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ListenError::Listen {
            addr: addr.to_string(),
            source,
        })
}

/// A new admin connection's first request (or TLS handshake) must come within this.
const ADMIN_LOGIN: Duration = Duration::from_secs(5);
/// Scrapers and probes send small requests: headers and body within this.
const ADMIN_MAX_BYTES: usize = 16 << 10;
