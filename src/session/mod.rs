//! One client connection: its login, its state (database, collation, prepared statements, the
//! backend connection it holds) and the dispatch of each command it sends.
//! It keeps state and dispatches; it must not scan SQL text (that is `sql`'s), decide where
//! a statement goes (that is `route`'s) or drive the backends' part in the client's transaction
//! (joining, savepoints, COMMIT/ROLLBACK: that is `exec::conns`'). What one statement decides
//! (its `StatementScope`) is passed down the paths that run it, not kept in a field: a
//! statement idgate runs itself runs through a `statement::StatementExec`, which holds the
//! session and that scope for the statement's length.

mod admin_statement;
mod commands;
mod emulated;
mod forward;
mod idle;
mod local_infile;
mod login;
mod long_data;
mod observe;
mod prepared;
mod primary_moves;
mod query;
mod replica_reads;
mod sharing;
mod statement;
mod txn;

use std::sync::Arc;

use mysql_common::constants::{Command as Com, StatusFlags};
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::debug;

use crate::exec::conns::Held;
use crate::exec::relay_direct::Direct;
use crate::exec::{Lease, StatementScope};
use crate::proxy::Proxy;
use crate::tls::{NetRead, NetWrite};
use crate::wire::errors::{self, SqlError};
use crate::wire::framing::{FrameError, PacketReader, PacketWriter};
use crate::wire::handshake::{ClientHello, ServerGreeting};

pub struct Session<R, W> {
    reader: PacketReader<R>,
    writer: PacketWriter<W>,
    proxy: Arc<Proxy>,
    /// Migration jobs and reloads, which admin statements act on (above the proxy).
    control: Arc<crate::admin::Control>,
    peer_host: String,
    hello: ClientHello,
    /// Backend connections taken on first use and kept for the session, with their part in
    /// the client's transaction.
    leases: crate::exec::SessionConns,
    /// Every change also clears `db_listed`.
    db: Option<Vec<u8>>,
    /// The session list shows `db` as it is (cleared with each change of `db` and set again
    /// once it is shown, so a command that changed nothing reads neither name).
    db_listed: bool,
    stmts: prepared::Statements,
    /// Status flags of the last answer (autocommit, in transaction, …).
    status: u16,
    /// SET statements that succeeded, replayed on backend connections taken later.
    replay: Vec<Vec<u8>>,
    /// The session may have state on its connections that `replay` does not carry (user
    /// variables, temporary tables, locks…, or SETs past the replay list's bound): what, by
    /// its name in `sql::PIN_REASONS`.
    pinned: Option<&'static str>,
    /// The last id idgate generated, while it is the session's LAST_INSERT_ID().
    last_insert_id: Option<u64>,
    /// Cached: does the session's sql_mode have NO_AUTO_VALUE_ON_ZERO?
    no_auto_value_on_zero: Option<bool>,
    /// An id the default backend's LAST_INSERT_ID() must become before its next statement (the
    /// INSERT that generated it ran on another backend).
    lid_sync: Option<u64>,
    /// A USE ran on the default backend: the other connections follow before the next statement.
    pending_follow_db: bool,
    /// The last statement's row counts are not the default backend's (it ran on shards or was
    /// answered by idgate): FOUND_ROWS()/ROW_COUNT() there would be wrong.
    counts_elsewhere: bool,
    /// SETs that ran on the default backend, to run on the session's other connections too.
    pending_sets: Vec<Vec<u8>>,
    /// Multi-statement queries allowed (CLIENT_MULTI_STATEMENTS, then COM_SET_OPTION).
    multi_statements: bool,
    /// Whether the client opened its transaction with BEGIN (XA mode, where idgate answers it).
    txn: txn::Txn,
    packet: Vec<u8>,
    /// How long the session may sit idle (wait_timeout).
    idle: idle::IdleTimeout,
    /// The session's place under max_connections, given back when the session ends.
    slot: crate::limits::Slot,
    /// The reloadable configuration as it was at login (COM_CHANGE_USER takes a new one).
    live: Arc<crate::live::Live>,
    /// The session's line in `SHOW IDGATE SESSIONS`.
    registered: crate::proxy::sessions::Entry,
    /// COM_CHANGE_USERs refused on this connection; from the third on MariaDB answers no more.
    failed_change_user: u8,
    /// Reads on the default backend's replicas (`reads: replica`), when the session makes them.
    reads: Option<replica_reads::ReplicaReads>,
    /// Connections lent out between transactions (`pool.mode: transaction`).
    parked: Vec<sharing::Parked>,
    /// This command runs on a connection other than the one the last statement ran on:
    /// what that statement left there (ROW_COUNT(), warnings) is not here.
    answers_lost: bool,
    /// The LAST_INSERT_ID() the session's lost default connection had (`None`: unknown, the
    /// server closed it).
    carried_lid: Option<u64>,
}

/// Why a session ended.
#[derive(Debug)]
pub enum End {
    Quit,
    ClientGone,
    LoginRefused,
    /// An error the client was told about and after which the connection cannot go on.
    Fatal(String),
    /// idgate is shutting down and the session was idle.
    Shutdown,
    /// The handshake did not finish within connect_timeout.
    ConnectTimeout,
    /// The session sat idle longer than its wait_timeout.
    IdleTimeout,
    /// A backend did not answer within its query_timeout_ms; the client was told and the
    /// session goes on without that connection.
    BackendTimeout,
    /// Another session's KILL CONNECTION ended it.
    Killed,
}

/// Runs a client connection from the handshake to its end: the task of one client. Between
/// commands it is two layers of state machine above the statement (this and `serve`), since
/// every poll of the task reads each layer's state.
pub async fn run(
    control: Arc<crate::admin::Control>,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    _open: crate::metrics::OpenGuard,
) {
    let (reader, writer) = stream.into_split();
    let end = match start(control, reader, writer, peer.ip().to_string()).await {
        Ok((mut s, span)) => {
            let _enter = span.enter();
            let end = s.serve().await;
            // Its connections go back to their pools within the session's span, as before.
            drop(s);
            end
        }
        Err(end) => end,
    };
    debug!(?end, "session ended");
}

type ClientSession = Session<NetRead, NetWrite>;

/// The handshake, login and the session's setup: the session, with the span its commands run
/// in, or how it ended already.
async fn start(
    control: Arc<crate::admin::Control>,
    reader: tokio::net::tcp::OwnedReadHalf,
    writer: tokio::net::tcp::OwnedWriteHalf,
    peer_host: String,
) -> Result<(ClientSession, tracing::Span), End> {
    let proxy = control.proxy.clone();
    let connection_id = proxy.next_connection_id();
    let live = proxy.live();
    let limit = live.config.max_packet_size as usize;
    // Handshake packets are small; a client cannot make idgate buffer a huge one before login.
    let mut reader = PacketReader::new(NetRead::Plain(reader), 64 * 1024);
    let mut writer = PacketWriter::new(NetWrite::Plain(writer));
    writer.count_errors(proxy.metrics.client_errors.clone());
    // A client that stops reading its answers is given up (net_write_timeout).
    writer.set_timeout(std::time::Duration::from_secs(
        live.config.net_write_timeout,
    ));
    let greeting = ServerGreeting {
        version: &proxy.server_version,
        connection_id,
        collation: crate::exec::backend::POOL_COLLATION,
        tls: proxy.tls.is_some(),
        session_track: proxy.backend_offers.session_track,
        extended_metadata: proxy.backend_offers.extended_metadata,
    };
    let (hello, slot) = match login::login(
        &proxy,
        &live,
        &mut reader,
        &mut writer,
        &greeting,
        &peer_host,
    )
    .await
    {
        Ok(x) => x,
        Err(end) => return Err(end),
    };
    reader.set_limit(limit);
    writer.extended_metadata = hello
        .mariadb
        .contains(mysql_common::constants::MariadbCapabilities::MARIADB_CLIENT_EXTENDED_METADATA);
    let span = tracing::info_span!(
        "session",
        conn = connection_id,
        user = %String::from_utf8_lossy(&hello.user)
    );
    let entered = span.enter();
    debug!(peer = %peer_host, tls = hello.secure, "logged in");
    let interactive = hello
        .capabilities
        .contains(mysql_common::constants::CapabilityFlags::CLIENT_INTERACTIVE);
    let multi_statements = hello
        .capabilities
        .contains(mysql_common::constants::CapabilityFlags::CLIENT_MULTI_STATEMENTS);
    let idle_timeout = idle::IdleTimeout::new(&live.config, interactive);
    let registered = crate::proxy::sessions::Entry::register(
        &proxy,
        connection_id,
        &hello.user,
        &peer_host,
        hello.db.as_deref(),
    );
    let mut leases = crate::exec::SessionConns::default();
    leases.publish_to(registered.published());
    let reads = replica_reads::ReplicaReads::for_session(&proxy, &live, &hello.user);
    let mut s = Session {
        reader,
        writer,
        peer_host,
        db: hello.db.clone(),
        db_listed: true,
        hello,
        proxy,
        control,
        leases,
        stmts: prepared::Statements::default(),
        status: StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits(),
        replay: Vec::new(),
        pinned: None,
        last_insert_id: None,
        no_auto_value_on_zero: None,
        lid_sync: None,
        pending_follow_db: false,
        counts_elsewhere: false,
        pending_sets: Vec::new(),
        multi_statements,
        txn: Default::default(),
        packet: Vec::with_capacity(1024),
        idle: idle_timeout,
        slot,
        live,
        registered,
        failed_change_user: 0,
        reads,
        parked: Vec::new(),
        answers_lost: false,
        carried_lid: Some(0),
    };
    // A database named at login must exist, as on MySQL: check it now. An account read from the
    // backend must also be one the backend lets in from idgate's address: the client hears the
    // backend's refusal at login, not at its first statement.
    if s.db.is_some() || s.hello.backend_login.is_some() {
        if let Err(e) = s.backend().await {
            s.writer.send_error(&e);
            let _ = s.writer.flush().await;
            return Err(End::LoginRefused);
        }
    }
    s.writer
        .send_ok(0, 0, StatusFlags::from_bits_retain(s.status));
    if s.writer.flush().await.is_err() {
        return Err(End::ClientGone);
    }
    if s.hello
        .capabilities
        .contains(mysql_common::constants::CapabilityFlags::CLIENT_COMPRESS)
    {
        // From the first command on, as MariaDB (and its clients) switch after the login's OK.
        crate::tls::stream::compress(s.reader.stream_mut(), s.writer.stream_mut(), limit);
        s.reader.set_compressed();
    }
    drop(entered);
    Ok((s, span))
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    async fn serve(&mut self) -> End {
        // Waiting for KILL and shutdown (one waiter for both) lasts the session's life:
        // registering a waiter per command cost more than the rest of a relayed statement's
        // bookkeeping.
        let mut ended = std::pin::pin!(self.registered.ended());
        if self.proxy.sessions.stopping() {
            return End::Shutdown;
        }
        loop {
            self.reader.seq = 0;
            if self.registered.killed() {
                return End::Killed;
            }
            let mut packet = std::mem::take(&mut self.packet);
            // Only an idle session is interrupted by shutdown; a running command finishes.
            if self.idle.needs_refresh() {
                let default = self.leases.default_position();
                let lease = default.map(|i| self.leases.get_mut(i));
                self.idle.refresh(lease).await;
            }
            self.park_connections();
            // Idle from here, not from the end of the last command: its answer's flush, the
            // read-back above and the login's own checks do not count against wait_timeout.
            self.registered.waiting(self.idle.current());
            let read = {
                // Made once per wait: a wake that does not end the session must not lose what
                // the read took so far.
                let mut reading = std::pin::pin!(self.reader.read(&mut packet));
                loop {
                    tokio::select! {
                        // A command already waiting is read without looking at the others.
                        biased;
                        r = &mut reading => break r,
                        // Shutdown, KILL CONNECTION from another session, or idle past
                        // wait_timeout (`Registry::end_idle`): closed without a word, as MariaDB.
                        () = &mut ended => {
                            if self.proxy.sessions.stopping() {
                                return End::Shutdown;
                            }
                            if self.registered.killed() {
                                return End::Killed;
                            }
                            if self.registered.idle_expired() {
                                return End::IdleTimeout;
                            }
                            // Found idle before its last command: it waits on.
                            ended.set(self.registered.ended());
                        }
                    }
                }
            };
            self.writer.seq = self.reader.seq;
            match read {
                Ok(()) => {}
                Err(FrameError::TooLarge { limit, .. }) => {
                    // As MySQL does: report it, then close, since the client's state is unknown.
                    self.writer.send_error(&errors::packet_too_large(limit));
                    let _ = self.writer.flush().await;
                    return End::Fatal("packet too large".into());
                }
                Err(_) => return End::ClientGone,
            }
            let started = std::time::Instant::now();
            self.registered.busy(packet.first().copied().unwrap_or(0));
            if !self.parked.is_empty() && packet.first() != Some(&(Com::COM_QUIT as u8)) {
                self.take_back_parked().await;
            }
            let followed = match self.proxy.replicated {
                true => {
                    self.follow_primaries(packet.first().copied().unwrap_or(0))
                        .await
                }
                false => Ok(true),
            };
            let end = match followed {
                Err(end) => Some(end),
                Ok(false) => None, // the client was told why
                Ok(true) => match self.plainly_relayed_execute(&packet) {
                    Some(plain) => match self.send_execute(&plain, &packet).await {
                        Direct::Relayed(r) => self.executed(&plain, Ok(Ok(r)), &packet, started),
                        direct => self.relay_execute(&plain, direct, &packet, started).await,
                    },
                    None => self.dispatch(&packet, started).await,
                },
            };
            if !self.leases.is_empty() {
                // A statement ran on a connection: its answers are the ones to read next.
                self.answers_lost = false;
            }
            if self.proxy.shares_connections {
                self.registered.pinned(self.pin_shown());
            }
            let db_changed = !std::mem::replace(&mut self.db_listed, true);
            self.registered
                .idle(self.status, db_changed.then_some(&self.db));
            self.packet = packet;
            if let Some(end) = end {
                let _ = self.writer.flush().await;
                if matches!(end, End::BackendTimeout) {
                    continue;
                }
                return end;
            }
            if self.writer.flush().await.is_err() {
                return End::ClientGone;
            }
        }
    }

    /// The session's status flags, with MORE_RESULTS when more answers follow.
    fn status_with(&self, more_results: bool) -> StatusFlags {
        let mut s = StatusFlags::from_bits_retain(self.status);
        s.set(StatusFlags::SERVER_MORE_RESULTS_EXISTS, more_results);
        s
    }

    /// A query that may need planning because this client cannot send files and the query
    /// might be a `LOAD … LOCAL` (a cheap look, refined by planning).
    pub(super) fn may_refuse_local_load(&self, sql: &[u8]) -> bool {
        // A single statement is one by its leading words; only a multi-statement query needs
        // the look through its text.
        !self.hello.local_files()
            && (crate::sql::is_load_local(sql)
                || (self.multi_statements
                    && sql.contains(&b';')
                    && crate::sql::mentions(sql, b"LOCAL")))
    }

    /// The session's connection to the default backend, taken on first use.
    async fn backend(&mut self) -> Result<&mut Lease, SqlError> {
        let name = self.proxy.default_pool.name.clone();
        let i = self.lease_index(&name).await?;
        Ok(self.leases.get_mut(i))
    }

    /// What a backend connection of this session must match (database, collation, parsing).
    fn setup(&self) -> crate::exec::backend_setup::SessionSetup<'_> {
        crate::exec::backend_setup::SessionSetup {
            db: self.db.as_deref(),
            collation: self.hello.collation,
            ignore_space: self
                .hello
                .capabilities
                .contains(mysql_common::constants::CapabilityFlags::CLIENT_IGNORE_SPACE),
            multi_statements: self.multi_statements,
        }
    }

    /// The cursor for a statement of `scope`.
    fn cursor<'a>(
        &'a mut self,
        scope: StatementScope,
        obs: &'a mut observe::Observed,
    ) -> statement::StatementExec<'a, R, W> {
        statement::StatementExec {
            session: self,
            scope,
            obs,
            replica: false,
        }
    }

    /// The index of the session's connection to `backend`, taking one from its pool (and giving it
    /// the session's collation, database and earlier SET statements) on first use.
    pub(super) async fn lease_index(&mut self, backend: &str) -> Result<usize, SqlError> {
        if let Some(i) = self.leases.position(backend) {
            return Ok(i);
        }
        self.take_lease(backend, false).await
    }

    /// A new connection to `backend` for the session, as `lease_index` takes one; with
    /// `replay_all` the SETs replay on the default backend's too (one replacing the
    /// connection that ran them).
    pub(super) async fn take_lease(
        &mut self,
        backend: &str,
        replay_all: bool,
    ) -> Result<usize, SqlError> {
        let Some(pool) = self.live.pool_for(
            &self.proxy.pools,
            backend,
            &self.hello.user,
            self.hello.backend_login.as_deref(),
        ) else {
            return Err(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate: no backend named `{backend}`"),
            ));
        };
        let flags = crate::exec::backend::LoginFlags::of_client(
            self.hello.capabilities,
            self.hello.mariadb,
        );
        let shares = pool.shares_connections();
        let key = shares.then(|| self.settings_key());
        let (mut lease, came) = pool.acquire_for(flags, key).await?;
        let default = backend == self.proxy.default_pool.name;
        if shares && default {
            self.lid_for_new_default(came);
        }
        if came == crate::exec::Came::AsSet {
            // Another session's connection with the very same settings: nothing to set.
            return Ok(self
                .leases
                .push(Held::new(backend.to_string(), lease, default)));
        }
        self.setup().prepare(&mut lease).await?;
        // A shared connection to the default backend has none of the session's SETs either.
        if replay_all || !default || shares {
            for stmt in &self.replay {
                lease.query_drop_bytes(stmt).await.map_err(|e| {
                    SqlError::new(
                        errors::ER_UNKNOWN_ERROR,
                        b"HY000",
                        format!("idgate: replaying the session's SET on `{backend}` failed: {e}"),
                    )
                })?;
            }
        }
        if let Some(key) = key {
            lease.settings = key;
        }
        Ok(self
            .leases
            .push(Held::new(backend.to_string(), lease, default)))
    }
}
