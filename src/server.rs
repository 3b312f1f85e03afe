//! The listener: accepts clients, runs a session per connection, and shuts down cleanly on
//! SIGTERM/SIGINT (stop accepting, let running statements finish within the grace period).

use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{debug, error, info, warn};

use crate::config::Config;
use crate::exec::BackendConn;
use crate::proxy::Proxy;
use crate::session;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot reach the default backend to learn its version: {0}")]
    Backend(#[from] crate::exec::BackendError),
    #[error("cannot start the ID generators: {0}")]
    IdGen(String),
}

/// Reads the default backend's version string, which idgate shows clients (with `-idgate`).
async fn backend_version(config: &Config) -> Result<Vec<u8>, StartError> {
    let name = &config.default_backend.value;
    let b = &config.backends[name].value;
    let timeout = Duration::from_millis(b.pool.acquire_timeout_ms.max(1000));
    let conn = BackendConn::connect(name, b, false, timeout).await?;
    let v = conn.server_version.clone();
    conn.close().await;
    Ok(v)
}

/// Binds, then serves until `stop` turns true (or a signal arrives).
pub async fn run(config: Config, mut stop: watch::Receiver<bool>) -> Result<(), StartError> {
    let version = backend_version(&config).await?;
    let listener =
        TcpListener::bind(&config.listen)
            .await
            .map_err(|source| StartError::Listen {
                addr: config.listen.clone(),
                source,
            })?;
    let grace = Duration::from_millis(config.shutdown_grace_ms);
    let idgen = crate::proxy::build_idgen(&config)
        .await
        .map_err(StartError::IdGen)?;
    let proxy = Proxy::new(config, &version, idgen);
    for pool in proxy.pools.values() {
        if let Err(e) = pool.warm_up().await {
            warn!(backend = %pool.name, error = %e, "could not open min_connections at startup");
        }
    }
    info!(
        listen = %proxy.config.listen,
        version = %String::from_utf8_lossy(&proxy.server_version),
        "idgate is ready"
    );
    let (tx, rx) = watch::channel(false);
    let mut sessions = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let (r, w) = stream.into_split();
                    let proxy = proxy.clone();
                    let rx = rx.clone();
                    sessions.spawn(async move {
                        let end = session::run(proxy, r, w, peer.ip().to_string(), rx).await;
                        debug!(?end, "session ended");
                    });
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    error!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
            _ = stopped(&mut stop) => break,
        }
    }
    drop(listener);
    info!(
        sessions = sessions.len(),
        "shutting down: no new connections"
    );
    let _ = tx.send(true);
    let drained = tokio::time::timeout(grace, async {
        while sessions.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        warn!(
            left = sessions.len(),
            "grace period over; closing remaining sessions"
        );
        sessions.abort_all();
    }
    // Release worker-id leases so another idgate can take them at once.
    proxy.idgen.shutdown().await;
    Ok(())
}

/// Resolves once the watch is true (or its sender is gone).
pub async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await.map(|_| ());
}

/// A watch that turns true on SIGTERM or SIGINT.
pub fn signal_stop() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = ctrl_c => {}
                        _ = term.recv() => {}
                    }
                }
                Err(_) => {
                    let _ = ctrl_c.await;
                }
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        let _ = tx.send(true);
    });
    rx
}
