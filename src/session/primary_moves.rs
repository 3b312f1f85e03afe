//! A session on a backend whose primary changes (`IDGATE SWITCHOVER`, or a promotion idgate
//! saw): before each command outside a transaction it waits while the group's writes are held,
//! then leaves a connection that no longer writes to the primary for a new one there, brought
//! to the session's database, collation and SETs. A session whose connection holds state those
//! do not carry (`sql::binds_connection`, prepared statements) is told its state is gone and
//! ends, rather than going on without it. In a transaction nothing moves: the transaction
//! ends on the old primary, or fails there.

use tokio::io::{AsyncRead, AsyncWrite};
use tracing::info;

use super::{End, Session};
use crate::wire::errors::SqlError;
use mysql_common::constants::Command as Com;

/// MariaDB's ER_CONNECTION_KILLED.
const ER_CONNECTION_KILLED: u16 = 1927;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Notes, before it runs, that `sql` may leave state only its connection keeps.
    pub(super) fn note_connection_state(&mut self, sql: &[u8]) {
        if self.pinned.is_none() {
            self.pinned = crate::sql::pin_reason(sql);
        }
    }

    /// Whether the session's state on its connections is all in its database, collation and
    /// the SETs it replays.
    pub(super) fn movable(&self) -> bool {
        self.pinned.is_none() && self.stmts.len() == 0
    }

    /// Before command `cmd` (its first byte): waits for held writes and moves the session to
    /// the current primaries. `Ok(false)`: the client got an error and the command is not run.
    pub(super) async fn follow_primaries(&mut self, cmd: u8) -> Result<bool, End> {
        // Commands without an answer cannot be told to wait; QUIT and PING reach no backend.
        let silent = [
            Com::COM_QUIT as u8,
            Com::COM_PING as u8,
            Com::COM_STMT_CLOSE as u8,
            Com::COM_STMT_SEND_LONG_DATA as u8,
        ];
        if silent.contains(&cmd) {
            return Ok(true);
        }
        if self.in_transaction() {
            return self.transaction_kept();
        }
        let mut i = 0;
        while i < self.leases.held_mut().len() {
            let h = &self.leases.held_mut()[i];
            let (Some(node), Some(t)) = (h.lease.node(), h.lease.pool().topology()) else {
                i += 1;
                continue;
            };
            if h.replica {
                i += 1;
                continue;
            }
            let (t, node, id, backend) = (
                t.clone(),
                node.to_string(),
                h.lease.connection_id,
                h.backend.clone(),
            );
            if t.gate.holding() {
                if let Err(e) = t.gate.wait(t.hold_bound, &backend).await {
                    self.writer.send_error(&e);
                    return Ok(false);
                }
            }
            if !t.is_stale(&node, id) {
                i += 1;
                continue;
            }
            let mut old = self.leases.take(i);
            old.lease.broken = true; // it is closed, not given back
            drop(old);
            if !self.movable() {
                self.writer.send_error(&SqlError::new(
                    ER_CONNECTION_KILLED,
                    b"70100",
                    format!(
                        "Connection was killed: backend `{backend}`'s primary changed, and this \
                         session's temporary tables, user variables, locks or prepared \
                         statements stayed on {node}; reconnect"
                    ),
                ));
                return Err(End::Fatal(format!("backend `{backend}` changed primary")));
            }
            match self.take_lease(&backend, true).await {
                Ok(_) => {
                    info!(backend = %backend, from = %node, "session moved to the new primary")
                }
                Err(e) => {
                    self.writer.send_error(&e);
                    return Ok(false);
                }
            }
            // Indices changed: look again from the start (each connection moves once).
            i = 0;
        }
        Ok(true)
    }

    /// In a transaction: a connection of it that no longer writes to the primary ends the
    /// session with a clear error (the transaction is gone with that connection) instead of
    /// a lost-connection error in mid-statement.
    fn transaction_kept(&mut self) -> Result<bool, End> {
        let stale = self.leases.held_mut().iter().find_map(|h| {
            let (node, t) = (h.lease.node()?, h.lease.pool().topology()?);
            (!h.replica && t.is_stale(node, h.lease.connection_id))
                .then(|| (h.backend.clone(), node.to_string()))
        });
        let Some((backend, node)) = stale else {
            return Ok(true);
        };
        self.writer.send_error(&SqlError::new(
            ER_CONNECTION_KILLED,
            b"70100",
            format!(
                "Connection was killed: backend `{backend}`'s primary changed during this \
                 session's transaction, which was rolled back on {node}; reconnect and run the \
                 transaction again"
            ),
        ));
        Err(End::Fatal(format!(
            "backend `{backend}` changed primary in a transaction"
        )))
    }
}
