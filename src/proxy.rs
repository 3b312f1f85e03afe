//! What every session of one idgate process shares: the configuration, the users, the backend
//! pools and the identity idgate shows clients.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::config::Config;
use crate::exec::BackendPool;
use crate::idgen::IdGen;
use crate::route::Tables;
use crate::wire::auth;
use crate::wire::handshake::UserDb;

pub struct Proxy {
    pub config: Config,
    pub users: UserDb,
    pub pools: HashMap<String, Arc<BackendPool>>,
    pub default_pool: Arc<BackendPool>,
    /// Pools of users with backend accounts of their own: user name, then backend name.
    user_pools: HashMap<Vec<u8>, HashMap<String, Arc<BackendPool>>>,
    /// The default backend's version string plus `-idgate`, so drivers enable the same features.
    pub server_version: Vec<u8>,
    /// The configured ID generators.
    pub idgen: IdGen,
    /// The configured tables and where their rows live.
    pub tables: Tables,
    /// Column order of configured tables, read from the backends.
    pub metadata: crate::exec::metadata::MetadataCache,
    /// Two-phase commit across backends (`transactions.commit: xa` with sharded tables).
    pub xa: Option<Arc<crate::xa::Coordinator>>,
    /// Prometheus metrics (served by the admin listener).
    pub metrics: Arc<crate::admin::Metrics>,
    next_connection_id: AtomicU32,
}

impl Proxy {
    pub fn new(
        config: Config,
        backend_version: &[u8],
        idgen: IdGen,
        xa: Option<Arc<crate::xa::Coordinator>>,
    ) -> Arc<Proxy> {
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
        let user_pools = account_pools(&config, &pools);
        let mut server_version = backend_version.to_vec();
        server_version.extend_from_slice(b"-idgate");
        let tables = Tables::from_config(&config);
        Arc::new_cyclic(|me| Proxy {
            metrics: Arc::new(crate::admin::Metrics::new(me.clone())),
            idgen,
            tables,
            metadata: Default::default(),
            xa,
            config,
            users,
            pools,
            default_pool,
            user_pools,
            server_version,
            next_connection_id: AtomicU32::new(1),
        })
    }

    pub fn next_connection_id(&self) -> u32 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The pool a session of `user` takes its connections to `backend` from: the user's own
    /// account there, or the backend's shared one.
    pub fn pool_for(&self, backend: &str, user: &[u8]) -> Option<&Arc<BackendPool>> {
        self.user_pools
            .get(user)
            .and_then(|p| p.get(backend))
            .or_else(|| self.pools.get(backend))
    }

    /// The pools of users' own accounts on `backend`.
    pub fn account_pools<'a>(
        &'a self,
        backend: &'a str,
    ) -> impl Iterator<Item = &'a Arc<BackendPool>> + 'a {
        self.user_pools.values().filter_map(move |p| p.get(backend))
    }

    /// A configured user, by the name a client logs in with.
    pub fn user(&self, name: &[u8]) -> Option<&crate::config::User> {
        self.config
            .users
            .iter()
            .map(|u| &u.value)
            .find(|u| u.name.as_bytes() == name)
    }
}

/// One pool per distinct (backend, account) that users name; users naming the same account share
/// its pool.
fn account_pools(
    config: &Config,
    pools: &HashMap<String, Arc<BackendPool>>,
) -> HashMap<Vec<u8>, HashMap<String, Arc<BackendPool>>> {
    let mut shared: HashMap<(String, String, String), Arc<BackendPool>> = HashMap::new();
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
            let p = shared
                .entry(key)
                .or_insert_with(|| pool.for_account(&a.user, &password));
            mine.insert(backend.clone(), p.clone());
        }
        if !mine.is_empty() {
            out.insert(u.name.as_bytes().to_vec(), mine);
        }
    }
    out
}

/// A mysql_async pool on the sequence store, with its database created if missing.
pub async fn sequence_store_pool(config: &Config) -> Result<mysql_async::Pool, mysql_async::Error> {
    use mysql_async::prelude::Queryable;
    let b = &config.backends[config.sequence_backend()].value;
    let db = &config.sequence_store.database;
    let base = mysql_async::OptsBuilder::default()
        .ip_or_hostname(b.host.clone())
        .tcp_port(b.port)
        .user(Some(b.user.clone()))
        .pass(Some(b.password.clone()));
    let mut conn = mysql_async::Conn::new(base.clone()).await?;
    let quoted = db.replace('`', "``");
    conn.query_drop(format!("CREATE DATABASE IF NOT EXISTS `{quoted}`"))
        .await?;
    conn.disconnect().await?;
    Ok(mysql_async::Pool::new(base.db_name(Some(db.clone()))))
}

/// Builds every configured generator on the sequence store.
pub async fn build_idgen(config: &Config) -> Result<IdGen, String> {
    if config.generators.is_empty() {
        return Ok(IdGen::default());
    }
    let pool = sequence_store_pool(config)
        .await
        .map_err(|e| format!("sequence store `{}`: {e}", config.sequence_backend()))?;
    let configs = config
        .generators
        .iter()
        .map(|(k, v)| (k.clone(), v.value.clone()))
        .collect();
    IdGen::build(&configs, Some(&pool))
        .await
        .map_err(|e| e.to_string())
}

/// The XA coordinator, after recovering the prepared branches earlier runs left, when the
/// configuration commits with XA; `None` otherwise.
pub async fn start_xa(config: &Config) -> Result<Option<Arc<crate::xa::Coordinator>>, String> {
    if !crate::xa::enabled(config) {
        return Ok(None);
    }
    let pool = sequence_store_pool(config)
        .await
        .map_err(|e| format!("sequence store `{}`: {e}", config.sequence_backend()))?;
    let log = crate::xa::DecisionLog::open(pool).await?;
    let c = crate::xa::Coordinator::new(config, log);
    let out = c.recover_once().await;
    tracing::info!(
        node = %c.xids.node,
        committed = out.committed,
        rolled_back = out.rolled_back,
        left = out.left,
        unreachable = ?out.unreachable,
        "XA recovery finished"
    );
    tokio::spawn(c.clone().run_background(out.pending()));
    Ok(Some(c))
}
