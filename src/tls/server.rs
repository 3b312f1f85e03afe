//! The TLS side clients see: a certificate from PEM files or, for `tls: auto`, a self-signed one
//! made at startup (as MySQL's auto_generate_certs does).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;
use sha2::{Digest, Sha256};
use tokio_rustls::TlsAcceptor;
use tracing::info;

use super::rotation::RotatingCert;
use super::{provider, TlsError, VERSIONS};
use crate::config::{Config, ServerTls, TlsFiles};

/// The acceptor for `config.tls` and the certificate it serves (read again on reload), or
/// `None` when clients connect in plain TCP only.
pub fn acceptor(config: &Config) -> Result<Option<(TlsAcceptor, Arc<RotatingCert>)>, TlsError> {
    let Some(tls) = &config.tls else {
        return Ok(None);
    };
    let cert = match &tls.value {
        ServerTls::Files(f) => RotatingCert::from_files(f)?,
        ServerTls::Auto => {
            let (cert, key) = self_signed(&config.listen)?;
            info!(
                sha256 = %fingerprint(&cert),
                "tls: auto: generated a self-signed certificate; clients that verify it can pin this fingerprint"
            );
            RotatingCert::fixed(vec![cert], key)?
        }
    };
    let cfg = server_config(cert.clone(), &[], "the client certificate")?;
    Ok(Some((TlsAcceptor::from(Arc::new(cfg)), cert)))
}

/// Loads and checks `tls: {cert, key}` (also what `check-config` runs).
pub fn load(f: &TlsFiles) -> Result<(), TlsError> {
    RotatingCert::from_files(f).map(|_| ())
}

/// A server configuration serving `cert` (as it is at each handshake), offering `alpn`.
pub fn server_config(
    cert: Arc<RotatingCert>,
    alpn: &[&[u8]],
    what: &str,
) -> Result<ServerConfig, TlsError> {
    let rejected = |e: rustls::Error| TlsError::Rejected {
        what: what.to_string(),
        message: format!("not a usable certificate and key: {e}"),
    };
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .map_err(rejected)?
        .with_no_client_auth()
        .with_cert_resolver(cert);
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(cfg)
}

/// A fresh ECDSA P-256 certificate for `localhost` and the listen address.
fn self_signed(
    listen: &str,
) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), TlsError> {
    let err = |e: rcgen::Error| TlsError::Generate(e.to_string());
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).map_err(err)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        "idgate_Auto_Generated_Server_Certificate",
    );
    if let Ok(addr) = listen.parse::<std::net::SocketAddr>() {
        if !addr.ip().is_unspecified() {
            params
                .subject_alt_names
                .push(rcgen::SanType::IpAddress(addr.ip()));
        }
    }
    let key = rcgen::KeyPair::generate().map_err(err)?;
    let cert = params.self_signed(&key).map_err(err)?;
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Ok((cert.der().clone(), key_der))
}

/// SHA-256 of the certificate, as `AB:CD:…` (what `openssl x509 -fingerprint -sha256` prints).
pub fn fingerprint(cert: &CertificateDer) -> String {
    Sha256::digest(cert.as_ref())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}
