//! What a reload replaces: the configuration and what new sessions build on it (users and their
//! hashes, the pools of users' own backend accounts). A session takes one snapshot at login and
//! keeps it; statements never take a lock to read it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::config::{AuthPluginName, Config, User};
use crate::exec::backend_accounts::UserTable;
use crate::exec::BackendPool;
use crate::wire::auth;
use crate::wire::auth::backend_users::{BackendLogin, BackendUsers};
use crate::wire::handshake::UserDb;

/// A user's own account on one backend: (backend, account user, password).
type AccountKey = (String, String, String);
/// An account read from the backend, on one backend: (backend, user).
type LoginKey = (String, Vec<u8>);

pub struct Live {
    /// Bumped by every applied reload (the first configuration is generation 1).
    pub generation: u64,
    pub config: Arc<Config>,
    pub users: UserDb,
    /// Pools of users with backend accounts of their own: user name, then backend name.
    user_pools: HashMap<Vec<u8>, HashMap<String, Arc<BackendPool>>>,
    /// The same pools by account, so a reload keeps those whose account did not change.
    accounts: HashMap<AccountKey, Arc<BackendPool>>,
    /// Pools of accounts read from the backend (`users_from_backend`), by backend and user,
    /// made as their users log in.
    login_pools: Mutex<HashMap<LoginKey, Arc<BackendPool>>>,
}

impl Live {
    /// The snapshot for `config`, on the backends' `pools`. `previous` (on a reload) lends its RSA
    /// key and the pools of accounts that stay.
    pub fn build(
        generation: u64,
        config: Config,
        pools: &HashMap<String, Arc<BackendPool>>,
        previous: Option<&Live>,
    ) -> Live {
        let mut users = auth_users(&config, previous.map(|p| &p.users.key));
        for u in &config.users {
            if u.value.require_tls {
                users.require_tls(&u.value.name);
            }
            if u.value.requires_certificate() {
                let rule = auth::users::CertRule {
                    subject: u.value.require_subject.clone(),
                    issuer: u.value.require_issuer.clone(),
                };
                users.require_cert(&u.value.name, rule);
            }
        }
        users.require_tls_for_all(config.require_secure_transport);
        users.from_backend = backend_users(&config);
        let (user_pools, accounts) = account_pools(&config, pools, previous);
        Live {
            generation,
            config: Arc::new(config),
            users,
            user_pools,
            accounts,
            login_pools: Default::default(),
        }
    }

    /// The pool a session of `user` takes its connections to `backend` from: the user's own
    /// account there, or the backend's shared one.
    /// An account read from the backend (`login`) takes its connections from a pool that logs in
    /// as that account, never from the backend's shared one.
    pub fn pool_for(
        &self,
        pools: &HashMap<String, Arc<BackendPool>>,
        backend: &str,
        user: &[u8],
        login: Option<&BackendLogin>,
    ) -> Option<Arc<BackendPool>> {
        let shared = pools.get(backend)?;
        let Some(login) = login else {
            return Some(
                self.user_pools
                    .get(user)
                    .and_then(|p| p.get(backend))
                    .unwrap_or(shared)
                    .clone(),
            );
        };
        let mut made = self.login_pools.lock().ok()?;
        let key = (backend.to_string(), user.to_vec());
        match made.get(&key) {
            Some(p) if p.logs_in_with(&login.secret) => Some(p.clone()),
            // New, or the password changed: a pool for the account as it is now.
            _ => {
                let p = shared.for_login(&login.user, &login.secret);
                made.insert(key, p.clone());
                Some(p)
            }
        }
    }

    /// The pools of users' own accounts on `backend` (those read from the backend included).
    pub fn account_pools(&self, backend: &str) -> Vec<Arc<BackendPool>> {
        let mut out: Vec<_> = self
            .accounts
            .iter()
            .filter(|(k, _)| k.0 == backend)
            .map(|(_, p)| p.clone())
            .collect();
        if let Ok(made) = self.login_pools.lock() {
            out.extend(
                made.iter()
                    .filter(|(k, _)| k.0 == backend)
                    .map(|(_, p)| p.clone()),
            );
        }
        out
    }

    /// A configured user, by the name a client logs in with.
    pub fn user(&self, name: &[u8]) -> Option<&User> {
        self.config
            .users
            .iter()
            .map(|u| &u.value)
            .find(|u| u.name.as_bytes() == name)
    }
}

/// The accounts of the backend `users_from_backend` names, read when logins need them.
fn backend_users(config: &Config) -> Option<Arc<BackendUsers>> {
    let f = &config.users_from_backend.as_ref()?.value;
    let backend = f.backend.as_ref().unwrap_or(&config.default_backend.value);
    let cfg = config.backends.get(backend)?.value.clone();
    let source = UserTable::new(backend.clone(), cfg);
    Some(Arc::new(BackendUsers::new(Box::new(source))))
}

/// One pool per distinct (backend, account) that users name; users naming the same account share
/// its pool. Pools of `previous` whose account stays are kept (with their idle connections).
#[allow(clippy::type_complexity)]
fn account_pools(
    config: &Config,
    pools: &HashMap<String, Arc<BackendPool>>,
    previous: Option<&Live>,
) -> (
    HashMap<Vec<u8>, HashMap<String, Arc<BackendPool>>>,
    HashMap<AccountKey, Arc<BackendPool>>,
) {
    let mut shared: HashMap<AccountKey, Arc<BackendPool>> = HashMap::new();
    let mut out = HashMap::new();
    for u in &config.users {
        let u = &u.value;
        let mut mine = HashMap::new();
        for (backend, pool) in pools {
            let Some(a) = u.account_for(backend) else {
                continue;
            };
            let password = a.password.clone().unwrap_or_default();
            let key = (backend.clone(), a.user.clone(), password.clone());
            let p = shared.entry(key.clone()).or_insert_with(|| {
                match previous.and_then(|p| p.accounts.get(&key)) {
                    Some(kept) => {
                        if let Some(b) = config.backends.get(backend) {
                            kept.reconfigure_account(&b.value, &a.user, &password);
                        }
                        kept.clone()
                    }
                    None => pool.for_account(&a.user, &password),
                }
            });
            mine.insert(backend.clone(), p.clone());
        }
        if !mine.is_empty() {
            out.insert(u.name.as_bytes().to_vec(), mine);
        }
    }
    (out, shared)
}

/// The configured users with their hashes (both derived from a clear-text password), the
/// greeting's plugin, and the RSA key (`key`: the one already in use), prepared in the
/// background when a user may need it.
fn auth_users(config: &Config, key: Option<&Arc<auth::rsa::KeySource>>) -> UserDb {
    let mut users = UserDb::default();
    users.default_plugin = match config.default_auth_plugin {
        AuthPluginName::MysqlNativePassword => auth::Plugin::Native,
        AuthPluginName::CachingSha2Password => auth::Plugin::CachingSha2,
    };
    users.key = match key {
        Some(k) => k.clone(),
        None => auth::rsa::KeySource::new(config.rsa_key.as_ref().map(|k| k.value.clone().into())),
    };
    for u in &config.users {
        let u = &u.value;
        let entry = match &u.password {
            Some(p) => auth::UserAuth {
                native: Some(auth::hash_password(p)),
                caching_sha2: Some(auth::hash_password_sha2(p)),
            },
            None => auth::UserAuth {
                native: u.password_hash.as_deref().and_then(auth::parse_native_hash),
                caching_sha2: u
                    .caching_sha2_hash
                    .as_deref()
                    .and_then(auth::parse_sha2_hash),
            },
        };
        users.insert(&u.name, entry);
    }
    if users.any_caching_sha2() {
        users.key.prepare();
    }
    users
}
