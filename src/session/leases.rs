//! The backend connections one session holds, at most one per backend, each kept until the
//! session ends so that its state (variables, transaction, temporary tables) stays put.

use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::exec::Lease;
use crate::wire::errors::{self, SqlError};

pub struct Held {
    pub backend: String,
    pub lease: Lease,
    /// This connection joined the session's open transaction.
    pub in_txn: bool,
    /// The gtrid of its XA branch, when it joined with `XA START`.
    pub xa: Option<std::sync::Arc<[u8]>>,
    /// A statement that may write ran on it in the transaction.
    pub wrote: bool,
}

impl Held {
    /// Forgets the connection's part in a transaction (it ended, or the connection was reset).
    pub fn leave_txn(&mut self) {
        self.in_txn = false;
        self.xa = None;
        self.wrote = false;
    }
}

#[derive(Default)]
pub struct Leases {
    held: Vec<Held>,
}

impl Leases {
    pub fn position(&self, backend: &str) -> Option<usize> {
        self.held.iter().position(|h| h.backend == backend)
    }

    pub fn get_mut(&mut self, i: usize) -> &mut Lease {
        &mut self.held[i].lease
    }

    pub fn held_mut(&mut self) -> &mut [Held] {
        &mut self.held
    }

    /// The connections at `idx`, in that order, borrowed together.
    pub fn conns(&mut self, idx: &[usize]) -> Vec<&mut crate::exec::BackendConn> {
        let mut slots: Vec<Option<&mut crate::exec::BackendConn>> =
            self.held.iter_mut().map(|h| Some(&mut *h.lease)).collect();
        idx.iter()
            .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
            .collect()
    }

    pub fn take(&mut self, i: usize) -> Held {
        self.held.remove(i)
    }

    pub fn push(&mut self, h: Held) -> usize {
        self.held.push(h);
        self.held.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Drops the connections that broke (the pool closes them); indices change.
    pub fn drop_broken(&mut self) {
        self.held.retain(|h| !h.lease.broken);
    }

    /// Keeps the connections `keep` accepts; the others go back to their pools.
    pub fn retain(&mut self, keep: impl Fn(&Held) -> bool) {
        self.held.retain(keep);
    }

    pub fn clear(&mut self) {
        self.held.clear();
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The index of the session's connection to `backend`, taking one from its pool (and giving it
    /// the session's collation, database and earlier SET statements) on first use.
    pub(super) async fn lease_index(&mut self, backend: &str) -> Result<usize, SqlError> {
        if let Some(i) = self.leases.position(backend) {
            return Ok(i);
        }
        let Some(pool) = self
            .live
            .pool_for(&self.proxy.pools, backend, &self.hello.user)
            .cloned()
        else {
            return Err(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate: no backend named `{backend}`"),
            ));
        };
        let mut lease = pool.acquire(self.found_rows()).await?;
        self.prepare_backend(&mut lease).await?;
        if backend != self.proxy.default_pool.name {
            for stmt in &self.replay {
                lease.query_drop_bytes(stmt).await.map_err(|e| {
                    SqlError::new(
                        errors::ER_UNKNOWN_ERROR,
                        b"HY000",
                        format!("idgate: replaying the session's SET on `{backend}` failed: {e}"),
                    )
                })?;
            }
        }
        Ok(self.leases.push(Held {
            backend: backend.to_string(),
            lease,
            in_txn: false,
            xa: None,
            wrote: false,
        }))
    }
}
