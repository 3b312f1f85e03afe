//! A backend that is a replication group (`backends.NAME.replicas`): its nodes, what each was
//! at its last poll (role, read_only, lag, GTID positions) and where writes go. The pool asks it
//! for the node to open connections to; `SHOW IDGATE BACKENDS` and `/ready` read it. It knows
//! nothing of sessions or statements.

pub mod gtid;
pub mod hold;
mod poll;
pub mod roles;
mod switchover;

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use tracing::{info, warn};

use crate::config::Backend;
use crate::wire::errors::{self, SqlError};
use hold::WriteGate;
use poll::NodePoller;
use roles::{Role, Seen, Writer};
pub use switchover::Switched;

pub struct Topology {
    pub backend: String,
    /// Every node, the configured address first.
    pub nodes: Vec<String>,
    interval: Duration,
    max_lag_ms: u64,
    /// Longest a statement waits while the group's writes are held.
    pub hold_bound: Duration,
    /// How long statements are held when the primary stops answering.
    failover_hold: Duration,
    /// Since when they are (the poller's state).
    failing_over: std::sync::Mutex<Option<std::time::Instant>>,
    now: ArcSwap<Snapshot>,
    /// The backend threads sessions hold now, by node (`host:port`, thread id): when another
    /// node becomes the primary, those on the others are ended, so no session keeps writing to
    /// a node that is no longer the primary.
    leased: std::sync::Mutex<std::collections::HashSet<(String, u32)>>,
    /// Reads served by each node (in `nodes`' order) for `reads: replica` sessions.
    reads: Vec<std::sync::atomic::AtomicU64>,
    /// Spreads sessions over the replicas.
    next_replica: std::sync::atomic::AtomicUsize,
    /// Counters for the metrics.
    pub counts: Counts,
    /// Holds the group's writes while its primary changes.
    pub gate: WriteGate,
    /// Threads idgate ended on a node that stopped being the primary: their sessions take a
    /// new connection (or are told their state is gone) instead of using them.
    fenced: std::sync::Mutex<std::collections::HashSet<(String, u32)>>,
    /// Asks the poller for a round now (after idgate changed the primary itself).
    repoll: tokio::sync::Notify,
}

/// What the group's metrics count.
#[derive(Default)]
pub struct Counts {
    /// Times another node became the writable one.
    pub primary_changes: std::sync::atomic::AtomicU64,
    /// Reads that waited on a replica for the session's last write and got it in time.
    pub causal_waits: std::sync::atomic::AtomicU64,
    /// Reads sent to the primary because no replica applied the session's last write in time.
    pub causal_fallbacks: std::sync::atomic::AtomicU64,
    /// `IDGATE SWITCHOVER`s this instance completed.
    pub switchovers: std::sync::atomic::AtomicU64,
    /// Times the primary stopped answering and statements were held until another node
    /// became writable.
    pub failovers: std::sync::atomic::AtomicU64,
}

/// The group as its last poll saw it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// `None` before the first poll ended.
    pub seen: Option<Vec<Seen>>,
    pub roles: Vec<Role>,
    pub writer: Writer,
}

impl Topology {
    /// The group of `cfg`, or `None` for a backend of one server.
    pub fn of(backend: &str, cfg: &Backend) -> Option<Arc<Topology>> {
        if cfg.replicas.is_empty() {
            return None;
        }
        let nodes: Vec<String> = std::iter::once(format!("{}:{}", cfg.host, cfg.port))
            .chain(cfg.replicas.iter().cloned())
            .collect();
        let n = nodes.len();
        let roles = vec![Role::Down("not polled yet".into()); n];
        Some(Arc::new(Topology {
            backend: backend.to_string(),
            nodes,
            interval: Duration::from_millis(cfg.poll_interval_ms.max(1)),
            max_lag_ms: cfg.max_replica_lag_ms,
            // The switchover's own bound, the wait to see the new primary and some slack; or
            // the failover hold's, which the poller ends.
            hold_bound: Duration::from_millis(
                (cfg.switchover_timeout_ms + cfg.poll_interval_ms.saturating_mul(4) + 4000)
                    .max(cfg.failover_hold_ms + cfg.poll_interval_ms.max(1000) * 2),
            ),
            failover_hold: Duration::from_millis(cfg.failover_hold_ms),
            failing_over: Default::default(),
            now: ArcSwap::from_pointee(Snapshot {
                seen: None,
                roles,
                // Until the first poll, the configured address, as without replicas.
                writer: Writer::Node(0),
            }),
            leased: Default::default(),
            reads: (0..n).map(|_| Default::default()).collect(),
            next_replica: Default::default(),
            counts: Counts::default(),
            gate: WriteGate::default(),
            fenced: Default::default(),
            repoll: Default::default(),
        }))
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.now.load_full()
    }

    /// The node new connections for writes go to (`host:port`), or the error a client gets when
    /// there is none to trust.
    pub fn writer(&self) -> Result<String, SqlError> {
        let now = self.now.load();
        match &now.writer {
            Writer::Node(i) => Ok(self.nodes[*i].clone()),
            Writer::SplitBrain(many) => {
                let named: Vec<&str> = many.iter().map(|i| self.nodes[*i].as_str()).collect();
                Err(SqlError::new(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!(
                        "idgate: backend `{}` has more than one writable node ({}); idgate sends \
                         it nothing new until exactly one is writable: set read_only = 1 on \
                         every node but the primary",
                        self.backend,
                        named.join(", ")
                    ),
                ))
            }
            Writer::None => Err(SqlError::new(
                errors::CR_SERVER_LOST,
                b"HY000",
                format!(
                    "idgate: backend `{}` has no writable node now (nodes {}): promote one \
                     (read_only = 0) and retry",
                    self.backend,
                    self.nodes.join(", ")
                ),
            )),
        }
    }

    /// A replica to read from now that has applied `gtid` (the session's last write; empty for
    /// none) as its last poll saw it, preferring `held` (the node the session reads from
    /// already). `None` when no replica serves; `Some((node, false))` for a replica whose
    /// poll did not show `gtid` yet (the read waits for it there).
    pub fn replica_for(&self, gtid: &str, held: Option<&str>) -> Option<(String, bool)> {
        let now = self.now.load();
        let serving: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| now.roles.get(i) == Some(&Role::Replica))
            .collect();
        if serving.is_empty() {
            return None;
        }
        let applied = |i: usize| match now.seen.as_ref().and_then(|s| s.get(i)) {
            Some(Seen::Answered(a)) => gtid::covers(&a.gtid_slave_pos, gtid),
            _ => false,
        };
        let held = held.and_then(|h| serving.iter().copied().find(|&i| self.nodes[i] == h));
        let covering: Vec<usize> = serving.iter().copied().filter(|&i| applied(i)).collect();
        let spread = |among: &[usize]| {
            let k = self
                .next_replica
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            among[k % among.len()]
        };
        let progress = |i: usize| match now.seen.as_ref().and_then(|s| s.get(i)) {
            Some(Seen::Answered(a)) => gtid::progress(&a.gtid_slave_pos, gtid),
            _ => 0,
        };
        let pick = match held {
            Some(h) if applied(h) => h,
            _ if !covering.is_empty() => spread(&covering),
            // None has it yet: the one furthest along is likeliest to get there first.
            _ => {
                let best = serving.iter().map(|&i| progress(i)).max().unwrap_or(0);
                match held {
                    Some(h) if progress(h) == best => h,
                    _ => {
                        let ahead: Vec<usize> = serving
                            .iter()
                            .copied()
                            .filter(|&i| progress(i) == best)
                            .collect();
                        spread(&ahead)
                    }
                }
            }
        };
        Some((self.nodes[pick].clone(), applied(pick)))
    }

    /// Whether a session's connection to `node` (backend thread `id`) must be left for one to
    /// the primary: another node is the writable one now, or idgate ended the thread. With no
    /// single writable node nothing is gained by leaving (writes are refused either way).
    pub fn is_stale(&self, node: &str, id: u32) -> bool {
        let now = self.now.load();
        let moved = matches!(now.writer, Writer::Node(i) if self.nodes[i] != node);
        moved
            || self
                .fenced
                .lock()
                .is_ok_and(|f| f.contains(&(node.to_string(), id)))
    }

    /// The threads sessions hold on `node` now.
    fn leased_on(&self, node: &str) -> Vec<u32> {
        self.leased
            .lock()
            .map(|l| {
                l.iter()
                    .filter(|(n, _)| n == node)
                    .map(|(_, id)| *id)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Notes that idgate ends thread `id` on `node`: its session must not use it again.
    fn mark_fenced(&self, node: &str, id: u32) {
        if let Ok(mut f) = self.fenced.lock() {
            f.insert((node.to_string(), id));
        }
    }

    /// A read went to `node`.
    pub fn count_read(&self, node: &str) {
        if let Some(i) = self.nodes.iter().position(|n| n == node) {
            self.reads[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Reads each node served, in `nodes`' order.
    pub fn reads_served(&self) -> Vec<u64> {
        self.reads
            .iter()
            .map(|r| r.load(std::sync::atomic::Ordering::Relaxed))
            .collect()
    }

    /// A session holds backend thread `id` on `node`.
    pub fn leased(&self, node: &str, id: u32) {
        if let Ok(mut l) = self.leased.lock() {
            l.insert((node.to_string(), id));
        }
    }

    /// The session let thread `id` on `node` go.
    pub fn released(&self, node: &str, id: u32) {
        let key = (node.to_string(), id);
        if let Ok(mut l) = self.leased.lock() {
            l.remove(&key);
        }
        if let Ok(mut f) = self.fenced.lock() {
            f.remove(&key);
        }
    }

    /// Ends the threads sessions hold on nodes other than the new primary `writer`, so that
    /// none writes to the old primary (which a privileged account could still do under
    /// `read_only`); their sessions move before their next statement. Nodes the poll found down
    /// are skipped: their threads went with them, and each try would cost a connect timeout.
    async fn fence(&self, writer: usize, pollers: &mut [NodePoller]) {
        let down: Vec<bool> = self
            .snapshot()
            .roles
            .iter()
            .map(|r| matches!(r, Role::Down(_)))
            .collect();
        let stale: Vec<(String, u32)> = match self.leased.lock() {
            Ok(l) => l
                .iter()
                .filter(|(n, _)| *n != self.nodes[writer])
                .cloned()
                .collect(),
            Err(_) => return,
        };
        for (node, id) in stale {
            let Some(i) = self.nodes.iter().position(|n| *n == node) else {
                continue;
            };
            self.mark_fenced(&node, id);
            if down.get(i) == Some(&true) {
                continue;
            }
            match pollers[i].kill(id, Duration::from_secs(1)).await {
                Ok(()) => info!(backend = %self.backend, node = %node, thread = id,
                    "ended a session's connection to the former primary"),
                Err(e) => warn!(backend = %self.backend, node = %node, thread = id, error = %e,
                    "could not end a session's connection to the former primary"),
            }
        }
    }

    /// Polls every node until the process ends: the first round before it returns (so the first
    /// sessions go to the node that is writable now), the others in the background.
    pub async fn watch(self: &Arc<Self>, cfg: &Backend) {
        let mut pollers: Vec<NodePoller> =
            self.nodes.iter().map(|a| NodePoller::new(a, cfg)).collect();
        self.poll_round(&mut pollers).await;
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(me.interval) => {}
                    () = me.repoll.notified() => {}
                }
                me.poll_round(&mut pollers).await;
            }
        });
    }

    /// One poll of every node at once, each bounded by the interval (at least 1 s: a login
    /// can take that long on a loaded server).
    async fn poll_round(&self, pollers: &mut [NodePoller]) {
        let bound = self.interval.max(Duration::from_secs(1));
        let seen = futures_util::future::join_all(pollers.iter_mut().map(|p| p.poll(bound))).await;
        let (writer, roles) = roles::roles(&seen, self.max_lag_ms);
        let before = self.now.load_full();
        self.log_changes(&before, &writer, &roles);
        let fence = match writer {
            Writer::Node(i) if before.writer != writer => Some(i),
            _ => None,
        };
        if fence.is_some() && before.seen.is_some() {
            self.counts
                .primary_changes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let changed_from = before.writer.clone();
        self.now.store(Arc::new(Snapshot {
            seen: Some(seen),
            roles,
            writer: writer.clone(),
        }));
        if before.seen.is_some() {
            self.hold_through_failover(&changed_from, &writer);
        }
        if let Some(i) = fence {
            self.fence(i, pollers).await;
        }
    }

    /// While no node is writable after the primary was, holds the group's statements (at most
    /// `failover_hold`): they go on to the node that becomes writable, or fail when none does
    /// in time. Called after the new snapshot is stored, so released statements see it.
    fn hold_through_failover(&self, before: &Writer, now: &Writer) {
        let Ok(mut since) = self.failing_over.lock() else {
            return;
        };
        match (since.as_ref(), now) {
            (None, Writer::None)
                if matches!(before, Writer::Node(_))
                    && !self.failover_hold.is_zero()
                    && !self.gate.switching() =>
            {
                self.gate.begin();
                *since = Some(std::time::Instant::now());
                warn!(backend = %self.backend, hold_ms = self.failover_hold.as_millis() as u64,
                    "the primary stopped answering: holding statements until a node is writable");
            }
            (Some(t0), Writer::Node(i)) => {
                self.counts
                    .failovers
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                info!(backend = %self.backend, node = %self.nodes[*i],
                    held_ms = t0.elapsed().as_millis() as u64,
                    "a node became writable: held statements go to it");
                *since = None;
                self.gate.end();
            }
            (Some(t0), w) if t0.elapsed() >= self.failover_hold || *w != Writer::None => {
                warn!(backend = %self.backend,
                    "no single writable node within failover_hold_ms: held statements fail");
                *since = None;
                self.gate.end();
            }
            _ => {}
        }
    }

    /// Each role change once, and the writer's.
    fn log_changes(&self, before: &Snapshot, writer: &Writer, roles: &[Role]) {
        for (i, (old, new)) in before.roles.iter().zip(roles).enumerate() {
            if old.name() != new.name() || (before.seen.is_none() && new.name() != "primary") {
                info!(
                    backend = %self.backend,
                    node = %self.nodes[i],
                    role = new.name(),
                    why = new.why(),
                    "node role"
                );
            }
        }
        if before.seen.is_some() && &before.writer != writer {
            match writer {
                Writer::Node(i) => {
                    info!(backend = %self.backend, node = %self.nodes[*i], "writes go to a new primary")
                }
                Writer::SplitBrain(_) => {
                    warn!(backend = %self.backend, "more than one writable node: writes refused")
                }
                Writer::None => warn!(backend = %self.backend, "no writable node"),
            }
        }
    }
}
