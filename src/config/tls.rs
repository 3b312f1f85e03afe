//! TLS settings: the top-level `tls:` (what clients connect to) and each backend's `tls:` (how
//! idgate connects to it).

use std::fmt;
use std::path::PathBuf;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Top-level `tls:`: `auto` (a self-signed certificate made at startup) or PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTls {
    Auto,
    Files(TlsFiles),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// PEM certificate chain, the server's own certificate first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// PEM file of the certificate authorities a client certificate must chain to (MariaDB's
    /// `ssl_ca`): with it the MySQL port asks every TLS client for a certificate, which users
    /// with `require_x509`, `require_subject` or `require_issuer` must present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
}

impl Serialize for ServerTls {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ServerTls::Auto => s.serialize_str("auto"),
            ServerTls::Files(f) => f.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ServerTls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ServerTls;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`auto` or {cert: <PEM file>, key: <PEM file>}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ServerTls, E> {
                if v == "auto" {
                    Ok(ServerTls::Auto)
                } else {
                    Err(E::custom(format!(
                        "tls: `{v}` is not `auto`; give `auto` or {{cert: <PEM file>, key: <PEM file>}}"
                    )))
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ServerTls, A::Error> {
                TlsFiles::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ServerTls::Files)
            }
        }
        d.deserialize_any(V)
    }
}

/// `id_service.tls` / `admin.tls`: `true` (the certificate of the top-level `tls:`) or the
/// listener's own `{cert, key}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenerTls {
    Shared,
    Files(TlsFiles),
}

impl Serialize for ListenerTls {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ListenerTls::Shared => s.serialize_bool(true),
            ListenerTls::Files(f) => f.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ListenerTls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ListenerTls;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "`true` (the `tls:` certificate) or {cert: <PEM file>, key: <PEM file>}",
                )
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ListenerTls, E> {
                if v {
                    Ok(ListenerTls::Shared)
                } else {
                    Err(E::custom(
                        "tls: false: leave `tls` out for plain TCP; give `true` (the `tls:` certificate) or {cert, key}",
                    ))
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ListenerTls, A::Error> {
                TlsFiles::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ListenerTls::Files)
            }
        }
        d.deserialize_any(V)
    }
}

/// How idgate connects to one backend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BackendTls {
    #[serde(default)]
    pub mode: BackendTlsMode,
    /// PEM file of the certificate authorities the backend's certificate must chain to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
    /// Client certificate (PEM chain) idgate presents, with `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
}

/// The modes of MySQL's `--ssl-mode`, with the same meaning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendTlsMode {
    /// Plain TCP.
    #[default]
    Disabled,
    /// TLS when the backend offers it, plain otherwise; the certificate is not checked.
    Preferred,
    /// TLS or no connection; the certificate is not checked.
    Required,
    /// TLS, and the certificate must chain to `ca`.
    VerifyCa,
    /// As `verify_ca`, and the certificate must name the backend's `host`.
    VerifyIdentity,
}

impl BackendTlsMode {
    pub fn verifies(self) -> bool {
        matches!(
            self,
            BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity
        )
    }

    /// The name used in the configuration, for messages.
    pub fn name(self) -> &'static str {
        match self {
            BackendTlsMode::Disabled => "disabled",
            BackendTlsMode::Preferred => "preferred",
            BackendTlsMode::Required => "required",
            BackendTlsMode::VerifyCa => "verify_ca",
            BackendTlsMode::VerifyIdentity => "verify_identity",
        }
    }
}
