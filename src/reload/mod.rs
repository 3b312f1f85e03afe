//! Live reload (SIGHUP, `IDGATE RELOAD`): the configuration file is read and validated again;
//! users, limits, timeouts, pool settings, backend accounts and the log level take effect for new
//! sessions and new backend connections. A change a running idgate cannot take (a listen address,
//! a table's placement, a backend's address, a generator, …) refuses the whole reload, naming
//! each such key, and the running configuration stays as it was. It must not change what a
//! running session holds: sessions keep the snapshot they started with, so a reload never
//! moves a statement mid-flight to other rules.

pub mod diff;
pub mod log_filter;

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use tracing::{info, warn};

use crate::config::{Config, ConfigError};
use crate::live::Live;
use crate::proxy::Proxy;

#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("idgate was not started from a configuration file, so there is nothing to reload")]
    NoFile,
    #[error("{path}: {source}; the running configuration is kept")]
    Invalid { path: String, source: ConfigError },
    #[error(
        "{path}: these keys cannot change while idgate runs: {}; restore them (or restart \
         idgate to change them); the running configuration is kept",
        .keys.join(", ")
    )]
    Refused { path: String, keys: Vec<String> },
    #[error("cannot read the configuration file: {0}; the running configuration is kept")]
    Read(String),
    #[error(
        "{0}; every listener keeps serving the certificate it had, and the running \
         configuration is kept"
    )]
    Certificate(crate::tls::TlsError),
}

/// A reload that took effect.
#[derive(Debug, Clone)]
pub struct Applied {
    pub generation: u64,
    /// The keys that changed (dotted paths); empty if the file was unchanged.
    pub changed: Vec<String>,
}

/// The last reload: when, what asked for it, and its outcome (the new generation, or why not).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub at: SystemTime,
    pub trigger: &'static str,
    pub result: Result<u64, String>,
}

/// The file reloads read, one reload at a time, and the last outcome. Held above the proxy (by
/// the admin layer's `Control` and the SIGHUP task), not in it.
#[derive(Default)]
pub struct Reloads {
    path: OnceLock<PathBuf>,
    running: tokio::sync::Mutex<()>,
    last: Mutex<Option<Outcome>>,
}

impl Reloads {
    /// Set once at start when idgate runs from a file.
    pub fn set_path(&self, path: PathBuf) {
        let _ = self.path.set(path);
    }

    pub fn path(&self) -> Option<&PathBuf> {
        self.path.get()
    }

    pub fn last(&self) -> Option<Outcome> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn record(&self, o: Outcome) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(o);
    }
}

/// Reads the file again and applies it if every change can be taken live; logs the outcome.
pub async fn reload(
    proxy: &Proxy,
    reloads: &Reloads,
    trigger: &'static str,
) -> Result<Applied, ReloadError> {
    let _one_at_a_time = reloads.running.lock().await;
    let r = read_and_apply(proxy, reloads).await;
    match &r {
        Ok(a) => info!(
            trigger,
            generation = a.generation,
            changed = %a.changed.join(", "),
            "configuration reloaded"
        ),
        Err(e) => warn!(trigger, error = %e, "configuration reload refused"),
    }
    reloads.record(Outcome {
        at: SystemTime::now(),
        trigger,
        result: r.as_ref().map(|a| a.generation).map_err(|e| e.to_string()),
    });
    r
}

async fn read_and_apply(proxy: &Proxy, reloads: &Reloads) -> Result<Applied, ReloadError> {
    let path = reloads.path().ok_or(ReloadError::NoFile)?.clone();
    let shown = path.display().to_string();
    // Secrets named by `*_file` keys are read too: off the event loop.
    let read = tokio::task::spawn_blocking(move || Config::from_file(&path))
        .await
        .map_err(|e| ReloadError::Read(e.to_string()))?;
    let new = read.map_err(|source| ReloadError::Invalid {
        path: shown.clone(),
        source,
    })?;
    let current = proxy.live();
    let changed = diff::changed_keys(&current.config, &new);
    let fixed: Vec<String> = changed
        .iter()
        .filter(|k| !diff::is_live(k))
        .cloned()
        .collect();
    if !fixed.is_empty() {
        return Err(ReloadError::Refused {
            path: shown,
            keys: fixed,
        });
    }
    // Certificate files are read again whether or not the configuration changed: rotating a
    // certificate replaces the files under the same names.
    proxy
        .tls_rotations
        .reload_all()
        .map_err(ReloadError::Certificate)?;
    if changed.is_empty() {
        // Nothing to apply: the generation (and every plan cached under it) stays.
        return Ok(Applied {
            generation: current.generation,
            changed,
        });
    }
    // Every check passed: from here nothing fails, so the configuration changes whole.
    let generation = current.generation + 1;
    for (name, b) in &new.backends {
        if let Some(pool) = proxy.pools.get(name) {
            pool.reconfigure(&b.value);
        }
    }
    proxy
        .admission
        .set_limits(new.max_connections, crate::proxy::user_caps(&new));
    proxy.auth_throttle.set(
        new.max_auth_failures,
        std::time::Duration::from_millis(new.auth_backoff_ms),
    );
    if let Err(e) = log_filter::apply(new.log_level.as_deref()) {
        warn!(error = %e, "could not change the log filter");
    }
    let live = Live::build(generation, new, &proxy.pools, Some(&current));
    proxy.set_live(live);
    Ok(Applied {
        generation,
        changed,
    })
}

/// Reloads on every SIGHUP for as long as the process runs.
#[cfg(unix)]
pub fn on_sighup(
    proxy: std::sync::Arc<Proxy>,
    reloads: std::sync::Arc<Reloads>,
    mut hup: tokio::signal::unix::Signal,
) {
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            // The outcome is logged and kept for SHOW IDGATE STATUS.
            let _ = reload(&proxy, &reloads, "SIGHUP").await;
        }
    });
}
