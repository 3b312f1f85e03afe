//! PEM files: certificate chains and private keys, with errors that name the file.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::TlsError;

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Every certificate in a PEM file; at least one.
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let data = read(path)?;
    let pem_err = |message: String| TlsError::Pem {
        path: path.display().to_string(),
        message,
    };
    let certs = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_err(format!("not a valid PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(pem_err(
            "holds no certificate (expected -----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(certs)
}

/// The certificate authorities in a PEM file, as rustls trusts them.
pub fn root_store(path: &Path) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(path)? {
        roots.add(cert).map_err(|e| TlsError::Pem {
            path: path.display().to_string(),
            message: format!("not a usable CA certificate: {e}"),
        })?;
    }
    Ok(roots)
}

/// The first private key in a PEM file.
pub fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let data = read(path)?;
    PrivateKeyDer::from_pem_slice(&data).map_err(|e| TlsError::Pem {
        path: path.display().to_string(),
        message: match e {
            rustls::pki_types::pem::Error::NoItemsFound => {
                "holds no private key (expected -----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY or EC PRIVATE KEY)"
                    .into()
            }
            e => format!("not a valid PEM private key: {e}"),
        },
    })
}
