//! Logging settings: the format of idgate's log lines and the slow statement log.

use serde::{Deserialize, Serialize};

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (timestamp, level, target, fields, spans), for log shippers.
    Json,
}
