//! The sequence store as one server or as several holding the same data (the nodes of a Galera
//! cluster). Connections come from the node last seen working; when it cannot give one within
//! `attempt_timeout` (killed, frozen, unreachable), the next node is tried, and the first that
//! answers becomes the one to use. Every write idgate makes there (segment ranges, worker leases,
//! XA decisions) is one atomic statement, so any node of a synchronously replicated cluster may
//! take it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mysql_async::{Conn, Pool};
use tracing::warn;

#[derive(Clone)]
pub struct StorePool {
    inner: Arc<Inner>,
}

struct Inner {
    /// Each node's address (for logs) and its pool.
    nodes: Vec<(String, Pool)>,
    current: AtomicUsize,
    attempt_timeout: Duration,
}

impl StorePool {
    /// A store on one server.
    pub fn single(pool: Pool) -> StorePool {
        Self::nodes(vec![(String::new(), pool)], Duration::from_secs(2))
    }

    /// A store on several nodes, tried in order from the first.
    pub fn nodes(nodes: Vec<(String, Pool)>, attempt_timeout: Duration) -> StorePool {
        StorePool {
            inner: Arc::new(Inner {
                nodes,
                current: AtomicUsize::new(0),
                attempt_timeout,
            }),
        }
    }

    /// A connection from the working node, moving on to the next ones when it gives none.
    pub async fn get_conn(&self) -> Result<Conn, mysql_async::Error> {
        let nodes = &self.inner.nodes;
        if let [(_, only)] = &nodes[..] {
            return only.get_conn().await;
        }
        let start = self.inner.current.load(Ordering::Relaxed);
        let mut last = None;
        for k in 0..nodes.len() {
            let i = (start + k) % nodes.len();
            let (addr, pool) = &nodes[i];
            let got = match tokio::time::timeout(self.inner.attempt_timeout, pool.get_conn()).await
            {
                Ok(r) => r,
                Err(_) => Err(timed_out(addr, self.inner.attempt_timeout)),
            };
            match got {
                Ok(c) => {
                    if k > 0 {
                        self.inner.current.store(i, Ordering::Relaxed);
                        warn!(node = %addr, "sequence store: moved to another node");
                    }
                    return Ok(c);
                }
                Err(e) => {
                    warn!(node = %addr, error = %e, "sequence store node gives no connection");
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| timed_out("", self.inner.attempt_timeout)))
    }
}

fn timed_out(addr: &str, after: Duration) -> mysql_async::Error {
    let e = std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("node {addr} gave no connection within {after:?}"),
    );
    mysql_async::Error::Io(mysql_async::IoError::Io(e))
}
