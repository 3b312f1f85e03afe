//! Which keys of the configuration changed, and which of those a running idgate cannot take:
//! both configurations are compared as data (the serialized YAML tree), key by key.

use serde_json::Value;

use crate::config::Config;

/// Top-level keys that apply to new sessions and new backend connections.
const LIVE_TOP: &[&str] = &[
    "users",
    "users_from_backend",
    "migrations",
    "allow_plaintext_passwords",
    "max_packet_size",
    "shutdown_grace_ms",
    "max_connections",
    "connect_timeout",
    "wait_timeout",
    "interactive_timeout",
    "max_prepared_stmt_count",
    "merge_memory_limit",
    "max_subquery_rows",
    "max_auth_failures",
    "auth_backoff_ms",
    "net_read_timeout",
    "net_write_timeout",
    "require_secure_transport",
    "default_auth_plugin",
    "log_level",
];

/// Keys of `backends.NAME` that apply to the backend's new connections.
const LIVE_BACKEND: &[&str] = &[
    "user",
    "password",
    "password_env",
    "password_file",
    "pool",
    "query_timeout_ms",
];

/// Every key whose value differs, as a dotted path (`backends.shard0.pool.max_connections`);
/// a list that differs is one key. Secrets are compared, never shown: only paths come out.
pub fn changed_keys(old: &Config, new: &Config) -> Vec<String> {
    let (Ok(a), Ok(b)) = (serde_json::to_value(old), serde_json::to_value(new)) else {
        // Both serialize (the configuration is plain data); should they not, nothing is live.
        return vec!["(the whole configuration)".into()];
    };
    let mut out = Vec::new();
    walk(&mut Vec::new(), Some(&a), Some(&b), &mut out);
    out
}

fn walk<'a>(
    path: &mut Vec<&'a str>,
    a: Option<&'a Value>,
    b: Option<&'a Value>,
    out: &mut Vec<String>,
) {
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                path.push(k);
                walk(path, x.get(k), y.get(k), out);
                path.pop();
            }
        }
        (x, y) if x == y => {}
        _ => out.push(path.join(".")),
    }
}

/// Whether a changed key takes effect without a restart.
pub fn is_live(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    match parts.as_slice() {
        [top, ..] if LIVE_TOP.contains(top) => true,
        // Sessions decide at login whether their connections move: not under them.
        ["backends", _, "pool", "mode"] => false,
        ["backends", _, k, ..] => LIVE_BACKEND.contains(k),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: &str, backend_extra: &str) -> Config {
        let y = format!(
            "{extra}users:\n  - name: app\n    password_hash: \"*14E65567ABDB5135D0CFD9A70B3032C179A49EE7\"\n\
             backends:\n  main:\n    user: u\n{backend_extra}  other:\n    user: u\n    port: 3310\n\
             default_backend: main\n\
             tables:\n  t:\n    sharding:\n      columns: [id]\n      algorithm: mod\n      shards: [main, other]\n"
        );
        Config::from_yaml(&y).expect("config")
    }

    #[test]
    fn names_each_changed_key_and_sorts_live_from_fixed() {
        let a = cfg("", "");
        assert!(changed_keys(&a, &a).is_empty());
        let b = cfg(
            "wait_timeout: 5\nlisten: 127.0.0.1:4000\n",
            "    pool:\n      max_connections: 3\n    port: 3399\n",
        );
        let keys = changed_keys(&a, &b);
        assert_eq!(
            keys,
            [
                "backends.main.pool.max_connections",
                "backends.main.port",
                "listen",
                "wait_timeout"
            ]
        );
        let fixed: Vec<_> = keys.iter().filter(|k| !is_live(k)).collect();
        assert_eq!(fixed, ["backends.main.port", "listen"]);
        let y = serde_saphyr::to_string(&a).expect("yaml");
        let c = Config::from_yaml(&y.replace("algorithm: mod", "algorithm: hash")).expect("c");
        assert_eq!(changed_keys(&a, &c), ["tables.t.sharding.algorithm"]);
        assert!(!is_live("tables.t.sharding.algorithm"));
        assert!(!is_live("backends.new"));
        assert!(is_live("users"));
        assert!(!is_live("backends.main.pool.mode"));
        assert!(is_live("backends.main.pool.acquire_timeout_ms"));
    }
}
