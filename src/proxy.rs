//! What every session of one idgate process shares: the configuration, the users, the backend
//! pools and the identity idgate shows clients.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::config::Config;
use crate::exec::BackendPool;
use crate::wire::auth;
use crate::wire::handshake::UserDb;

pub struct Proxy {
    pub config: Config,
    pub users: UserDb,
    pub pools: HashMap<String, Arc<BackendPool>>,
    pub default_pool: Arc<BackendPool>,
    /// The default backend's version string plus `-idgate`, so drivers enable the same features.
    pub server_version: Vec<u8>,
    next_connection_id: AtomicU32,
}

impl Proxy {
    pub fn new(config: Config, backend_version: &[u8]) -> Arc<Proxy> {
        let mut users = UserDb::default();
        for u in &config.users {
            let u = &u.value;
            let hash = match (&u.password_hash, &u.password) {
                (Some(h), _) => auth::parse_native_hash(h).flatten(),
                (None, Some(p)) => auth::hash_password(p),
                (None, None) => None,
            };
            users.insert(&u.name, hash);
        }
        let pools: HashMap<_, _> = config
            .backends
            .iter()
            .map(|(name, b)| (name.clone(), BackendPool::new(name, &b.value)))
            .collect();
        let default_pool = pools[&config.default_backend.value].clone();
        let mut server_version = backend_version.to_vec();
        server_version.extend_from_slice(b"-idgate");
        Arc::new(Proxy {
            config,
            users,
            pools,
            default_pool,
            server_version,
            next_connection_id: AtomicU32::new(1),
        })
    }

    pub fn next_connection_id(&self) -> u32 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }
}
