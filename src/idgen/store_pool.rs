//! The sequence store as one server or as several holding the same data: the nodes of a Galera
//! cluster, or a replication group (a primary and its replicas). Connections come from the
//! node last seen working; when it cannot give one within `attempt_timeout` (killed, frozen,
//! unreachable), the next node is tried, and the first that answers becomes the one to use.
//! Every write idgate makes there (segment ranges, worker leases, XA decisions) is one atomic
//! statement, so any node of a synchronously replicated cluster may take it; in a replication
//! group only the writable node may (`@@read_only = 0`, checked on every connection handed
//! out, so a demoted primary is left at once). Each move to another node bumps a generation,
//! which the segment generators read to raise their ranges on the new node.

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
    /// A replication group: only a node with `read_only = 0` takes the store's writes.
    writable_only: bool,
    /// Times the store moved to another node.
    generation: std::sync::atomic::AtomicU64,
}

impl StorePool {
    /// A store on one server.
    pub fn single(pool: Pool) -> StorePool {
        Self::nodes(vec![(String::new(), pool)], Duration::from_secs(2))
    }

    /// A store on several nodes, tried in order from the first.
    pub fn nodes(nodes: Vec<(String, Pool)>, attempt_timeout: Duration) -> StorePool {
        Self::build(nodes, attempt_timeout, false)
    }

    /// A store on the nodes of a replication group, used on the one that is writable.
    pub fn group(nodes: Vec<(String, Pool)>, attempt_timeout: Duration) -> StorePool {
        Self::build(nodes, attempt_timeout, true)
    }

    fn build(
        nodes: Vec<(String, Pool)>,
        attempt_timeout: Duration,
        writable_only: bool,
    ) -> StorePool {
        StorePool {
            inner: Arc::new(Inner {
                nodes,
                current: AtomicUsize::new(0),
                attempt_timeout,
                writable_only,
                generation: Default::default(),
            }),
        }
    }

    /// Bumped each time the store moves to another node.
    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    /// A connection from the working node, moving on to the next ones when it gives none.
    pub async fn get_conn(&self) -> Result<Conn, mysql_async::Error> {
        let nodes = &self.inner.nodes;
        if let [(_, only)] = &nodes[..] {
            if !self.inner.writable_only {
                return only.get_conn().await;
            }
        }
        let start = self.inner.current.load(Ordering::Relaxed);
        let mut last = None;
        for k in 0..nodes.len() {
            let i = (start + k) % nodes.len();
            let (addr, pool) = &nodes[i];
            let got = self.try_node(pool, addr).await;
            match got {
                Ok(c) => {
                    if k > 0 {
                        self.inner.current.store(i, Ordering::Relaxed);
                        self.inner.generation.fetch_add(1, Ordering::AcqRel);
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

impl StorePool {
    /// A connection of node `addr`, within the attempt timeout; in a replication group only
    /// while that node is writable.
    async fn try_node(&self, pool: &Pool, addr: &str) -> Result<Conn, mysql_async::Error> {
        let t = self.inner.attempt_timeout;
        let conn = || async move {
            match tokio::time::timeout(t, pool.get_conn()).await {
                Ok(r) => r,
                Err(_) => Err(timed_out(addr, t)),
            }
        };
        if !self.inner.writable_only {
            return conn().await;
        }
        match self.writable(conn().await?, addr).await {
            // A pooled connection may have been ended (by a switchover, or by the server's
            // timeout): the node gets one more try with a fresh one.
            Err(mysql_async::Error::Io(mysql_async::IoError::Io(e)))
                if e.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Err(mysql_async::Error::Io(mysql_async::IoError::Io(e)))
            }
            Err(_) => self.writable(conn().await?, addr).await,
            ok => ok,
        }
    }

    /// `c` when its node takes writes now; an error naming the node otherwise.
    async fn writable(&self, mut c: Conn, addr: &str) -> Result<Conn, mysql_async::Error> {
        use mysql_async::prelude::Queryable;
        let t = self.inner.attempt_timeout;
        match tokio::time::timeout(t, c.query_first::<i64, _>("SELECT @@read_only")).await {
            Ok(Ok(Some(0))) => Ok(c),
            Ok(Ok(_)) => Err(mysql_async::Error::Io(mysql_async::IoError::Io(
                std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!("node {addr} is read-only"),
                ),
            ))),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(timed_out(addr, t)),
        }
    }
}

fn timed_out(addr: &str, after: Duration) -> mysql_async::Error {
    let e = std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("node {addr} gave no connection within {after:?}"),
    );
    mysql_async::Error::Io(mysql_async::IoError::Io(e))
}
