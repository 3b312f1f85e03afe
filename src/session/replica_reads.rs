//! Reads on replicas (`reads: replica` on a backend with replicas, or for the user): a lone
//! SELECT that a replica answers as the primary would (`sql::replica_safe`), outside a
//! transaction, goes to replicas of the backends it reads: relayed to the default backend's,
//! or routed to the shards' (one shard, scatter, merges). The session keeps one connection per
//! such backend for its reads, its SETs and database carried there as to any other connection
//! it holds.
//!
//! Read-your-writes: after a statement ran on a primary, the next such read of that backend
//! first asks the session's primary connection for `@@last_gtid` (its last write there) and
//! reads from a replica that has applied it: one whose last poll shows it, or one that reaches
//! it within `causal_read_timeout_ms` (`MASTER_GTID_WAIT`); otherwise it reads the primary.
//!
//! A statement about the last answer (`SHOW WARNINGS`, `FOUND_ROWS()`, …) after a relayed read
//! goes where that answer came from. A session that made a temporary table or locked tables
//! reads the primaries from then on (a replica has neither).

use std::collections::HashMap;
use std::time::Duration;

use mysql_common::constants::{Command, StatusFlags};
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::debug;

use super::Session;
use crate::config::Reads;
use crate::exec::conns::Held;
use crate::exec::topology::gtid;
use crate::proxy::Proxy;

/// What a session reading from replicas keeps.
pub(super) struct ReplicaReads {
    /// The backends whose reads go to replicas for this session, with what it knows of its
    /// writes there.
    backends: HashMap<String, Causal>,
    /// The last statement ran on the default backend's replica connection.
    last_on_replica: bool,
    /// A temporary table or LOCK TABLES: the replicas cannot answer as the primary would.
    pinned: bool,
}

struct Causal {
    timeout: Duration,
    /// A statement ran on the primary since `gtid` was read there.
    dirty: bool,
    /// The session's last write on the backend's primary (`@@last_gtid`; empty for none).
    gtid: String,
}

impl ReplicaReads {
    /// The state for `user`'s session when its reads of some backends go to their replicas.
    pub(super) fn for_session(
        proxy: &Proxy,
        live: &crate::live::Live,
        user: &[u8],
    ) -> Option<Self> {
        let own = live.user(user).and_then(|u| u.reads);
        let backends: HashMap<String, Causal> = proxy
            .pools
            .iter()
            .filter(|(_, p)| p.topology().is_some())
            .filter_map(|(name, _)| {
                let cfg = &live.config.backends.get(name)?.value;
                (own.unwrap_or(cfg.reads) == Reads::Replica).then(|| {
                    let causal = Causal {
                        timeout: Duration::from_millis(cfg.causal_read_timeout_ms),
                        dirty: true,
                        gtid: String::new(),
                    };
                    (name.clone(), causal)
                })
            })
            .collect();
        (!backends.is_empty()).then_some(ReplicaReads {
            backends,
            last_on_replica: false,
            pinned: false,
        })
    }

    /// A statement ran on the primaries: the next replica reads ask for the session's last
    /// writes again.
    fn wrote(&mut self) {
        for c in self.backends.values_mut() {
            c.dirty = true;
        }
        self.last_on_replica = false;
    }
}

/// Schemas that describe the server they are read on.
fn is_server_schema(db: &[u8]) -> bool {
    ["information_schema", "performance_schema", "mysql", "sys"]
        .iter()
        .any(|s| db.eq_ignore_ascii_case(s.as_bytes()))
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Where `packet` (a command for the default backend) runs when the session reads from
    /// replicas: the index of its replica connection, or `None` for the primary.
    pub(super) async fn replica_for(&mut self, packet: &[u8]) -> Option<usize> {
        let query = packet.first() == Some(&(Command::COM_QUERY as u8));
        let text = query || packet.first() == Some(&(Command::COM_STMT_PREPARE as u8));
        let stmt = packet.get(1..).unwrap_or_default();
        let default = self.proxy.default_pool.name.clone();
        let r = self.reads.as_mut()?;
        if query && r.last_on_replica && crate::sql::reads_last_answer(stmt) {
            return self.leases.replica_position(&default);
        }
        let eligible = query && self.reads_on_replicas(stmt);
        let r = self.reads.as_mut()?;
        if !eligible || !r.backends.contains_key(&default) {
            r.wrote();
            if text && crate::sql::pins_to_primary(stmt) {
                r.pinned = true;
            }
            return None;
        }
        let i = self.replica_connection(&default).await;
        let r = self.reads.as_mut()?;
        r.last_on_replica = i.is_some();
        i
    }

    /// Whether the session may read `stmt` (the client's statement) from replicas now: it
    /// is one a replica answers as the primary would, and the session is outside a
    /// transaction, has autocommit on and nothing only the primary has.
    pub(super) fn reads_on_replicas(&self, stmt: &[u8]) -> bool {
        let Some(r) = self.reads.as_ref() else {
            return false;
        };
        let status = StatusFlags::from_bits_retain(self.status);
        !r.pinned
            && status.contains(StatusFlags::SERVER_STATUS_AUTOCOMMIT)
            && !self.in_transaction()
            && !self.leases.any_joined()
            && !self.db.as_deref().is_some_and(is_server_schema)
            && crate::sql::replica_safe(stmt)
    }

    /// The index of the session's connection for a read of `backend` in a statement that may
    /// read replicas (`replica`): its replica connection when the backend's reads go there and
    /// one serves, else its primary connection.
    pub(super) async fn read_index(
        &mut self,
        backend: &str,
        replica: bool,
    ) -> Result<usize, crate::wire::errors::SqlError> {
        let on = replica
            && self
                .reads
                .as_ref()
                .is_some_and(|r| r.backends.contains_key(backend));
        if on {
            if let Some(i) = self.replica_connection(backend).await {
                return Ok(i);
            }
        }
        self.lease_index(backend).await
    }

    /// A statement ran on the primary outside `forward_with` (one idgate ran itself): the next
    /// replica read asks for the session's last write again.
    pub(super) fn note_primary_statement(&mut self, stmt: &[u8]) {
        if let Some(r) = self.reads.as_mut() {
            r.wrote();
            if crate::sql::pins_to_primary(stmt) {
                r.pinned = true;
            }
        }
    }

    /// The session's replica connection, on a replica that has applied its last write; `None`
    /// to read from the primary.
    async fn replica_connection(&mut self, backend: &str) -> Option<usize> {
        let topology = self.proxy.pools.get(backend)?.topology()?.clone();
        let gtid = self.last_write_gtid(backend).await?;
        let held = self.leases.replica_position(backend);
        let held_node = held.and_then(|i| self.leases.held_mut()[i].lease.node().map(String::from));
        let (node, applied) = topology.replica_for(&gtid, held_node.as_deref())?;
        let i = match held {
            Some(i) if held_node.as_deref() == Some(node.as_str()) => i,
            _ => {
                if let Some(old) = held {
                    drop(self.leases.take(old));
                }
                self.take_replica(backend, &node).await?
            }
        };
        if !applied {
            let reached = self.wait_for_gtid(i, backend, &gtid).await;
            let c = &topology.counts;
            let counter = if reached {
                &c.causal_waits
            } else {
                &c.causal_fallbacks
            };
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if !reached {
                return None;
            }
        }
        topology.count_read(&node);
        Some(i)
    }

    /// The session's last write on the primary, read there when a statement ran since;
    /// `None` when it cannot be known (read from the primary then).
    async fn last_write_gtid(&mut self, backend: &str) -> Option<String> {
        let c = self.reads.as_ref()?.backends.get(backend)?;
        if !c.dirty {
            return Some(c.gtid.clone());
        }
        let gtid = match self.leases.position(backend) {
            // No connection to the primary: the session wrote nothing there.
            None => String::new(),
            Some(i) => {
                let rows = self
                    .leases
                    .get_mut(i)
                    .query_rows("SELECT @@last_gtid")
                    .await
                    .ok()?;
                let v = rows.into_iter().next()?.into_iter().next()??;
                String::from_utf8(v).ok()?
            }
        };
        if !gtid.is_empty() && !gtid::is_gtid(&gtid) {
            return None;
        }
        let c = self.reads.as_mut()?.backends.get_mut(backend)?;
        c.dirty = false;
        // `@@last_gtid` only moves forward on one connection; a new connection (the old one
        // was lost) starts empty, and the write the old one made must still be waited for.
        if !gtid.is_empty() {
            c.gtid = gtid;
        }
        Some(c.gtid.clone())
    }

    /// Takes a connection to replica `node` for the session's reads, brought to the session's
    /// database, collation and SETs.
    async fn take_replica(&mut self, backend: &str, node: &str) -> Option<usize> {
        let pool = self.live.pool_for(
            &self.proxy.pools,
            backend,
            &self.hello.user,
            self.hello.backend_login.as_deref(),
        )?;
        let flags = crate::exec::backend::LoginFlags::of_client(
            self.hello.capabilities,
            self.hello.mariadb,
        );
        let mut lease = match pool.on_node(node).acquire(flags).await {
            Ok(l) => l,
            Err(e) => {
                debug!(node, error = %e.message, "no replica connection; reading the primary");
                return None;
            }
        };
        self.setup().prepare(&mut lease).await.ok()?;
        for stmt in &self.replay {
            if let Err(e) = lease.query_drop_bytes(stmt).await {
                debug!(node, error = %e, "a SET did not replay on the replica; reading the primary");
                return None;
            }
        }
        Some(self.leases.push(Held::replica(backend.to_string(), lease)))
    }

    /// Waits on replica connection `i` until it has applied `gtid`, at most the causal read
    /// timeout; false when it did not (the connection is dropped if it did not answer).
    async fn wait_for_gtid(&mut self, i: usize, backend: &str, gtid: &str) -> bool {
        let timeout = self.reads.as_ref().and_then(|r| r.backends.get(backend));
        let Some(timeout) = timeout.map(|c| c.timeout) else {
            return false;
        };
        let sql = format!(
            "SELECT MASTER_GTID_WAIT('{gtid}', {}.{:03})",
            timeout.as_secs(),
            timeout.subsec_millis()
        );
        let lease = self.leases.get_mut(i);
        let answer =
            tokio::time::timeout(timeout + Duration::from_secs(2), lease.query_rows(&sql)).await;
        match answer {
            Ok(Ok(rows)) => rows
                .first()
                .and_then(|r| r.first())
                .is_some_and(|v| v.as_deref() == Some(b"0")),
            _ => {
                lease.broken = true;
                self.leases.drop_broken();
                false
            }
        }
    }

    /// A reset or a new user: the replica connection goes, and the reads follow the (new)
    /// user's setting.
    pub(super) fn forget_replica_reads(&mut self) {
        self.leases.retain(|h| !h.replica);
        self.reads = ReplicaReads::for_session(&self.proxy, &self.live, &self.hello.user);
    }
}
