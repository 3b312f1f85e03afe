//! The TLS side clients see: a certificate from PEM files or, for `tls: auto`, a self-signed one
//! made at startup (as MySQL's auto_generate_certs does).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;
use sha2::{Digest, Sha256};
use tokio_rustls::TlsAcceptor;
use tracing::info;

use super::client_ca::RotatingClientCa;
use super::rotation::RotatingCert;
use super::{provider, TlsError, VERSIONS};
use crate::config::{Config, ServerTls, TlsFiles};

/// The acceptors of the top-level `tls:` certificate.
#[derive(Clone)]
pub struct Acceptors {
    /// The MySQL port's: asks for a client certificate when `tls.ca` is set.
    pub mysql: TlsAcceptor,
    /// For the ID-service and admin listeners that share the certificate (`tls: true`): they
    /// never ask for one.
    pub shared: TlsAcceptor,
}

/// What `config.tls` serves, read again on reload: the certificate, and the CAs client
/// certificates must chain to.
pub struct Rotating {
    pub cert: Arc<RotatingCert>,
    pub client_ca: Option<Arc<RotatingClientCa>>,
}

/// The acceptors for `config.tls` and what they read again on reload, or `None` when clients
/// connect in plain TCP only.
pub fn acceptor(config: &Config) -> Result<Option<(Acceptors, Rotating)>, TlsError> {
    let Some(tls) = &config.tls else {
        return Ok(None);
    };
    let mut client_ca = None;
    let cert = match &tls.value {
        ServerTls::Files(f) => {
            if let Some(ca) = &f.ca {
                client_ca = Some(RotatingClientCa::from_file(ca)?);
            }
            RotatingCert::from_files(f)?
        }
        ServerTls::Auto => {
            let (cert, key) = self_signed(&config.listen)?;
            info!(
                sha256 = %fingerprint(&cert),
                "tls: auto: generated a self-signed certificate; clients that verify it can pin this fingerprint"
            );
            RotatingCert::fixed(vec![cert], key)?
        }
    };
    let what = "the client certificate";
    let shared = server_config(cert.clone(), &[], what)?;
    let mysql = match &client_ca {
        Some(ca) => with_client_ca(cert.clone(), ca.clone(), what)?,
        None => shared.clone(),
    };
    let acceptors = Acceptors {
        mysql: TlsAcceptor::from(Arc::new(mysql)),
        shared: TlsAcceptor::from(Arc::new(shared)),
    };
    Ok(Some((acceptors, Rotating { cert, client_ca })))
}

/// Loads and checks `tls: {cert, key, ca}` (also what `check-config` runs).
pub fn load(f: &TlsFiles) -> Result<(), TlsError> {
    if let Some(ca) = &f.ca {
        RotatingClientCa::from_file(ca)?;
    }
    RotatingCert::from_files(f).map(|_| ())
}

/// A server configuration serving `cert` (as it is at each handshake), offering `alpn`.
pub fn server_config(
    cert: Arc<RotatingCert>,
    alpn: &[&[u8]],
    what: &str,
) -> Result<ServerConfig, TlsError> {
    let mut cfg = builder(what)?
        .with_no_client_auth()
        .with_cert_resolver(cert);
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(cfg)
}

/// As [`server_config`] without ALPN, asking every client for a certificate that chains to
/// `ca` (and taking none).
fn with_client_ca(
    cert: Arc<RotatingCert>,
    ca: Arc<RotatingClientCa>,
    what: &str,
) -> Result<ServerConfig, TlsError> {
    Ok(builder(what)?
        .with_client_cert_verifier(ca)
        .with_cert_resolver(cert))
}

fn builder(
    what: &str,
) -> Result<rustls::ConfigBuilder<ServerConfig, rustls::WantsVerifier>, TlsError> {
    ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .map_err(|e| TlsError::Rejected {
            what: what.to_string(),
            message: format!("not a usable certificate and key: {e}"),
        })
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
