//! The limits around a client's login: a host that failed too often waits (ERROR 1129 instead of
//! the greeting), the whole handshake must finish within `connect_timeout` (else the socket is
//! closed without a word, as MariaDB does), and a logged-in session needs a slot
//! (`max_connections`, `users[].max_connections`).

use std::time::Duration;

use tokio::io::AsyncWrite;
use tracing::debug;

use super::End;
use crate::limits::Slot;
use crate::metrics::outcomes::Refusal;
use crate::proxy::Proxy;
use crate::tls::{NetRead, NetWrite};
use crate::wire::errors::SqlError;
use crate::wire::framing::{PacketReader, PacketWriter};
use crate::wire::handshake::{self, ClientHello, Login, ServerGreeting};

/// Runs the connection phase under the limits; `Err` ends the connection (the client was told
/// why, except on timeout).
pub(super) async fn login(
    proxy: &Proxy,
    live: &crate::live::Live,
    reader: &mut PacketReader<NetRead>,
    writer: &mut PacketWriter<NetWrite>,
    greeting: &ServerGreeting<'_>,
    peer_host: &str,
) -> Result<(ClientHello, Slot), End> {
    let deadline = Duration::from_secs(live.config.connect_timeout);
    let refused = |r: Refusal| proxy.metrics.refusals.inc(r);
    if let Err(e) = proxy.auth_throttle.check(peer_host) {
        refused(Refusal::Throttled);
        // As MariaDB answers a blocked host: an ERR in place of the greeting, without the
        // SQLSTATE marker (the client has not said it speaks protocol 4.1 yet).
        writer.seq = 0;
        let _ = tokio::time::timeout(deadline, send_pre_greeting(writer, &e)).await;
        return Err(End::LoginRefused);
    }
    let accepted = tokio::time::timeout(
        deadline,
        handshake::accept(
            reader,
            writer,
            greeting,
            &live.users,
            peer_host,
            proxy.tls.as_ref().map(|t| &t.mysql),
        ),
    )
    .await;
    let hello = match accepted {
        Ok(Ok(Login::Accepted(h))) => h,
        Ok(Ok(Login::Refused)) => {
            refused(Refusal::AuthFailed);
            proxy.auth_throttle.failed(peer_host);
            return Err(End::LoginRefused);
        }
        Ok(Ok(Login::RefusedWithoutTls)) => {
            refused(Refusal::TlsRequired);
            proxy.auth_throttle.failed(peer_host);
            return Err(End::LoginRefused);
        }
        Ok(Ok(Login::RefusedCertificate)) => {
            refused(Refusal::CertificateRequired);
            proxy.auth_throttle.failed(peer_host);
            return Err(End::LoginRefused);
        }
        Ok(Err(_)) => return Err(End::ClientGone),
        Err(_) => {
            refused(Refusal::ConnectTimeout);
            debug!(peer = %peer_host, "handshake not finished within connect_timeout");
            return Err(End::ConnectTimeout);
        }
    };
    proxy.auth_throttle.succeeded(peer_host);
    match proxy.admission.admit(&hello.user) {
        Ok(slot) => Ok((hello, slot)),
        Err(e) => {
            refused(if e.code == crate::wire::errors::ER_CON_COUNT_ERROR {
                Refusal::MaxConnections
            } else {
                Refusal::UserMaxConnections
            });
            // MariaDB checks its connection limits after authentication and answers the
            // handshake response with the error.
            let _ = tokio::time::timeout(deadline, send(writer, &e)).await;
            Err(End::LoginRefused)
        }
    }
}

async fn send<W: AsyncWrite + Unpin>(w: &mut PacketWriter<W>, e: &SqlError) {
    let start = w.begin();
    e.encode(w.payload());
    w.end(start);
    let _ = w.flush().await;
}

async fn send_pre_greeting<W: AsyncWrite + Unpin>(w: &mut PacketWriter<W>, e: &SqlError) {
    let start = w.begin();
    let b = w.payload();
    b.push(0xff);
    b.extend_from_slice(&e.code.to_le_bytes());
    b.extend_from_slice(e.message.as_bytes());
    w.end(start);
    let _ = w.flush().await;
}
