//! The backend connections one session holds, at most one per backend, each kept until the
//! session ends so that its state (variables, transaction, temporary tables) stays put, and each
//! one's part in the client's transaction: joining it (`join.rs`), ending it (`finish.rs`),
//! savepoints on every participant (`savepoints.rs`), and what one statement decides for the
//! connections it touches (`scope.rs`).
//! Nothing here knows about the client: what the session must tell it comes back as values.

mod finish;
mod join;
mod published;
mod savepoints;
mod scope;
#[cfg(test)]
mod scope_tests;

use std::sync::Arc;

use crate::exec::{BackendConn, Lease};

pub use finish::Finished;
pub use join::{JoinError, Joined, TxnView};
pub use published::{Published, Thread};
pub use savepoints::SavepointError;
pub use scope::{commits_implicitly, may_write, StatementScope};

/// One backend connection the session holds.
pub struct Held {
    pub backend: String,
    pub lease: Lease,
    /// This connection joined the session's open transaction.
    pub in_txn: bool,
    /// The gtrid of its XA branch, when it joined with `XA START`.
    pub xa: Option<Arc<[u8]>>,
    /// A statement that may write ran on it in the transaction.
    pub wrote: bool,
    /// It is a connection to the default backend (found without comparing names, which
    /// lie apart from the rest of the session's state).
    pub default: bool,
    /// It is on a replica of the backend, for reads only: statements that name a backend
    /// never find it, and it joins no transaction.
    pub replica: bool,
}

impl Held {
    /// A connection just taken for the session, in no transaction yet.
    pub fn new(backend: String, lease: Lease, default: bool) -> Held {
        Held {
            backend,
            lease,
            in_txn: false,
            xa: None,
            wrote: false,
            default,
            replica: false,
        }
    }

    /// A connection to a replica of `backend`, for the session's reads.
    pub fn replica(backend: String, lease: Lease) -> Held {
        Held {
            replica: true,
            ..Held::new(backend, lease, false)
        }
    }

    /// The backend thread it runs on.
    pub fn thread(&self) -> Thread {
        Thread {
            backend: self.backend.clone(),
            node: self.lease.node().map(str::to_string),
            id: self.lease.connection_id,
        }
    }

    /// Forgets the connection's part in a transaction (it ended, or the connection was reset).
    pub fn leave_txn(&mut self) {
        self.in_txn = false;
        self.xa = None;
        self.wrote = false;
    }
}

/// What a connection joining the client's transaction is started with.
#[derive(Default)]
struct TxnPart {
    /// `START TRANSACTION READ ONLY …`: participants start with the client's statement, not as
    /// XA branches (nothing to commit atomically).
    plain_start: Option<Vec<u8>>,
    /// The transaction's gtrid, made when the first participant joins.
    gtrid: Option<Arc<[u8]>>,
    /// Savepoints in the order they were set, for participants that join later.
    savepoints: Vec<Vec<u8>>,
}

/// The session's backend connections and their part in the client's transaction.
#[derive(Default)]
pub struct SessionConns {
    held: Vec<Held>,
    txn: TxnPart,
    /// Where the held connections' backend threads are shown to `KILL`, and the version of
    /// the last list shown.
    published: Option<(Arc<Published>, u64)>,
}

impl Drop for SessionConns {
    fn drop(&mut self) {
        let released = std::mem::take(&mut self.held);
        self.publish(released);
    }
}

impl SessionConns {
    pub fn position(&self, backend: &str) -> Option<usize> {
        self.held
            .iter()
            .position(|h| h.backend == backend && !h.replica)
    }

    /// The index of the connection to the default backend, if the session holds one.
    pub fn default_position(&self) -> Option<usize> {
        self.held.iter().position(|h| h.default)
    }

    /// The index of the session's connection to a replica of `backend`, if it holds one.
    pub fn replica_position(&self, backend: &str) -> Option<usize> {
        self.held
            .iter()
            .position(|h| h.replica && h.backend == backend)
    }

    pub fn get_mut(&mut self, i: usize) -> &mut Lease {
        &mut self.held[i].lease
    }

    pub fn held_mut(&mut self) -> &mut [Held] {
        &mut self.held
    }

    /// Whether any connection joined the client's transaction.
    pub fn any_joined(&self) -> bool {
        self.held.iter().any(|h| h.in_txn)
    }

    /// The connections at `idx`, in that order, borrowed together.
    pub fn conns(&mut self, idx: &[usize]) -> Vec<&mut BackendConn> {
        let mut slots: Vec<Option<&mut BackendConn>> =
            self.held.iter_mut().map(|h| Some(&mut *h.lease)).collect();
        idx.iter()
            .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
            .collect()
    }

    /// Shows the held connections to `KILL` through `to` from now on.
    pub fn publish_to(&mut self, to: Arc<Published>) {
        self.published = Some((to, 0));
        self.publish(Vec::new());
    }

    /// Shows the connections held now; `released` go back to their pools afterwards.
    fn publish(&mut self, released: Vec<Held>) {
        let Some((to, version)) = &mut self.published else {
            return; // `released` drop here
        };
        *version += 1;
        let conns = self.held.iter().map(Held::thread).collect();
        published::publish(to, *version, conns, released);
    }

    pub fn take(&mut self, i: usize) -> Held {
        let h = self.held.remove(i);
        self.publish(Vec::new());
        h
    }

    pub fn push(&mut self, h: Held) -> usize {
        self.held.push(h);
        self.publish(Vec::new());
        self.held.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Drops the connections that broke (the pool closes them); indices change.
    pub fn drop_broken(&mut self) {
        self.retain(|h| !h.lease.broken);
    }

    /// Keeps the connections `keep` accepts; the others go back to their pools.
    pub fn retain(&mut self, keep: impl Fn(&Held) -> bool) {
        let (kept, released): (Vec<Held>, Vec<Held>) =
            std::mem::take(&mut self.held).into_iter().partition(keep);
        self.held = kept;
        self.publish(released);
    }

    /// Takes out the connections `take` picks (the others stay, in their order).
    pub fn take_where(&mut self, take: impl Fn(&Held) -> bool) -> Vec<Held> {
        let (taken, kept): (Vec<Held>, Vec<Held>) =
            std::mem::take(&mut self.held).into_iter().partition(take);
        self.held = kept;
        if !taken.is_empty() {
            self.publish(Vec::new());
        }
        taken
    }

    /// Lets every connection go; the transaction's own state stays as it is.
    pub fn clear(&mut self) {
        let released = std::mem::take(&mut self.held);
        self.publish(released);
    }

    /// A new client transaction (XA mode, where idgate answers BEGIN): participants start with
    /// `plain_start` (the client's READ ONLY start) when given, else as XA branches.
    pub fn begin_txn(&mut self, plain_start: Option<Vec<u8>>) {
        self.txn = TxnPart {
            plain_start,
            ..TxnPart::default()
        };
    }

    /// The client's transaction is over (ended, or the session was reset).
    pub fn forget_txn(&mut self) {
        self.txn = TxnPart::default();
    }
}
