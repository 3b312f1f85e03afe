//! Settings of the operator-facing listeners: the admin HTTP endpoints and the ID service.

use serde::{Deserialize, Serialize};

/// `admin:` the HTTP listener for /health, /ready, /generators and /metrics.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Address of the admin HTTP listener, e.g. `127.0.0.1:9104`.
    pub listen: String,
    /// Time each readiness check (a backend ping, the sequence store) may take.
    #[serde(default = "default_check_timeout")]
    pub check_timeout_ms: u64,
}

/// `id_service:` ids for callers that are not SQL clients, from the same generators and users.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IdServiceConfig {
    /// Address of the HTTP listener (Leaf-compatible paths and `/ids/{generator}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// Address of the Redis-protocol listener (`INCR gen`, `INCRBY gen n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resp: Option<String>,
    /// Most ids one request may ask for (`count=` over HTTP, `INCRBY` over RESP).
    #[serde(default = "default_max_count")]
    pub max_count: u64,
    /// Most Redis-protocol connections open at once; more are refused with an error.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// A Redis-protocol connection silent this long is closed.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_ms: u64,
    /// Largest Redis-protocol request (bytes); larger gets an error and the connection closes.
    #[serde(default = "default_max_frame")]
    pub max_frame_bytes: usize,
}

fn default_check_timeout() -> u64 {
    1_000
}
fn default_max_count() -> u64 {
    100_000
}
fn default_max_connections() -> usize {
    1_024
}
fn default_idle_timeout() -> u64 {
    300_000
}
fn default_max_frame() -> usize {
    64 << 10
}
