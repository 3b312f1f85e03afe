//! The same backend `tls:` settings for the mysql_async pool on the sequence store.
//!
//! Known gap: mysql_async 0.37 recognises a host-name mismatch by an error text rustls no longer
//! produces, so over this pool `verify_ca` also checks the host name (as `verify_identity`).

use mysql_async::{ClientIdentity, SslOpts};

use crate::config::{BackendTls, BackendTlsMode};

/// mysql_async's options for `tls`; `None` when disabled.
pub fn ssl_opts(tls: &BackendTls) -> Option<SslOpts> {
    let opts = match tls.mode {
        BackendTlsMode::Disabled => return None,
        BackendTlsMode::Preferred | BackendTlsMode::Required => {
            SslOpts::default().with_danger_accept_invalid_certs(true)
        }
        BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity => SslOpts::default()
            .with_root_certs(tls.ca.iter().map(|p| p.clone().into()).collect())
            .with_disable_built_in_roots(true)
            .with_danger_skip_domain_validation(tls.mode == BackendTlsMode::VerifyCa),
    };
    let identity = match (&tls.cert, &tls.key) {
        (Some(c), Some(k)) => Some(ClientIdentity::new(c.clone().into(), k.clone().into())),
        _ => None,
    };
    Some(opts.with_client_identity(identity))
}

/// Whether a failed connection should be retried in plain TCP: `preferred` and the server
/// offers no TLS.
pub fn retry_plain(tls: &BackendTls, e: &mysql_async::Error) -> bool {
    tls.mode == BackendTlsMode::Preferred
        && matches!(
            e,
            mysql_async::Error::Driver(mysql_async::DriverError::NoClientSslFlagFromServer)
        )
}
