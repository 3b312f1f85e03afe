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
    /// Logged-in sessions, in all and per user (`max_connections`).
    pub admission: Arc<crate::limits::Admission>,
    /// Failed logins per client host (`max_auth_failures`).
    pub auth_throttle: crate::limits::AuthThrottle,
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
        Arc::new(Proxy {
            admission,
            auth_throttle,
            idgen,
            tables,
            metadata: Default::default(),
            xa,
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
