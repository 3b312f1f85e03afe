//! TLS on both sides of idgate, with rustls and its `ring` provider: the certificate clients see
//! (PEM files, or one generated at startup), the verification modes for backends, and the
//! connection halves that are plain TCP or encrypted.
//! Must not: decide policy (who must use TLS): `config` and the login do.

pub mod backend;
pub mod client_ca;
pub mod files;
pub mod listener;
pub mod outcomes;
pub mod peer_name;
pub mod rotation;
pub mod sequence_store;
pub mod server;
pub mod stream;

use std::sync::Arc;

pub use stream::{NetRead, NetWrite};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Pem { path: String, message: String },
    #[error("{what}: {message}")]
    Rejected { what: String, message: String },
    #[error("cannot generate the `tls: auto` certificate: {0}")]
    Generate(String),
}

/// The crypto provider every TLS configuration of idgate uses.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS 1.2 and 1.3, as MariaDB offers by default.
pub const VERSIONS: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];
