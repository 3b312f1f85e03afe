//! The switch to TLS during the connection phase: a client that saw CLIENT_SSL in the greeting
//! may answer with an SSLRequest (the first 32 bytes of a HandshakeResponse, CLIENT_SSL set),
//! run the TLS handshake on the socket, and send its real HandshakeResponse encrypted, with the
//! sequence ids continuing.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use mysql_common::constants::CapabilityFlags;
use tokio_rustls::TlsAcceptor;

use super::framing::{FrameError, PacketReader, PacketWriter};
use crate::tls::peer_name::PeerCert;
use crate::tls::{stream, NetRead, NetWrite};

/// A client gets this long for its TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Length of an SSLRequest: capabilities, max packet size, collation, 23 reserved bytes.
const SSL_REQUEST_LEN: usize = 32;

pub fn is_ssl_request(packet: &[u8]) -> bool {
    packet.len() == SSL_REQUEST_LEN
        && CapabilityFlags::from_bits_truncate(u32::from_le_bytes([
            packet[0], packet[1], packet[2], packet[3],
        ]))
        .contains(CapabilityFlags::CLIENT_SSL)
}

/// How the client's HandshakeResponse came.
#[derive(Debug, Default)]
pub struct Transport {
    /// Over TLS.
    pub secure: bool,
    /// The client certificate it presented, verified against `tls.ca`.
    pub peer: Option<Arc<PeerCert>>,
}

/// Reads the client's first answer to the greeting into `buf`: with TLS offered, an SSLRequest
/// is followed by the handshake and the HandshakeResponse read over TLS.
pub async fn read_response(
    r: &mut PacketReader<NetRead>,
    w: &mut PacketWriter<NetWrite>,
    tls: Option<&TlsAcceptor>,
    buf: &mut Vec<u8>,
) -> Result<Transport, FrameError> {
    let Some(acceptor) = tls else {
        r.read(buf).await?;
        w.seq = r.seq;
        return Ok(Transport::default());
    };
    // Not through the read buffer: the ClientHello behind an SSLRequest must stay in the socket.
    r.read_unbuffered(buf).await?;
    w.seq = r.seq;
    if !is_ssl_request(buf) {
        return Ok(Transport::default());
    }
    w.flush().await?;
    let handshake = stream::accept(r.stream_mut(), w.stream_mut(), acceptor);
    let counts = &crate::tls::outcomes::CLIENT_HANDSHAKES;
    let peer = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, handshake).await {
        Ok(Ok(peer)) => {
            counts.ok.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            peer
        }
        Ok(Err(e)) => {
            counts
                .failed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err(e.into());
        }
        Err(_) => {
            counts
                .timed_out
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err(FrameError::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                "TLS handshake not finished in time",
            )));
        }
    };
    r.read(buf).await?;
    w.seq = r.seq;
    Ok(Transport {
        secure: true,
        peer: peer.map(|c| Arc::new(PeerCert::from_der(&c).unwrap_or_default())),
    })
}
