//! The shape of idgate.yaml. Every struct rejects unknown keys; the YAML parser rejects duplicates.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address the MySQL protocol listens on.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Largest packet payload (bytes) idgate accepts from a client; larger gets ER_NET_PACKET_TOO_LARGE.
    #[serde(default = "default_max_packet")]
    pub max_packet_size: u64,
    /// How long running statements may finish after SIGTERM/SIGINT before connections are closed.
    #[serde(default = "default_grace")]
    pub shutdown_grace_ms: u64,
    /// Threads serving clients, each with its own event loop; a client stays on one thread for
    /// the life of its connection. 0 means one per CPU. One thread is the cheapest per statement
    /// when idgate shares the machine with its clients or backends; add threads when idgate
    /// alone needs more than a CPU.
    #[serde(default = "default_worker_threads")]
    pub worker_threads: usize,
    /// Allows `password:` in clear text for users. For throwaway demos only.
    #[serde(default)]
    pub allow_plaintext_passwords: bool,
    #[serde(default)]
    pub users: Vec<Spanned<User>>,
    /// Clients may also log in with the accounts of a backend (read from its `mysql.user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_from_backend: Option<Spanned<UsersFromBackend>>,
    pub backends: BTreeMap<String, Spanned<Backend>>,
    /// The backend that gets every statement not routed elsewhere.
    pub default_backend: Spanned<String>,
    /// Where `idgate_segments` and `idgate_workers` live.
    #[serde(default)]
    pub sequence_store: SequenceStore,
    /// ID generators by name (segment, snowflake, biased, uuidv7).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub generators: BTreeMap<String, Spanned<crate::idgen::config::GeneratorConfig>>,
    /// Tables whose ids idgate generates and whose rows it places, by name or `schema.name`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tables: BTreeMap<String, Spanned<super::tables::TableConfig>>,
    /// How a transaction that wrote on several backends commits.
    #[serde(default)]
    pub transactions: Transactions,
    /// How table moves (`IDGATE MIGRATE`) share the servers with the application.
    #[serde(default)]
    pub migrations: MigrationSettings,
    /// Most logged-in client sessions at once (MariaDB's max_connections); more get ERROR 1040.
    #[serde(default = "super::limits::default_max_connections")]
    pub max_connections: usize,
    /// Seconds a client has from connecting to finishing its login; then the socket is closed.
    #[serde(default = "super::limits::default_connect_timeout")]
    pub connect_timeout: u64,
    /// Seconds an idle session stays open (clients may `SET SESSION wait_timeout`).
    #[serde(default = "super::limits::default_wait_timeout")]
    pub wait_timeout: u64,
    /// wait_timeout for clients that log in with CLIENT_INTERACTIVE (the mysql CLI).
    #[serde(default = "super::limits::default_wait_timeout")]
    pub interactive_timeout: u64,
    /// Prepared statements one session may hold; more get ERROR 1461.
    #[serde(default = "super::limits::default_max_prepared_stmt_count")]
    pub max_prepared_stmt_count: usize,
    /// Bytes a GROUP BY / DISTINCT merge across shards may hold for one statement.
    #[serde(default = "super::limits::default_merge_memory_limit")]
    pub merge_memory_limit: u64,
    /// Rows a subquery or derived table over sharded tables may give idgate, which runs it
    /// first and binds its rows into the outer statement.
    #[serde(default = "super::limits::default_max_subquery_rows")]
    pub max_subquery_rows: u64,
    /// Statement plans kept by shape (`route::cache`); 0 plans every statement anew.
    #[serde(default = "default_plan_cache_size")]
    pub plan_cache_size: usize,
    /// Failed logins from one host before it must wait (`auth_backoff_ms`, doubling per failure).
    #[serde(default = "super::limits::default_max_auth_failures")]
    pub max_auth_failures: u32,
    /// First wait imposed on a host past `max_auth_failures`; doubles per further failure.
    #[serde(default = "super::limits::default_auth_backoff_ms")]
    pub auth_backoff_ms: u64,
    /// Seconds idgate waits for the rest of what a client is sending mid-command (a LOAD DATA
    /// LOCAL file, a COM_CHANGE_USER answer); MariaDB's net_read_timeout.
    #[serde(default = "super::limits::default_net_read_timeout")]
    pub net_read_timeout: u64,
    /// Seconds a client may leave an answer unread before idgate gives up on it; MariaDB's
    /// net_write_timeout.
    #[serde(default = "super::limits::default_net_write_timeout")]
    pub net_write_timeout: u64,
    /// TLS for clients: `auto` or `{cert, key}`; absent = clients connect in plain TCP only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Spanned<super::tls::ServerTls>>,
    /// Refuse every client that did not connect with TLS (MariaDB's require_secure_transport).
    #[serde(default)]
    pub require_secure_transport: bool,
    /// The authentication plugin idgate's greeting names; clients whose user has no hash for
    /// the plugin they answer with are switched to one it has.
    #[serde(default)]
    pub default_auth_plugin: AuthPluginName,
    /// PEM file with the RSA private key for caching_sha2_password without TLS; generated at
    /// start (2048 bits) when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rsa_key: Option<Spanned<String>>,
    /// The admin HTTP listener (/health, /ready, /generators, /metrics); off when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin: Option<super::ops::AdminConfig>,
    /// The ID service over HTTP and the Redis protocol; off when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_service: Option<super::ops::IdServiceConfig>,
    /// Log filter (`EnvFilter` directives, e.g. `info` or `idgate=debug`); over IDGATE_LOG, and
    /// changed by a reload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// A statement that takes longer than this many milliseconds is logged at WARN; off unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_statement_ms: Option<u64>,
    /// `text` or `json` log lines on stderr.
    #[serde(default)]
    pub log_format: super::logging::LogFormat,
}

/// Authentication plugins idgate can check as a server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthPluginName {
    /// What MariaDB names, whose version idgate shows.
    #[default]
    MysqlNativePassword,
    CachingSha2Password,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Transactions {
    /// `xa`: two-phase commit with a decision log; `best_effort`: one COMMIT per backend.
    #[serde(default)]
    pub commit: CommitMode,
    /// This idgate's name in the XA transaction ids it creates; two instances that share backends
    /// must differ. Default: the host name and the listen address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationSettings {
    /// After each chunk, the copy rests this share (in percent) of the time the chunk took
    /// (gh-ost's nice-ratio × 100): 100 halves its pace. For copies started after it is set.
    #[serde(default)]
    pub copy_rest_percent: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommitMode {
    #[default]
    Xa,
    BestEffort,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceStore {
    /// A backend name; the default backend if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Spanned<String>>,
    /// Database for idgate's own tables, created if missing.
    #[serde(default = "default_sequence_db")]
    pub database: String,
    /// On a backend with replicas, start without semi-synchronous replication: a failover may
    /// then lose acknowledged worker leases and XA decisions (segment ranges are raised again).
    #[serde(default)]
    pub allow_async_failover: bool,
}

fn default_sequence_db() -> String {
    "idgate".into()
}

impl Default for SequenceStore {
    fn default() -> Self {
        SequenceStore {
            backend: None,
            database: default_sequence_db(),
            allow_async_failover: false,
        }
    }
}

impl Config {
    /// The backend that holds the sequence store.
    pub fn sequence_backend(&self) -> &str {
        self.sequence_store
            .backend
            .as_ref()
            .map_or(&self.default_backend.value, |b| &b.value)
    }
}

/// Accounts that exist only on a backend (MaxScale's model): idgate reads their
/// mysql_native_password hashes from the backend's `mysql.user`, checks a client's login against
/// them, and logs in to every backend as that account.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UsersFromBackend {
    /// The backend whose `mysql.user` is read; default: `default_backend`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Accepted so that older configurations load; not used, since every login reads its
    /// account as it is then.
    #[serde(default = "default_accounts_max_age_ms")]
    pub max_age_ms: u64,
}

fn default_accounts_max_age_ms() -> u64 {
    1000
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    /// mysql_native_password hash as MySQL stores it: `*` and 40 hex digits of SHA1(SHA1(password)).
    /// `SELECT PASSWORD('secret')` on MariaDB prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    /// caching_sha2_password hash: 64 hex digits of SHA256(SHA256(password)), as
    /// `idgate hash-password` prints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching_sha2_hash: Option<String>,
    /// Clear-text password; needs `allow_plaintext_passwords: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Most sessions this user may hold at once (MariaDB's MAX_USER_CONNECTIONS); unset: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<u32>,
    /// `password_hash` read from this environment variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash_env: Option<String>,
    /// `password_hash` read from this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash_file: Option<String>,
    /// `caching_sha2_hash` read from this environment variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching_sha2_hash_env: Option<String>,
    /// `caching_sha2_hash` read from this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching_sha2_hash_file: Option<String>,
    /// The account this user's sessions log in to every backend with, so the backends' GRANTs
    /// apply to it; without one, the backend's own `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_account: Option<BackendAccount>,
    /// Accounts for single backends, by backend name (over `backend_account`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub backend_accounts: BTreeMap<String, BackendAccount>,
    /// Generators this user may call directly (`NEXTVAL`, `NEXT n VALUES`); all when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generators: Option<Vec<String>>,
    /// Log in only over TLS (as a MariaDB account with REQUIRE SSL).
    #[serde(default)]
    pub require_tls: bool,
    /// Log in only over TLS with a client certificate that chains to `tls.ca` (as REQUIRE X509).
    #[serde(default)]
    pub require_x509: bool,
    /// As `require_x509`, and the certificate's subject must be exactly this, written as OpenSSL
    /// prints it (`/C=FI/O=Example/CN=app`, what `openssl x509 -noout -subject -nameopt compat`
    /// shows), as REQUIRE SUBJECT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_subject: Option<String>,
    /// As `require_subject`, for the certificate's issuer (REQUIRE ISSUER).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_issuer: Option<String>,
    /// May run idgate's admin statements (`SHOW IDGATE …`, `IDGATE RELOAD`).
    #[serde(default)]
    pub admin: bool,
    /// Where this user's reads go on backends with replicas, over the backend's `reads` (a
    /// reporting user reads replicas while the application reads the primary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<Reads>,
}

/// Where reads that one server would answer the same on a replica go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reads {
    #[default]
    Primary,
    Replica,
}

/// A backend login of a user's own.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BackendAccount {
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<String>,
}

impl User {
    /// The account this user's sessions use on `backend`, if it has its own.
    pub fn account_for(&self, backend: &str) -> Option<&BackendAccount> {
        self.backend_accounts
            .get(backend)
            .or(self.backend_account.as_ref())
    }

    /// Whether the user must present a client certificate (REQUIRE X509, SUBJECT or ISSUER).
    pub fn requires_certificate(&self) -> bool {
        self.require_x509 || self.require_subject.is_some() || self.require_issuer.is_some()
    }

    /// Whether the user may call `generator` directly.
    pub fn may_call(&self, generator: &str) -> bool {
        self.generators
            .as_ref()
            .is_none_or(|g| g.iter().any(|n| n == generator))
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Backend {
    #[serde(default = "default_host")]
    pub host: String,
    #[serde(default = "default_port")]
    pub port: u16,
    pub user: String,
    #[serde(default)]
    pub password: String,
    /// `password` read from this environment variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// `password` read from this file (one trailing newline dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<String>,
    /// Other nodes holding the same data (`host:port`), tried in order when this one gives no
    /// connection; for a sequence store on a Galera cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failover_addresses: Vec<String>,
    /// The other nodes of this backend's replication group (`host:port`), reached with the same
    /// account and TLS. idgate polls every node and writes only to the one writable node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<String>,
    /// How often each node of a replication group is polled (each poll bounded by as long).
    #[serde(default = "default_poll_interval_ms")]
    pub poll_interval_ms: u64,
    /// A replica further behind its primary than this is excluded until it catches up.
    #[serde(default = "default_max_replica_lag_ms")]
    pub max_replica_lag_ms: u64,
    /// `replica`: reads one server would answer the same on a replica go to one, after it has
    /// applied the session's own writes.
    #[serde(default)]
    pub reads: Reads,
    /// Longest a read waits for a replica to apply the session's last write; then it reads
    /// the primary.
    #[serde(default = "default_causal_read_timeout_ms")]
    pub causal_read_timeout_ms: u64,
    /// The account the group's nodes replicate with after `IDGATE SWITCHOVER` points them at
    /// the new primary (`CHANGE MASTER … MASTER_USER`); the backend's own account when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_password: Option<String>,
    /// Longest `IDGATE SWITCHOVER` waits for the running transactions and then for the new
    /// primary to apply the old one's last write; past it, the switchover is undone.
    #[serde(default = "default_switchover_timeout_ms")]
    pub switchover_timeout_ms: u64,
    /// Longest `IDGATE SWITCHOVER` lets running statements and open transactions on the old
    /// primary finish (within `switchover_timeout_ms`); then their connections are ended and
    /// their clients told.
    #[serde(default = "default_switchover_drain_ms")]
    pub switchover_drain_ms: u64,
    /// When the primary stops answering, statements for the backend wait this long in idgate
    /// for another node to become writable (0: they fail at once).
    #[serde(default = "default_failover_hold_ms")]
    pub failover_hold_ms: u64,
    #[serde(default)]
    pub pool: PoolSettings,
    /// Longest wait for any answer from this backend (a statement's run included); then the
    /// connection is closed and the client gets an error naming this setting.
    #[serde(default = "super::limits::default_query_timeout_ms")]
    pub query_timeout_ms: u64,
    /// TLS to this backend (default: disabled).
    #[serde(default)]
    pub tls: super::tls::BackendTls,
}

impl Backend {
    /// A backend at `host:port` logged in to as `user`, every other setting at its default (as an
    /// entry with only those keys would be read).
    pub fn new(host: &str, port: u16, user: &str, password: &str) -> Backend {
        Backend {
            host: host.into(),
            port,
            user: user.into(),
            password: password.into(),
            password_env: None,
            password_file: None,
            failover_addresses: Vec::new(),
            replicas: Vec::new(),
            poll_interval_ms: default_poll_interval_ms(),
            max_replica_lag_ms: default_max_replica_lag_ms(),
            reads: Reads::Primary,
            causal_read_timeout_ms: default_causal_read_timeout_ms(),
            replication_user: None,
            replication_password: None,
            switchover_timeout_ms: default_switchover_timeout_ms(),
            switchover_drain_ms: default_switchover_drain_ms(),
            failover_hold_ms: default_failover_hold_ms(),
            pool: PoolSettings::default(),
            query_timeout_ms: super::limits::default_query_timeout_ms(),
            tls: Default::default(),
        }
    }
}

impl Backend {
    /// The same login at `node` (a validated `host:port` of its replication group).
    pub fn at_node(&self, node: &str) -> Backend {
        let mut on = self.clone();
        if let Some((host, port)) = node.rsplit_once(':') {
            on.host = host.to_string();
            on.port = port.parse().unwrap_or(on.port);
        }
        on
    }
}

fn default_poll_interval_ms() -> u64 {
    500
}

fn default_max_replica_lag_ms() -> u64 {
    1000
}

fn default_causal_read_timeout_ms() -> u64 {
    1000
}

fn default_switchover_timeout_ms() -> u64 {
    5000
}

fn default_switchover_drain_ms() -> u64 {
    500
}

fn default_failover_hold_ms() -> u64 {
    10_000
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSettings {
    /// Most connections idgate opens to this backend.
    #[serde(default = "default_pool_max")]
    pub max_connections: usize,
    /// Connections kept open while idle.
    #[serde(default)]
    pub min_connections: usize,
    /// How long a session waits for a free connection before it gets an error.
    #[serde(default = "default_acquire_timeout")]
    pub acquire_timeout_ms: u64,
    /// Whether a session keeps its connection (`session`) or lends it out between
    /// transactions (`transaction`).
    #[serde(default)]
    pub mode: PoolMode,
}

/// How long a session keeps a backend connection (PgBouncer's words).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolMode {
    /// From its first statement on that backend to its end.
    #[default]
    Session,
    /// For one statement outside a transaction, or one transaction; between them another
    /// session may use it, and the session's state follows it to the next connection.
    Transaction,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            max_connections: default_pool_max(),
            min_connections: 0,
            acquire_timeout_ms: default_acquire_timeout(),
            mode: PoolMode::default(),
        }
    }
}

fn default_listen() -> String {
    "127.0.0.1:3307".into()
}
fn default_max_packet() -> u64 {
    64 << 20
}
fn default_grace() -> u64 {
    10_000
}
fn default_worker_threads() -> usize {
    1
}
fn default_host() -> String {
    "127.0.0.1".into()
}
fn default_port() -> u16 {
    3306
}
fn default_pool_max() -> usize {
    128
}
fn default_acquire_timeout() -> u64 {
    5_000
}

fn default_plan_cache_size() -> usize {
    1024
}
