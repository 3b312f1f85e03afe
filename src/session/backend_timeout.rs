//! A backend that did not answer within its `query_timeout_ms`: the client gets ERROR 2013
//! naming the backend and the setting, the connection is closed (never reused) and its thread on
//! the backend is killed so the statement stops and its locks go. Outside a transaction the
//! session goes on with fresh connections (the session's database and collation are restored;
//! its prepared statements, session variables and temporary tables are gone); inside one the session ends, since the transaction
//! cannot be finished any more (closing rolls back the other participants).

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::warn;

use super::{End, Session};
use crate::admin::kill;
use crate::wire::errors::{self, SqlError};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    pub(super) fn backend_timed_out(&mut self, backend: &str, ms: u64) -> End {
        let in_txn = self.in_transaction()
            || self.status & StatusFlags::SERVER_STATUS_IN_TRANS.bits() != 0
            || self.leases.held_mut().iter().any(|h| h.in_txn);
        warn!(
            backend,
            query_timeout_ms = ms,
            in_txn,
            "backend did not answer in time"
        );
        let abandoned: Vec<(String, u32)> = self
            .leases
            .held_mut()
            .iter()
            .filter(|h| h.lease.broken)
            .map(|h| (h.backend.clone(), h.lease.connection_id))
            .collect();
        for (b, id) in abandoned {
            kill::kill_in_background(self.proxy.clone(), b, id);
        }
        // Other connections of the same statement may still hold part of their answers: they
        // are closed too, and the session starts afresh on every backend.
        for h in self.leases.held_mut() {
            h.lease.broken = true;
        }
        self.leases.clear();
        self.replay.clear();
        self.pending_sets.clear();
        let then = if in_txn {
            "; the transaction was rolled back and the connection is closed, reconnect"
        } else {
            "; the statement was abandoned (raise query_timeout_ms for longer statements)"
        };
        self.writer.send_error(&SqlError::new(
            errors::CR_SERVER_LOST,
            b"HY000",
            format!(
                "Lost connection to backend `{backend}` during query: no answer within its query_timeout_ms ({ms} ms){then}"
            ),
        ));
        if in_txn {
            return End::Fatal(format!("backend `{backend}` timed out in a transaction"));
        }
        // The backends' prepared statements went with the connections.
        self.stmts.clear();
        End::BackendTimeout
    }

    /// The client closed its connection while connection `i` was answering its statement: the
    /// statement is stopped on the backend as MariaDB stops a vanished client's, and the
    /// connection (left mid-answer) is closed.
    pub(super) fn client_left_mid_statement(&mut self, i: usize) -> End {
        let held = &mut self.leases.held_mut()[i];
        held.lease.broken = true;
        let (backend, id) = (held.backend.clone(), held.lease.connection_id);
        warn!(
            backend,
            connection_id = id,
            "client left mid-statement; stopping it on the backend"
        );
        kill::kill_in_background(self.proxy.clone(), backend, id);
        End::ClientGone
    }
}
