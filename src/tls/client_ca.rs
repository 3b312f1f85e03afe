//! Client certificates on the MySQL port (`tls.ca`, MariaDB's `ssl_ca`): every TLS client is
//! asked for one, none is required at this layer (a user without `require_x509` logs in
//! without), and one that is sent must chain to the CA file. Which user needs which certificate
//! is the login's decision. The CA file is read again on reload, like the certificates.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use super::{files, provider, TlsError};

/// The verifier of one CA file, swapped whole when a reload reads the file again.
#[derive(Debug)]
pub struct RotatingClientCa {
    file: PathBuf,
    current: ArcSwap<Arc<dyn ClientCertVerifier>>,
}

/// A verifier for certificates that chain to the CAs in `file`, with clients free to send none.
fn verifier(file: &Path) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let roots = files::root_store(file)?;
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .allow_unauthenticated()
        .build()
        .map_err(|e| TlsError::Rejected {
            what: file.display().to_string(),
            message: format!("cannot verify client certificates with it: {e}"),
        })
}

impl RotatingClientCa {
    pub fn from_file(file: &Path) -> Result<Arc<RotatingClientCa>, TlsError> {
        Ok(Arc::new(RotatingClientCa {
            file: file.to_path_buf(),
            current: ArcSwap::from_pointee(verifier(file)?),
        }))
    }

    /// Reads the file as a reload would, without using it.
    pub fn check(&self) -> Result<(), TlsError> {
        verifier(&self.file).map(|_| ())
    }

    /// Reads the file again; on any error the CAs in use stay.
    pub fn reload(&self) -> Result<(), TlsError> {
        self.current.store(Arc::new(verifier(&self.file)?));
        Ok(())
    }

    fn now(&self) -> Arc<Arc<dyn ClientCertVerifier>> {
        self.current.load_full()
    }
}

impl ClientCertVerifier for RotatingClientCa {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    /// No CA names in the request: they would have to outlive a reload. With an empty list a
    /// client sends the certificate it was given (OpenSSL and Java's key managers both do).
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.now()
            .verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.now().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.now().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.now().supported_verify_schemes()
    }
}
