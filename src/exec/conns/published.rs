//! The backend threads a session's connections run on, published so that `KILL` from another
//! session reaches them. A connection leaves the list before its lease goes back to the pool,
//! and a killer holds the list while it kills: a KILL never reaches a connection that another
//! session has taken since.

use tokio::sync::{Mutex, MutexGuard};

use super::Held;

#[derive(Default)]
pub struct Published {
    list: Mutex<List>,
}

#[derive(Default)]
pub struct List {
    /// Updates can land out of order (one deferred behind a killer): the newest wins.
    version: u64,
    /// Each connection the session holds.
    pub conns: Vec<Thread>,
}

/// A backend thread a session's connection runs on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Thread {
    pub backend: String,
    /// The replication group's node it runs on (`None`: the backend's one server).
    pub node: Option<String>,
    pub id: u32,
}

impl Published {
    /// The list, held until the guard drops: the session lets no listed connection go meanwhile.
    pub async fn lock(&self) -> MutexGuard<'_, List> {
        self.list.lock().await
    }
}

/// Publishes `conns` as version `version`, then lets `released` go back to their pools: at once,
/// or once a killer holding the list is done.
pub(super) fn publish(
    to: &std::sync::Arc<Published>,
    version: u64,
    conns: Vec<Thread>,
    released: Vec<Held>,
) {
    let apply = move |l: &mut List| {
        if version > l.version {
            l.version = version;
            l.conns = conns;
        }
    };
    if let Ok(mut l) = to.list.try_lock() {
        apply(&mut l);
        drop(l);
        drop(released);
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return; // no runtime: dropping `released` closes the connections, never reuses them
    };
    let to = to.clone();
    rt.spawn(async move {
        let mut l = to.list.lock().await;
        apply(&mut l);
        drop(released);
    });
}
