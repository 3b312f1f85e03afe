//! Dispatch of each client command: relayed to the session's backend connection as it came (with
//! statement ids translated), or answered by idgate where it owns the state.

use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite};
use tracing::warn;

use super::forward::write_command;
use super::long_data::too_long;
use super::observe::Observed;
use super::{End, Session};
use crate::exec::backend::CurrentDb;
use crate::exec::relay::{Adjust, Client, Relayed, Reply};
use crate::exec::relay_direct::{self, Direct};
use crate::exec::{BackendError, StatementScope};
use crate::wire::command::{self, Command, StmtCommand};
use crate::wire::errors::{self, SqlError};
use crate::wire::handshake;
use mysql_common::constants::Command as Com;

/// A COM_STMT_EXECUTE relayed as prepared (`plainly_relayed_execute`).
pub(super) struct PlainExecute {
    /// The held connection to the default backend.
    lease: usize,
    backend_id: u32,
    kind: crate::sql::StatementKind,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Handles one command. `Some` ends the session.
    /// `started`: when the command arrived, what its statement's latency is measured from.
    pub(super) async fn dispatch(&mut self, packet: &[u8], started: Instant) -> Option<End> {
        let cmd = command::decode(packet);
        let scope = StatementScope::of_command(&cmd);
        // What commands that are not measured report on the way goes nowhere.
        let unmeasured = &mut Observed::default();
        match cmd {
            Command::Empty => {
                self.writer.send_error(&errors::malformed("empty command"));
                None
            }
            Command::Quit => Some(End::Quit),
            Command::Ping => {
                self.writer.send_ok(
                    0,
                    0,
                    mysql_common::constants::StatusFlags::from_bits_retain(self.status),
                );
                None
            }
            Command::Query(_) => self.observed_query(packet, scope, started).await,
            Command::InitDb(db) => {
                let ok = match self.forward(packet, Reply::Single, scope, unmeasured).await {
                    Ok(ok) => ok,
                    Err(end) => return Some(end),
                };
                if ok {
                    self.db = Some(db.to_vec()).filter(|d| !d.is_empty());
                    self.db_listed = false;
                    self.follow_db().await;
                }
                None
            }
            Command::FieldList => self
                .forward(packet, Reply::Fields, scope, unmeasured)
                .await
                .err(),
            Command::Statistics => self
                .forward(packet, Reply::Single, scope, unmeasured)
                .await
                .err(),
            Command::SetOption(option) => {
                let ok = match self.forward(packet, Reply::Eof, scope, unmeasured).await {
                    Ok(ok) => ok,
                    Err(end) => return Some(end),
                };
                if ok {
                    // 0: MYSQL_OPTION_MULTI_STATEMENTS_ON, 1: OFF.
                    self.multi_statements = option == Some(0);
                    return self.mirror_multi_statements().await;
                }
                None
            }
            Command::ResetConnection => self.reset_connection(scope, unmeasured).await,
            Command::ChangeUser => self.change_user(packet).await,
            Command::Prepare(_) => self.prepare(packet, scope, unmeasured).await,
            Command::Stmt {
                kind: StmtCommand::Execute,
                id,
            } => self.observed_execute(packet, id, scope, started).await,
            Command::Stmt { kind, id } => {
                let end = self.on_statement(packet, kind, id, scope, unmeasured).await;
                if let (StmtCommand::Close, Some(id)) = (kind, id) {
                    self.stmts.remove(id);
                }
                end
            }
            Command::Unknown(other) => {
                self.writer.send_error(&errors::unknown_command(other));
                None
            }
        }
    }

    /// A COM_STMT_EXECUTE the backend runs as it was prepared, with nothing for idgate to do
    /// first: `Some` with where and what it runs. The checks are those `on_statement`
    /// and `relay_on` would pass without acting (no long data to account for, no switch to wait
    /// for, no new placement, no transaction to join, no LAST_INSERT_ID() to carry over); a
    /// prepared `LOAD … LOCAL` and an execute opening a cursor also keep to the general path,
    /// where files and cursors are handled.
    pub(super) fn plainly_relayed_execute(&mut self, packet: &[u8]) -> Option<PlainExecute> {
        if packet.first() != Some(&(Com::COM_STMT_EXECUTE as u8)) {
            return None;
        }
        let id = packet.get(1..5)?;
        let st = self
            .stmts
            .relayable(u32::from_le_bytes([id[0], id[1], id[2], id[3]]))?;
        let plain = st.generation == self.proxy.tables_generation()
            && !Adjust::asks_for_cursor(packet)
            && self.lid_sync.is_none()
            && self.proxy.xa.is_none()
            && !self.proxy.migrations.holds.active();
        if !plain {
            return None;
        }
        let lease = self.leases.default_position()?;
        Some(PlainExecute {
            lease,
            backend_id: st.backend_id,
            kind: st.kind,
        })
    }

    /// Sends such an execute (`plainly_relayed_execute`) and relays its answer if it arrives
    /// whole (`relay_direct`): the general path's relay without its dispatch layers, since
    /// relayed prepared statements are what most applications send most. The session's loop
    /// awaits it directly, and `relay_execute` then settles what came of it.
    pub(super) fn send_execute<'a>(
        &'a mut self,
        plain: &PlainExecute,
        packet: &[u8],
    ) -> impl std::future::Future<Output = Direct> + 'a {
        let be = self.leases.get_mut(plain.lease);
        write_command(be, packet, Some(plain.backend_id));
        let client = Client {
            writer: &mut self.writer,
            deprecate_eof: self.hello.deprecate_eof(),
        };
        relay_direct::send_and_relay(be, &mut self.reader, client)
    }

    /// Settles an execute sent by `send_execute` on the general path (the session's loop
    /// settles one relayed whole with `executed`): the general path's relay finishes an answer
    /// that did not arrive whole; a failure ends as it would there.
    pub(super) async fn relay_execute(
        &mut self,
        plain: &PlainExecute,
        direct: Direct,
        packet: &[u8],
        started: Instant,
    ) -> Option<End> {
        let i = plain.lease;
        let relayed = match direct {
            Direct::Relayed(r) => Ok(Ok(r)),
            Direct::Failed(e) => Ok(Err(e)),
            Direct::ClientLeft => Err(self.client_left_mid_statement(i)),
            Direct::Undone => {
                let adj = Adjust {
                    whole_tried: true,
                    ..Adjust::default()
                };
                self.relay_answer(i, packet, Reply::Results, adj).await
            }
        };
        self.executed(plain, relayed, packet, started)
    }

    /// Keeps what an execute sent by `send_execute` came to and measures it. Not async: an
    /// answer relayed whole (the usual case) is settled without making one more future.
    pub(super) fn executed(
        &mut self,
        plain: &PlainExecute,
        relayed: Result<Result<Relayed, BackendError>, End>,
        packet: &[u8],
        started: Instant,
    ) -> Option<End> {
        let mut obs = Observed::execute();
        let end = match relayed {
            Ok(relayed) => self.keep_relayed(relayed, packet, None, &mut obs).err(),
            Err(end) => Some(end),
        };
        self.relayed_execute_measured(plain.kind, &obs, started);
        end
    }

    /// At EXECUTE: `Some` when the statement's long data went past the cap. The error is sent
    /// and the backend's half-received data is discarded (COM_STMT_RESET), as MariaDB forgets
    /// it after the failed execution.
    pub(super) async fn refuse_overflowed_long_data(
        &mut self,
        client_id: u32,
        backend_id: u32,
        emulated: bool,
    ) -> Option<Option<End>> {
        let st = self.stmts.get_mut(client_id)?;
        if !st.long_data.overflowed {
            st.long_data.clear();
            return None;
        }
        st.long_data.clear();
        if !emulated {
            if let Some(i) = self.leases.default_position() {
                let mut reset = vec![mysql_common::constants::Command::COM_STMT_RESET as u8];
                reset.extend_from_slice(&backend_id.to_le_bytes());
                let be = self.leases.get_mut(i);
                if let Err(e) = be.simple_command(&reset).await {
                    return Some(Some(self.backend_lost(e)));
                }
            }
        } else {
            self.stmts.clear_long_data(client_id);
        }
        let limit = self.live.config.max_packet_size;
        self.writer.send_error(&too_long(limit));
        Some(None)
    }

    async fn prepare(
        &mut self,
        packet: &[u8],
        scope: StatementScope,
        obs: &mut Observed,
    ) -> Option<End> {
        // The statements about connections prepare on the backend, as they did before idgate
        // answered them in the text protocol.
        let about_connections = |a: &crate::sql::AdminStatement| {
            matches!(
                a,
                crate::sql::AdminStatement::ConnectionId { .. }
                    | crate::sql::AdminStatement::ProcessList { .. }
                    | crate::sql::AdminStatement::ProcessListQuery { .. }
                    | crate::sql::AdminStatement::PseudoThreadId
            )
        };
        if crate::sql::admin_statement(&packet[1..]).is_some_and(|a| !about_connections(&a)) {
            self.writer
                .send_error(&crate::admin::statements::not_preparable());
            return None;
        }
        if let Err(e) = self
            .stmts
            .refuse_past(self.live.config.max_prepared_stmt_count)
        {
            self.writer.send_error(&e);
            return None;
        }
        if self.proxy.sessions_move
            && crate::sql::classify(&packet[1..]) == crate::sql::StatementKind::Set
        {
            // A prepared SET is not among the SETs replayed: what it sets stays here.
            self.pinned.get_or_insert("SET");
        }
        if self.proxy.sessions_move {
            self.note_connection_state(&packet[1..]);
        }
        // Refused whatever its parameters: said now, not as the default backend's 1146.
        if let Some(e) =
            self.with_plan_context(|ctx| crate::route::refused_when_prepared(&packet[1..], ctx))
        {
            self.writer.send_error(&e);
            return None;
        }
        let id = self.stmts.next_id();
        let adj = Adjust {
            client_stmt_id: Some(id),
            ..Adjust::default()
        };
        // The backend prepares it as the client wrote it, so the client sees the genuine
        // parameter and column definitions; INSERTs into configured tables then run through idgate.
        match self
            .forward_with(packet, Reply::Prepare, None, adj, scope, obs)
            .await
        {
            Ok(true) => {
                self.mark_emulated(id, &packet[1..]);
                if self.stmts.get(id).is_some_and(|s| s.emulated.is_some()) {
                    self.stmts.drop_relayed_text(id);
                }
            }
            Ok(false) => {}
            Err(end) => return Some(end),
        }
        None
    }

    /// COM_STMT_EXECUTE/FETCH/RESET/SEND_LONG_DATA/CLOSE: translate the id, then relay.
    pub(super) async fn on_statement(
        &mut self,
        packet: &[u8],
        kind: StmtCommand,
        id: Option<u32>,
        scope: StatementScope,
        obs: &mut Observed,
    ) -> Option<End> {
        let st = id.and_then(|id| {
            self.stmts
                .get(id)
                .map(|st| (id, st.backend_id, st.emulated.is_some(), st.generation))
        });
        let Some((client_id, backend_id, mut emulated, generation)) = st else {
            if kind.answered() {
                self.writer
                    .send_error(&errors::unknown_statement(id.unwrap_or(0), kind.name()));
            }
            return None; // SEND_LONG_DATA and CLOSE have no answer, even for unknown ids
        };
        match kind {
            StmtCommand::SendLongData
                if !self.stmts.long_data_fits(
                    client_id,
                    packet,
                    self.live.config.max_packet_size,
                ) =>
            {
                return None;
            }
            StmtCommand::Execute => {
                if let Some(end) = self
                    .refuse_overflowed_long_data(client_id, backend_id, emulated)
                    .await
                {
                    return end;
                }
                if self.proxy.migrations.holds.active() {
                    let sql = self
                        .stmts
                        .get(client_id)
                        .and_then(|s| s.text().map(<[u8]>::to_vec));
                    if !self.wait_for_switch(&sql.unwrap_or_default()).await {
                        return None;
                    }
                }
                if !emulated && generation != self.proxy.tables_generation() {
                    emulated = self.follow_new_placements(client_id);
                }
            }
            StmtCommand::Reset => {
                if let Some(st) = self.stmts.get_mut(client_id) {
                    st.long_data.clear();
                }
            }
            _ => {}
        }
        if emulated {
            match kind {
                StmtCommand::Execute => {
                    return self
                        .cursor(scope, obs)
                        .execute_emulated(client_id, packet)
                        .await;
                }
                StmtCommand::SendLongData => {
                    self.stmts.store_long_data(client_id, packet);
                    return None;
                }
                StmtCommand::Reset => self.stmts.clear_long_data(client_id),
                _ => {}
            }
        }
        let reply = match kind {
            StmtCommand::Execute => Reply::Results,
            StmtCommand::Fetch => Reply::Rows,
            StmtCommand::Reset => Reply::Single,
            StmtCommand::SendLongData | StmtCommand::Close => {
                let i = self.leases.default_position()?;
                let be = self.leases.get_mut(i);
                write_command(be, packet, Some(backend_id));
                return match be.flush().await {
                    Ok(()) => None,
                    Err(e) => Some(self.backend_lost(e)),
                };
            }
        };
        self.forward_with(
            packet,
            reply,
            Some(backend_id),
            Adjust::default(),
            scope,
            obs,
        )
        .await
        .err()
    }

    /// The default backend took the client's COM_SET_OPTION; the session's other connections
    /// follow, so no backend runs more statements per packet than the client may send.
    async fn mirror_multi_statements(&mut self) -> Option<End> {
        let on = self.multi_statements;
        let mut failed = None;
        for h in self.leases.held_mut() {
            if h.default {
                h.lease.multi_statements = Some(on);
            } else if let Err(e) = h.lease.set_multi_statements(on).await {
                // A connection that may not follow must not be used again.
                h.lease.broken = true;
                failed = Some(e);
            }
        }
        if let Some(e) = failed {
            warn!(error = %e, "a shard connection could not follow COM_SET_OPTION; dropped");
            self.leases.drop_broken();
        }
        None
    }

    async fn reset_connection(&mut self, scope: StatementScope, obs: &mut Observed) -> Option<End> {
        self.stmts.clear();
        self.forget_session_state();
        if self.leases.is_empty() {
            self.writer.send_ok(
                0,
                0,
                mysql_common::constants::StatusFlags::from_bits_retain(self.status),
            );
            return None;
        }
        // Connections other than the default one are reset quietly; the default answers.
        if let Some(end) = self.reset_other_leases().await {
            return Some(end);
        }
        match self
            .forward(
                &[Com::COM_RESET_CONNECTION as u8],
                Reply::Single,
                scope,
                obs,
            )
            .await
        {
            Ok(true) => self.after_backend_reset().await,
            Ok(false) => None,
            Err(end) => Some(end),
        }
    }

    /// The default backend switched database: note it on its connection and move the session's
    /// other connections along.
    pub(super) async fn follow_db(&mut self) {
        let mut all = std::mem::take(&mut self.leases);
        for h in all.held_mut() {
            if h.default {
                h.lease.database = match &self.db {
                    Some(d) => CurrentDb::Named(d.clone()),
                    None => CurrentDb::Unknown,
                };
            } else if let Err(e) = self.setup().prepare(&mut h.lease).await {
                warn!(backend = %h.backend, error = %e, "could not follow the session's database");
                h.lease.broken = true;
            }
        }
        self.leases = all;
    }

    /// What idgate tracks of the session's own state, gone with a reset or a new user.
    fn forget_session_state(&mut self) {
        // A reset or a new user rolls back the transaction (the backends roll back their part).
        self.txn = Default::default();
        self.leases.forget_txn();
        self.replay.clear();
        self.pinned = None;
        self.last_insert_id = None;
        self.lid_sync = None;
        self.carried_lid = Some(0);
        self.no_auto_value_on_zero = None;
        self.idle.reset();
        self.forget_replica_reads();
    }

    /// Resets and re-prepares every held connection except the default backend's.
    async fn reset_other_leases(&mut self) -> Option<End> {
        let mut all = std::mem::take(&mut self.leases);
        let mut failed = None;
        for h in all.held_mut().iter_mut().filter(|h| !h.default) {
            h.leave_txn();
            if let Err(e) = self.setup().reset(&mut h.lease).await {
                failed = Some(e);
                break;
            }
        }
        self.leases = all;
        let e = failed?;
        self.writer.send_error(&e);
        Some(End::Fatal(e.message))
    }

    /// COM_RESET_CONNECTION put the default backend back to its login collation; restore the
    /// client's (the database is kept by the reset).
    async fn after_backend_reset(&mut self) -> Option<End> {
        let i = self.leases.default_position()?;
        let mut held = self.leases.take(i);
        held.lease.collation = crate::exec::backend::POOL_COLLATION;
        held.leave_txn();
        // The reset keeps the database, as on MySQL; only the collation needs restoring.
        let r = self.setup().set_collation(&mut held.lease).await;
        self.leases.push(held);
        match r {
            Ok(()) => None,
            Err(e) => {
                // The OK was already queued; the session cannot be trusted any more.
                self.writer.send_error(&e);
                Some(End::Fatal(e.message))
            }
        }
    }

    async fn change_user(&mut self, packet: &[u8]) -> Option<End> {
        if self.failed_change_user >= MAX_FAILED_CHANGE_USER {
            // As MariaDB: a connection that failed three times may not try again (its session
            // is reset all the same, as MariaDB resets it before it looks).
            self.writer.send_error(&SqlError::new(
                errors::ER_UNKNOWN_COM_ERROR,
                b"08S01",
                "Unknown command",
            ));
            return self.change_user_refused().await;
        }
        if let Err(e) = self.proxy.auth_throttle.check(&self.peer_host) {
            self.writer.send_error(&e);
            return None;
        }
        // A new login: checked against the configuration as it is now, which the session keeps.
        let live = self.proxy.live();
        // The client may be asked to answer again (auth switch): bounded by net_read_timeout.
        let changed = tokio::time::timeout(
            std::time::Duration::from_secs(live.config.net_read_timeout),
            handshake::change_user(
                &mut self.reader,
                &mut self.writer,
                &self.hello,
                packet,
                &live.users,
                &self.peer_host,
            ),
        )
        .await;
        let changed = match changed {
            Ok(Ok(Some(c))) => c,
            Ok(Ok(None)) => return self.change_user_refused().await,
            Ok(Err(_)) | Err(_) => return Some(End::ClientGone),
        };
        // Nothing of the session changes until the new login is judged whole: the backend's
        // verdict on an account read from it (lock, expiry, its limits) and on the database,
        // then idgate's own limits. A refusal leaves the connection as the user it was.
        let probe = match self.judge_new_login(&live, &changed).await {
            Ok(probe) => probe,
            Err(e) => {
                self.writer.send_error(&e);
                // A connection the refusal broke goes; the session takes another when it needs one.
                self.leases.drop_broken();
                return self.change_user_refused().await;
            }
        };
        if let Err(e) = self.slot.switch_user(&changed.user) {
            self.writer.send_error(&e);
            return self.change_user_refused().await;
        }
        self.proxy.auth_throttle.succeeded(&self.peer_host);
        self.registered.set_user(&changed.user);
        self.live = live;
        self.hello.user = changed.user;
        self.hello.backend_login = changed.backend_login;
        if let Some(c) = changed.collation {
            self.hello.collation = c;
        }
        self.db = changed.db;
        self.db_listed = false;
        self.stmts.clear();
        self.forget_session_state();
        // A new user starts with a clean session, as after COM_CHANGE_USER on MySQL.
        let judged_on_default = matches!(probe, Judged::OnDefault);
        let mut all = std::mem::take(&mut self.leases);
        // Connections logged in as another account than the new user's go back to their pool
        // (reset there); the new user takes its own when it needs them.
        let (proxy, live, user, login) = (
            self.proxy.clone(),
            self.live.clone(),
            self.hello.user.clone(),
            self.hello.backend_login.clone(),
        );
        all.retain(|h| {
            live.pool_for(&proxy.pools, &h.backend, &user, login.as_deref())
                .is_some_and(|p| std::sync::Arc::ptr_eq(&p, h.lease.pool()))
        });
        let mut failed = None;
        for h in all.held_mut() {
            h.leave_txn();
            if h.default && judged_on_default {
                continue; // logged in again as the new user already
            }
            // The new user gets exactly the database it asked for (a USE may have moved it).
            h.lease.database = CurrentDb::Unknown;
            if let Err(e) = self.setup().log_in_again(&mut h.lease).await {
                failed = Some(e);
                break;
            }
        }
        self.leases = all;
        if let Some(e) = failed {
            self.writer.send_error(&e);
            return Some(End::Fatal(e.message));
        }
        // The connection the login was judged on serves the session (unless it keeps one).
        if let Judged::OnItsOwn(lease) = probe {
            if self.leases.default_position().is_none() {
                let name = self.proxy.default_pool.name.clone();
                self.leases
                    .push(crate::exec::conns::Held::new(name, *lease, true));
            }
        }
        self.status = mysql_common::constants::StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits();
        self.writer.send_ok(
            0,
            0,
            mysql_common::constants::StatusFlags::from_bits_retain(self.status),
        );
        None
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The backend's verdict on the login `changed` (an account read from it logs in there) and on
    /// the database it asked for, taken before the session gives up its own state: on the
    /// session's connection to the default backend when that is of the new user's account already
    /// (it logs in again there, as MariaDB judges a COM_CHANGE_USER on its connection), else on a
    /// connection of the new user's own, set up as its session will be.
    async fn judge_new_login(
        &mut self,
        live: &crate::live::Live,
        changed: &handshake::ChangedUser,
    ) -> Result<Judged, SqlError> {
        if changed.db.is_none() && changed.backend_login.is_none() {
            return Ok(Judged::Nothing);
        }
        let backend = self.proxy.default_pool.name.clone();
        let Some(pool) = live.pool_for(
            &self.proxy.pools,
            &backend,
            &changed.user,
            changed.backend_login.as_deref(),
        ) else {
            return Err(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate: no backend named `{backend}`"),
            ));
        };
        let own = self.setup();
        let (ignore_space, multi_statements) = (own.ignore_space, own.multi_statements);
        let setup = crate::exec::backend_setup::SessionSetup {
            db: changed.db.as_deref(),
            collation: changed.collation.unwrap_or(self.hello.collation),
            ignore_space,
            multi_statements,
        };
        let held = self
            .leases
            .default_position()
            .filter(|&i| std::sync::Arc::ptr_eq(self.leases.get_mut(i).pool(), &pool));
        if let Some(i) = held {
            let h = &mut self.leases.held_mut()[i];
            // MariaDB resets the session before it judges the new login.
            h.leave_txn();
            h.lease.database = CurrentDb::Unknown;
            setup.log_in_again(&mut h.lease).await?;
            return Ok(Judged::OnDefault);
        }
        // The held connection, of another account, goes back first (the new user does not keep
        // it either way), so a pool at its cap still serves the new login. Refused, the session
        // takes one of its own account again when it needs one.
        if let Some(i) = self.leases.default_position() {
            drop(self.leases.take(i));
        }
        let mut lease = pool
            .acquire(crate::exec::backend::LoginFlags::of_client(
                self.hello.capabilities,
                self.hello.mariadb,
            ))
            .await?;
        setup.prepare(&mut lease).await?;
        Ok(Judged::OnItsOwn(Box::new(lease)))
    }
}

/// Where the backend judged a COM_CHANGE_USER's new login.
enum Judged {
    /// Nothing for the backend to judge (idgate's own user, no database named).
    Nothing,
    /// On the session's connection to the default backend, now logged in as the new user.
    OnDefault,
    /// On a connection of the new user's own, which the session takes if it keeps none.
    OnItsOwn(Box<crate::exec::Lease>),
}

/// Refused COM_CHANGE_USERs after which MariaDB answers further ones with ER_UNKNOWN_COM_ERROR.
const MAX_FAILED_CHANGE_USER: u8 = 3;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The client was refused (its error is sent): as MariaDB, the connection stays open as the
    /// user it was, in the database it had, with the session reset (MariaDB resets it before it
    /// checks the new login). The refusal counts against the host's login throttle.
    async fn change_user_refused(&mut self) -> Option<End> {
        self.failed_change_user = self.failed_change_user.saturating_add(1);
        self.proxy.auth_throttle.failed(&self.peer_host);
        self.stmts.clear();
        self.forget_session_state();
        let mut all = std::mem::take(&mut self.leases);
        let mut failed = None;
        for h in all.held_mut() {
            h.leave_txn();
            if let Err(e) = self.setup().reset(&mut h.lease).await {
                failed = Some(e);
                break;
            }
        }
        self.leases = all;
        self.status = mysql_common::constants::StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits();
        failed.map(|e| End::Fatal(e.message))
    }
}
