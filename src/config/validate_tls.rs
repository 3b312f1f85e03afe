//! TLS settings: the files they name are read and checked now, so a bad certificate stops
//! startup (and `check-config`) with the file's name instead of failing the first connection.

use super::validate::at;
use super::{BackendTlsMode, Config, ConfigError, ServerTls};

pub fn validate(cfg: &Config) -> Result<(), ConfigError> {
    client_certificates(cfg)?;
    match &cfg.tls {
        Some(t) => {
            if let ServerTls::Files(f) = &t.value {
                crate::tls::server::load(f).map_err(|e| at(&t.referenced, format!("tls: {e}")))?;
            }
        }
        None => {
            if cfg.require_secure_transport {
                return Err(ConfigError::Yaml(
                    "require_secure_transport: true needs `tls:` (auto or {cert, key}); without it no client could log in".into(),
                ));
            }
            if let Some(u) = cfg.users.iter().find(|u| u.value.require_tls) {
                return Err(at(
                    &u.referenced,
                    format!(
                        "user `{}`: require_tls needs `tls:` (auto or {{cert, key}}); without it the user could never log in",
                        u.value.name
                    ),
                ));
            }
        }
    }
    backends(cfg)
}

/// Users who need a client certificate need `tls.ca` to check it against; a SUBJECT or ISSUER
/// is a whole name, never empty.
fn client_certificates(cfg: &Config) -> Result<(), ConfigError> {
    let has_ca =
        matches!(&cfg.tls, Some(t) if matches!(&t.value, ServerTls::Files(f) if f.ca.is_some()));
    for u in &cfg.users {
        let user = &u.value;
        for (key, value) in [
            ("require_subject", &user.require_subject),
            ("require_issuer", &user.require_issuer),
        ] {
            if value.as_deref().is_some_and(|v| !v.starts_with('/')) {
                return Err(at(
                    &u.referenced,
                    format!(
                        "user `{}`: {key} is written as OpenSSL prints a name, starting with `/` (e.g. /C=FI/O=Example/CN=app; `openssl x509 -noout -subject -nameopt compat -in client.pem` shows it)",
                        user.name
                    ),
                ));
            }
        }
        if user.requires_certificate() && !has_ca {
            let key = if user.require_x509 {
                "require_x509"
            } else if user.require_subject.is_some() {
                "require_subject"
            } else {
                "require_issuer"
            };
            return Err(at(
                &u.referenced,
                format!(
                    "user `{}`: {key} needs `tls: {{cert, key, ca}}`, with `ca` the CA file client certificates must chain to; without it no client certificate is asked for",
                    user.name
                ),
            ));
        }
    }
    Ok(())
}

fn backends(cfg: &Config) -> Result<(), ConfigError> {
    for (name, b) in &cfg.backends {
        let t = &b.value.tls;
        let bad = |message: String| at(&b.referenced, format!("backend `{name}`: tls: {message}"));
        if t.mode == BackendTlsMode::Disabled {
            if t.ca.is_some() || t.cert.is_some() || t.key.is_some() {
                return Err(bad(
                    "ca/cert/key are set but mode is disabled (the default); set mode: preferred, required, verify_ca or verify_identity".into(),
                ));
            }
            continue;
        }
        if t.ca.is_some() && !t.mode.verifies() {
            return Err(bad(format!(
                "ca is set but mode {} does not check certificates; use verify_ca or verify_identity",
                t.mode.name()
            )));
        }
        crate::tls::backend::build(t).map_err(|e| bad(e.to_string()))?;
    }
    Ok(())
}
