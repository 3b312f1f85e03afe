//! The log filter behind a `tracing_subscriber::reload` layer, so `log_level` changes on reload.

use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

use crate::config::LogFormat;

static HANDLE: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();

/// What applies without `log_level`: IDGATE_LOG, else `info`.
fn from_env() -> EnvFilter {
    EnvFilter::try_from_env("IDGATE_LOG").unwrap_or_else(|_| EnvFilter::new("info"))
}

/// Installs the process's subscriber: lines to stderr as text or JSON (`log_format`), through
/// a filter a reload can replace.
pub fn init(format: LogFormat) {
    let (filter, handle) = reload::Layer::new(from_env());
    let text = (format == LogFormat::Text)
        .then(|| tracing_subscriber::fmt::layer().with_writer(std::io::stderr));
    let json = (format == LogFormat::Json).then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
    });
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(text)
        .with(json)
        .try_init();
    if installed.is_ok() {
        let _ = HANDLE.set(handle);
    }
}

/// Sets the filter to `level` (validated with the configuration), or back to IDGATE_LOG's.
/// Without a subscriber from [`init`] (idgate used as a library) there is nothing to change.
pub fn apply(level: Option<&str>) -> Result<(), String> {
    let Some(h) = HANDLE.get() else {
        return Ok(());
    };
    let filter = match level {
        Some(l) => EnvFilter::try_new(l).map_err(|e| e.to_string())?,
        None => from_env(),
    };
    h.reload(filter).map_err(|e| e.to_string())
}
