//! One connection from idgate to a backend MySQL/MariaDB server, speaking the client side of the
//! protocol on raw packets so that whatever the backend answers can be relayed byte-for-byte.

use std::time::Duration;

use mysql_common::constants::{CapabilityFlags, StatusFlags};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthSwitchRequest, HandshakePacket};
use tokio::net::TcpStream;

use super::backend_auth::ClientAuth;
use crate::config::Backend;
use crate::tls::{NetRead, NetWrite};
use crate::wire::auth::Secret;
use crate::wire::framing::{FrameError, PacketReader, PacketWriter};
use crate::wire::packets;

pub mod login_flags;
mod tls;

pub use login_flags::LoginFlags;

/// utf8mb4_general_ci: what every pooled connection starts with; sessions that asked for another
/// collation get `SET NAMES` when they take the connection.
pub const POOL_COLLATION: u8 = 45;

/// Backends can send packets as large as their max_allowed_packet (up to 1 GiB).
const BACKEND_PACKET_LIMIT: usize = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("cannot reach backend `{backend}` at {addr}: {source}")]
    Connect {
        backend: String,
        addr: String,
        source: std::io::Error,
    },
    #[error("backend `{backend}` refused idgate's login: {message}")]
    Login {
        backend: String,
        /// The server's error code; 0 when idgate gave up on its own.
        code: u16,
        message: String,
    },
    #[error("lost connection to backend: {0}")]
    Lost(#[from] FrameError),
    #[error("backend sent a packet idgate cannot read: {0}")]
    Protocol(String),
    #[error("backend error {code}: {message}")]
    Server { code: u16, message: String },
    /// TLS to the backend was required and could not be set up (or its certificate failed).
    #[error("backend `{backend}`: {message}")]
    Tls { backend: String, message: String },
    #[error("timed out connecting to backend `{0}`")]
    Timeout(String),
    /// No answer within the backend's query_timeout_ms; the connection was given up.
    #[error("backend `{backend}` did not answer within query_timeout_ms ({ms} ms)")]
    QueryTimeout { backend: String, ms: u64 },
    /// Writing to the client failed while relaying; the client is gone.
    #[error("client connection lost: {0}")]
    ClientGone(std::io::Error),
}

impl From<std::io::Error> for BackendError {
    fn from(e: std::io::Error) -> Self {
        BackendError::Lost(FrameError::Io(e))
    }
}

/// The database a backend connection has selected, as far as idgate knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CurrentDb {
    Unknown,
    None,
    Named(Vec<u8>),
}

pub struct BackendConn {
    reader: PacketReader<NetRead>,
    writer: PacketWriter<NetWrite>,
    pub connection_id: u32,
    pub server_version: Vec<u8>,
    /// What the session's client chose at login that this connection logged in with too.
    pub flags: LoginFlags,
    /// The choices the server could have honoured (what idgate may offer its clients).
    pub offers: LoginFlags,
    /// Collation of the connection as idgate last set it.
    pub collation: u8,
    /// Set when a response was not read to its end (or i/o failed): never reuse such a connection.
    pub broken: bool,
    /// The packet last read.
    pub packet: Vec<u8>,
    pub database: CurrentDb,
    /// Whether the backend runs several `;`-separated statements of one COM_QUERY (`None`:
    /// unknown, after a COM_CHANGE_USER). Sessions set it to what their client may do.
    pub multi_statements: Option<bool>,
    /// First sequence id of the answer to each command written but not yet answered (commands
    /// can be pipelined).
    pending: super::pending_answers::PendingAnswers,
    /// Login details kept for COM_CHANGE_USER (the only way to deselect a database).
    user: String,
    secret: Secret,
    nonce: Vec<u8>,
    /// The plugin the login ended with, for COM_CHANGE_USER.
    auth_plugin: Vec<u8>,
    /// The connection runs over TLS: full authentication may send the password in clear.
    secure: bool,
    /// The backend's name and query_timeout_ms: the longest wait for any packet or send.
    name: String,
    deadline: crate::limits::Deadline,
}

impl BackendConn {
    pub async fn connect(
        name: &str,
        cfg: &Backend,
        flags: LoginFlags,
        timeout: Duration,
    ) -> Result<Self, BackendError> {
        let secret = Secret::Password(cfg.password.clone());
        Self::connect_as(name, cfg, secret, flags, timeout).await
    }

    /// As [`BackendConn::connect`], logging in to `cfg.user` with `secret`.
    pub async fn connect_as(
        name: &str,
        cfg: &Backend,
        secret: Secret,
        flags: LoginFlags,
        timeout: Duration,
    ) -> Result<Self, BackendError> {
        let connecting = Self::connect_inner(name, cfg, secret, flags);
        match tokio::time::timeout(timeout, connecting).await {
            Ok(r) => r,
            Err(_) => Err(BackendError::Timeout(name.to_string())),
        }
    }

    async fn connect_inner(
        name: &str,
        cfg: &Backend,
        secret: Secret,
        flags: LoginFlags,
    ) -> Result<Self, BackendError> {
        let addr = format!("{}:{}", cfg.host, cfg.port);
        let stream = TcpStream::connect(&addr)
            .await
            .map_err(|source| BackendError::Connect {
                backend: name.to_string(),
                addr: addr.clone(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        keepalive(&stream);
        let (r, w) = stream.into_split();
        let mut conn = BackendConn {
            reader: PacketReader::new(NetRead::Plain(r), BACKEND_PACKET_LIMIT),
            writer: PacketWriter::new(NetWrite::Plain(w)),
            connection_id: 0,
            server_version: Vec::new(),
            flags,
            offers: LoginFlags::default(),
            collation: POOL_COLLATION,
            broken: false,
            packet: Vec::new(),
            database: CurrentDb::None,
            // Logged in with CLIENT_MULTI_STATEMENTS (see `LoginFlags::capabilities`).
            multi_statements: Some(true),
            pending: Default::default(),
            user: cfg.user.clone(),
            secret,
            nonce: Vec::new(),
            auth_plugin: Vec::new(),
            secure: false,
            name: name.to_string(),
            deadline: crate::limits::Deadline::new(Duration::from_millis(cfg.query_timeout_ms)),
        };
        conn.login(name, cfg).await?;
        Ok(conn)
    }

    async fn login(&mut self, name: &str, cfg: &Backend) -> Result<(), BackendError> {
        let login_err = |message: String| BackendError::Login {
            backend: name.to_string(),
            code: 0,
            message,
        };
        self.reader.seq = 0;
        self.reader.read(&mut self.packet).await?;
        if packets::is_err(&self.packet) {
            let (code, _, msg) = packets::parse_err(&self.packet);
            return Err(BackendError::Login {
                backend: name.to_string(),
                code,
                message: String::from_utf8_lossy(msg).into_owned(),
            });
        }
        let hs: HandshakePacket = ParseBuf(&self.packet)
            .parse(())
            .map_err(|e| BackendError::Protocol(format!("handshake: {e}")))?;
        self.connection_id = hs.connection_id();
        let server_caps = hs.capabilities();
        self.offers = LoginFlags::offered_by(server_caps, hs.mariadb_ext_capabilities());
        if let Some(missing) = self
            .flags
            .unsupported(server_caps, hs.mariadb_ext_capabilities())
        {
            return Err(login_err(format!(
                "the server does not offer {missing}, which idgate offered its client because \
                 the default backend does; give every backend the same server version"
            )));
        }
        self.server_version = hs.server_version_ref().to_vec();
        let nonce = hs.nonce();
        self.nonce = nonce.clone();
        let greeting_plugin = hs.auth_plugin().map(|p| p.as_bytes().to_vec());
        drop(hs);

        self.writer.seq = self.reader.seq;
        let tls = self.start_tls(name, cfg, server_caps).await?;
        // Inside TLS a password may go in clear (caching_sha2 full authentication).
        self.secure = tls.contains(CapabilityFlags::CLIENT_SSL);
        // A greeting plugin idgate does not speak is answered with mysql_native_password, as
        // MySQL clients do with their default; the server switches if the user needs another.
        // Only SHA1(password) (an account read from the backend) answers mysql_native_password.
        let greeting_plugin = greeting_plugin.filter(|_| self.secret.password().is_some());
        let auth = greeting_plugin
            .and_then(|p| ClientAuth::with_secret(&p, &nonce, &self.secret, self.secure).ok())
            .map_or_else(
                || {
                    ClientAuth::with_secret(
                        b"mysql_native_password",
                        &nonce,
                        &self.secret,
                        self.secure,
                    )
                },
                Ok,
            )
            .map_err(login_err)?;
        let data = auth.first_answer().map_err(login_err)?;

        // HandshakeResponse41, written out so the collation is ours.
        let caps = self.flags.capabilities() | tls;
        let start = self.writer.begin();
        let b = self.writer.payload();
        b.extend_from_slice(&caps.bits().to_le_bytes());
        b.extend_from_slice(&(1u32 << 30).to_le_bytes());
        b.push(POOL_COLLATION);
        b.extend_from_slice(&[0; 19]);
        b.extend_from_slice(&self.flags.mariadb().bits().to_le_bytes());
        b.extend_from_slice(cfg.user.as_bytes());
        b.push(0);
        packets::put_lenenc_str(b, &data);
        b.extend_from_slice(auth.plugin_name());
        b.push(0);
        self.writer.end(start);
        self.writer.flush().await?;
        self.reader.seq = self.writer.seq;
        self.finish_auth(auth).await.map_err(|e| match e {
            BackendError::Server { code, message } => BackendError::Login {
                backend: name.to_string(),
                code,
                message,
            },
            BackendError::Protocol(message) => login_err(message),
            other => other,
        })
    }

    /// Follows the server through the rest of the authentication (plugin switches, more-data
    /// messages) up to its OK. A refusal is `Server`, a message idgate cannot answer `Protocol`.
    async fn finish_auth(&mut self, mut auth: ClientAuth) -> Result<(), BackendError> {
        loop {
            self.reader.read(&mut self.packet).await?;
            self.writer.seq = self.reader.seq;
            let answer = match self.packet.first() {
                Some(0x00) => {
                    self.auth_plugin = auth.plugin_name().to_vec();
                    return Ok(());
                }
                Some(0xff) => {
                    let (code, _, msg) = packets::parse_err(&self.packet);
                    return Err(BackendError::Server {
                        code,
                        message: String::from_utf8_lossy(msg).into_owned(),
                    });
                }
                Some(0xfe) => {
                    let sw: AuthSwitchRequest = ParseBuf(&self.packet)
                        .parse(())
                        .map_err(|e| BackendError::Protocol(format!("auth switch: {e}")))?;
                    auth = ClientAuth::with_secret(
                        sw.auth_plugin().as_bytes(),
                        sw.plugin_data(),
                        &self.secret,
                        self.secure,
                    )
                    .map_err(BackendError::Protocol)?;
                    auth.first_answer().map_err(BackendError::Protocol)?
                }
                Some(0x01) => match auth
                    .more_data(&self.packet[1..])
                    .map_err(BackendError::Protocol)?
                {
                    Some(a) => a,
                    None => continue,
                },
                _ => {
                    return Err(BackendError::Protocol(
                        "unexpected packet during login".into(),
                    ))
                }
            };
            self.writer.write(&answer);
            self.writer.flush().await?;
            self.reader.seq = self.writer.seq;
        }
    }

    /// Starts a new command: the payload becomes packet 0 of a fresh sequence.
    /// Whether the server sent something, or closed, while the connection sat unused: then it
    /// was killed or timed out, and must not serve a statement.
    pub fn spoke_unasked(&mut self) -> bool {
        self.reader.spoke_unasked()
    }

    pub fn write_command(&mut self, payload: &[u8]) {
        self.writer.seq = 0;
        self.writer.write(payload);
        self.pending.push_back(self.writer.seq);
    }

    /// Starts a command written in place; finish with `end_command`.
    pub fn begin_command(&mut self) -> usize {
        self.writer.seq = 0;
        self.writer.begin()
    }

    pub fn command_buf(&mut self) -> &mut Vec<u8> {
        self.writer.payload()
    }

    pub fn end_command(&mut self, start: usize) {
        self.writer.end(start);
        self.pending.push_back(self.writer.seq);
    }

    /// Sends what was written; the next `read` starts the answer to the first command sent.
    pub async fn flush(&mut self) -> Result<(), BackendError> {
        self.next_response();
        let mut until = None;
        std::future::poll_fn(|cx| self.poll_send(cx, &mut until)).await
    }

    /// Sends what was written (after `next_response`), polled by hand: within
    /// query_timeout_ms, counted from the first pending poll (`until`, `None` at the start).
    pub fn poll_send(
        &mut self,
        cx: &mut std::task::Context<'_>,
        until: &mut Option<tokio::time::Instant>,
    ) -> std::task::Poll<Result<(), BackendError>> {
        let sent = self.writer.poll_send(cx);
        self.bounded_poll(sent, cx, until)
    }

    /// One poll of a bounded wait, settled: a failure breaks the connection, and a wait still
    /// pending past query_timeout_ms is a timeout.
    fn bounded_poll<E: Into<BackendError>>(
        &mut self,
        polled: std::task::Poll<Result<(), E>>,
        cx: &mut std::task::Context<'_>,
        until: &mut Option<tokio::time::Instant>,
    ) -> std::task::Poll<Result<(), BackendError>> {
        use std::task::Poll;
        match polled {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => {
                self.broken = true;
                Poll::Ready(Err(e.into()))
            }
            Poll::Pending => match self.deadline.poll_expired(cx, until) {
                Poll::Ready(()) => Poll::Ready(Err(self.timed_out())),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    /// Sends queued packets (all, or only when much is queued) within query_timeout_ms.
    async fn bounded_send(&mut self, all: bool) -> Result<(), BackendError> {
        let sent = if all {
            self.deadline.run(self.writer.flush()).await
        } else {
            self.deadline.run(self.writer.maybe_flush()).await
        };
        match sent {
            Some(r) => r.map_err(|e| {
                self.broken = true;
                e.into()
            }),
            None => Err(self.timed_out()),
        }
    }

    /// The connection waited longer than query_timeout_ms: it is never used again.
    fn timed_out(&mut self) -> BackendError {
        self.broken = true;
        BackendError::QueryTimeout {
            backend: self.name.clone(),
            ms: self.deadline.duration().as_millis() as u64,
        }
    }

    /// Moves on to the answer of the next pipelined command.
    pub fn next_response(&mut self) {
        if let Some(seq) = self.pending.pop_front() {
            self.reader.seq = seq;
        }
    }

    /// Reads the next packet of the response into `self.packet`.
    /// Every wait for a backend's answer passes here, bounded by query_timeout_ms.
    pub async fn read(&mut self) -> Result<(), BackendError> {
        match self.reader.read_buffered(&mut self.packet) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => {
                self.broken = true;
                return Err(e.into());
            }
        }
        // Pinned where it is made: the deadline then moves a pointer, not the read's state.
        let read = {
            let read = std::pin::pin!(self.reader.read(&mut self.packet));
            self.deadline.run(read).await
        };
        match read {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => {
                self.broken = true;
                Err(e.into())
            }
            None => Err(self.timed_out()),
        }
    }

    /// Waits, within query_timeout_ms, until the answer's first bytes have arrived (at once
    /// when some are buffered): an answer that arrived whole is then taken in one go.
    pub async fn wait_for_answer(&mut self) -> Result<(), BackendError> {
        let mut until = None;
        std::future::poll_fn(|cx| self.poll_answer(cx, &mut until)).await
    }

    /// `wait_for_answer`, polled by hand (`until` as for `poll_send`).
    pub fn poll_answer(
        &mut self,
        cx: &mut std::task::Context<'_>,
        until: &mut Option<tokio::time::Instant>,
    ) -> std::task::Poll<Result<(), BackendError>> {
        let filled = self.reader.poll_fill(cx);
        self.bounded_poll(filled, cx, until)
    }

    /// What the backend sent and was not read yet, for relaying an answer that arrived whole
    /// where it lies (`relay_whole`).
    pub(super) fn unread(&mut self) -> &mut PacketReader<NetRead> {
        &mut self.reader
    }

    /// LOCAL INFILE: the packet just read asks for a file. Packets sent with `send_file_packet`
    /// continue the command's sequence. The connection counts as broken until `end_file` sent
    /// the closing empty packet, so a transfer cut short is closed, never reused out of step.
    pub fn begin_file(&mut self) {
        self.writer.seq = self.reader.seq;
        self.broken = true;
    }

    /// Queues one packet of file content; sends when much is queued.
    pub async fn send_file_packet(&mut self, payload: &[u8]) -> Result<(), BackendError> {
        self.writer.write(payload);
        self.bounded_send(false).await?;
        Ok(())
    }

    /// Sends the file content queued so far.
    pub async fn flush_file(&mut self) -> Result<(), BackendError> {
        self.bounded_send(true).await?;
        Ok(())
    }

    /// Sends the closing empty packet; the statement's answer follows.
    pub async fn end_file(&mut self) -> Result<(), BackendError> {
        self.writer.write(&[]);
        self.bounded_send(true).await?;
        self.reader.seq = self.writer.seq;
        self.broken = false;
        Ok(())
    }

    /// Answers a request for a file with an empty file (the client was not asked).
    pub async fn decline_file(&mut self) -> Result<(), BackendError> {
        self.begin_file();
        self.end_file().await
    }

    /// Runs a command whose answer is a single OK or ERR (INIT_DB, PING, RESET_CONNECTION, …)
    /// and returns that packet's first byte; the packet stays in `self.packet`.
    pub async fn simple_command(&mut self, payload: &[u8]) -> Result<u8, BackendError> {
        self.write_command(payload);
        self.flush().await?;
        self.read().await?;
        Ok(self.packet.first().copied().unwrap_or(0xff))
    }

    /// Turns multi-statement queries on or off (COM_SET_OPTION), so the backend parses a client's
    /// packet with exactly the powers the client has; a round trip only when the state changes.
    pub async fn set_multi_statements(&mut self, on: bool) -> Result<(), BackendError> {
        if self.multi_statements == Some(on) {
            return Ok(());
        }
        // MYSQL_OPTION_MULTI_STATEMENTS_ON is 0, _OFF is 1.
        let option: u16 = if on { 0 } else { 1 };
        let mut p = vec![mysql_common::constants::Command::COM_SET_OPTION as u8];
        p.extend_from_slice(&option.to_le_bytes());
        // The answer is an EOF packet, or an ERR.
        if self.simple_command(&p).await? == 0xff {
            let (code, _, msg) = packets::parse_err(&self.packet);
            self.broken = true;
            return Err(BackendError::Server {
                code,
                message: String::from_utf8_lossy(msg).into_owned(),
            });
        }
        self.multi_statements = Some(on);
        Ok(())
    }

    /// COM_CHANGE_USER to idgate's own backend user without a database: a clean session with no
    /// database selected (COM_RESET_CONNECTION keeps the database).
    pub async fn change_user_no_db(&mut self) -> Result<(), BackendError> {
        // The plugin the login ended with, on the handshake's scramble, as MySQL clients do.
        let plugin = if self.auth_plugin.is_empty() {
            b"mysql_native_password".to_vec()
        } else {
            self.auth_plugin.clone()
        };
        let auth = ClientAuth::with_secret(&plugin, &self.nonce, &self.secret, self.secure)
            .map_err(BackendError::Protocol)?;
        let answer = auth.first_answer().map_err(BackendError::Protocol)?;
        let mut p = vec![mysql_common::constants::Command::COM_CHANGE_USER as u8];
        p.extend_from_slice(self.user.clone().as_bytes());
        p.push(0);
        p.push(answer.len() as u8);
        p.extend_from_slice(&answer);
        p.push(0); // no database
        p.extend_from_slice(&(POOL_COLLATION as u16).to_le_bytes());
        p.extend_from_slice(&plugin);
        p.push(0);
        self.write_command(&p);
        self.flush().await?;
        // At login the connect timeout bounds the exchange; here the query timeout does.
        let finished =
            match tokio::time::timeout(self.deadline.duration(), self.finish_auth(auth)).await {
                Ok(r) => r,
                Err(_) => Err(self.timed_out()),
            };
        if let Err(e) = finished {
            // Refused (the account was locked, say), the server keeps the connection as it was
            // logged in, its session reset: it stays usable. Anything else leaves it unknown.
            match e {
                BackendError::Server { .. } => self.multi_statements = None,
                _ => self.broken = true,
            }
            return Err(e);
        }
        self.collation = POOL_COLLATION;
        self.database = CurrentDb::None;
        self.multi_statements = None;
        Ok(())
    }

    /// Runs a statement for idgate's own bookkeeping and discards any result sets; fails on ERR.
    pub async fn query_drop(&mut self, sql: &str) -> Result<(), BackendError> {
        self.query_drop_bytes(sql.as_bytes()).await
    }

    pub async fn query_drop_bytes(&mut self, sql: &[u8]) -> Result<(), BackendError> {
        self.write_command(&crate::wire::command::query_packet(sql));
        self.flush().await?;
        loop {
            self.read().await?;
            if packets::is_err(&self.packet) {
                let (code, _, msg) = packets::parse_err(&self.packet);
                return Err(BackendError::Server {
                    code,
                    message: String::from_utf8_lossy(msg).into_owned(),
                });
            }
            if self.packet.first() == Some(&packets::LOCAL_INFILE_HEADER) {
                // idgate's own statements never load files: an empty one keeps the connection in step.
                self.decline_file().await?;
                continue;
            }
            let status = if self.packet.first() == Some(&packets::OK_HEADER) {
                packets::parse_ok(&self.packet).map_or(0, |o| o.status)
            } else {
                // A result set: skip column definitions and rows up to the final EOF.
                let mut eofs = 0;
                let mut last = 0;
                while eofs < 2 {
                    self.read().await?;
                    if packets::is_err(&self.packet) {
                        return Err(BackendError::Protocol("error inside a result set".into()));
                    }
                    if packets::is_eof(&self.packet) {
                        eofs += 1;
                        last = packets::parse_eof(&self.packet).1.bits();
                    }
                }
                last
            };
            if status & StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits() == 0 {
                return Ok(());
            }
        }
    }

    /// Runs a query for idgate's own use and returns its text rows (NULL as `None`).
    pub async fn query_rows(
        &mut self,
        sql: &(impl AsRef<[u8]> + ?Sized),
    ) -> Result<Vec<Vec<Option<Vec<u8>>>>, BackendError> {
        self.write_command(&crate::wire::command::query_packet(sql.as_ref()));
        self.flush().await?;
        self.read().await?;
        if packets::is_err(&self.packet) {
            let (code, _, msg) = packets::parse_err(&self.packet);
            return Err(BackendError::Server {
                code,
                message: String::from_utf8_lossy(msg).into_owned(),
            });
        }
        if self.packet.first() == Some(&packets::OK_HEADER) {
            return Ok(Vec::new());
        }
        // Column definitions up to their EOF, then rows up to the final EOF.
        loop {
            self.read().await?;
            if packets::is_eof(&self.packet) {
                break;
            }
        }
        let mut rows = Vec::new();
        loop {
            self.read().await?;
            if packets::is_eof(&self.packet) {
                return Ok(rows);
            }
            if packets::is_err(&self.packet) {
                let (code, _, msg) = packets::parse_err(&self.packet);
                return Err(BackendError::Server {
                    code,
                    message: String::from_utf8_lossy(msg).into_owned(),
                });
            }
            let row = packets::text_row(&self.packet)
                .ok_or_else(|| BackendError::Protocol("text row".into()))?;
            rows.push(row);
        }
    }

    pub async fn close(mut self) {
        self.write_command(&[mysql_common::constants::Command::COM_QUIT as u8]);
        let _ = self.writer.shutdown().await;
    }
}

/// TCP keepalive on a backend socket, so a backend host that vanished (no FIN, no RST) is
/// noticed by the kernel even while the connection sits idle in the pool.
fn keepalive(stream: &TcpStream) {
    let ka = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(60))
        .with_interval(Duration::from_secs(10));
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_keepalive(&ka) {
        tracing::debug!(error = %e, "cannot enable TCP keepalive on a backend socket");
    }
}
