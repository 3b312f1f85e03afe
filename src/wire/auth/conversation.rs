//! The authentication exchange after a client named its user (HandshakeResponse or
//! COM_CHANGE_USER): pick a plugin the user's stored hash can check, switch the client to it if
//! needed, and run that plugin's exchange. The caller sends the final OK or the ERR.

use tokio::io::{AsyncRead, AsyncWrite};

use super::backend_users::BackendLogin;
use super::caching_sha2::{verify_fast, verify_password};
use super::native::{recover_stage1, verify_native};
use super::secret::Secret;
use super::users::{Plugin, UserDb};
use crate::wire::framing::{FrameError, PacketReader, PacketWriter};

/// caching_sha2_password's one-byte messages after the 0x01 "more data" header.
const FAST_AUTH_SUCCESS: u8 = 3;
const PERFORM_FULL_AUTHENTICATION: u8 = 4;
/// What a client sends instead of a password to ask for the server's public key.
const REQUEST_PUBLIC_KEY: u8 = 2;

/// One login attempt as the client opened it.
pub struct Attempt<'a> {
    pub user: &'a [u8],
    pub scramble: &'a [u8; 20],
    /// The plugin the client answered with; `None` means mysql_native_password.
    pub client_plugin: Option<&'a [u8]>,
    pub answer: Vec<u8>,
    /// The client understands AuthSwitchRequest (CLIENT_PLUGIN_AUTH).
    pub can_switch: bool,
    /// The connection runs over TLS, so a password may travel in clear.
    pub secure: bool,
    /// The client's address, for the host patterns of accounts read from the backend.
    pub peer: &'a str,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// With what idgate logs in to the backends when the user is an account read from them.
    Accepted(Option<BackendLogin>),
    /// `used_password` is what MariaDB's message says ("using password: YES/NO").
    Denied { used_password: bool },
}

/// Runs the exchange; the reader and writer are in step with the client's last packet.
pub async fn authenticate<R, W>(
    r: &mut PacketReader<R>,
    w: &mut PacketWriter<W>,
    users: &UserDb,
    a: Attempt<'_>,
) -> Result<Verdict, FrameError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (auth, known, backend_account) = users.lookup_from(a.user, a.peer).await;
    let offered = a
        .client_plugin
        .map_or(Some(Plugin::Native), Plugin::from_name);
    let plugin = match offered {
        Some(p) if auth.supports(p) => p,
        _ if auth.supports(users.default_plugin) => users.default_plugin,
        _ if auth.supports(Plugin::Native) => Plugin::Native,
        _ => Plugin::CachingSha2,
    };
    let mut answer = a.answer;
    let used_password = !answer.is_empty();
    if offered != Some(plugin) {
        if !a.can_switch {
            return Ok(Verdict::Denied { used_password });
        }
        let mut p = vec![0xfe];
        p.extend_from_slice(plugin.name());
        p.push(0);
        p.extend_from_slice(a.scramble);
        p.push(0);
        exchange(r, w, &p, &mut answer).await?;
    }
    let denied = Verdict::Denied {
        used_password: used_password || !answer.is_empty(),
    };
    let ok = match plugin {
        Plugin::Native => {
            let stored = auth.native.flatten();
            if let (Some((user, tls)), true) = (backend_account, known) {
                // An account of the backend: what proves the password also logs in there.
                let secret = match &stored {
                    None if answer.is_empty() => Some(Secret::Password(String::new())),
                    None => None,
                    Some(h) => recover_stage1(a.scramble, h, &answer).map(Secret::NativeSha1),
                };
                return Ok(match secret {
                    Some(secret) => Verdict::Accepted(Some(BackendLogin { user, secret, tls })),
                    None => denied,
                });
            }
            verify_native(a.scramble, stored.as_ref(), &answer)
        }
        Plugin::CachingSha2 => {
            let Some(stored) = auth.caching_sha2.flatten() else {
                return Ok(if answer.is_empty() {
                    Verdict::Accepted(None)
                } else {
                    denied
                });
            };
            if answer.is_empty() {
                return Ok(denied);
            }
            if known
                && users.cache.contains(a.user, &stored)
                && verify_fast(a.scramble, &stored, &answer)
            {
                send(r, w, &[0x01, FAST_AUTH_SUCCESS]).await?;
                return Ok(Verdict::Accepted(None));
            }
            // Not proven since start, or a wrong answer: ask for the password itself, as
            // MySQL 8 does after a cache miss.
            let mut pkt = Vec::new();
            exchange(r, w, &[0x01, PERFORM_FULL_AUTHENTICATION], &mut pkt).await?;
            let password = if a.secure {
                match pkt.split_last() {
                    Some((0, pw)) => pw.to_vec(),
                    _ => return Ok(denied),
                }
            } else {
                let Some(key) = users.key.get().await else {
                    return Ok(denied);
                };
                if pkt == [REQUEST_PUBLIC_KEY] {
                    let mut p = vec![0x01];
                    p.extend_from_slice(key.public_pem());
                    exchange(r, w, &p, &mut pkt).await?;
                }
                // A password in clear over plain TCP does not decrypt: refused, as by MySQL.
                match key.decrypt_password(&pkt, a.scramble) {
                    Some(pw) => pw,
                    None => return Ok(denied),
                }
            };
            let ok = verify_password(&stored, &password);
            if ok && known {
                users.cache.insert(a.user, &stored);
            }
            ok
        }
    };
    Ok(if ok && known {
        Verdict::Accepted(None)
    } else {
        denied
    })
}

/// Sends one packet in the client's sequence.
async fn send<R, W>(
    r: &mut PacketReader<R>,
    w: &mut PacketWriter<W>,
    payload: &[u8],
) -> Result<(), FrameError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    w.seq = r.seq;
    w.write(payload);
    w.flush().await?;
    r.seq = w.seq;
    Ok(())
}

/// Sends one packet and reads the client's answer into `answer`.
async fn exchange<R, W>(
    r: &mut PacketReader<R>,
    w: &mut PacketWriter<W>,
    payload: &[u8],
    answer: &mut Vec<u8>,
) -> Result<(), FrameError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    send(r, w, payload).await?;
    r.read(answer).await?;
    w.seq = r.seq;
    Ok(())
}
