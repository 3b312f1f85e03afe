//! The users clients may log in as, with the hashes each can be checked against, and what every
//! login shares: the plugin the greeting names, the full-authentication cache and the RSA key.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rand::Rng;

use super::backend_users::{BackendUsers, TlsRequirement};
use super::caching_sha2::{FullAuthCache, Sha2Hash};
use super::native::NativeHash;
use super::rsa::KeySource;
use crate::tls::peer_name::PeerCert;

/// The authentication plugins idgate speaks as a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plugin {
    Native,
    CachingSha2,
}

impl Plugin {
    pub fn name(self) -> &'static [u8] {
        match self {
            Plugin::Native => b"mysql_native_password",
            Plugin::CachingSha2 => b"caching_sha2_password",
        }
    }

    pub fn from_name(name: &[u8]) -> Option<Plugin> {
        [Plugin::Native, Plugin::CachingSha2]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

/// What idgate stores for one user: per plugin, `None` when the user has no hash for it, and
/// `Some(None)` for the empty password.
#[derive(Debug, Clone, Default)]
pub struct UserAuth {
    pub native: Option<Option<NativeHash>>,
    pub caching_sha2: Option<Option<Sha2Hash>>,
}

impl UserAuth {
    pub fn supports(&self, p: Plugin) -> bool {
        match p {
            Plugin::Native => self.native.is_some(),
            Plugin::CachingSha2 => self.caching_sha2.is_some(),
        }
    }

    /// Stands in for a user that does not exist: random hashes for both plugins, so the login
    /// runs the same exchange as for a real user (no hint which names exist) and then fails.
    fn decoy() -> UserAuth {
        let mut rng = rand::rng();
        UserAuth {
            native: Some(Some(rng.random())),
            caching_sha2: Some(Some(rng.random())),
        }
    }
}

pub struct UserDb {
    users: HashMap<Vec<u8>, UserAuth>,
    /// The plugin the greeting names.
    pub default_plugin: Plugin,
    pub cache: FullAuthCache,
    pub key: Arc<KeySource>,
    /// Users who may log in only over TLS (`require_tls`).
    tls_only: HashSet<Vec<u8>>,
    /// Everyone must (`require_secure_transport`).
    all_tls_only: bool,
    /// Users who must present a client certificate, and the names it must have.
    certs: HashMap<Vec<u8>, CertRule>,
    /// Accounts read from a backend, for names not configured here (`users_from_backend`).
    pub from_backend: Option<Arc<BackendUsers>>,
}

/// What a user's client certificate must be (REQUIRE X509 when both are `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertRule {
    pub subject: Option<String>,
    pub issuer: Option<String>,
}

impl CertRule {
    pub fn accepts(&self, peer: Option<&PeerCert>) -> bool {
        let Some(peer) = peer else {
            return false;
        };
        let matches = |want: &Option<String>, got: &str| want.as_deref().is_none_or(|w| w == got);
        matches(&self.issuer, &peer.issuer) && matches(&self.subject, &peer.subject)
    }
}

/// Why a user with a right password may not log in over this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportRefusal {
    /// The user must use TLS and did not.
    NoTls,
    /// The user's client certificate is missing or not the one required.
    Certificate,
}

impl Default for UserDb {
    fn default() -> Self {
        UserDb {
            users: HashMap::new(),
            default_plugin: Plugin::Native,
            cache: FullAuthCache::default(),
            key: KeySource::new(None),
            tls_only: HashSet::new(),
            all_tls_only: false,
            certs: HashMap::new(),
            from_backend: None,
        }
    }
}

impl UserDb {
    pub fn insert(&mut self, name: &str, auth: UserAuth) {
        self.users.insert(name.as_bytes().to_vec(), auth);
    }

    /// The user's hashes, and whether the user exists (a decoy stands in when not).
    pub fn lookup(&self, user: &[u8]) -> (UserAuth, bool) {
        match self.users.get(user) {
            Some(a) => (a.clone(), true),
            None => (UserAuth::decoy(), false),
        }
    }

    /// As [`UserDb::lookup`], falling back to the accounts read from the backend for a name not
    /// configured here; the third value is the backend account's name (and its `REQUIRE`) when it
    /// is one.
    pub async fn lookup_from(
        &self,
        user: &[u8],
        peer: &str,
    ) -> (UserAuth, bool, Option<(String, TlsRequirement)>) {
        if self.users.contains_key(user) {
            let (auth, known) = self.lookup(user);
            return (auth, known, None);
        }
        let Some(backend) = &self.from_backend else {
            return (UserAuth::decoy(), false, None);
        };
        let found = backend.find(user, peer).await;
        match found.and_then(|a| Some((String::from_utf8(a.user.clone()).ok()?, a))) {
            Some((name, a)) if a.native.is_some() => {
                let auth = UserAuth {
                    native: a.native,
                    caching_sha2: None,
                };
                if let TlsRequirement::Cipher(c) = &a.tls {
                    tracing::warn!(
                        "users_from_backend: account '{name}'@'{}' requires the cipher `{c}`, \
                         which idgate cannot check; its logins are refused",
                        a.host
                    );
                }
                (auth, true, Some((name, a.tls)))
            }
            Some((name, a)) => {
                tracing::warn!(
                    "users_from_backend: account '{name}'@'{}' uses plugin `{}`; idgate checks \
                     mysql_native_password accounts only, so the login is refused",
                    a.host,
                    a.plugin
                );
                (UserAuth::decoy(), false, None)
            }
            None => (UserAuth::decoy(), false, None),
        }
    }

    pub fn require_tls(&mut self, name: &str) {
        self.tls_only.insert(name.as_bytes().to_vec());
    }

    pub fn require_tls_for_all(&mut self, yes: bool) {
        self.all_tls_only = yes;
    }

    pub fn require_cert(&mut self, name: &str, rule: CertRule) {
        self.certs.insert(name.as_bytes().to_vec(), rule);
    }

    /// Whether `user` must be connected over TLS to log in.
    pub fn needs_tls(&self, user: &[u8]) -> bool {
        self.all_tls_only || self.tls_only.contains(user) || self.certs.contains_key(user)
    }

    /// Why `user`, whose password was right, may not log in over a connection that is
    /// `secure` (TLS) with the client certificate `peer`; `None` when it may.
    pub fn transport_refusal(
        &self,
        user: &[u8],
        secure: bool,
        peer: Option<&PeerCert>,
    ) -> Option<TransportRefusal> {
        if !secure && self.needs_tls(user) {
            return Some(TransportRefusal::NoTls);
        }
        match self.certs.get(user) {
            Some(rule) if !rule.accepts(peer) => Some(TransportRefusal::Certificate),
            _ => None,
        }
    }

    /// Whether any user can log in with caching_sha2_password (and so may need the RSA key).
    pub fn any_caching_sha2(&self) -> bool {
        self.users.values().any(|u| u.caching_sha2.is_some())
    }
}
