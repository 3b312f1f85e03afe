//! Defaults and checks of the limits and timeouts (connections, idle sessions, backend answers,
//! prepared statements, merge memory, failed logins).

use super::{Config, ConfigError};

/// MariaDB's default max_connections.
pub fn default_max_connections() -> usize {
    151
}
/// MariaDB's default connect_timeout.
pub fn default_connect_timeout() -> u64 {
    10
}
/// MariaDB's default wait_timeout and interactive_timeout (8 hours).
pub fn default_wait_timeout() -> u64 {
    28_800
}
/// MariaDB's default max_prepared_stmt_count (there for the whole server, here per session).
pub fn default_max_prepared_stmt_count() -> usize {
    16_382
}
pub fn default_merge_memory_limit() -> u64 {
    256 << 20
}
pub fn default_max_auth_failures() -> u32 {
    10
}
pub fn default_auth_backoff_ms() -> u64 {
    1_000
}
/// MariaDB's default net_read_timeout.
pub fn default_net_read_timeout() -> u64 {
    30
}
/// MariaDB's default net_write_timeout.
pub fn default_net_write_timeout() -> u64 {
    60
}
/// One hour: long enough for reports and batch jobs, short enough that a hung backend ends.
pub fn default_query_timeout_ms() -> u64 {
    3_600_000
}

/// The largest timeout in seconds MariaDB accepts for wait_timeout (one year).
pub const MAX_TIMEOUT_S: u64 = 31_536_000;

pub fn validate(cfg: &Config) -> Result<(), ConfigError> {
    let bad = |m: String| Err(ConfigError::Yaml(m));
    if cfg.max_connections == 0 {
        return bad("max_connections: must be at least 1".into());
    }
    if !(1..=MAX_TIMEOUT_S).contains(&cfg.connect_timeout) {
        return bad(format!(
            "connect_timeout: {} is outside 1 ..= {MAX_TIMEOUT_S} seconds",
            cfg.connect_timeout
        ));
    }
    for (key, v) in [
        ("wait_timeout", cfg.wait_timeout),
        ("interactive_timeout", cfg.interactive_timeout),
        ("net_read_timeout", cfg.net_read_timeout),
        ("net_write_timeout", cfg.net_write_timeout),
    ] {
        if !(1..=MAX_TIMEOUT_S).contains(&v) {
            return bad(format!(
                "{key}: {v} is outside 1 ..= {MAX_TIMEOUT_S} seconds"
            ));
        }
    }
    if cfg.max_prepared_stmt_count == 0 {
        return bad("max_prepared_stmt_count: must be at least 1".into());
    }
    if cfg.merge_memory_limit < 1024 {
        return bad(format!(
            "merge_memory_limit: {} bytes is below the 1024 minimum",
            cfg.merge_memory_limit
        ));
    }
    if cfg.max_auth_failures == 0 {
        return bad("max_auth_failures: must be at least 1".into());
    }
    if !(1..=3_600_000).contains(&cfg.auth_backoff_ms) {
        return bad(format!(
            "auth_backoff_ms: {} is outside 1 ..= 3600000",
            cfg.auth_backoff_ms
        ));
    }
    for (name, b) in &cfg.backends {
        if b.value.query_timeout_ms == 0 {
            return Err(super::validate::at(
                &b.referenced,
                format!("backend `{name}`: query_timeout_ms must be at least 1"),
            ));
        }
    }
    for u in &cfg.users {
        if u.value.max_connections == Some(0) {
            return Err(super::validate::at(
                &u.referenced,
                format!(
                    "user `{}`: max_connections must be at least 1 (leave it out for no cap)",
                    u.value.name
                ),
            ));
        }
    }
    Ok(())
}
