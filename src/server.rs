//! The listener: accepts clients, runs a session per connection, and shuts down cleanly on
//! SIGTERM/SIGINT (stop accepting, let running statements finish within the grace period).

use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{error, info, warn};

use crate::config::Config;
use crate::exec::backend::LoginFlags;
use crate::exec::BackendConn;
use crate::proxy::Proxy;
use crate::session;
use crate::stop::stopped;

/// Stack of each event-loop thread: as the main thread's. A statement's chain of awaits (an XA
/// commit through the sequence store's client, say) is polled on it, and unoptimised builds
/// need more than the 2 MiB threads get by default.
pub const WORKER_STACK_BYTES: usize = 8 << 20;

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
    #[error("cannot start XA transaction recovery: {0}")]
    Xa(String),
    #[error("tls: {0}")]
    Tls(#[from] crate::tls::TlsError),
    #[error("cannot serve a sharded table: {0}")]
    UniqueKeys(String),
    #[error(transparent)]
    Listener(#[from] crate::admin::ListenError),
}

/// Reads the default backend's version string, which idgate shows clients (with `-idgate`), and
/// which of a client's login choices it honours (so idgate offers them).
async fn backend_version(config: &Config) -> Result<(Vec<u8>, LoginFlags), StartError> {
    let name = &config.default_backend.value;
    let b = &config.backends[name].value;
    let timeout = Duration::from_millis(b.pool.acquire_timeout_ms.max(1000));
    let conn = BackendConn::connect(name, b, Default::default(), timeout).await?;
    let v = (conn.server_version.clone(), conn.offers);
    conn.close().await;
    Ok(v)
}

/// Binds, then serves until `stop` turns true (or a signal arrives).
pub async fn run(config: Config, stop: watch::Receiver<bool>) -> Result<(), StartError> {
    run_with_file(config, None, stop).await
}

/// As [`run`], for a configuration read from `path`: SIGHUP and `IDGATE RELOAD` read it again.
pub async fn run_with_file(
    config: Config,
    path: Option<std::path::PathBuf>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), StartError> {
    // Listening before the slow start: a SIGHUP meanwhile waits instead of ending the process.
    #[cfg(unix)]
    let hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup());
    if config.log_level.is_some() {
        if let Err(e) = crate::reload::log_filter::apply(config.log_level.as_deref()) {
            warn!(error = %e, "could not set log_level");
        }
    }
    // Thousands of clients, each with backend connections, need more than the usual 1024 fds.
    match crate::limits::rlimit::raise_nofile() {
        Ok((soft, hard)) => info!(soft, hard, "open file limit (RLIMIT_NOFILE)"),
        Err(e) => warn!(error = %e, "cannot raise the open file limit"),
    }
    let (tls, rotating) = match crate::tls::server::acceptor(&config)? {
        Some((acceptors, rotating)) => (Some(acceptors), Some(rotating)),
        None => (None, None),
    };
    let (version, offers) = backend_version(&config).await?;
    let listener =
        TcpListener::bind(&config.listen)
            .await
            .map_err(|source| StartError::Listen {
                addr: config.listen.clone(),
                source,
            })?;
    // A unique key the shards would check per shard only is held through lookup tables, or
    // accepted knowingly.
    let unique = crate::unique::start::prepare(&config)
        .await
        .map_err(StartError::UniqueKeys)?;
    let idgen = crate::proxy::build_idgen(&config)
        .await
        .map_err(StartError::IdGen)?;
    // Prepared branches of earlier runs are decided before any client is accepted.
    let xa = crate::proxy::start_xa(&config)
        .await
        .map_err(StartError::Xa)?;
    let proxy = Proxy::new(config, &version, offers, idgen, xa, tls, unique);
    if let Some(r) = rotating {
        proxy.tls_rotations.add(r.cert);
        if let Some(ca) = r.client_ca {
            proxy.tls_rotations.add_client_ca(ca);
        }
    }
    // Migration jobs and reloads sit above the proxy: the sessions and the admin listener
    // reach them through `control`.
    let control = crate::admin::Control::new(proxy.clone(), path);
    #[cfg(unix)]
    match hup {
        Ok(hup) => crate::reload::on_sighup(proxy.clone(), control.reloads.clone(), hup),
        Err(e) => warn!(error = %e, "cannot listen for SIGHUP; reload with IDGATE RELOAD"),
    }
    // Tables moved by IDGATE MIGRATE are routed by their new placements from the first client.
    if let Err(e) = crate::migrate::follow_placements(&control.migrations).await {
        warn!(error = %e, "cannot read moved tables' placements yet; retrying in the background");
    }
    crate::admin::start(&control, stop.clone()).await?;
    crate::migrate::watch(&control.migrations);
    crate::proxy::sessions::sweep_idle(&proxy);
    // Replication groups are polled from here on; the first round decides where writes go.
    for (name, pool) in &proxy.pools {
        if let Some(t) = pool.topology() {
            t.watch(&proxy.config.backends[name].value).await;
        }
    }
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
    let mut sessions = JoinSet::new();
    let workers = Workers::start(proxy.config.worker_threads);
    let mut next = 0usize;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let control = control.clone();
                    let open = proxy.metrics.client_connected();
                    // Clients take turns between this thread and the workers.
                    next = next.wrapping_add(1);
                    match workers.handles.get(next % (workers.handles.len() + 1)) {
                        None => {
                            sessions.spawn(session::run(control, stream, peer, open));
                        }
                        // The socket moves to the worker's event loop, where its session runs.
                        Some(worker) => match stream.into_std().and_then(|std| {
                            let _on = worker.enter();
                            TcpStream::from_std(std)
                        }) {
                            Ok(stream) => {
                                sessions.spawn_on(session::run(control, stream, peer, open), worker);
                            }
                            Err(e) => warn!(error = %e, "cannot hand client to a worker thread"),
                        },
                    }
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
    proxy.sessions.stop_all();
    let grace = Duration::from_millis(proxy.live().config.shutdown_grace_ms);
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
    // Release worker-id leases so another idgate can take them at once (before the worker
    // threads stop: connections they opened are driven by their event loops).
    proxy.idgen.shutdown().await;
    drop(workers);
    Ok(())
}

/// Extra threads serving clients, each running a single-threaded event loop until dropped.
struct Workers {
    handles: Vec<tokio::runtime::Handle>,
    _stop: Vec<tokio::sync::oneshot::Sender<()>>,
}

impl Workers {
    /// Starts `threads - 1` workers (the calling thread is one); `threads` 0 means one per CPU.
    fn start(threads: usize) -> Workers {
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let mut w = Workers {
            handles: Vec::new(),
            _stop: Vec::new(),
        };
        for i in 1..threads {
            let (handle_tx, handle_rx) = std::sync::mpsc::channel();
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let spawned = std::thread::Builder::new()
                .name(format!("idgate-worker-{i}"))
                .stack_size(WORKER_STACK_BYTES)
                .spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    match rt {
                        Ok(rt) => {
                            let _ = handle_tx.send(Ok(rt.handle().clone()));
                            let _ = rt.block_on(stop_rx);
                        }
                        Err(e) => {
                            let _ = handle_tx.send(Err(e));
                        }
                    }
                });
            let started = match spawned {
                Ok(_) => handle_rx
                    .recv()
                    .map_err(|e| e.to_string())
                    .and_then(|r| r.map_err(|e| e.to_string())),
                Err(e) => Err(e.to_string()),
            };
            match started {
                Ok(handle) => {
                    w.handles.push(handle);
                    w._stop.push(stop_tx);
                }
                Err(e) => {
                    warn!(error = %e, "cannot start a worker thread; serving with fewer");
                    break;
                }
            }
        }
        w
    }
}
