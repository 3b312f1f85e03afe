//! Settings of the operator-facing listeners: the admin HTTP endpoints and the ID service.

use serde::{Deserialize, Serialize};

use super::ListenerTls;

/// `admin:` the HTTP listener for /health, /ready, /generators and /metrics.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Address of the admin HTTP listener, e.g. `127.0.0.1:9104`.
    pub listen: String,
    /// Time each readiness check (a backend ping, the sequence store) may take.
    #[serde(default = "default_check_timeout")]
    pub check_timeout_ms: u64,
    /// HTTPS: `true` (the `tls:` certificate) or `{cert, key}`; plain HTTP when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ListenerTls>,
    /// Most connections open at once: scrapers and probes need few. A new one past it closes an
    /// idle one, or is refused when all are working.
    #[serde(default = "default_admin_max_connections")]
    pub max_connections: usize,
    /// Most connections of one client host.
    #[serde(default = "default_admin_max_connections_per_host")]
    pub max_connections_per_host: usize,
    /// A connection silent this long is closed.
    #[serde(default = "default_admin_idle_timeout")]
    pub idle_timeout_ms: u64,
    /// A request's headers must be complete within this of their first byte.
    #[serde(default = "default_admin_request_timeout")]
    pub request_timeout_ms: u64,
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
    /// Also the most bytes of an HTTP request's headers (431) and body (413).
    #[serde(default = "default_max_frame")]
    pub max_frame_bytes: usize,
    /// Time an HTTP request's headers (and the next request on a kept-alive connection), or a
    /// Redis-protocol request once its first byte came, may take to arrive.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_ms: u64,
    /// Time a connection has to log in (Redis protocol) or send its first request (HTTP).
    #[serde(default = "default_login_timeout")]
    pub login_timeout_ms: u64,
    /// Connections one client host may hold on each listener (at most `max_connections`).
    #[serde(default = "default_max_connections_per_host")]
    pub max_connections_per_host: usize,
    /// TLS on both listeners (HTTPS, Redis protocol over TLS): `true` (the `tls:` certificate)
    /// or `{cert, key}`; plain TCP when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ListenerTls>,
    /// Accept passwords (HTTP Basic, `AUTH`) over plain TCP on a non-loopback address.
    #[serde(default)]
    pub allow_plaintext_auth: bool,
    /// The idgate user whose generator rights apply to HTTP requests without credentials, as
    /// Leaf's clients send them; only on a loopback `http` address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous_user: Option<String>,
}

fn default_check_timeout() -> u64 {
    1_000
}
fn default_admin_max_connections() -> usize {
    64
}
fn default_admin_max_connections_per_host() -> usize {
    32
}
fn default_admin_idle_timeout() -> u64 {
    30_000
}
fn default_admin_request_timeout() -> u64 {
    10_000
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
fn default_request_timeout() -> u64 {
    10_000
}
fn default_login_timeout() -> u64 {
    5_000
}
fn default_max_connections_per_host() -> usize {
    256
}

/// Checks the listeners' settings (addresses, bounds).
pub(super) fn validate(cfg: &super::Config) -> Result<(), super::ConfigError> {
    let bad = |m: String| Err(super::ConfigError::Yaml(m));
    let addr = |key: &str, a: &str| {
        if a.parse::<std::net::SocketAddr>().is_err() {
            return bad(format!(
                "{key}: `{a}` is not an address:port such as 127.0.0.1:9104"
            ));
        }
        Ok(())
    };
    if let Some(a) = &cfg.admin {
        addr("admin.listen", &a.listen)?;
        listener_tls(cfg, "admin.tls", &a.tls)?;
        if !(1..=60_000).contains(&a.check_timeout_ms) {
            return bad(format!(
                "admin.check_timeout_ms: {} is outside 1 ..= 60000",
                a.check_timeout_ms
            ));
        }
        for (key, n) in [
            ("max_connections", a.max_connections),
            ("max_connections_per_host", a.max_connections_per_host),
        ] {
            if n == 0 {
                return bad(format!("admin.{key}: must be at least 1"));
            }
        }
        for (key, ms) in [
            ("idle_timeout_ms", a.idle_timeout_ms),
            ("request_timeout_ms", a.request_timeout_ms),
        ] {
            if ms < 100 {
                return bad(format!("admin.{key}: {ms} is below 100"));
            }
        }
    }
    let Some(s) = &cfg.id_service else {
        return Ok(());
    };
    if s.http.is_none() && s.resp.is_none() {
        return bad("id_service: give `http`, `resp` or both (the addresses to listen on)".into());
    }
    if let Some(h) = &s.http {
        addr("id_service.http", h)?;
    }
    if let Some(r) = &s.resp {
        addr("id_service.resp", r)?;
    }
    let max_block = crate::idgen::segment::MAX_BLOCK;
    if !(1..=max_block).contains(&s.max_count) {
        return bad(format!(
            "id_service.max_count: {} is outside 1 ..= {max_block}",
            s.max_count
        ));
    }
    if s.max_connections == 0 {
        return bad("id_service.max_connections: must be at least 1".into());
    }
    if !(256..=(16 << 20)).contains(&s.max_frame_bytes) {
        return bad(format!(
            "id_service.max_frame_bytes: {} is outside 256 ..= 16777216",
            s.max_frame_bytes
        ));
    }
    for (key, ms) in [
        ("idle_timeout_ms", s.idle_timeout_ms),
        ("request_timeout_ms", s.request_timeout_ms),
        ("login_timeout_ms", s.login_timeout_ms),
    ] {
        if ms < 100 {
            return bad(format!("id_service.{key}: {ms} is below 100"));
        }
    }
    if s.max_connections_per_host == 0 {
        return bad("id_service.max_connections_per_host: must be at least 1".into());
    }
    listener_tls(cfg, "id_service.tls", &s.tls)?;
    if let Some(name) = &s.anonymous_user {
        // Callers without credentials are trusted by where they connect from: this host only.
        let loopback = s.http.as_deref().is_some_and(|a| {
            a.parse::<std::net::SocketAddr>()
                .is_ok_and(|a| a.ip().is_loopback())
        });
        if !loopback {
            return bad(format!(
                "id_service.anonymous_user: requests without credentials are accepted only on a \
                 loopback id_service.http address (Leaf clients on this host, or a local proxy \
                 that authenticates them); {} is not one",
                s.http.as_deref().unwrap_or("no http listener")
            ));
        }
        if !cfg.users.iter().any(|u| u.value.name == *name) {
            return bad(format!(
                "id_service.anonymous_user: `{name}` is not one of the users"
            ));
        }
    }
    if s.tls.is_none() && !s.allow_plaintext_auth {
        for (key, a) in [("id_service.http", &s.http), ("id_service.resp", &s.resp)] {
            let Some(a) = a else { continue };
            let loopback = a
                .parse::<std::net::SocketAddr>()
                .is_ok_and(|a| a.ip().is_loopback());
            if !loopback {
                return bad(format!(
                    "{key}: {a} is not a loopback address, and without id_service.tls the passwords \
                     callers send would cross the network in clear; set id_service.tls (`true` for \
                     the `tls:` certificate, or {{cert, key}}), or id_service.allow_plaintext_auth: \
                     true to accept that"
                ));
            }
        }
    }
    Ok(())
}

/// A listener's `tls`: `true` needs the top-level certificate; files must load.
fn listener_tls(
    cfg: &super::Config,
    key: &str,
    tls: &Option<ListenerTls>,
) -> Result<(), super::ConfigError> {
    let bad = |m: String| Err(super::ConfigError::Yaml(m));
    match tls {
        None => Ok(()),
        Some(ListenerTls::Shared) if cfg.tls.is_none() => bad(format!(
            "{key}: true uses the certificate of the top-level `tls:`, which is not set; set `tls:` or give {key}: {{cert, key}}"
        )),
        Some(ListenerTls::Shared) => Ok(()),
        Some(ListenerTls::Files(f)) if f.ca.is_some() => bad(format!(
            "{key}.ca: client certificates are asked for on the MySQL port only (top-level `tls.ca`); leave ca out here"
        )),
        Some(ListenerTls::Files(f)) => match crate::tls::server::load(f) {
            Ok(_) => Ok(()),
            Err(e) => bad(format!("{key}: {e}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    const BASE: &str = "users: [{name: a, password_hash: ''}]
backends: {b: {user: u}}
default_backend: b
";

    fn check(extra: &str) -> Result<Config, String> {
        Config::from_yaml(&format!("{BASE}{extra}")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_bounds() {
        let c =
            check("admin: {listen: 127.0.0.1:9104}\nid_service: {resp: 127.0.0.1:6380}\n").unwrap();
        assert_eq!(c.admin.unwrap().check_timeout_ms, 1000);
        let s = c.id_service.unwrap();
        assert_eq!(
            (
                s.max_count,
                s.max_connections,
                s.max_frame_bytes,
                s.idle_timeout_ms
            ),
            (100_000, 1024, 65536, 300_000)
        );
        assert_eq!(
            (
                s.request_timeout_ms,
                s.login_timeout_ms,
                s.max_connections_per_host
            ),
            (10_000, 5_000, 256)
        );
        assert!(check("").unwrap().admin.is_none());
        // Plain TCP off loopback only when the configuration says so; the admin listener takes
        // no passwords.
        check("id_service: {http: 0.0.0.0:1, allow_plaintext_auth: true}\n").unwrap();
        check("tls: auto\nid_service: {http: 0.0.0.0:1, resp: '[::]:2', tls: true}\n").unwrap();
        check("admin: {listen: 0.0.0.0:1}\n").unwrap();
        check("id_service: {http: '[::1]:1'}\n").unwrap();
        check("id_service: {http: 127.0.0.1:1, anonymous_user: a}\n").unwrap();
        for (yaml, says) in [
            (
                "admin: {listen: nowhere}\n",
                "admin.listen: `nowhere` is not an address",
            ),
            (
                "admin: {listen: 127.0.0.1:1, check_timeout_ms: 0}\n",
                "check_timeout_ms: 0",
            ),
            ("id_service: {}\n", "give `http`, `resp` or both"),
            (
                "id_service: {http: 0.0.0.0:1, allow_plaintext_auth: true, anonymous_user: a}\n",
                "accepted only on a loopback id_service.http address",
            ),
            (
                "id_service: {resp: 127.0.0.1:1, anonymous_user: a}\n",
                "no http listener",
            ),
            (
                "id_service: {http: 127.0.0.1:1, anonymous_user: nobody}\n",
                "`nobody` is not one of the users",
            ),
            ("id_service: {http: x}\n", "id_service.http: `x`"),
            (
                "id_service: {resp: 127.0.0.1:1, max_count: 0}\n",
                "max_count: 0",
            ),
            (
                "id_service: {resp: 127.0.0.1:1, max_connections: 0}\n",
                "max_connections",
            ),
            (
                "id_service: {resp: 127.0.0.1:1, max_frame_bytes: 10}\n",
                "max_frame_bytes: 10",
            ),
            (
                "id_service: {resp: 127.0.0.1:1, idle_timeout_ms: 5}\n",
                "idle_timeout_ms: 5",
            ),
            (
                "id_service: {resp: 127.0.0.1:1, request_timeout_ms: 0}\n",
                "request_timeout_ms: 0 is below 100",
            ),
            (
                "id_service: {resp: 127.0.0.1:1, login_timeout_ms: 1}\n",
                "login_timeout_ms: 1",
            ),
            (
                "id_service: {resp: 127.0.0.1:1, max_connections_per_host: 0}\n",
                "max_connections_per_host",
            ),
            (
                "id_service: {http: 0.0.0.0:1}\n",
                "id_service.http: 0.0.0.0:1 is not a loopback address",
            ),
            (
                "id_service: {resp: 10.1.2.3:1}\n",
                "set id_service.tls",
            ),
            (
                "id_service: {resp: 127.0.0.1:1, tls: true}\n",
                "id_service.tls: true uses the certificate of the top-level `tls:`, which is not set",
            ),
            (
                "admin: {listen: 0.0.0.0:1, tls: true}\n",
                "admin.tls: true uses",
            ),
            (
                "admin: {listen: 0.0.0.0:1, tls: {cert: /nonexistent.pem, key: /k.pem}}\n",
                "admin.tls: cannot read /nonexistent.pem",
            ),
            ("id_service: {resp: 127.0.0.1:1, tls: false}\n", "leave `tls` out"),
            ("admin: {listen: 127.0.0.1:1, port: 3}\n", "port"),
        ] {
            let e = check(yaml).unwrap_err();
            assert!(e.contains(says), "{yaml}: {e}");
        }
    }
}
