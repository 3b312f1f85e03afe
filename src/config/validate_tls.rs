//! TLS settings: the files they name are read and checked now, so a bad certificate stops
//! startup (and `check-config`) with the file's name instead of failing the first connection.

use super::validate::at;
use super::{BackendTlsMode, Config, ConfigError, ServerTls};

pub fn validate(cfg: &Config) -> Result<(), ConfigError> {
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
