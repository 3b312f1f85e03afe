//! Relaying a command to a backend connection as it came, the answer back to the client (LOAD
//! DATA LOCAL's file carried across), and what becomes of the session when a backend fails
//! mid-command.
//!
//! A backend that did not answer within its `query_timeout_ms`: the client gets ERROR 2013
//! naming the backend and the setting, the connection is closed (never reused) and its thread on
//! the backend is killed so the statement stops and its locks go. Outside a transaction the
//! session goes on with fresh connections (the session's database and collation are restored;
//! its prepared statements, session variables and temporary tables are gone); inside one the
//! session ends, since the transaction cannot be finished any more (closing rolls back the
//! other participants).

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::warn;

use super::local_infile::{self, CarryError};
use super::observe::Observed;
use super::prepared::Statement;
use super::{End, Session};
use crate::admin::kill;
use crate::exec::client_watch;
use crate::exec::conns::Held;
use crate::exec::relay::{self, Adjust, Client, Relayed, Reply};
use crate::exec::{BackendError, StatementScope};
use crate::wire::command;
use crate::wire::errors::{self, SqlError};
use crate::wire::framing::FrameError;
use crate::wire::packets;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Sends `packet` to the backend as it is and relays the answer. `Ok(false)`: the client
    /// got an error.
    pub(super) async fn forward(
        &mut self,
        packet: &[u8],
        reply: Reply,
        scope: StatementScope,
        obs: &mut Observed,
    ) -> Result<bool, End> {
        self.forward_with(packet, reply, None, Adjust::default(), scope, obs)
            .await
    }

    /// Relays `packet` to the default backend, optionally with a statement id patched in
    /// (bytes 1..5), and the answer to the client adjusted as `adj` says.
    pub(super) async fn forward_with(
        &mut self,
        packet: &[u8],
        reply: Reply,
        backend_stmt_id: Option<u32>,
        adj: Adjust,
        scope: StatementScope,
        obs: &mut Observed,
    ) -> Result<bool, End> {
        if self.reads.is_some() {
            if let Some(i) = self.replica_for(packet).await {
                return self
                    .relay_on(i, packet, reply, backend_stmt_id, adj, scope, obs)
                    .await;
            }
        }
        // The connection is almost always held already; only taking one needs the pool's name.
        let held = self.leases.default_position();
        let i = match held {
            Some(i) => i,
            None => {
                let proxy = self.proxy.clone();
                match self.lease_index(&proxy.default_pool.name).await {
                    Ok(i) => i,
                    Err(e) => {
                        self.writer.send_error(&e);
                        return Ok(false);
                    }
                }
            }
        };
        self.relay_on(i, packet, reply, backend_stmt_id, adj, scope, obs)
            .await
    }

    /// Sends `packet` on held connection `i` and relays the answer (a statement of `scope`,
    /// whose rows `obs` notes). `Ok(false)`: the answer was an error.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn relay_on(
        &mut self,
        i: usize,
        packet: &[u8],
        reply: Reply,
        backend_stmt_id: Option<u32>,
        adj: Adjust,
        scope: StatementScope,
        obs: &mut Observed,
    ) -> Result<bool, End> {
        if self.proxy.xa.is_some() && !self.leases.held_mut()[i].replica {
            // Every connection a transaction touches joins it, the default backend's too.
            self.join_transaction(i, scope).await?;
        }
        let client_stmt_id = adj.client_stmt_id;
        let sync = match self.lid_sync {
            Some(_) if self.leases.held_mut()[i].default => self.lid_sync.take(),
            _ => None,
        };
        let be = self.leases.get_mut(i);
        if let Some(id) = sync {
            // Pipelined ahead of the client's command: no extra round trip.
            let set =
                command::query_packet(format!("SET @@SESSION.last_insert_id = {id}").as_bytes());
            be.write_command(&set);
        }
        write_command(be, packet, backend_stmt_id);
        if let Err(e) = be.flush().await {
            return Err(self.backend_lost(e));
        }
        if sync.is_some() {
            match be.read().await {
                Ok(()) if be.packet.first() == Some(&packets::OK_HEADER) => {}
                Ok(()) => warn!("could not carry LAST_INSERT_ID() over to the default backend"),
                Err(e) => return Err(self.backend_lost(e)),
            }
            be.next_response();
        }
        let relayed = self.relay_answer(i, packet, reply, adj).await?;
        self.keep_relayed(relayed, packet, client_stmt_id, obs)
    }

    /// Relays the answer to `packet`, just sent on held connection `i`, while watching the
    /// client; a LOCAL INFILE file the backend asks for is carried (or declined) on the way.
    pub(super) async fn relay_answer(
        &mut self,
        i: usize,
        packet: &[u8],
        reply: Reply,
        adj: Adjust,
    ) -> Result<Result<Relayed, BackendError>, End> {
        let adj = Adjust {
            local_infile: true,
            cursor_requested: Adjust::asks_for_cursor(packet),
            ..adj
        };
        let mut client = Client {
            writer: &mut self.writer,
            deprecate_eof: self.hello.deprecate_eof(),
        };
        let be = self.leases.get_mut(i);
        // Pinned where it is made: the watch then moves a pointer, not the relay's state.
        let relayed = {
            let relaying = std::pin::pin!(relay::relay(be, &mut client, reply, adj));
            client_watch::unless_client_leaves(&mut self.reader, relaying).await
        };
        let Some(relayed) = relayed else {
            return Err(self.client_left_mid_statement(i));
        };
        match relayed {
            Ok(r) if r.file_request => self.carry_files(i, packet, reply, adj).await,
            relayed => Ok(relayed),
        }
    }

    /// The backend asked for a LOCAL INFILE file: it is carried from the client when the
    /// client may be asked (declined with MariaDB's refusal otherwise), and the rest of the
    /// answer relayed, as often as the answer asks.
    async fn carry_files(
        &mut self,
        i: usize,
        packet: &[u8],
        reply: Reply,
        adj: Adjust,
    ) -> Result<Result<Relayed, BackendError>, End> {
        let prepared_load_local = packet.get(1..5).is_some_and(|id| {
            let id = u32::from_le_bytes([id[0], id[1], id[2], id[3]]);
            self.stmts.get(id).is_some_and(|st| st.load_local)
        });
        let local_files = self.hello.local_files();
        let may_ask = local_infile::may_ask_for_file(local_files, packet, prepared_load_local);
        let be = self.leases.get_mut(i);
        let mut client = Client {
            writer: &mut self.writer,
            deprecate_eof: self.hello.deprecate_eof(),
        };
        loop {
            let carried = if may_ask {
                let mut buf = Vec::new();
                let t = std::time::Duration::from_secs(self.live.config.net_read_timeout);
                local_infile::carry_file(&mut self.reader, client.writer, be, &mut buf, t).await
            } else {
                be.decline_file().await.map_err(CarryError::Backend)
            };
            let relayed = match carried {
                Ok(()) if !may_ask => {
                    // The backend loaded an empty file: its answer (0 rows) would tell the
                    // client its load succeeded. The client gets MariaDB's own refusal instead.
                    return match local_infile::drain_declined(be, reply, adj).await {
                        Ok(status) => {
                            self.status = status;
                            self.writer
                                .send_error(&crate::route::local_infile_disabled());
                            Ok(Ok(Relayed {
                                status,
                                error: true,
                                ..Relayed::default()
                            }))
                        }
                        Err(e) => Err(self.backend_lost(e)),
                    };
                }
                Ok(()) => relay::relay(be, &mut client, reply, adj).await,
                Err(CarryError::Backend(e)) => Err(e),
                Err(CarryError::Client(FrameError::TooLarge { limit, .. })) => {
                    // As MySQL does: report it and close; the backend connection, left
                    // mid-file, is closed with the session.
                    self.writer.send_error(&errors::packet_too_large(limit));
                    return Err(End::Fatal("file packet too large".into()));
                }
                Err(CarryError::Client(_)) => return Err(End::ClientGone),
            };
            match relayed {
                Ok(r) if r.file_request => continue,
                relayed => return Ok(relayed),
            }
        }
    }

    /// What the session keeps of a relayed answer: its status, its rows for `obs`, and a
    /// statement it prepared (as `client_stmt_id`). `Ok(false)`: the answer was an error.
    pub(super) fn keep_relayed(
        &mut self,
        relayed: Result<Relayed, BackendError>,
        packet: &[u8],
        client_stmt_id: Option<u32>,
        obs: &mut Observed,
    ) -> Result<bool, End> {
        let r = match relayed {
            Ok(r) => r,
            Err(BackendError::ClientGone(_)) => return Err(End::ClientGone),
            Err(e) => return Err(self.backend_lost(e)),
        };
        if r.status != 0 || r.ok.is_some() {
            self.status = r.status;
        }
        if let (None, Some(ok)) = (self.carried_lid, &r.ok) {
            // The LAST_INSERT_ID() a lost connection took along is known again once one is
            // generated here.
            if ok.last_insert_id != 0 {
                self.carried_lid = Some(ok.last_insert_id);
            }
        }
        obs.relayed(&r);
        if let (Some((backend_id, _, _)), Some(id)) = (r.prepared, client_stmt_id) {
            self.stmts.insert(
                id,
                Statement {
                    backend_id,
                    kind: crate::sql::classify(packet.get(1..).unwrap_or_default()),
                    emulated: None,
                    long_data: Default::default(),
                    load_local: crate::sql::is_load_local(packet.get(1..).unwrap_or_default()),
                    relayed_text: Some(packet.get(1..).unwrap_or_default().into()),
                    generation: self.proxy.tables_generation(),
                },
            );
        }
        Ok(!r.error)
    }

    /// The backend connection failed mid-command: its session state is gone, so tell the client
    /// and end the session (as a direct connection would end).
    pub(super) fn backend_lost(&mut self, e: BackendError) -> End {
        if self.registered.killed() {
            // KILL CONNECTION from another session killed the backend thread under the
            // statement: the client connection closes without an answer, as MariaDB closes a
            // killed connection (its client reports 2013). An error packet of idgate's own
            // would carry a client-side code, which libmariadb reads as a malformed packet.
            // Its other connections may hold part of an answer: closed, not given back.
            for h in self.leases.held_mut() {
                h.lease.broken = true;
            }
            self.leases.clear();
            return End::Killed;
        }
        if let BackendError::QueryTimeout { backend, ms } = &e {
            return self.backend_timed_out(&backend.clone(), *ms);
        }
        warn!(error = %e, "backend connection lost");
        self.leases.clear();
        let name = self.proxy.default_pool.name.clone();
        self.writer.send_error(&SqlError::new(
            errors::CR_SERVER_LOST,
            b"HY000",
            format!("Lost connection to backend `{name}` during query ({e}); reconnect and retry"),
        ));
        End::Fatal(e.to_string())
    }

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
        let abandoned: Vec<_> = self
            .leases
            .held_mut()
            .iter()
            .filter(|h| h.lease.broken)
            .map(Held::thread)
            .collect();
        for t in abandoned {
            kill::kill_in_background(self.proxy.clone(), t);
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
        let thread = held.thread();
        warn!(
            backend = thread.backend,
            connection_id = thread.id,
            "client left mid-statement; stopping it on the backend"
        );
        kill::kill_in_background(self.proxy.clone(), thread);
        End::ClientGone
    }
}

/// Writes `packet` as a new command on `be`, with the backend's statement id patched in.
pub(super) fn write_command(
    be: &mut crate::exec::Lease,
    packet: &[u8],
    backend_stmt_id: Option<u32>,
) {
    let start = be.begin_command();
    let buf = be.command_buf();
    buf.extend_from_slice(packet);
    if let Some(id) = backend_stmt_id {
        let at = start + 4 + 1;
        buf[at..at + 4].copy_from_slice(&id.to_le_bytes());
    }
    be.end_command(start);
}
