//! Checks that YAML types alone cannot express, each reported at the line and column it concerns.

use serde_saphyr::Location;

use super::{Config, ConfigError};

pub(super) fn at(loc: &Location, message: String) -> ConfigError {
    ConfigError::Invalid {
        line: loc.line(),
        column: loc.column(),
        message,
    }
}

pub fn validate(cfg: &Config) -> Result<(), ConfigError> {
    if cfg.listen.parse::<std::net::SocketAddr>().is_err() {
        return Err(ConfigError::Yaml(format!(
            "listen: `{}` is not an address:port such as 127.0.0.1:3307",
            cfg.listen
        )));
    }
    if !(1024..=(1 << 30)).contains(&cfg.max_packet_size) {
        return Err(ConfigError::Yaml(format!(
            "max_packet_size: {} is outside 1024 ..= 1073741824 bytes",
            cfg.max_packet_size
        )));
    }
    if cfg.users.is_empty() && cfg.users_from_backend.is_none() {
        return Err(ConfigError::Yaml(
            "users: list at least one user that clients log in as (or set users_from_backend)"
                .into(),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for u in &cfg.users {
        let user = &u.value;
        if !seen.insert(user.name.as_str()) {
            return Err(at(
                &u.referenced,
                format!("user `{}` is listed twice", user.name),
            ));
        }
        if let Err(message) = check_user_secrets(user, cfg.allow_plaintext_passwords) {
            return Err(at(&u.referenced, message));
        }
    }
    if let Some(k) = &cfg.rsa_key {
        if let Err(e) = crate::wire::auth::rsa::ServerKey::load(std::path::Path::new(&k.value)) {
            return Err(at(&k.referenced, format!("rsa_key: {e}")));
        }
    }
    if cfg.backends.is_empty() {
        return Err(ConfigError::Yaml(
            "backends: define at least one backend".into(),
        ));
    }
    for (name, b) in &cfg.backends {
        if let Some(a) = b.value.failover_addresses.iter().find(|a| !is_host_port(a)) {
            return Err(at(
                &b.referenced,
                format!("backend `{name}`: failover address `{a}` is not host:port"),
            ));
        }
        if let Some(a) = b.value.replicas.iter().find(|a| !is_host_port(a)) {
            return Err(at(
                &b.referenced,
                format!("backend `{name}`: replica `{a}` is not host:port"),
            ));
        }
        let own = format!("{}:{}", b.value.host, b.value.port);
        let mut seen = std::collections::HashSet::from([own.as_str()]);
        if let Some(a) = b.value.replicas.iter().find(|a| !seen.insert(a.as_str())) {
            return Err(at(
                &b.referenced,
                format!("backend `{name}`: node `{a}` is listed twice (host or replicas)"),
            ));
        }
        if !b.value.replicas.is_empty() && b.value.poll_interval_ms == 0 {
            return Err(at(
                &b.referenced,
                format!("backend `{name}`: poll_interval_ms must be at least 1"),
            ));
        }
        if b.value.replicas.is_empty() && b.value.reads == super::schema::Reads::Replica {
            return Err(at(
                &b.referenced,
                format!(
                    "backend `{name}`: `reads: replica` needs the backend's replicas \
                     (backends.{name}.replicas: [\"host:port\", …])"
                ),
            ));
        }
        if !b.value.replicas.is_empty() && !b.value.failover_addresses.is_empty() {
            return Err(at(
                &b.referenced,
                format!(
                    "backend `{name}`: give either replicas (a replication group) or \
                     failover_addresses (a Galera cluster's other nodes), not both"
                ),
            ));
        }
        if !b.value.failover_addresses.is_empty() && name != cfg.sequence_backend() {
            return Err(at(
                &b.referenced,
                format!(
                    "backend `{name}`: failover_addresses are for the sequence store's backend \
                     (`{}`) only",
                    cfg.sequence_backend()
                ),
            ));
        }
        let p = &b.value.pool;
        if p.max_connections == 0 || p.min_connections > p.max_connections {
            return Err(at(
                &b.referenced,
                format!(
                    "backend `{name}`: pool needs 0 <= min_connections <= max_connections and max_connections >= 1"
                ),
            ));
        }
    }
    if !cfg.backends.contains_key(&cfg.default_backend.value) {
        return Err(at(
            &cfg.default_backend.referenced,
            format!(
                "default_backend `{}` is not one of the backends ({})",
                cfg.default_backend.value,
                cfg.backends.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    if cfg.migrations.copy_rest_percent > 10_000 {
        return Err(ConfigError::Yaml(format!(
            "migrations.copy_rest_percent: {} is more than 10000 (a copy resting 100 times as \
             long as it works)",
            cfg.migrations.copy_rest_percent
        )));
    }
    if let Some(f) = &cfg.users_from_backend {
        if let Some(b) = f
            .value
            .backend
            .as_ref()
            .filter(|b| !cfg.backends.contains_key(*b))
        {
            return Err(at(
                &f.referenced,
                format!("users_from_backend: backend `{b}` is not one of the backends"),
            ));
        }
    }
    for u in &cfg.users {
        let user = &u.value;
        if let Some(b) = user
            .backend_accounts
            .keys()
            .find(|b| !cfg.backends.contains_key(*b))
        {
            return Err(at(
                &u.referenced,
                format!(
                    "user `{}`: backend_accounts names `{b}`, which is not one of the backends",
                    user.name
                ),
            ));
        }
        let generators = user.generators.iter().flatten();
        if let Some(g) = generators
            .into_iter()
            .find(|g| !cfg.generators.contains_key(*g))
        {
            return Err(at(
                &u.referenced,
                format!(
                    "user `{}`: generators names `{g}`, which is not one of the generators",
                    user.name
                ),
            ));
        }
    }
    if let Some(n) = &cfg.transactions.node_id {
        let ok = !n.value.is_empty()
            && n.value.len() <= 32
            && n.value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !ok {
            return Err(at(
                &n.referenced,
                "transactions.node_id: use 1 to 32 letters, digits, `-`, `_` or `.`".into(),
            ));
        }
    }
    Ok(())
}

/// A user needs a native hash, a caching_sha2 hash (or both), or a clear-text password (demos).
fn check_user_secrets(user: &super::User, plaintext_allowed: bool) -> Result<(), String> {
    let name = &user.name;
    let hashed = user.password_hash.is_some() || user.caching_sha2_hash.is_some();
    match (&user.password, hashed) {
        (Some(_), true) => {
            return Err(format!(
                "user `{name}`: give password_hash / caching_sha2_hash or password, not both"
            ))
        }
        (None, false) => {
            return Err(format!(
                "user `{name}`: set password_hash or caching_sha2_hash (`idgate hash-password` prints both)"
            ))
        }
        (Some(_), false) if !plaintext_allowed => {
            return Err(format!(
                "user `{name}`: clear-text password needs allow_plaintext_passwords: true; use password_hash or caching_sha2_hash instead"
            ))
        }
        _ => {}
    }
    if let Some(h) = &user.password_hash {
        if crate::wire::auth::parse_native_hash(h).is_none() {
            return Err(format!(
                "user `{name}`: password_hash must be `*` and 40 hex digits, as `SELECT PASSWORD('…')` prints"
            ));
        }
    }
    if let Some(h) = &user.caching_sha2_hash {
        if crate::wire::auth::parse_sha2_hash(h).is_none() {
            return Err(format!(
                "user `{name}`: caching_sha2_hash must be 64 hex digits of SHA256(SHA256(password)), as `idgate hash-password` prints"
            ));
        }
    }
    Ok(())
}

/// `host:port`, with a host and a port number.
fn is_host_port(a: &str) -> bool {
    a.rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
}
