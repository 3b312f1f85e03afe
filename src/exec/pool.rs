//! A pool of connections to one backend. A session leases a connection for as long as it lives
//! (so its variables, transactions, temporary tables and prepared statements stay put); when the
//! lease ends, the connection is reset with COM_RESET_CONNECTION and only then offered again;
//! it is reset once more when the next session takes it, so that session starts from the
//! backend's global variables as they are then. With `pool.mode: transaction` a session parks
//! its connection between transactions (`pool_parking`), and a session that finds the pool full
//! takes over the one parked longest.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::sync::OwnedSemaphorePermit;

use super::backend::login_flags::KINDS;
use super::backend::{BackendConn, BackendError, CurrentDb, LoginFlags};
use super::pool_limits::PoolLimits;
use super::pool_parking::{ParkingLot, Taken, TakenOver, Ticket};
use crate::config::{Backend, PoolMode};
use crate::wire::auth::Secret;
use crate::wire::errors::{self, SqlError};

pub struct BackendPool {
    pub name: String,
    /// How new connections log in (swapped by a reload: account, timeouts).
    cfg: ArcSwap<Backend>,
    /// The cap and acquire timeout, shared with the pools of users' own accounts here.
    limits: Arc<PoolLimits>,
    /// Connections sessions parked between transactions, under the same cap as `limits`.
    lot: Arc<ParkingLot<Lease>>,
    /// Idle connections, by the client's choices they logged in with (`LoginFlags::index`).
    idle: [Mutex<Vec<BackendConn>>; KINDS],
    /// Waits, acquire times and failures, shared with the pools of users' accounts here.
    pub stats: Arc<super::pool_stats::PoolStats>,
    /// What an account read from the backend logs in with (over `cfg.password`).
    secret: Option<Secret>,
    /// A client's own account (configured or read from the backend): an idle connection logs in
    /// again (COM_CHANGE_USER) before it serves a new session, so the backend judges that login
    /// as it is now (locked, expired, dropped, renamed, privileges changed) instead of the login
    /// it accepted when the connection was opened.
    reauthenticates: bool,
    /// The backend's replication group, when it has replicas: connections open to its writable
    /// node only.
    topology: Option<Arc<super::topology::Topology>>,
    /// The node the idle connections were opened to (`host:port`): when the group's writer
    /// changes, they are dropped rather than handed out.
    idle_node: Mutex<String>,
    /// Bumped when the writable node changes: connections opened before go when given back.
    writer_generation: std::sync::atomic::AtomicU64,
    /// A pool of one replica of the group: the node every connection opens to.
    fixed_node: Option<String>,
    /// This account's pools of the group's replicas, by node, made on first use.
    node_pools: dashmap::DashMap<String, Arc<BackendPool>>,
    /// Each replica's connection cap, shared by every account's pool of it.
    node_limits: Arc<dashmap::DashMap<String, Arc<PoolLimits>>>,
}

/// What became of an idle connection readied for a new session.
enum Renewed {
    Ready,
    /// It did not answer (or answered nonsense): dropped, try the next.
    Gone,
    /// The backend refused the account's login now: the client hears why.
    Refused(BackendError),
}

/// Where a new connection's place under the cap comes from.
enum Slot {
    Permit(OwnedSemaphorePermit),
    Parked(Box<TakenOver<Lease>>),
}

/// What became of a parked connection taken over.
enum TakeOver {
    Ready(Box<Lease>, Came),
    /// It could not serve (closed): its slot opens a new connection.
    Slot(OwnedSemaphorePermit),
    Refused(BackendError),
}

/// A connection on loan to one session; goes back to the pool (after a reset) when dropped.
pub struct Lease {
    conn: Option<BackendConn>,
    pool: Arc<BackendPool>,
    permit: Option<OwnedSemaphorePermit>,
    /// The pool's writer generation when the connection was opened or handed out.
    writer_generation: u64,
    /// The replication group's node the connection is on, for a backend with replicas.
    node: Option<String>,
    /// What the session that holds it set on it (`SessionSetup::settings_key`): a session
    /// with the same key takes it over without a reset.
    pub settings: u64,
}

/// How a connection came to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Came {
    /// Opened, or reset: it has the backend's defaults.
    Fresh,
    /// Taken over from another session with the same settings: as that session left it.
    AsSet,
}

impl Lease {
    /// The pool the connection goes back to.
    pub fn pool(&self) -> &Arc<BackendPool> {
        &self.pool
    }

    /// The replication group's node the connection is on (`None`: a backend of one server).
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }
}

impl std::ops::Deref for Lease {
    type Target = BackendConn;
    fn deref(&self) -> &BackendConn {
        self.conn
            .as_ref()
            .expect("a lease holds its connection until dropped")
    }
}

impl std::ops::DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut BackendConn {
        self.conn
            .as_mut()
            .expect("a lease holds its connection until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let (Some(conn), Some(permit)) = (self.conn.take(), self.permit.take()) else {
            return;
        };
        if let (Some(t), Some(node)) = (&self.pool.topology, &self.node) {
            t.released(node, conn.connection_id);
        }
        if conn.broken {
            return; // dropping the socket closes it; the permit frees a slot
        }
        let pool = self.pool.clone();
        let generation = self.writer_generation;
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                pool.give_back(conn, generation).await;
                drop(permit);
            });
        }
    }
}

impl BackendPool {
    pub fn new(name: &str, cfg: &Backend) -> Arc<BackendPool> {
        Arc::new(BackendPool {
            name: name.to_string(),
            cfg: ArcSwap::from_pointee(cfg.clone()),
            limits: PoolLimits::new(cfg.pool.max_connections, cfg.pool.acquire_timeout_ms),
            lot: Default::default(),
            idle: Default::default(),
            stats: Default::default(),
            secret: None,
            reauthenticates: false,
            topology: super::topology::Topology::of(name, cfg),
            idle_node: Mutex::new(format!("{}:{}", cfg.host, cfg.port)),
            writer_generation: Default::default(),
            fixed_node: None,
            node_pools: Default::default(),
            node_limits: Default::default(),
        })
    }

    /// This account's pool of the group's replica `node` (`host:port`): connections log in as
    /// this pool's do, under a cap of `pool.max_connections` for that node.
    pub fn on_node(&self, node: &str) -> Arc<BackendPool> {
        if let Some(p) = self.node_pools.get(node) {
            return p.clone();
        }
        let cfg = self.cfg.load().at_node(node);
        let limits = self
            .node_limits
            .entry(node.to_string())
            .or_insert_with(|| {
                PoolLimits::new(cfg.pool.max_connections, cfg.pool.acquire_timeout_ms)
            })
            .clone();
        let pool = Arc::new(BackendPool {
            name: self.name.clone(),
            idle_node: Mutex::new(node.to_string()),
            cfg: ArcSwap::from_pointee(cfg),
            limits,
            // Replicas' connections serve reads outside transactions; none is parked.
            lot: Default::default(),
            idle: Default::default(),
            stats: self.stats.clone(),
            secret: self.secret.clone(),
            reauthenticates: self.reauthenticates,
            topology: None,
            writer_generation: Default::default(),
            fixed_node: Some(node.to_string()),
            node_pools: Default::default(),
            node_limits: self.node_limits.clone(),
        });
        self.node_pools
            .entry(node.to_string())
            .or_insert(pool)
            .clone()
    }

    /// A pool on the same backend logging in as another account (a user's own), sharing this
    /// pool's connection cap so `max_connections` bounds the backend whatever the accounts.
    pub fn for_account(&self, user: &str, password: &str) -> Arc<BackendPool> {
        self.sibling(user, password, None)
    }

    /// As [`BackendPool::for_account`] for an account read from the backend
    /// (`users_from_backend`): it logs in with what the client's login proved (`secret`).
    pub fn for_login(&self, user: &str, secret: &Secret) -> Arc<BackendPool> {
        self.sibling(user, "", Some(secret.clone()))
    }

    fn sibling(&self, user: &str, password: &str, secret: Option<Secret>) -> Arc<BackendPool> {
        let mut cfg = Backend::clone(&self.cfg.load());
        cfg.user = user.to_string();
        cfg.password = password.to_string();
        let idle_node = Mutex::new(format!("{}:{}", cfg.host, cfg.port));
        Arc::new(BackendPool {
            name: self.name.clone(),
            cfg: ArcSwap::from_pointee(cfg),
            limits: self.limits.clone(),
            lot: self.lot.clone(),
            idle: Default::default(),
            stats: self.stats.clone(),
            secret,
            reauthenticates: true,
            topology: self.topology.clone(),
            idle_node,
            writer_generation: Default::default(),
            fixed_node: None,
            node_pools: Default::default(),
            node_limits: self.node_limits.clone(),
        })
    }

    /// Whether this pool logs in with `secret` (an account read from the backend).
    pub fn logs_in_with(&self, secret: &Secret) -> bool {
        self.secret.as_ref() == Some(secret)
    }

    /// The account this pool's connections log in as.
    pub fn account(&self) -> String {
        self.cfg.load().user.clone()
    }

    /// A reload: connections opened from now on use `cfg` (account, timeouts), and the cap and
    /// acquire timeout follow its `pool` settings. Open connections are kept.
    pub fn reconfigure(&self, cfg: &Backend) {
        self.limits
            .set(cfg.pool.max_connections, cfg.pool.acquire_timeout_ms);
        for l in self.node_limits.iter() {
            l.set(cfg.pool.max_connections, cfg.pool.acquire_timeout_ms);
        }
        self.cfg.store(Arc::new(cfg.clone()));
        // Replicas' pools are made again from the new settings on next use.
        self.node_pools.clear();
    }

    /// As [`BackendPool::reconfigure`] for the pool of a user's own account: `cfg` with the
    /// account's login (the cap is the backend pool's, set there).
    pub fn reconfigure_account(&self, cfg: &Backend, user: &str, password: &str) {
        let mut cfg = cfg.clone();
        cfg.user = user.to_string();
        cfg.password = password.to_string();
        self.cfg.store(Arc::new(cfg));
        self.node_pools.clear();
    }

    fn acquire_timeout(&self) -> Duration {
        self.limits.acquire_timeout()
    }

    fn idle_list(&self, flags: LoginFlags) -> &Mutex<Vec<BackendConn>> {
        &self.idle[flags.index()]
    }

    /// Resets a returned connection and offers it again; a backend that does not answer within
    /// the acquire timeout loses the connection instead of holding a pool slot forever.
    async fn give_back(&self, conn: BackendConn, generation: u64) {
        if generation != self.writer_generation.load(Ordering::Relaxed) {
            // Opened to a node that is no longer the group's writable one.
            conn.close().await;
            return;
        }
        let flags = conn.flags;
        if let Ok(Some(conn)) =
            tokio::time::timeout(self.acquire_timeout(), Self::reset(conn)).await
        {
            if let Ok(mut idle) = self.idle_list(flags).lock() {
                idle.push(conn);
            }
        }
    }

    async fn reset(mut conn: BackendConn) -> Option<BackendConn> {
        let reset = mysql_common::constants::Command::COM_RESET_CONNECTION as u8;
        if !matches!(conn.simple_command(&[reset]).await, Ok(0x00)) {
            conn.close().await;
            return None;
        }
        conn.collation = super::backend::POOL_COLLATION;
        // The reset keeps the selected database; note which it is so the next session either
        // reuses it or gets it cleared.
        conn.database = match conn.query_rows("SELECT DATABASE()").await {
            Ok(rows) => match rows.into_iter().next().and_then(|r| r.into_iter().next()) {
                Some(Some(db)) => CurrentDb::Named(db),
                Some(None) => CurrentDb::None,
                None => CurrentDb::Unknown,
            },
            Err(_) => {
                conn.close().await;
                return None;
            }
        };
        Some(conn)
    }

    /// Takes a connection, opening one if none is idle; waits at most `acquire_timeout` for a slot.
    pub async fn acquire(self: &Arc<Self>, flags: LoginFlags) -> Result<Lease, SqlError> {
        self.acquire_for(flags, None).await.map(|(lease, _)| lease)
    }

    /// As [`BackendPool::acquire`], for a session whose settings are `settings`
    /// (`SessionSetup::settings_key`): a parked connection it takes over with the same key
    /// comes as that session left it ([`Came::AsSet`]), any other reset ([`Came::Fresh`]).
    pub async fn acquire_for(
        self: &Arc<Self>,
        flags: LoginFlags,
        settings: Option<u64>,
    ) -> Result<(Lease, Came), SqlError> {
        let t0 = std::time::Instant::now();
        let lease = self.acquire_untimed(flags, settings).await;
        if lease.is_ok() {
            self.stats.acquire.observe(t0.elapsed());
        }
        lease
    }

    async fn acquire_untimed(
        self: &Arc<Self>,
        flags: LoginFlags,
        settings: Option<u64>,
    ) -> Result<(Lease, Came), SqlError> {
        if let Some(t) = self.topology.as_ref().filter(|t| t.gate.holding()) {
            // The primary is changing: the connection opens to the new one.
            t.gate.wait(t.hold_bound, &self.name).await?;
        }
        let waiting = self.stats.waiting();
        let slot = self.slot().await?;
        drop(waiting);
        let (node, generation) = self.writable_node()?;
        let permit = match slot {
            Slot::Permit(p) => p,
            Slot::Parked(taken) => {
                match self.take_over(*taken, flags, settings, generation).await {
                    TakeOver::Ready(lease, came) => return Ok((*lease, came)),
                    TakeOver::Slot(p) => p,
                    TakeOver::Refused(e) => return Err(self.unreachable(e)),
                }
            }
        };
        loop {
            let idle = self.idle_list(flags).lock().ok().and_then(|mut l| l.pop());
            let Some(mut conn) = idle else { break };
            match self.renew(&mut conn).await {
                Renewed::Ready => {
                    return Ok((self.lease(conn, permit, generation, node), Came::Fresh))
                }
                Renewed::Gone => continue,
                Renewed::Refused(e) => return Err(self.unreachable(e)),
            }
        }
        let cfg = self.cfg_on(node.as_deref());
        let secret = self
            .secret
            .clone()
            .unwrap_or_else(|| Secret::Password(cfg.password.clone()));
        let timeout = self.acquire_timeout();
        let conn = BackendConn::connect_as(&self.name, &cfg, secret, flags, timeout)
            .await
            .map_err(|e| {
                self.stats
                    .connect_errors
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.unreachable(e)
            })?;
        Ok((self.lease(conn, permit, generation, node), Came::Fresh))
    }

    /// A free slot under the cap or, when every slot is taken and sessions share connections,
    /// the connection parked longest ago; waits at most the acquire timeout for either.
    async fn slot(&self) -> Result<Slot, SqlError> {
        let permits = self.limits.permits();
        let deadline = tokio::time::Instant::now() + self.acquire_timeout();
        loop {
            if let Ok(p) = permits.clone().try_acquire_owned() {
                return Ok(Slot::Permit(p));
            }
            if let Some(t) = self.lot.take_oldest() {
                return Ok(Slot::Parked(Box::new(t)));
            }
            tokio::select! {
                p = permits.clone().acquire_owned() => {
                    return p.map(Slot::Permit).map_err(|_| self.exhausted());
                }
                () = self.lot.wait_parked() => {}
                () = tokio::time::sleep_until(deadline) => return Err(self.exhausted()),
            }
        }
    }

    /// Readies a connection another session parked: its owner learns its LAST_INSERT_ID();
    /// then it serves as it is (same pool, login and `settings`), reset, or, when it cannot
    /// serve this pool, it is closed and its slot opens a new one.
    async fn take_over(
        self: &Arc<Self>,
        mut taken: TakenOver<Lease>,
        flags: LoginFlags,
        settings: Option<u64>,
        generation: u64,
    ) -> TakeOver {
        self.stats
            .takeovers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let timeout = self.acquire_timeout();
        let read = tokio::time::timeout(timeout, taken.conn.query_rows("SELECT LAST_INSERT_ID()"));
        let last_insert_id = match read.await {
            Ok(Ok(rows)) => rows
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next().flatten())
                .and_then(|v| String::from_utf8_lossy(&v).parse().ok())
                .unwrap_or(0),
            _ => {
                taken.conn.broken = true;
                0
            }
        };
        let mut lease = taken.tell_owner(Taken { last_insert_id });
        let same = Arc::ptr_eq(&lease.pool, self)
            && lease.flags == flags
            && lease.writer_generation == generation
            && !lease.broken;
        if same && settings == Some(lease.settings) {
            return TakeOver::Ready(Box::new(lease), Came::AsSet);
        }
        if same {
            match self.renew(&mut lease).await {
                Renewed::Ready => {
                    lease.settings = 0;
                    return TakeOver::Ready(Box::new(lease), Came::Fresh);
                }
                Renewed::Gone => {}
                Renewed::Refused(e) => {
                    lease.broken = true;
                    return TakeOver::Refused(e);
                }
            }
        }
        let (conn, permit) = (lease.conn.take(), lease.permit.take());
        if let (Some(t), Some(node), Some(c)) = (&lease.pool.topology, &lease.node, &conn) {
            t.released(node, c.connection_id);
        }
        drop(lease);
        if let Some(conn) = conn {
            conn.close().await;
        }
        match permit {
            Some(p) => TakeOver::Slot(p),
            // A lease always holds its slot; should it not, wait (bounded) for a free one.
            None => {
                match tokio::time::timeout(timeout, self.limits.permits().acquire_owned()).await {
                    Ok(Ok(p)) => TakeOver::Slot(p),
                    Ok(Err(_)) | Err(_) => TakeOver::Refused(BackendError::Login {
                        backend: self.name.clone(),
                        code: 0,
                        message: "the pool is closed".into(),
                    }),
                }
            }
        }
    }

    /// Lends `lease` out until its session takes it back (`pool.mode: transaction`).
    pub fn park(lease: Lease) -> Ticket<Lease> {
        let lot = lease.pool.lot.clone();
        lot.park(lease)
    }

    /// Whether sessions lend this pool's connections out between transactions.
    pub fn shares_connections(&self) -> bool {
        self.fixed_node.is_none() && self.cfg.load().pool.mode == PoolMode::Transaction
    }

    /// Connections parked now, over every account sharing this backend's cap.
    pub fn parked_count(&self) -> usize {
        self.lot.len()
    }

    /// The replication group's writable node, for a backend with replicas (`None` for one of a
    /// single server); idle connections to another node are dropped first.
    fn writable_node(&self) -> Result<(Option<String>, u64), SqlError> {
        if let Some(n) = &self.fixed_node {
            return Ok((Some(n.clone()), 0));
        }
        let Some(t) = &self.topology else {
            return Ok((None, 0));
        };
        let node = t.writer()?;
        // Under the lock, so the generation handed out is the one of this node.
        let mut idle_node = self.idle_node.lock().map_err(|_| self.exhausted())?;
        if *idle_node != node {
            for list in &self.idle {
                if let Ok(mut l) = list.lock() {
                    l.clear();
                }
            }
            idle_node.clone_from(&node);
            self.writer_generation.fetch_add(1, Ordering::Relaxed);
        }
        Ok((Some(node), self.writer_generation.load(Ordering::Relaxed)))
    }

    /// How new connections log in, at `node` (`host:port`) when the group's writer is not the
    /// configured address.
    fn cfg_on(&self, node: Option<&str>) -> Arc<Backend> {
        let cfg = self.cfg.load_full();
        match node {
            Some(n) if format!("{}:{}", cfg.host, cfg.port) != n => Arc::new(cfg.at_node(n)),
            _ => cfg,
        }
    }

    /// How this pool's connections log in now (the backend's settings after the last reload).
    pub fn config(&self) -> Arc<Backend> {
        self.cfg.load_full()
    }

    /// The backend's replication group, when it has replicas.
    pub fn topology(&self) -> Option<&Arc<super::topology::Topology>> {
        self.topology.as_ref()
    }

    /// Readies an idle connection for a new session. It is reset again as it is taken: the reset
    /// when the last session left copied the global variables of that moment, and a new session
    /// must start from the globals as of its own login (a `SET GLOBAL sql_mode` in between would
    /// otherwise not reach it). A client's own account logs in again instead, which resets too.
    /// Either answers only if the backend is still there, so it is the liveness check as well.
    async fn renew(&self, conn: &mut BackendConn) -> Renewed {
        let timeout = self.acquire_timeout();
        if self.reauthenticates {
            return match tokio::time::timeout(timeout, conn.change_user_no_db()).await {
                Ok(Ok(())) => Renewed::Ready,
                Ok(Err(BackendError::Server { code, message })) => {
                    Renewed::Refused(BackendError::Login {
                        backend: self.name.clone(),
                        code,
                        message,
                    })
                }
                Ok(Err(_)) | Err(_) => Renewed::Gone,
            };
        }
        // The reset keeps the selected database and the pool's character set.
        let reset = mysql_common::constants::Command::COM_RESET_CONNECTION as u8;
        match tokio::time::timeout(timeout, conn.simple_command(&[reset])).await {
            Ok(Ok(0x00)) => Renewed::Ready,
            _ => Renewed::Gone,
        }
    }

    fn lease(
        self: &Arc<Self>,
        conn: BackendConn,
        permit: OwnedSemaphorePermit,
        writer_generation: u64,
        node: Option<String>,
    ) -> Lease {
        if let (Some(t), Some(n)) = (&self.topology, &node) {
            t.leased(n, conn.connection_id);
        }
        Lease {
            conn: Some(conn),
            pool: self.clone(),
            permit: Some(permit),
            writer_generation,
            node,
            settings: 0,
        }
    }

    fn exhausted(&self) -> SqlError {
        self.stats
            .acquire_timeouts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SqlError::new(
            errors::ER_CON_COUNT_ERROR,
            b"08004",
            format!(
                "idgate: no free connection to backend `{}` within {} ms (all {} in use); \
                 raise backends.{}.pool.max_connections or acquire_timeout_ms",
                self.name,
                self.acquire_timeout().as_millis(),
                self.limits.max(),
                self.name
            ),
        )
    }

    fn unreachable(&self, e: BackendError) -> SqlError {
        match e {
            // The client's own account (read from the backend) was refused there: the client
            // gets the backend's answer, as if it had logged in directly.
            BackendError::Login { code, message, .. } if self.secret.is_some() && code != 0 => {
                login_refused(code, message)
            }
            e => SqlError::new(errors::ER_UNKNOWN_ERROR, b"HY000", format!("idgate: {e}")),
        }
    }

    /// Whether idle connections log in again before serving a new session (a client's own
    /// account): a session that logs in again on a connection it holds does the same.
    pub fn reauthenticates(&self) -> bool {
        self.reauthenticates
    }

    /// Connections currently idle (for metrics and tests).
    pub fn idle_count(&self) -> usize {
        self.idle
            .iter()
            .map(|l| l.lock().map_or(0, |l| l.len()))
            .sum()
    }

    /// Connections leased to sessions now, over every account sharing this backend's cap.
    pub fn in_use_count(&self) -> usize {
        self.limits.in_use()
    }

    /// The backend's connection cap (`pool.max_connections`).
    pub fn max_connections(&self) -> usize {
        self.limits.max()
    }

    /// Opens `min_connections` at startup so the first sessions do not pay for the logins.
    pub async fn warm_up(self: &Arc<Self>) -> Result<(), BackendError> {
        let Ok((node, _)) = self.writable_node() else {
            return Ok(()); // no writable node now: the first session opens its own
        };
        let cfg = self.cfg_on(node.as_deref());
        for _ in 0..cfg.pool.min_connections {
            let conn =
                BackendConn::connect(&self.name, &cfg, Default::default(), self.acquire_timeout())
                    .await?;
            if let Ok(mut idle) = self.idle_list(LoginFlags::default()).lock() {
                idle.push(conn);
            }
        }
        Ok(())
    }
}

/// The backend's refusal of a client's own account, as the client would have heard it logging in
/// directly (MariaDB's SQLSTATE for each code).
pub fn login_refused(code: u16, message: String) -> SqlError {
    let state = match code {
        errors::ER_ACCESS_DENIED_ERROR => b"28000",
        // ER_DBACCESS_DENIED_ERROR, ER_BAD_DB_ERROR, ER_TOO_MANY_USER_CONNECTIONS (the server's
        // max_user_connections), ER_USER_LIMIT_REACHED (the account's)
        1044 | 1049 | 1203 | 1226 => b"42000",
        // ER_CON_COUNT_ERROR, ER_NOT_SUPPORTED_AUTH_MODE
        1040 | 1251 => b"08004",
        // ER_ACCOUNT_HAS_BEEN_LOCKED, ER_MUST_CHANGE_PASSWORD_LOGIN and the rest
        _ => b"HY000",
    };
    SqlError::new(code, state, message)
}
