//! idgate's YAML configuration: the schema, its defaults, and validation that points at the line
//! and column of the mistake. Nothing here touches the network.
//! Must not: hold runtime state; what is derived from it lives in `proxy`.

mod limits;
mod log_level;
mod logging;
pub mod ops;
mod schema;
mod secrets;
pub mod tables;
pub mod tls;
mod validate;
pub mod validate_tables;
mod validate_tls;

pub use logging::LogFormat;
pub use schema::{
    AuthPluginName, Backend, BackendAccount, CommitMode, Config, PoolMode, PoolSettings, Reads,
    SequenceStore, Transactions, User,
};
pub use tls::{BackendTls, BackendTlsMode, ListenerTls, ServerTls, TlsFiles};

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Yaml(String),
    #[error("line {line}, column {column}: {message}")]
    Invalid {
        line: u64,
        column: u64,
        message: String,
    },
}

/// The configuration `idgate demo` runs on: two local shards and a plaintext demo user.
pub const EMBEDDED_DEMO: &str = include_str!("../../conf/demo.yaml");

impl Config {
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        let cfg: Config = serde_saphyr::from_str(text).map_err(|e| {
            // The parser's hint is about its own API; tell the user what to do instead.
            let msg = e.to_string().replace(
                ", set DuplicateKeyPolicy in Options if acceptable",
                " (each key may appear only once)",
            );
            ConfigError::Yaml(msg)
        })?;
        let mut cfg = cfg;
        secrets::resolve(&mut cfg)?;
        validate::validate(&cfg)?;
        validate_tables::validate(&cfg)?;
        validate_tls::validate(&cfg)?;
        limits::validate(&cfg)?;
        ops::validate(&cfg)?;
        log_level::validate(&cfg)?;
        Ok(cfg)
    }

    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_yaml(&text)
    }

    /// The effective configuration (defaults filled in) as YAML, secrets masked.
    pub fn to_effective_yaml(&self) -> String {
        let mut shown = self.clone();
        for b in shown.backends.values_mut() {
            if !b.value.password.is_empty() {
                b.value.password = "********".into();
            }
            if b.value.replication_password.is_some() {
                b.value.replication_password = Some("********".into());
            }
        }
        for b in shown.backends.values_mut() {
            if b.value.password_env.is_some() || b.value.password_file.is_some() {
                b.value.password.clear();
            }
        }
        for u in shown.users.iter_mut() {
            let u = &mut u.value;
            if u.password.is_some() {
                u.password = Some("********".into());
            }
            if u.password_hash_env.is_some() || u.password_hash_file.is_some() {
                u.password_hash = None;
            }
            if u.caching_sha2_hash_env.is_some() || u.caching_sha2_hash_file.is_some() {
                u.caching_sha2_hash = None;
            }
            let accounts = u
                .backend_account
                .iter_mut()
                .chain(u.backend_accounts.values_mut());
            for a in accounts {
                a.password = match (&a.password_env, &a.password_file) {
                    (None, None) => Some("********".into()),
                    _ => None,
                };
            }
        }
        serde_saphyr::to_string(&shown).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }
}
