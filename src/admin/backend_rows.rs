//! One row per node of every backend, as `SHOW IDGATE BACKENDS` and the operator's console show
//! them: the pool's figures and ping (the writable node's), and each node's role and lag.

use std::time::Duration;

use tokio::task::JoinSet;

use super::backend_nodes::{node_rows, NodeRow};
use crate::proxy::Proxy;

/// Longest wait for a backend's ping without `admin.check_timeout_ms`.
const PING_TIMEOUT: Duration = Duration::from_secs(1);

pub struct BackendRow {
    pub name: String,
    /// The account idgate logs in to the backend as (never its password).
    pub user: String,
    pub in_use: usize,
    pub idle: usize,
    pub max: usize,
    pub reachable: bool,
    /// The ping's time, or why it failed.
    pub detail: String,
    /// Failures to get a connection from the backend's pool: none free in time, connect failed.
    pub acquire_timeouts: u64,
    pub connect_errors: u64,
    pub node: NodeRow,
}

/// Every backend by name, each node of a replication group on its own row; the backends are
/// pinged at once, each within the admin listener's check timeout.
pub async fn rows(proxy: &Proxy) -> Vec<BackendRow> {
    let timeout = proxy
        .config
        .admin
        .as_ref()
        .map_or(PING_TIMEOUT, |a| Duration::from_millis(a.check_timeout_ms));
    let live = proxy.live();
    let mut names: Vec<&String> = proxy.pools.keys().collect();
    names.sort();
    let mut pings = JoinSet::new();
    for (i, name) in names.iter().enumerate() {
        let pool = proxy.pools[*name].clone();
        pings.spawn(async move { (i, super::ready::ping_backend(pool, timeout).await) });
    }
    let mut outcomes = vec![Err("not checked".to_string()); names.len()];
    while let Some(done) = pings.join_next().await {
        if let Ok((i, r)) = done {
            outcomes[i] = r;
        }
    }
    let mut out = Vec::new();
    for (name, outcome) in names.iter().zip(outcomes) {
        let pool = &proxy.pools[*name];
        let b = &live.config.backends[*name].value;
        let idle = pool.idle_count()
            + live
                .account_pools(name)
                .iter()
                .map(|p| p.idle_count())
                .sum::<usize>();
        let (reachable, detail) = match outcome {
            Ok(d) => (true, d),
            Err(e) => (false, e),
        };
        let address = format!("{}:{}", b.host, b.port);
        for node in node_rows(pool.topology().map(|t| &**t), &address) {
            // The pool's figures and ping are the writable node's.
            let (in_use, idle_here, max) = if node.writer {
                (pool.in_use_count(), idle, pool.max_connections())
            } else {
                (0, 0, 0)
            };
            let (reachable, detail) = match (node.writer, node.read_only) {
                (true, _) => (reachable, detail.clone()),
                (false, Some(_)) => (true, String::new()),
                (false, None) => (false, node.why.clone()),
            };
            out.push(BackendRow {
                name: name.to_string(),
                user: pool.account().to_string(),
                in_use,
                idle: idle_here,
                max,
                reachable,
                detail,
                acquire_timeouts: pool.stats.acquire_timeouts(),
                connect_errors: pool.stats.connect_errors(),
                node,
            });
        }
    }
    out
}
