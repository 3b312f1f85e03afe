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
pub fn default_max_subquery_rows() -> u64 {
    10_000
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
    if cfg.max_subquery_rows == 0 {
        return bad("max_subquery_rows: must be at least 1".into());
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

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn with(extra: &str, user_extra: &str) -> Result<Config, String> {
        let y = format!(
            "{extra}users:\n  - name: app\n    password_hash: \"*14E65567ABDB5135D0CFD9A70B3032C179A49EE7\"\n{user_extra}\
             backends:\n  main:\n    user: u\ndefault_backend: main\n"
        );
        Config::from_yaml(&y).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_mariadbs_and_bad_values_are_named() {
        let c = with("", "").expect("defaults");
        assert_eq!(
            (c.max_connections, c.connect_timeout, c.wait_timeout),
            (151, 10, 28_800)
        );
        assert_eq!(c.backends["main"].value.query_timeout_ms, 3_600_000);
        for (extra, key) in [
            ("connect_timeout: 0\n", "connect_timeout"),
            ("wait_timeout: 0\n", "wait_timeout"),
            ("max_connections: 0\n", "max_connections"),
            ("merge_memory_limit: 10\n", "merge_memory_limit"),
            ("max_auth_failures: 0\n", "max_auth_failures"),
        ] {
            let e = with(extra, "").expect_err(key);
            assert!(e.contains(key), "{e}");
        }
        let e = with("", "    max_connections: 0\n").expect_err("user cap 0");
        assert!(
            e.starts_with("line ") && e.contains("max_connections"),
            "{e}"
        );
    }
}
