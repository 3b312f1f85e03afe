//! `IDGATE SWITCHOVER backend TO 'host:port'`: a planned change of the group's primary without
//! a lost write. The group's writes are held in idgate; running statements and transactions
//! get a bound to finish; the old primary is made read-only and locked, and idgate's
//! connections to it end; once the target has applied the old primary's last write it is
//! made the writable node, the other nodes (the old primary among them) replicate from it,
//! and the held statements go on there. Until the target is writable every step is undone on
//! a failure, so a refused switchover leaves the group as it was.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use tracing::{info, warn};

use super::poll::connect_node;
use super::roles::{Role, Seen, Writer};
use super::Topology;
use crate::config::Backend;

/// Longest any one statement of the switchover may take on a node.
const STEP: Duration = Duration::from_secs(5);
/// How often the drain looks at the old primary's running statements.
const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// What a switchover did.
#[derive(Debug)]
pub struct Switched {
    pub from: String,
    pub to: String,
    /// How long the group's statements were held.
    pub held: Duration,
    /// Nodes that could not be pointed at the new primary, and why.
    pub not_following: Vec<String>,
}

impl Topology {
    /// Makes `target` the group's primary (see the module's comment); `cfg` is the backend's
    /// configuration now.
    pub async fn switchover(
        self: &Arc<Self>,
        cfg: &Backend,
        target: &str,
    ) -> Result<Switched, String> {
        let t = self.nodes.iter().position(|n| n == target).ok_or_else(|| {
            format!(
                "`{target}` is not a node of backend `{}` (its nodes: {})",
                self.backend,
                self.nodes.join(", ")
            )
        })?;
        let p = self.check_target(t)?;
        let (from, to) = (self.nodes[p].clone(), self.nodes[t].clone());
        let mut old = connect_node(&from, cfg, STEP).await?;
        let mut new = connect_node(&to, cfg, STEP).await?;
        let binlog: Option<(i64, i64)> =
            step(&mut new, "SELECT @@log_bin, @@log_slave_updates").await?;
        if binlog != Some((1, 1)) {
            return Err(format!(
                "`{to}` must run with log_bin and log_slave_updates on, so that the other nodes \
                 can replicate from it"
            ));
        }
        let semi_sync = step::<(String,)>(
            &mut old,
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE \
             VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_ENABLED'",
        )
        .await?
        .is_some_and(|(v,)| v.eq_ignore_ascii_case("ON"));
        let Some(hold) = self.gate.hold() else {
            return Err(format!(
                "a change of backend `{}`'s primary is under way already",
                self.backend
            ));
        };
        let since = Instant::now();
        info!(backend = %self.backend, from = %from, to = %to, "switchover: writes are held");
        let deadline = since + Duration::from_millis(cfg.switchover_timeout_ms);
        // Everything up to the promotion is undone if it fails.
        let drain_until = deadline.min(since + Duration::from_millis(cfg.switchover_drain_ms));
        let caught_up = self.demote_and_catch_up(&mut old, &mut new, &from, drain_until, deadline);
        if let Err(e) = caught_up.await {
            let undo = undo_demotion(&mut old).await;
            drop(hold);
            warn!(backend = %self.backend, error = %e, "switchover undone");
            return Err(match undo {
                Ok(()) => format!("{e}; nothing changed: `{from}` is still the primary"),
                Err(u) => format!("{e}; undoing it failed too ({u}): check `{from}`'s read_only"),
            });
        }
        if let Err(e) = promote(&mut new, semi_sync).await {
            // Point the target back at the old primary and let that one write again.
            let back = follow(&mut new, &from, cfg, false, false).await;
            let undo = undo_demotion(&mut old).await;
            drop(hold);
            return Err(format!(
                "`{to}` could not be made the primary ({e}); {}",
                match (back, undo) {
                    (Ok(()), Ok(())) => format!("undone: `{from}` is still the primary"),
                    (b, u) => format!(
                        "undoing it failed ({}): check both nodes' read_only and replication",
                        [b.err(), u.err()]
                            .into_iter()
                            .flatten()
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                },
            ));
        }
        self.counts
            .switchovers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The other replicas first: with semi-sync the new primary's commits wait for one.
        let mut not_following = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if i == p || i == t {
                continue;
            }
            let r = match connect_node(node, cfg, STEP).await {
                Ok(mut c) => follow(&mut c, &to, cfg, false, false).await,
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                not_following.push(format!("{node}: {e}"));
            }
        }

        // Held statements go on once this instance routes to the new primary.
        self.await_writer(
            t,
            Duration::from_millis(self.interval.as_millis() as u64 * 4 + 2000),
        )
        .await;
        let held = since.elapsed();
        drop(hold);
        info!(backend = %self.backend, from = %from, to = %to, held_ms = held.as_millis() as u64,
            "switchover: writes go to the new primary");
        // Other instances move at their next poll; until then their writes to the old primary
        // wait on its lock. Those are ended before it is lifted, so none is applied there.
        tokio::time::sleep(self.interval * 2).await;
        // A node whose clients could not all be ended is left read-only and not repointed
        // (its lock goes with this connection); the answer names it.
        let repointed = match end_clients(&mut old).await {
            Ok(_) => match step_drop(&mut old, "UNLOCK TABLES").await {
                Ok(()) => follow(&mut old, &to, cfg, true, semi_sync).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = repointed {
            not_following.push(format!("{from}: {e}"));
        }
        for n in &not_following {
            warn!(backend = %self.backend, node = %n, "switchover: a node does not replicate from the new primary");
        }
        self.repoll.notify_one();
        Ok(Switched {
            from,
            to,
            held,
            not_following,
        })
    }

    /// The primary's index, when node `t` may become the primary: it is a serving replica of
    /// the current primary.
    fn check_target(&self, t: usize) -> Result<usize, String> {
        let now = self.snapshot();
        let p = match now.writer {
            Writer::Node(p) => p,
            _ => {
                return Err(format!(
                    "backend `{}` has no single writable node now: {}",
                    self.backend,
                    self.writer().err().map(|e| e.message).unwrap_or_default()
                ))
            }
        };
        let target = &self.nodes[t];
        if p == t {
            return Err(format!("`{target}` is the primary already"));
        }
        let replicates = match now.seen.as_ref().and_then(|s| s.get(t)) {
            Some(Seen::Answered(a)) => match &a.replication {
                Ok(Some(r)) => same_node(&r.source, &self.nodes[p]),
                _ => false,
            },
            _ => false,
        };
        if !replicates {
            return Err(format!(
                "`{target}` does not replicate from the primary `{}`",
                self.nodes[p]
            ));
        }
        if now.roles.get(t) != Some(&Role::Replica) {
            let why = now
                .roles
                .get(t)
                .map(|r| r.why().to_string())
                .unwrap_or_default();
            return Err(format!("`{target}` is not a serving replica now: {why}"));
        }
        Ok(p)
    }

    /// Lets the old primary's running statements and open transactions finish (until
    /// `drain_until`), makes it read-only and locked, ends the sessions' connections to it,
    /// and waits (until `deadline`) for the new primary to apply its last write.
    async fn demote_and_catch_up(
        &self,
        old: &mut Conn,
        new: &mut Conn,
        from: &str,
        drain_until: Instant,
        deadline: Instant,
    ) -> Result<(), String> {
        loop {
            let ids = self.leased_on(from);
            if ids.is_empty() || busy(old, &ids).await? == 0 {
                break;
            }
            if Instant::now() >= drain_until {
                break; // the rest are ended below; their clients are told
            }
            tokio::time::sleep(DRAIN_EVERY).await;
        }
        let lock_wait = deadline
            .saturating_duration_since(Instant::now())
            .as_secs()
            .max(1);
        step_drop(old, "SET GLOBAL read_only = 1").await?;
        // read_only does not stop accounts with READ_ONLY ADMIN: the lock stops every writer.
        step_drop(old, &format!("SET SESSION lock_wait_timeout = {lock_wait}")).await?;
        step_drop(old, "FLUSH TABLES WITH READ LOCK").await?;
        for id in self.leased_on(from) {
            self.mark_fenced(from, id);
        }
        // Every client's connection goes, not only this instance's sessions': other idgate
        // instances, their sequence stores and direct clients would otherwise write there once
        // the lock is gone, after the position the new primary was brought to.
        let ids = end_clients(old)
            .await
            .map_err(|e| format!("cannot end the clients' connections to `{from}`: {e}"))?;
        // A killed thread may still be committing: its write must be in the position read next.
        while !ids.is_empty() && alive(old, &ids).await? > 0 {
            if Instant::now() >= deadline {
                return Err(format!(
                    "the clients' connections to `{from}` did not end in time"
                ));
            }
            tokio::time::sleep(DRAIN_EVERY).await;
        }
        let pos: Option<(String,)> = step(old, "SELECT @@gtid_binlog_pos").await?;
        let pos = pos.map(|(p,)| p).unwrap_or_default();
        if !pos
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'-' || b == b',')
        {
            return Err(format!("`{from}` shows no usable GTID position ({pos:?})"));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = format!(
            "SELECT MASTER_GTID_WAIT('{pos}', {}.{:03})",
            left.as_secs(),
            left.subsec_millis()
        );
        let reached = tokio::time::timeout(left + STEP, new.query_first::<i64, _>(wait)).await;
        match reached {
            Ok(Ok(Some(0))) => Ok(()),
            Ok(Err(e)) => Err(format!("waiting for the target to catch up: {e}")),
            _ => Err(format!(
                "the target did not apply the primary's last write ({pos}) within \
                 switchover_timeout_ms"
            )),
        }
    }

    /// Waits (at most `bound`) until this instance's last poll shows node `i` as the writer.
    async fn await_writer(&self, i: usize, bound: Duration) {
        let until = Instant::now() + bound;
        while Instant::now() < until {
            self.repoll.notify_one();
            if self.snapshot().writer == Writer::Node(i) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        warn!(backend = %self.backend, "switchover: the new primary was not seen writable in time");
    }
}

/// The old primary takes writes again.
async fn undo_demotion(old: &mut Conn) -> Result<(), String> {
    step_drop(old, "UNLOCK TABLES").await?;
    step_drop(old, "SET GLOBAL read_only = 0").await
}

/// The target stops replicating and takes writes (waiting for semi-sync replicas' answers when
/// the old primary did).
async fn promote(new: &mut Conn, semi_sync: bool) -> Result<(), String> {
    step_drop(new, "STOP SLAVE").await?;
    step_drop(new, "RESET SLAVE ALL").await?;
    if semi_sync {
        step_drop(new, "SET GLOBAL rpl_semi_sync_slave_enabled = 0").await?;
        step_drop(new, "SET GLOBAL rpl_semi_sync_master_enabled = 1").await?;
    }
    step_drop(new, "SET GLOBAL read_only = 0").await
}

/// Node `c` replicates from `source` (`host:port`), read-only, from where its own binary log
/// and applied position leave it; `was_primary`: it was the group's primary, and the group
/// waited for semi-sync replicas when `semi_sync`.
async fn follow(
    c: &mut Conn,
    source: &str,
    cfg: &Backend,
    was_primary: bool,
    semi_sync: bool,
) -> Result<(), String> {
    let (host, port) = source.rsplit_once(':').unwrap_or((source, "3306"));
    let port: u16 = port
        .parse()
        .map_err(|_| format!("bad port in `{source}`"))?;
    let user = cfg.replication_user.as_deref().unwrap_or(&cfg.user);
    let password = match &cfg.replication_user {
        Some(_) => cfg.replication_password.as_deref().unwrap_or(""),
        None => &cfg.password,
    };
    step_drop(c, "SET GLOBAL read_only = 1").await?;
    step_drop(c, "STOP SLAVE").await?;
    if was_primary && semi_sync {
        step_drop(c, "SET GLOBAL rpl_semi_sync_master_enabled = 0").await?;
        step_drop(c, "SET GLOBAL rpl_semi_sync_slave_enabled = 1").await?;
    }
    // A node that was a primary has its writes in its binary log only: they are its applied
    // position from now on.
    if was_primary {
        step_drop(c, "SET GLOBAL gtid_slave_pos = @@gtid_binlog_pos").await?;
    }
    step_drop(
        c,
        &format!(
            "CHANGE MASTER TO MASTER_HOST = {}, MASTER_PORT = {port}, MASTER_USER = {}, \
             MASTER_PASSWORD = {}, MASTER_USE_GTID = slave_pos",
            quoted(host),
            quoted(user),
            quoted(password)
        ),
    )
    .await?;
    step_drop(c, "START SLAVE").await
}

/// The client threads of a node other than the asking one: replication's (the replicas' dump
/// threads, which must still send the last writes) and the server's own are kept.
const CLIENT_THREADS: &str = "SELECT ID FROM information_schema.PROCESSLIST WHERE \
     ID <> CONNECTION_ID() AND USER <> 'system user' AND \
     COMMAND NOT IN ('Binlog Dump', 'Daemon', 'Killed')";

/// Ends every client connection of the node `c` is on but its own (`CLIENT_THREADS`); their
/// ids.
async fn end_clients(c: &mut Conn) -> Result<Vec<u32>, String> {
    let ids: Vec<u32> = bounded(c.query(CLIENT_THREADS)).await?;
    for &id in &ids {
        match bounded(c.query_drop(format!("KILL CONNECTION {id}"))).await {
            Ok(()) => {}
            // Gone already.
            Err(e) if e.contains("1094") || e.contains("Unknown thread") => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ids)
}

/// How many of threads `ids` run a statement or hold an open transaction.
async fn busy(c: &mut Conn, ids: &[u32]) -> Result<u64, String> {
    let list = id_list(ids);
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ({list}) AND \
         (COMMAND NOT IN ('Sleep', 'Killed') OR ID IN \
         (SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX))"
    );
    Ok(step::<(u64,)>(c, &sql).await?.map_or(0, |(n,)| n))
}

/// How many of threads `ids` still exist.
async fn alive(c: &mut Conn, ids: &[u32]) -> Result<u64, String> {
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ({})",
        id_list(ids)
    );
    Ok(step::<(u64,)>(c, &sql).await?.map_or(0, |(n,)| n))
}

fn id_list(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// `s` as a MariaDB string literal.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// Whether `a` and `b` (`host:port`) name the same node, `localhost` and `127.0.0.1` alike.
fn same_node(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.replace("localhost:", "127.0.0.1:");
    norm(a) == norm(b)
}

async fn bounded<T>(
    f: impl std::future::Future<Output = Result<T, mysql_async::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(STEP, f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no answer within {} ms", STEP.as_millis())),
    }
}

async fn step_drop(c: &mut Conn, sql: &str) -> Result<(), String> {
    bounded(c.query_drop(sql)).await.map_err(|e| {
        let shown = if sql.contains("MASTER_PASSWORD") {
            "CHANGE MASTER"
        } else {
            sql
        };
        format!("{shown}: {e}")
    })
}

async fn step<T: mysql_async::prelude::FromRow + Send + 'static>(
    c: &mut Conn,
    sql: &str,
) -> Result<Option<T>, String> {
    bounded(c.query_first(sql))
        .await
        .map_err(|e| format!("{sql}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_addresses() {
        assert_eq!(quoted(r"a'b\c"), r"'a''b\\c'");
        assert!(same_node("localhost:3306", "127.0.0.1:3306"));
        assert!(!same_node("127.0.0.1:3306", "127.0.0.1:3307"));
    }
}
