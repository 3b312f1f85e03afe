//! `pool.mode: transaction`: between transactions a session parks its backend connections
//! (`exec::pool_parking`) and takes them back before its next command. While parked, a session
//! that finds the pool full may take one over; the owner then continues on another connection,
//! brought to its database, collation and SETs, with its LAST_INSERT_ID() carried over. What
//! only the lost connection knew of the last statement (ROW_COUNT(), FOUND_ROWS(), warnings) is
//! refused to the statement that asks, rather than answered from another session's.
//! A session whose state cannot move (`movable`) keeps its connections.

use std::hash::{Hash, Hasher};

use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::exec::conns::Held;
use crate::exec::pool_parking::Ticket;
use crate::exec::{BackendPool, Lease};
use crate::wire::errors::SqlError;

/// A connection the session parked.
pub(super) struct Parked {
    backend: String,
    default: bool,
    ticket: Ticket<Lease>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Between commands: lends the session's connections out when nothing ties it to them.
    pub(super) fn park_connections(&mut self) {
        if !self.proxy.shares_connections
            || self.leases.is_empty()
            || !self.movable()
            || self.in_transaction()
        {
            return;
        }
        let key = self.settings_key();
        // Replicas' connections serve reads only and are not shared: they stay.
        let lent = self
            .leases
            .take_where(|h| !h.replica && !h.in_txn && h.lease.pool().shares_connections());
        for mut h in lent {
            h.lease.settings = key;
            self.parked.push(Parked {
                backend: h.backend,
                default: h.default,
                ticket: BackendPool::park(h.lease),
            });
        }
    }

    /// Before a command: takes back the connections the session parked. One another session
    /// took, or one the server closed meanwhile, is gone: the session takes a new one when it
    /// needs it, and notes what went with the old one.
    pub(super) async fn take_back_parked(&mut self) {
        for p in std::mem::take(&mut self.parked) {
            match p.ticket.reclaim().await {
                Ok(mut lease) => {
                    if !lease.spoke_unasked() {
                        self.leases.push(Held::new(p.backend, lease, p.default));
                        continue;
                    }
                    // Killed or timed out while parked: its LAST_INSERT_ID() is unknown.
                    lease.broken = true;
                    self.answers_lost = true;
                    if p.default {
                        self.carried_lid = None;
                    }
                }
                Err(taken) => {
                    self.answers_lost = true;
                    if p.default {
                        self.carried_lid = Some(taken.last_insert_id);
                    }
                }
            }
        }
    }

    /// A statement that reads what its session's last statement left on a connection another
    /// session took since: refused, with why and what to do.
    pub(super) fn lost_answer_refusal(&self, stmt: &[u8]) -> Option<SqlError> {
        let lid_lost = self.carried_lid.is_none()
            && self.last_insert_id.is_none()
            && crate::sql::mentions(stmt, b"LAST_INSERT_ID");
        let counts_lost = self.answers_lost && crate::sql::reads_last_answer(stmt);
        if !lid_lost && !counts_lost {
            return None;
        }
        Some(SqlError::new(
            crate::sql::ER_NOT_SUPPORTED_YET,
            b"42000",
            "idgate: what the previous statement left on its backend connection (ROW_COUNT(), \
             FOUND_ROWS(), warnings, LAST_INSERT_ID()) went with that connection, which served \
             another session since (backends.*.pool.mode: transaction); read it in the same \
             transaction or the same multi-statement query as the statement, or use \
             pool.mode: session"
                .to_string(),
        ))
    }

    /// Why the session keeps its connections, as `SHOW IDGATE SESSIONS` says.
    pub(super) fn pin_shown(&self) -> Option<&'static str> {
        self.pinned
            .or_else(|| (self.stmts.len() > 0).then_some("prepared statement"))
    }

    /// What a connection of this session has set on it beyond the backend's defaults: another
    /// session with the same key can take it over as it is.
    pub(super) fn settings_key(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let setup = self.setup();
        (
            setup.db,
            setup.collation,
            setup.ignore_space,
            setup.multi_statements,
        )
            .hash(&mut h);
        self.replay.hash(&mut h);
        // Never 0, which marks a connection that has the defaults.
        h.finish() | 1
    }

    /// The LAST_INSERT_ID() a new default connection must be given: the session's, carried
    /// from the one it lost, or 0 over another session's on a connection taken over as it was.
    pub(super) fn lid_for_new_default(&mut self, came: crate::exec::Came) {
        if self.lid_sync.is_some() {
            return;
        }
        let carried = self.carried_lid.unwrap_or(0);
        if carried != 0 || came == crate::exec::Came::AsSet {
            self.lid_sync = Some(carried);
        }
    }
}
