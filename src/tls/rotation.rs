//! Certificates read again on reload: every listener's acceptor resolves its certificate
//! through a [`RotatingCert`], so a reload (SIGHUP, `IDGATE RELOAD`, `POST /reload`) that
//! reads new files changes what new connections get, while connections already open keep the
//! certificate they were made with. A file that does not load is refused by name, and the
//! certificate in use keeps serving.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::client_ca::RotatingClientCa;
use super::{files, provider, TlsError};
use crate::config::TlsFiles;

/// One listener's certificate and the files it comes from (`None`: generated, never re-read).
#[derive(Debug)]
pub struct RotatingCert {
    files: Option<TlsFiles>,
    current: ArcSwap<CertifiedKey>,
}

impl ResolvesServerCert for RotatingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

/// The certificate and key as rustls serves them; refuses a key that does not match.
fn certified(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    what: &str,
) -> Result<CertifiedKey, TlsError> {
    CertifiedKey::from_der(chain, key, &provider()).map_err(|e| TlsError::Rejected {
        what: what.to_string(),
        message: format!("not a usable certificate and key: {e}"),
    })
}

fn describe(f: &TlsFiles) -> String {
    format!("{} with {}", f.cert.display(), f.key.display())
}

impl RotatingCert {
    /// The certificate of `files`, re-read by [`RotatingCert::reload`].
    pub fn from_files(files: &TlsFiles) -> Result<Arc<RotatingCert>, TlsError> {
        let key = certified(
            files::certificates(&files.cert)?,
            files::private_key(&files.key)?,
            &describe(files),
        )?;
        Ok(Arc::new(RotatingCert {
            files: Some(files.clone()),
            current: ArcSwap::from_pointee(key),
        }))
    }

    /// A certificate made in memory (`tls: auto`): kept as it is across reloads.
    pub fn fixed(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Arc<RotatingCert>, TlsError> {
        Ok(Arc::new(RotatingCert {
            files: None,
            current: ArcSwap::from_pointee(certified(chain, key, "the generated certificate")?),
        }))
    }

    /// Reads the files again; on any error the certificate in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let Some(f) = &self.files else {
            return Ok(());
        };
        let key = certified(
            files::certificates(&f.cert)?,
            files::private_key(&f.key)?,
            &describe(f),
        )?;
        self.current.store(Arc::new(key));
        Ok(())
    }
}

/// Every rotating certificate of the process, read again together on reload.
#[derive(Default)]
pub struct Rotations {
    certs: Mutex<Vec<Arc<RotatingCert>>>,
    client_cas: Mutex<Vec<Arc<RotatingClientCa>>>,
}

impl Rotations {
    pub fn add(&self, cert: Arc<RotatingCert>) {
        if let Ok(mut c) = self.certs.lock() {
            c.push(cert);
        }
    }

    pub fn add_client_ca(&self, ca: Arc<RotatingClientCa>) {
        if let Ok(mut c) = self.client_cas.lock() {
            c.push(ca);
        }
    }

    /// Reads every certificate's files (and client CA files, and the backends' CA and client
    /// certificate files) again. All are checked before any is changed, so a broken file leaves
    /// every listener and backend setting as it was.
    pub fn reload_all(&self) -> Result<(), TlsError> {
        let certs: Vec<Arc<RotatingCert>> = match self.certs.lock() {
            Ok(c) => c.clone(),
            Err(_) => return Ok(()),
        };
        let cas: Vec<Arc<RotatingClientCa>> = match self.client_cas.lock() {
            Ok(c) => c.clone(),
            Err(_) => return Ok(()),
        };
        for ca in &cas {
            ca.check()?;
        }
        let backends = super::backend::reread()?;
        for c in &certs {
            if let Some(f) = &c.files {
                certified(
                    files::certificates(&f.cert)?,
                    files::private_key(&f.key)?,
                    &describe(f),
                )?;
            }
        }
        for c in &certs {
            c.reload()?;
        }
        for ca in &cas {
            ca.reload()?;
        }
        super::backend::install(backends);
        Ok(())
    }
}
