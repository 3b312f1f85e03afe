//! What every session of one idgate process shares: the configuration, the users, the backend
//! pools and the identity idgate shows clients.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use std::time::Duration;

use crate::config::{AuthPluginName, Config};
use crate::exec::BackendPool;
use crate::idgen::store_pool::StorePool;
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
    /// TLS for clients (`tls:`); `None`: plain TCP only.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// Logged-in sessions, in all and per user (`max_connections`).
    pub admission: Arc<crate::limits::Admission>,
    /// Failed logins per client host (`max_auth_failures`).
    pub auth_throttle: crate::limits::AuthThrottle,
    /// Prometheus metrics (served by the admin listener).
    pub metrics: Arc<crate::admin::Metrics>,
    /// Plans of statements about placed tables, by statement shape.
    pub plans: crate::route::PlanCache,
    next_connection_id: AtomicU32,
}

impl Proxy {
    pub fn new(
        config: Config,
        backend_version: &[u8],
        idgen: IdGen,
        xa: Option<Arc<crate::xa::Coordinator>>,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> Arc<Proxy> {
        let mut users = auth_users(&config);
        for u in &config.users {
            if u.value.require_tls {
                users.require_tls(&u.value.name);
            }
        }
        users.require_tls_for_all(config.require_secure_transport);
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
        let user_caps = config
            .users
            .iter()
            .filter_map(|u| Some((u.value.name.as_bytes().to_vec(), u.value.max_connections?)))
            .collect();
        let admission = crate::limits::Admission::new(config.max_connections, user_caps);
        let auth_throttle = crate::limits::AuthThrottle::new(
            config.max_auth_failures,
            std::time::Duration::from_millis(config.auth_backoff_ms),
        );
        Arc::new_cyclic(|me| Proxy {
            metrics: Arc::new(crate::admin::Metrics::new(me.clone())),
            plans: crate::route::PlanCache::new(config.plan_cache_size),
            admission,
            auth_throttle,
            idgen,
            tables,
            metadata: Default::default(),
            xa,
            tls,
            config,
            users,
            pools,
            default_pool,
            user_pools,
            server_version,
            next_connection_id: AtomicU32::new(1),
        })
    }

    /// The configuration generation plans are made for: a plan kept for an older one is not
    /// used. The configuration does not change while idgate runs, so this is 0.
    pub fn plan_generation(&self) -> u64 {
        0
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

/// The configured users with their hashes (both derived from a clear-text password), the
/// greeting's plugin, and the RSA key, prepared in the background when a user may need it.
fn auth_users(config: &Config) -> UserDb {
    let mut users = UserDb::default();
    users.default_plugin = match config.default_auth_plugin {
        AuthPluginName::MysqlNativePassword => auth::Plugin::Native,
        AuthPluginName::CachingSha2Password => auth::Plugin::CachingSha2,
    };
    users.key = auth::rsa::KeySource::new(config.rsa_key.as_ref().map(|k| k.value.clone().into()));
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

/// The sequence store's pool (on its backend and any failover nodes), with its database created
/// if missing on the first node that answers.
pub async fn sequence_store_pool(config: &Config) -> Result<StorePool, mysql_async::Error> {
    use mysql_async::prelude::Queryable;
    let b = &config.backends[config.sequence_backend()].value;
    let db = &config.sequence_store.database;
    let mut base = mysql_async::OptsBuilder::default()
        .user(Some(b.user.clone()))
        .pass(Some(b.password.clone()))
        .ssl_opts(crate::tls::sequence_store::ssl_opts(&b.tls));
    let mut addresses = vec![format!("{}:{}", b.host, b.port)];
    addresses.extend(b.failover_addresses.iter().cloned());
    // Validation made sure every address is host:port.
    let pool_on = |base: &mysql_async::OptsBuilder, db: Option<String>| {
        let nodes = addresses
            .iter()
            .filter_map(|a| {
                let (host, port) = a.rsplit_once(':')?;
                let opts = base
                    .clone()
                    .ip_or_hostname(host.to_string())
                    .tcp_port(port.parse().ok()?)
                    .db_name(db.clone());
                Some((a.clone(), mysql_async::Pool::new(opts)))
            })
            .collect();
        StorePool::nodes(nodes, STORE_NODE_ATTEMPT)
    };
    let mut conn = match pool_on(&base, None).get_conn().await {
        // `preferred` TLS falls back to plain TCP with a server that offers none.
        Err(e) if crate::tls::sequence_store::retry_plain(&b.tls, &e) => {
            base = base.ssl_opts(None);
            pool_on(&base, None).get_conn().await?
        }
        r => r?,
    };
    let quoted = db.replace('`', "``");
    conn.query_drop(format!("CREATE DATABASE IF NOT EXISTS `{quoted}`"))
        .await?;
    conn.disconnect().await?;
    Ok(pool_on(&base, Some(db.clone())))
}

/// How long one node of the sequence store may take to give a connection before the next is
/// tried.
const STORE_NODE_ATTEMPT: Duration = Duration::from_secs(2);

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
