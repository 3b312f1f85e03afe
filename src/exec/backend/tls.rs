//! The switch to TLS while logging in to a backend: after the server's greeting, an SSLRequest,
//! the TLS handshake, then the HandshakeResponse goes encrypted (sequence ids continue).

use mysql_common::constants::CapabilityFlags;
use tokio_rustls::TlsConnector;

use super::{BackendConn, BackendError, POOL_COLLATION};
use crate::config::{Backend, BackendTlsMode};
use crate::tls::stream;

impl BackendConn {
    /// Encrypts the connection if the backend's `tls.mode` wants it and the server offers it;
    /// returns CLIENT_SSL for the HandshakeResponse when it did.
    pub(super) async fn start_tls(
        &mut self,
        name: &str,
        cfg: &Backend,
        server_caps: CapabilityFlags,
    ) -> Result<CapabilityFlags, BackendError> {
        let mode = cfg.tls.mode;
        let fail = |message: String| BackendError::Tls {
            backend: name.to_string(),
            message,
        };
        let Some(client) =
            crate::tls::backend::client_config(&cfg.tls).map_err(|e| fail(format!("tls: {e}")))?
        else {
            return Ok(CapabilityFlags::empty());
        };
        if !server_caps.contains(CapabilityFlags::CLIENT_SSL) {
            if mode == BackendTlsMode::Preferred {
                return Ok(CapabilityFlags::empty());
            }
            return Err(fail(format!(
                "the server does not offer TLS, and tls.mode is {}: give the server ssl_cert and \
                 ssl_key, or set tls.mode to preferred or disabled",
                mode.name()
            )));
        }
        let server_name = crate::tls::backend::server_name(&cfg.host, mode).map_err(fail)?;
        let caps = self.flags.capabilities() | CapabilityFlags::CLIENT_SSL;
        let start = self.writer.begin();
        let b = self.writer.payload();
        b.extend_from_slice(&caps.bits().to_le_bytes());
        b.extend_from_slice(&(1u32 << 30).to_le_bytes());
        b.push(POOL_COLLATION);
        b.extend_from_slice(&[0; 19]);
        b.extend_from_slice(&self.flags.mariadb().bits().to_le_bytes());
        self.writer.end(start);
        self.writer.flush().await?;
        if self.reader.buffered() != 0 {
            return Err(BackendError::Protocol(
                "the server sent more than its greeting before TLS started".into(),
            ));
        }
        let connector = TlsConnector::from(client);
        stream::connect(
            self.reader.stream_mut(),
            self.writer.stream_mut(),
            &connector,
            server_name,
        )
        .await
        .map_err(|e| {
            let hint = if mode.verifies() {
                " (check tls.ca and, for verify_identity, that the certificate names the backend's host)"
            } else {
                ""
            };
            fail(format!("TLS handshake failed: {e}{hint}"))
        })?;
        self.reader.seq = self.writer.seq;
        Ok(CapabilityFlags::CLIENT_SSL)
    }
}
