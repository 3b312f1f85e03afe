//! What every session of one idgate process shares: the configuration, the users, the backend
//! pools and the identity idgate shows clients.

pub mod end_signal;
pub mod sessions;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use std::time::Duration;

use arc_swap::ArcSwap;

use crate::config::Config;
use crate::exec::BackendPool;
use crate::idgen::store_pool::StorePool;
use crate::idgen::IdGen;
use crate::live::Live;
use crate::route::Tables;

pub struct Proxy {
    /// The configuration idgate started with. What a reload may change (users, limits, pool
    /// settings, timeouts) is read from [`Proxy::live`]; the rest a reload refuses to change,
    /// so it is the same in both.
    pub config: Config,
    /// The reloadable configuration and what is built from it; sessions snapshot it at login.
    live: ArcSwap<Live>,
    pub pools: HashMap<String, Arc<BackendPool>>,
    pub default_pool: Arc<BackendPool>,
    /// Some backend is a replication group: sessions keep what they SET, so that they can move
    /// to a new primary (a reload cannot add or remove backends).
    pub replicated: bool,
    /// Some backend lends connections between transactions (`pool.mode: transaction`).
    pub shares_connections: bool,
    /// Sessions may move to another backend connection (`replicated` or
    /// `shares_connections`): they keep what they SET and note state that pins them.
    pub sessions_move: bool,
    /// Every backend's name, the default backend's first (a database lives on each).
    pub backend_names: Vec<String>,
    /// The default backend's version string plus `-idgate`, so drivers enable the same features.
    pub server_version: Vec<u8>,
    /// The login choices the default backend honours, which idgate offers its clients.
    pub backend_offers: crate::exec::backend::LoginFlags,
    /// The configured ID generators.
    pub idgen: IdGen,
    /// The configured tables and where their rows live: the configuration's, with the
    /// placements moved tables have now (`migrate`). Swapped whole when a placement changes.
    pub tables: ArcSwap<Tables>,
    /// Bumped with every swap of `tables`, so cached plans of the old placement are not used.
    tables_generation: AtomicU64,
    /// Unique keys held across shards through lookup tables (`unique: global`).
    pub unique: Arc<crate::unique::Lookups>,
    /// Column order of configured tables, read from the backends.
    pub metadata: crate::exec::metadata::MetadataCache,
    /// Two-phase commit across backends (`transactions.commit: xa` with sharded tables).
    pub xa: Option<Arc<crate::xa::Coordinator>>,
    /// TLS for clients (`tls:`); `None`: plain TCP only.
    pub tls: Option<crate::tls::server::Acceptors>,
    /// The certificates every listener serves, read again on reload.
    pub tls_rotations: crate::tls::rotation::Rotations,
    /// Logged-in sessions, in all and per user (`max_connections`).
    pub admission: Arc<crate::limits::Admission>,
    /// Failed logins per client host (`max_auth_failures`).
    pub auth_throttle: crate::limits::AuthThrottle,
    /// Prometheus metrics (served by the admin listener).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Plans of statements about placed tables, by statement shape.
    pub plans: crate::route::PlanCache,
    /// Live sessions, for `SHOW IDGATE SESSIONS`.
    pub sessions: crate::proxy::sessions::Registry,
    /// What statements must know of tables IDGATE MIGRATE moves: the tables held while they
    /// switch and the placements that moved. `migrate` fills it and runs the jobs, above.
    pub migrations: crate::route::moving::Moving,
    /// When this process started serving (for uptime).
    pub started: std::time::Instant,
    next_connection_id: AtomicU32,
}

impl Proxy {
    pub fn new(
        config: Config,
        backend_version: &[u8],
        backend_offers: crate::exec::backend::LoginFlags,
        idgen: IdGen,
        xa: Option<Arc<crate::xa::Coordinator>>,
        tls: Option<crate::tls::server::Acceptors>,
        unique: crate::unique::Lookups,
    ) -> Arc<Proxy> {
        let pools: HashMap<_, _> = config
            .backends
            .iter()
            .map(|(name, b)| (name.clone(), BackendPool::new(name, &b.value)))
            .collect();
        let default_pool = pools[&config.default_backend.value].clone();
        let backend_names: Vec<String> = std::iter::once(config.default_backend.value.clone())
            .chain(
                config
                    .backends
                    .keys()
                    .filter(|b| **b != config.default_backend.value)
                    .cloned(),
            )
            .collect();
        let live = Live::build(1, config.clone(), &pools, None);
        let mut server_version = backend_version.to_vec();
        server_version.extend_from_slice(b"-idgate");
        let unique = Arc::new(unique);
        let tables = Tables::from_config(&config).with_lookups(unique.clone());
        let admission = crate::limits::Admission::new(config.max_connections, user_caps(&config));
        let auth_throttle = crate::limits::AuthThrottle::new(
            config.max_auth_failures,
            std::time::Duration::from_millis(config.auth_backoff_ms),
        );
        let replicated = pools.values().any(|p| p.topology().is_some());
        let shares_connections = pools.values().any(|p| p.shares_connections());
        Arc::new(Proxy {
            metrics: Arc::new(crate::metrics::Metrics::new()),
            plans: crate::route::PlanCache::new(config.plan_cache_size),
            admission,
            auth_throttle,
            idgen,
            tables: ArcSwap::from_pointee(tables),
            tables_generation: AtomicU64::new(0),
            unique,
            metadata: Default::default(),
            xa,
            tls,
            tls_rotations: Default::default(),
            config,
            live: ArcSwap::from_pointee(live),
            replicated,
            shares_connections,
            sessions_move: replicated || shares_connections,
            pools,
            default_pool,
            backend_names,
            server_version,
            backend_offers,
            sessions: Default::default(),
            migrations: Default::default(),
            started: std::time::Instant::now(),
            next_connection_id: AtomicU32::new(1),
        })
    }

    pub fn next_connection_id(&self) -> u32 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Client connections accepted so far (MariaDB's `Connections`: failed logins included).
    pub fn connections_accepted(&self) -> u64 {
        u64::from(
            self.next_connection_id
                .load(Ordering::Relaxed)
                .saturating_sub(1),
        )
    }

    /// The current reloadable configuration (a session keeps the one it logged in with).
    pub fn live(&self) -> Arc<Live> {
        self.live.load_full()
    }

    /// Replaces the reloadable configuration (a reload, after every check passed).
    pub(crate) fn set_live(&self, live: Live) {
        self.live.store(Arc::new(live));
    }

    /// The configuration generation: 1 at start, bumped by every applied reload. Plans cached
    /// under one generation are not reused under another.
    pub fn plan_generation(&self) -> u64 {
        // All only grow, so their sum changes whenever any does.
        self.live.load().generation
            + self.unique.generation()
            + self.tables_generation.load(Ordering::Acquire)
    }

    /// How many times tables were placed anew while running (moves by IDGATE MIGRATE): one
    /// atomic load, cheap enough for every relayed execution.
    pub fn tables_generation(&self) -> u64 {
        self.tables_generation.load(Ordering::Acquire)
    }

    /// Routes by `tables` from now on (a moved table's new placement).
    pub fn set_tables(&self, tables: Tables) {
        self.tables.store(Arc::new(tables));
        self.tables_generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The pools of users' own accounts on `backend`.
    pub fn account_pools(&self, backend: &str) -> std::vec::IntoIter<Arc<BackendPool>> {
        self.live.load().account_pools(backend).into_iter()
    }

    /// A configured user (as configured now), by the name a client logs in with.
    pub fn user(&self, name: &[u8]) -> Option<crate::config::User> {
        self.live.load().user(name).cloned()
    }
}

/// Users' own session caps (`users[].max_connections`).
pub(crate) fn user_caps(config: &Config) -> HashMap<Vec<u8>, u32> {
    config
        .users
        .iter()
        .filter_map(|u| Some((u.value.name.as_bytes().to_vec(), u.value.max_connections?)))
        .collect()
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
    // A replication group: its writable node holds the store.
    let group = !b.replicas.is_empty();
    addresses.extend(b.replicas.iter().cloned());
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
        match group {
            true => StorePool::group(nodes, STORE_NODE_ATTEMPT),
            false => StorePool::nodes(nodes, STORE_NODE_ATTEMPT),
        }
    };
    let mut conn = match pool_on(&base, None).get_conn().await {
        // `preferred` TLS falls back to plain TCP with a server that offers none.
        Err(e) if crate::tls::sequence_store::retry_plain(&b.tls, &e) => {
            base = base.ssl_opts(None);
            pool_on(&base, None).get_conn().await?
        }
        r => r?,
    };
    if group && !config.sequence_store.allow_async_failover {
        semi_sync_required(&mut conn, config.sequence_backend()).await?;
    }
    let quoted = db.replace('`', "``");
    conn.query_drop(format!("CREATE DATABASE IF NOT EXISTS `{quoted}`"))
        .await?;
    conn.disconnect().await?;
    Ok(pool_on(&base, Some(db.clone())))
}

/// The sequence store on a replication group needs semi-synchronous replication that waits
/// before the commit is visible (`AFTER_SYNC`): an asynchronous failover could lose worker
/// leases and XA decisions idgate was told were written.
async fn semi_sync_required(
    conn: &mut mysql_async::Conn,
    backend: &str,
) -> Result<(), mysql_async::Error> {
    use mysql_async::prelude::Queryable;
    let vars: Vec<(String, String)> = conn
        .query(
            "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES \
             WHERE VARIABLE_NAME IN ('RPL_SEMI_SYNC_MASTER_ENABLED', \
             'RPL_SEMI_SYNC_MASTER_WAIT_POINT')",
        )
        .await?;
    let is = |name: &str, want: &str| {
        vars.iter()
            .any(|(n, v)| n.eq_ignore_ascii_case(name) && v.eq_ignore_ascii_case(want))
    };
    if is("RPL_SEMI_SYNC_MASTER_ENABLED", "ON")
        && is("RPL_SEMI_SYNC_MASTER_WAIT_POINT", "AFTER_SYNC")
    {
        return Ok(());
    }
    Err(mysql_async::Error::Io(mysql_async::IoError::Io(
        std::io::Error::other(format!(
            "backend `{backend}` holds the sequence store and has replicas, but its primary does \
         not run semi-synchronous replication with rpl_semi_sync_master_enabled = ON and \
         rpl_semi_sync_master_wait_point = AFTER_SYNC: a failover could lose worker leases and \
         XA decisions idgate was told were written. Turn it on, or set \
         sequence_store.allow_async_failover: true to accept that"
        )),
    )))
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
    let mut configs = config
        .generators
        .iter()
        .map(|(k, v)| (k.clone(), v.value.clone()))
        .collect();
    // What the tables already hold decides where segment generators start and whether the
    // others may start at all.
    let held = crate::table_ids::survey(config).await;
    crate::table_ids::raise_segment_starts(&mut configs, &held);
    let idgen = IdGen::build(&configs, Some(&pool))
        .await
        .map_err(|e| e.to_string())?;
    if let Err(e) = crate::table_ids::check_generators(&idgen, &held).await {
        idgen.shutdown().await;
        return Err(e);
    }
    Ok(idgen)
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
