//! Connection phase, server side: the initial handshake with a fresh scramble, the client's
//! response (over TLS after an SSLRequest when configured), the authentication exchange
//! (`auth::conversation`: plugin switch, caching_sha2 fast and full paths), and the same again
//! for COM_CHANGE_USER.

use mysql_common::constants::{CapabilityFlags, MariadbCapabilities, StatusFlags};
use mysql_common::io::ParseBuf;
use mysql_common::packets::HandshakeResponse;
use tokio::io::{AsyncRead, AsyncWrite};

use super::auth::backend_users::BackendLogin;
use super::auth::conversation::{self, Attempt, Verdict};
use super::auth::users::TransportRefusal;
pub use super::auth::UserDb;
use super::auth::{self, Plugin};
use super::errors::{self, SqlError};
use super::framing::{FrameError, PacketReader, PacketWriter};
use crate::tls::peer_name::PeerCert;
use crate::tls::{NetRead, NetWrite};

/// What idgate offers. LOCAL_FILES lets the default backend ask the client for a LOAD DATA
/// LOCAL file, which idgate carries across without reading any file itself. SSL is added when
/// TLS is configured (see `ServerGreeting::tls`). COMPRESS: frames between the client and idgate
/// (`wire::compressed`; backends are spoken to plainly). SESSION_TRACK and MariaDB's extended metadata
/// when the backends offer them (see `ServerGreeting::capabilities`). Not offered: MariaDB's
/// bulk execute and metadata caching, which idgate would have to interpret rather than relay.
pub fn server_capabilities() -> CapabilityFlags {
    use CapabilityFlags as C;
    C::CLIENT_LONG_PASSWORD
        | C::CLIENT_FOUND_ROWS
        | C::CLIENT_LONG_FLAG
        | C::CLIENT_CONNECT_WITH_DB
        | C::CLIENT_COMPRESS
        | C::CLIENT_ODBC
        | C::CLIENT_LOCAL_FILES
        | C::CLIENT_IGNORE_SPACE
        | C::CLIENT_PROTOCOL_41
        | C::CLIENT_INTERACTIVE
        | C::CLIENT_IGNORE_SIGPIPE
        | C::CLIENT_TRANSACTIONS
        | C::CLIENT_SECURE_CONNECTION
        | C::CLIENT_MULTI_STATEMENTS
        | C::CLIENT_MULTI_RESULTS
        | C::CLIENT_PS_MULTI_RESULTS
        | C::CLIENT_PLUGIN_AUTH
        | C::CLIENT_CONNECT_ATTRS
        | C::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | C::CLIENT_DEPRECATE_EOF
}

/// What a client said about itself when it logged in.
#[derive(Debug, Clone)]
pub struct ClientHello {
    pub user: Vec<u8>,
    pub db: Option<Vec<u8>>,
    pub capabilities: CapabilityFlags,
    pub collation: u8,
    pub scramble: [u8; 20],
    /// The MariaDB capabilities agreed on (read only from a client that did not say
    /// CLIENT_MYSQL, as MariaDB reads them).
    pub mariadb: MariadbCapabilities,
    /// The connection runs over TLS (full authentication may send the password in clear).
    pub secure: bool,
    /// The client certificate presented in the TLS handshake.
    pub peer: Option<std::sync::Arc<PeerCert>>,
    /// The user is an account read from the backend: idgate logs in to the backends as it.
    pub backend_login: Option<std::sync::Arc<BackendLogin>>,
}

impl ClientHello {
    /// The client reads an OK packet, not an EOF, at the end of a result set.
    pub fn deprecate_eof(&self) -> bool {
        self.capabilities
            .contains(CapabilityFlags::CLIENT_DEPRECATE_EOF)
    }

    /// The client announced CLIENT_LOCAL_FILES: it may be asked for a file.
    pub fn local_files(&self) -> bool {
        self.capabilities
            .contains(CapabilityFlags::CLIENT_LOCAL_FILES)
    }
}

pub struct ServerGreeting<'a> {
    pub version: &'a [u8],
    pub connection_id: u32,
    pub collation: u8,
    /// TLS is configured: offer CLIENT_SSL.
    pub tls: bool,
    /// The backends offer CLIENT_SESSION_TRACK: offer it too (their OK packets are relayed).
    pub session_track: bool,
    /// The backends are MariaDB servers sending extended column metadata: say so as MariaDB
    /// does (CLIENT_MYSQL clear, MARIADB_CLIENT_EXTENDED_METADATA among its capabilities).
    pub extended_metadata: bool,
}

impl ServerGreeting<'_> {
    /// What idgate offers this client, before TLS.
    pub fn capabilities(&self) -> CapabilityFlags {
        let mut caps = server_capabilities();
        caps.set(CapabilityFlags::CLIENT_SESSION_TRACK, self.session_track);
        caps.set(
            CapabilityFlags::CLIENT_LONG_PASSWORD,
            !self.extended_metadata,
        );
        caps
    }

    pub fn mariadb(&self) -> MariadbCapabilities {
        if self.extended_metadata {
            MariadbCapabilities::MARIADB_CLIENT_EXTENDED_METADATA
        } else {
            MariadbCapabilities::empty()
        }
    }

    /// The MariaDB capabilities agreed with a client that answered `caps` and `mariadb`.
    fn agreed_mariadb(
        &self,
        caps: CapabilityFlags,
        mariadb: MariadbCapabilities,
    ) -> MariadbCapabilities {
        if caps.contains(CapabilityFlags::CLIENT_LONG_PASSWORD) || !self.extended_metadata {
            return MariadbCapabilities::empty();
        }
        mariadb & self.mariadb()
    }
}

fn write_greeting<W: AsyncWrite + Unpin>(
    w: &mut PacketWriter<W>,
    g: &ServerGreeting,
    scramble: &[u8; 20],
    plugin: Plugin,
) {
    let mut caps = g.capabilities().bits();
    if g.tls {
        caps |= CapabilityFlags::CLIENT_SSL.bits();
    }
    let start = w.begin();
    let b = w.payload();
    b.push(10);
    b.extend_from_slice(g.version);
    b.push(0);
    b.extend_from_slice(&g.connection_id.to_le_bytes());
    b.extend_from_slice(&scramble[..8]);
    b.push(0);
    b.extend_from_slice(&(caps as u16).to_le_bytes());
    b.push(g.collation);
    b.extend_from_slice(&StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits().to_le_bytes());
    b.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    b.push(21);
    b.extend_from_slice(&[0; 6]);
    b.extend_from_slice(&g.mariadb().bits().to_le_bytes());
    b.extend_from_slice(&scramble[8..]);
    b.push(0);
    b.extend_from_slice(plugin.name());
    b.push(0);
    w.end(start);
}

/// Outcome of the connection phase.
pub enum Login {
    Accepted(ClientHello),
    /// The client was told why (an ERR packet was sent).
    Refused,
    /// As `Refused`, for a right password from a user who must use TLS and did not.
    RefusedWithoutTls,
    /// As `Refused`, for a right password from a user whose client certificate is missing or
    /// is not the one required.
    RefusedCertificate,
}

/// Runs the connection phase (switching to TLS when the client asks and `tls` is configured); on
/// success the caller sends the OK (after checking the database).
pub async fn accept(
    r: &mut PacketReader<NetRead>,
    w: &mut PacketWriter<NetWrite>,
    greeting: &ServerGreeting<'_>,
    users: &UserDb,
    peer_host: &str,
    tls: Option<&tokio_rustls::TlsAcceptor>,
) -> Result<Login, FrameError> {
    let scramble = auth::new_scramble();
    w.seq = 0;
    write_greeting(w, greeting, &scramble, users.default_plugin);
    w.flush().await?;
    r.seq = w.seq;
    let mut buf = Vec::new();
    let transport = super::tls_login::read_response(r, w, tls, &mut buf).await?;
    let secure = transport.secure;

    let parsed = ParseBuf(&buf).parse::<HandshakeResponse>(());
    let Ok(resp) = parsed else {
        return refuse(w, errors::malformed("handshake response")).await;
    };
    let mariadb = greeting.agreed_mariadb(resp.capabilities(), resp.mariadb_ext_capabilities());
    let capabilities = resp.capabilities() & greeting.capabilities();
    if !capabilities.contains(CapabilityFlags::CLIENT_PROTOCOL_41) {
        let e = SqlError::new(
            errors::ER_NOT_SUPPORTED_AUTH_MODE,
            b"08004",
            "Client does not support the 4.1 protocol; upgrade the MySQL client library",
        );
        return refuse(w, e).await;
    }
    let user = resp.user().to_vec();
    let db = resp.db_name().filter(|d| !d.is_empty()).map(<[u8]>::to_vec);
    let collation = resp.collation();
    let client_plugin = resp.auth_plugin().map(|p| p.as_bytes().to_vec());
    let answer = resp.scramble_buf().to_vec();
    drop(resp);

    let used_password = !answer.is_empty();
    let attempt = Attempt {
        user: &user,
        scramble: &scramble,
        client_plugin: client_plugin.as_deref(),
        answer,
        can_switch: capabilities.contains(CapabilityFlags::CLIENT_PLUGIN_AUTH),
        secure,
        peer: peer_host,
    };
    let verdict = conversation::authenticate(r, w, users, attempt).await?;
    // Without TLS (or the client certificate) the user needs, the login is refused exactly like
    // a wrong password, after the password exchange, as MariaDB refuses REQUIRE SSL / X509 /
    // SUBJECT / ISSUER and require_secure_transport.
    let transport_refusal = match &verdict {
        Verdict::Accepted(login) => transport_refusal(
            users,
            &user,
            login.as_ref(),
            secure,
            transport.peer.as_deref(),
        ),
        Verdict::Denied { .. } => None,
    };
    let (denied, backend_login) = match verdict {
        Verdict::Denied { used_password } => (Some(used_password), None),
        Verdict::Accepted(_) if transport_refusal.is_some() => (Some(used_password), None),
        Verdict::Accepted(login) => (None, login),
    };
    if let Some(used_password) = denied {
        let refused = refuse(w, errors::access_denied(&user, peer_host, used_password)).await?;
        return Ok(match transport_refusal {
            Some(TransportRefusal::NoTls) => Login::RefusedWithoutTls,
            Some(TransportRefusal::Certificate) => Login::RefusedCertificate,
            None => refused,
        });
    }
    Ok(Login::Accepted(ClientHello {
        user,
        db,
        capabilities,
        collation,
        scramble,
        mariadb,
        secure,
        peer: transport.peer,
        backend_login: backend_login.map(std::sync::Arc::new),
    }))
}

/// Why `user`, whose password was right, may not log in over this connection: idgate's own
/// settings for a configured user, the account's `REQUIRE` for one read from the backend.
fn transport_refusal(
    users: &UserDb,
    user: &[u8],
    login: Option<&BackendLogin>,
    secure: bool,
    peer: Option<&PeerCert>,
) -> Option<TransportRefusal> {
    users
        .transport_refusal(user, secure, peer)
        .or_else(|| login.and_then(|l| l.tls.refusal(secure, peer)))
}

async fn refuse<W: AsyncWrite + Unpin>(
    w: &mut PacketWriter<W>,
    e: SqlError,
) -> Result<Login, FrameError> {
    let start = w.begin();
    e.encode(w.payload());
    w.end(start);
    w.flush().await?;
    Ok(Login::Refused)
}

/// A COM_CHANGE_USER that passed authentication.
pub struct ChangedUser {
    pub user: Vec<u8>,
    pub db: Option<Vec<u8>>,
    pub collation: Option<u8>,
    /// See [`ClientHello::backend_login`].
    pub backend_login: Option<std::sync::Arc<BackendLogin>>,
}

/// Re-authenticates for COM_CHANGE_USER against the connection's original scramble (what the
/// client used), switching plugin if needed. On failure an ERR was sent and `None` returned.
pub async fn change_user<R, W>(
    r: &mut PacketReader<R>,
    w: &mut PacketWriter<W>,
    hello: &ClientHello,
    packet: &[u8],
    users: &UserDb,
    peer_host: &str,
) -> Result<Option<ChangedUser>, FrameError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let Some(cu) = parse_change_user(packet) else {
        refuse(w, errors::malformed("COM_CHANGE_USER")).await?;
        return Ok(None);
    };
    let ParsedChangeUser {
        user,
        answer,
        db,
        collation,
        plugin,
    } = cu;
    let used_password = !answer.is_empty();
    let attempt = Attempt {
        user: &user,
        scramble: &hello.scramble,
        client_plugin: plugin.as_deref(),
        answer,
        can_switch: hello
            .capabilities
            .contains(CapabilityFlags::CLIENT_PLUGIN_AUTH),
        secure: hello.secure,
        peer: peer_host,
    };
    let verdict = conversation::authenticate(r, w, users, attempt).await?;
    let (denied, backend_login) = match verdict {
        Verdict::Denied { used_password } => (Some(used_password), None),
        Verdict::Accepted(ref login)
            if transport_refusal(
                users,
                &user,
                login.as_ref(),
                hello.secure,
                hello.peer.as_deref(),
            )
            .is_some() =>
        {
            (Some(used_password), None)
        }
        Verdict::Accepted(login) => (None, login),
    };
    if let Some(used_password) = denied {
        refuse(w, errors::access_denied(&user, peer_host, used_password)).await?;
        return Ok(None);
    }
    Ok(Some(ChangedUser {
        user,
        db,
        collation,
        backend_login: backend_login.map(std::sync::Arc::new),
    }))
}

struct ParsedChangeUser {
    user: Vec<u8>,
    answer: Vec<u8>,
    db: Option<Vec<u8>>,
    collation: Option<u8>,
    plugin: Option<Vec<u8>>,
}

/// COM_CHANGE_USER: 0x11, user NUL, auth-len byte + auth data, database NUL, then optionally the
/// character set (2 bytes), the plugin name (NUL) and connection attributes (ignored).
fn parse_change_user(p: &[u8]) -> Option<ParsedChangeUser> {
    fn cstr<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
        let end = rest.iter().position(|&b| b == 0)?;
        let s = &rest[..end];
        *rest = &rest[end + 1..];
        Some(s)
    }
    let mut rest = p.get(1..)?;
    let user = cstr(&mut rest)?.to_vec();
    let (&n, tail) = rest.split_first()?;
    let answer = tail.get(..n as usize)?.to_vec();
    rest = &tail[n as usize..];
    let db = if rest.is_empty() {
        Vec::new()
    } else {
        cstr(&mut rest)?.to_vec()
    };
    let mut collation = None;
    let mut plugin = None;
    if rest.len() >= 2 {
        collation = Some(rest[0]).filter(|c| *c != 0);
        rest = &rest[2..];
        if !rest.is_empty() {
            plugin = cstr(&mut rest).map(<[u8]>::to_vec);
        }
    }
    Some(ParsedChangeUser {
        user,
        answer,
        db: Some(db).filter(|d| !d.is_empty()),
        collation,
        plugin,
    })
}
