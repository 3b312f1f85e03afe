//! TLS from idgate to a backend: one client configuration per backend setting, with the
//! verification its `mode` asks for (MySQL's `--ssl-mode` meanings).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};

use super::{files, provider, TlsError, VERSIONS};
use crate::config::{BackendTls, BackendTlsMode};

/// Every client configuration built so far, by setting.
fn cache() -> &'static Mutex<HashMap<BackendTls, Arc<ClientConfig>>> {
    static CACHE: OnceLock<Mutex<HashMap<BackendTls, Arc<ClientConfig>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The client configuration for `tls`, or `None` when its mode is `disabled`. Built once per
/// distinct setting (files are read on first use, and again by [`reread`] on reload) and shared
/// by every connection.
pub fn client_config(tls: &BackendTls) -> Result<Option<Arc<ClientConfig>>, TlsError> {
    if tls.mode == BackendTlsMode::Disabled {
        return Ok(None);
    }
    let cache = cache();
    if let Some(c) = cache.lock().ok().and_then(|m| m.get(tls).cloned()) {
        return Ok(Some(c));
    }
    let built = Arc::new(build(tls)?);
    if let Ok(mut m) = cache.lock() {
        m.insert(tls.clone(), built.clone());
    }
    Ok(Some(built))
}

/// Client configurations built from their files again, for [`install`]: a reload reads rotated
/// CA files and client certificates for the connections opened after it. A file that does not
/// load is an error naming it (and nothing is installed).
pub struct Reread(Vec<(BackendTls, Arc<ClientConfig>)>);

pub fn reread() -> Result<Reread, TlsError> {
    let settings: Vec<BackendTls> = cache()
        .lock()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut fresh = Vec::with_capacity(settings.len());
    for s in settings {
        let built = Arc::new(build(&s)?);
        fresh.push((s, built));
    }
    Ok(Reread(fresh))
}

/// New backend connections use the configurations read by [`reread`]; open ones keep theirs.
pub fn install(fresh: Reread) {
    if let Ok(mut m) = cache().lock() {
        m.extend(fresh.0);
    }
}

/// Builds (and so checks) the configuration; `check-config` runs this too.
pub fn build(tls: &BackendTls) -> Result<ClientConfig, TlsError> {
    let provider = provider();
    let verifier: Arc<dyn ServerCertVerifier> = match tls.mode {
        BackendTlsMode::Disabled | BackendTlsMode::Preferred | BackendTlsMode::Required => {
            Arc::new(Unverified(provider.clone()))
        }
        BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity => {
            let Some(ca) = &tls.ca else {
                return Err(TlsError::Rejected {
                    what: format!("tls.mode: {}", tls.mode.name()),
                    message: "needs tls.ca, the PEM file of the certificate authority".into(),
                });
            };
            let roots = files::root_store(ca)?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| TlsError::Rejected {
                        what: ca.display().to_string(),
                        message: e.to_string(),
                    })?;
            if tls.mode == BackendTlsMode::VerifyCa {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(VERSIONS)
        .map_err(|e| TlsError::Rejected {
            what: "TLS versions".into(),
            message: e.to_string(),
        })?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            let chain = files::certificates(cert)?;
            let key_der = files::private_key(key)?;
            builder
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| TlsError::Rejected {
                    what: format!("{} with {}", cert.display(), key.display()),
                    message: format!("not a usable client certificate and key: {e}"),
                })
        }
        (None, None) => Ok(builder.with_no_client_auth()),
        _ => Err(TlsError::Rejected {
            what: "tls.cert / tls.key".into(),
            message: "give both the client certificate and its key, or neither".into(),
        }),
    }
}

/// The name idgate expects in the backend's certificate (checked only by `verify_identity`).
pub fn server_name(host: &str, mode: BackendTlsMode) -> Result<ServerName<'static>, String> {
    match ServerName::try_from(host.to_string()) {
        Ok(n) => Ok(n),
        Err(_) if mode != BackendTlsMode::VerifyIdentity => {
            Ok(ServerName::try_from("localhost").map_err(|e| e.to_string())?)
        }
        Err(e) => Err(format!(
            "host `{host}` is not a DNS name or IP address a certificate can name: {e}"
        )),
    }
}

/// `preferred` and `required`: encrypted, but any certificate is accepted (the handshake's
/// signature is still checked against it).
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify_ca`: the chain must lead to the CA; the host name is not compared. The WebPKI
/// verifier checks the chain before the name, so a name error means the chain was good.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
