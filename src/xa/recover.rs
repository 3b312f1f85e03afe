//! Finishing XA branches idgate left prepared: a branch whose gtrid has a commit decision is
//! committed; one without a decision is rolled back when it belongs to this node and is not in
//! flight (an earlier run of this node, or a transaction this run already gave up); a branch of
//! another node without a decision is left to that node, which may still be deciding it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, info, warn};

use super::xid::{idgate_branches, parse_gtrid, xid_sql, Branch};
use super::Coordinator;
use crate::exec::{BackendConn, BackendError};

/// The longest one recovery statement (XA RECOVER, XA COMMIT, XA ROLLBACK) may wait for its
/// backend, whatever the backend's query_timeout_ms: recovery must not stall on a frozen backend.
const BACKEND_IO: Duration = Duration::from_secs(30);

const TIMED_OUT: &str = "no answer in time";

async fn on_backend<T>(
    f: impl std::future::Future<Output = Result<T, BackendError>>,
) -> Result<T, String> {
    match tokio::time::timeout(BACKEND_IO, f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("{} s: {TIMED_OUT}", BACKEND_IO.as_secs())),
    }
}

/// What one recovery pass did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub committed: usize,
    pub rolled_back: usize,
    /// Branches of other nodes with no decision yet, or that could not be finished now.
    pub left: usize,
    pub unreachable: Vec<String>,
}

impl Outcome {
    /// Something is left that a later pass may finish.
    pub fn pending(&self) -> bool {
        !self.unreachable.is_empty() || self.left > 0
    }
}

enum Action {
    Commit,
    Rollback,
    Leave,
}

impl Coordinator {
    async fn action(&self, b: &Branch) -> Result<Action, String> {
        let Some(parts) = parse_gtrid(&b.gtrid) else {
            return Ok(Action::Leave);
        };
        let own = parts.node == self.xids.node;
        // Checked before the decision log: a session records its decision before it leaves
        // the in-flight set, so a branch not in flight now has its final decision logged.
        if own && parts.incarnation == self.xids.incarnation && self.is_in_flight(&b.gtrid) {
            return Ok(Action::Leave);
        }
        if self.log.contains(&b.gtrid).await? {
            return Ok(Action::Commit);
        }
        Ok(if own { Action::Rollback } else { Action::Leave })
    }

    /// One pass over every backend.
    pub async fn recover_once(self: &Arc<Self>) -> Outcome {
        let mut out = Outcome::default();
        // Read before the scan: a decision listed here belongs to branches that were all
        // prepared before the scan, so if none is left after it they all committed.
        let decisions = match self.log.all().await {
            Ok(d) => Some(d),
            Err(e) => {
                warn!(error = %e, "XA recovery cannot read the decision log");
                None
            }
        };
        // Branches still prepared after this pass (left, or failed to finish).
        let mut remaining: HashSet<Vec<u8>> = HashSet::new();
        for (name, cfg) in &self.backends {
            let conn =
                BackendConn::connect(name, cfg, Default::default(), Duration::from_secs(5)).await;
            let mut conn = match conn {
                Ok(c) => c,
                Err(e) => {
                    warn!(backend = %name, error = %e, "XA recovery cannot reach the backend");
                    out.unreachable.push(name.clone());
                    continue;
                }
            };
            let rows = match on_backend(conn.query_rows("XA RECOVER")).await {
                Ok(r) => r,
                Err(e) => {
                    warn!(backend = %name, error = %e, "XA RECOVER failed");
                    out.unreachable.push(name.clone());
                    continue;
                }
            };
            for b in idgate_branches(&rows) {
                if conn.broken {
                    out.left += 1;
                    remaining.insert(b.gtrid.clone());
                    continue;
                }
                let action = match self.action(&b).await {
                    Ok(a) => a,
                    Err(e) => {
                        warn!(error = %e, "XA recovery cannot read the decision log");
                        out.left += 1;
                        remaining.insert(b.gtrid.clone());
                        continue;
                    }
                };
                let gtrid = String::from_utf8_lossy(&b.gtrid).into_owned();
                let (sql, what) = match action {
                    Action::Commit => (
                        format!("XA COMMIT {}", xid_sql(&b.gtrid, &b.bqual)),
                        "committed",
                    ),
                    Action::Rollback => (
                        format!("XA ROLLBACK {}", xid_sql(&b.gtrid, &b.bqual)),
                        "rolled back",
                    ),
                    Action::Leave => {
                        debug!(backend = %name, %gtrid, "prepared XA branch left to the idgate node that owns it");
                        out.left += 1;
                        remaining.insert(b.gtrid.clone());
                        continue;
                    }
                };
                match on_backend(conn.query_drop(&sql)).await {
                    Ok(()) => {
                        info!(backend = %name, %gtrid, "XA recovery {what} a prepared branch");
                        match action {
                            Action::Commit => out.committed += 1,
                            _ => out.rolled_back += 1,
                        }
                    }
                    Err(e) => {
                        // XAER_NOTA: a live connection still holds the branch; later.
                        warn!(backend = %name, %gtrid, error = %e, "XA recovery could not finish a branch");
                        out.left += 1;
                        remaining.insert(b.gtrid.clone());
                        if e.ends_with(TIMED_OUT) {
                            // The connection is out of step; the next pass starts afresh.
                            conn.broken = true;
                        }
                    }
                }
            }
            let _ = tokio::time::timeout(BACKEND_IO, conn.close()).await;
        }
        if let (Some(decisions), true) = (decisions, out.unreachable.is_empty()) {
            for g in decisions.iter().filter(|g| !remaining.contains(*g)) {
                if let Err(e) = self.log.forget(g).await {
                    warn!(error = %e, "could not delete a finished commit decision");
                }
            }
        }
        self.stats.record(&out);
        out
    }

    /// Runs recovery again whenever a session could not finish a commit, and every few
    /// seconds while an earlier pass left something to do.
    pub async fn run_background(self: Arc<Self>, mut pending: bool) {
        loop {
            if pending {
                tokio::select! {
                    _ = self.wake.notified() => {}
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                }
            } else {
                self.wake.notified().await;
            }
            let out = self.recover_once().await;
            pending = out.pending();
        }
    }
}
