//! Making a held connection part of the client's transaction on first touch: `XA START` (or the
//! client's READ ONLY start) with XA, `START TRANSACTION` without, followed by the savepoints set
//! so far, pipelined; and the branches of an autocommit write over several backends with XA.

use std::sync::Arc;

use super::{SessionConns, StatementScope};
use crate::exec::collect::{collect, Collected};
use crate::exec::BackendError;
use crate::sql;
use crate::wire::command::query_packet;
use crate::wire::packets;
use crate::xa::{xid_sql, Coordinator};

/// What joining needs to know of the client's transaction, from the session.
#[derive(Clone, Copy)]
pub struct TxnView<'a> {
    /// The client has a transaction open (BEGIN, or autocommit off).
    pub open: bool,
    /// The coordinator, when transactions commit with XA.
    pub xa: Option<&'a Coordinator>,
    /// The default backend: without XA its connection gets the client's own BEGIN.
    pub default: &'a str,
}

/// What joining did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joined {
    /// Nothing to start: no transaction, not to join, or already a participant.
    Unchanged,
    /// Started with `START TRANSACTION` (the client's BEGIN went to the default backend).
    Plain,
    /// Started as a participant of a transaction idgate answered BEGIN for (XA mode): answers
    /// idgate composes must say in-transaction from now on, as MariaDB's would.
    Coordinated,
}

#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The backend refused the start (or a savepoint): its transaction state is not what idgate
    /// needs, the connection is marked broken and the session must end rather than run the
    /// statement outside the client's transaction.
    #[error("idgate: cannot start the transaction on backend `{backend}`: {message}")]
    Refused {
        backend: String,
        code: u16,
        state: [u8; 5],
        message: String,
    },
}

impl SessionConns {
    /// In a client transaction, makes held connection `i` part of it for a statement of
    /// `scope`. Without XA the default backend's connection is left alone (it got the client's
    /// own BEGIN); with XA every connection joins, and `scope` says whether it does at all and
    /// whether it becomes a writer.
    pub async fn join(
        &mut self,
        i: usize,
        scope: StatementScope,
        txn: TxnView<'_>,
    ) -> Result<Joined, JoinError> {
        if let Some(coord) = txn.xa {
            return self.join_xa(i, scope, txn.open, coord).await;
        }
        if !txn.open {
            return Ok(Joined::Unchanged);
        }
        let held = &mut self.held[i];
        if held.in_txn || held.backend == txn.default {
            return Ok(Joined::Unchanged);
        }
        held.in_txn = true;
        self.start_participant(i, b"START TRANSACTION").await?;
        Ok(Joined::Plain)
    }

    /// XA mode: a participant on first touch (`XA START`, or the client's READ ONLY start),
    /// with the savepoints set so far.
    async fn join_xa(
        &mut self,
        i: usize,
        scope: StatementScope,
        open: bool,
        coord: &Coordinator,
    ) -> Result<Joined, JoinError> {
        if self.held[i].in_txn {
            self.held[i].wrote |= scope.writes;
            return Ok(Joined::Unchanged);
        }
        if !scope.join || !open {
            return Ok(Joined::Unchanged);
        }
        let (start, gtrid) = match &self.txn.plain_start {
            Some(s) => (s.clone(), None),
            None => {
                let g = self
                    .txn
                    .gtrid
                    .get_or_insert_with(|| coord.xids.next_gtrid().into())
                    .clone();
                let sql = format!("XA START {}", xid_sql(&g, self.held[i].backend.as_bytes()));
                (sql.into_bytes(), Some(g))
            }
        };
        self.start_participant(i, &start).await?;
        let held = &mut self.held[i];
        held.in_txn = true;
        held.xa = gtrid;
        held.wrote = scope.writes;
        Ok(Joined::Coordinated)
    }

    /// Autocommit write over the held connections `idx` with XA: one branch per connection, in
    /// a transaction of its own; returns the `XA START` for each (`None` everywhere without a
    /// coordinator).
    pub fn xa_autocommit_branches(
        &mut self,
        idx: &[usize],
        xa: Option<&Coordinator>,
    ) -> Vec<Option<Vec<u8>>> {
        let Some(coord) = xa else {
            return vec![None; idx.len()];
        };
        let g: Arc<[u8]> = coord.xids.next_gtrid().into();
        self.txn.gtrid = Some(g.clone());
        idx.iter()
            .map(|&i| {
                let h = &mut self.held[i];
                h.in_txn = true;
                h.xa = Some(g.clone());
                h.wrote = true;
                Some(format!("XA START {}", xid_sql(&g, h.backend.as_bytes())).into_bytes())
            })
            .collect()
    }

    /// Sends `start` and the transaction's savepoints on connection `i`, pipelined.
    async fn start_participant(&mut self, i: usize, start: &[u8]) -> Result<(), JoinError> {
        let mut cmds = vec![query_packet(start)];
        for sp in &self.txn.savepoints {
            let mut s = b"SAVEPOINT ".to_vec();
            sql::push_name(&mut s, sp);
            cmds.push(query_packet(&s));
        }
        let held = &mut self.held[i];
        let be = &mut held.lease;
        for c in &cmds {
            be.write_command(c);
        }
        be.flush().await?;
        let mut failed = None;
        for _ in &cmds {
            if let Collected::Err(e) = collect(be).await? {
                failed.get_or_insert(e);
            }
            be.next_response();
        }
        let Some(e) = failed else {
            return Ok(());
        };
        be.broken = true;
        let (code, state, msg) = packets::parse_err(&e);
        Err(JoinError::Refused {
            backend: held.backend.clone(),
            code,
            state,
            message: String::from_utf8_lossy(msg).into_owned(),
        })
    }
}
