//! `/ready`: can this idgate serve right now? Every backend answers a ping on a pooled
//! connection, the sequence store answers, and every generator can hand out an id without
//! waiting. Each check has its own deadline, so a frozen backend makes the answer 503, not slow.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use serde_json::{json, Map, Value};
use tokio::task::JoinSet;

use crate::config::Config;
use crate::exec::BackendPool;
use crate::proxy::Proxy;

/// What the readiness checks share across requests.
pub struct Checker {
    timeout: Duration,
    /// A pool on the sequence store, when anything uses the store.
    store: Option<mysql_async::Pool>,
}

/// The outcome of every check: name → `Ok(detail)` or `Err(reason)`.
pub struct Readiness {
    pub checks: Vec<(String, Result<String, String>)>,
}

impl Readiness {
    pub fn ready(&self) -> bool {
        self.checks.iter().all(|(_, r)| r.is_ok())
    }

    pub fn to_json(&self) -> Value {
        let mut checks = Map::new();
        let mut down = Vec::new();
        for (name, r) in &self.checks {
            let v = match r {
                Ok(detail) => json!({ "ok": true, "detail": detail }),
                Err(reason) => {
                    down.push(format!("{name}: {reason}"));
                    json!({ "ok": false, "detail": reason })
                }
            };
            checks.insert(name.clone(), v);
        }
        json!({ "ready": down.is_empty(), "down": down, "checks": checks })
    }
}

impl Checker {
    pub fn new(config: &Config, timeout: Duration) -> Checker {
        let uses_store = !config.generators.is_empty() || crate::xa::enabled(config);
        Checker {
            timeout,
            store: uses_store.then(|| store_pool(config)),
        }
    }

    pub async fn check(&self, proxy: &Arc<Proxy>) -> Readiness {
        let mut tasks = JoinSet::new();
        let mut backends: Vec<_> = proxy.pools.iter().collect();
        backends.sort_by(|a, b| a.0.cmp(b.0));
        for (name, pool) in backends {
            let (pool, timeout) = (pool.clone(), self.timeout);
            let name = format!("backend {name}");
            tasks.spawn(async move { (name, ping_backend(pool, timeout).await) });
        }
        if let Some(store) = self.store.clone() {
            let (timeout, backend) = (self.timeout, proxy.config.sequence_backend().to_string());
            tasks.spawn(async move {
                let name = format!("sequence store (on backend {backend})");
                (name, ping_store(store, timeout).await)
            });
        }
        let mut checks = Vec::new();
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok(c) => checks.push(c),
                Err(e) => checks.push(("check".into(), Err(format!("check failed: {e}")))),
            }
        }
        checks.sort_by(|a, b| a.0.cmp(&b.0));
        let store_ok = checks
            .iter()
            .all(|(n, r)| !n.starts_with("sequence store") || r.is_ok());
        for (name, g) in proxy.idgen.iter() {
            checks.push((format!("generator {name}"), generator_ready(g, store_ok)));
        }
        // A moved table whose configuration file says otherwise: reported, never failing.
        let tables = proxy.tables.load();
        for r in tables.rules() {
            if let Some((key, Some(paste))) = crate::migrate::placements::moved_placement(proxy, r)
            {
                checks.push((
                    format!("table {key}"),
                    Ok(format!(
                        "routed by the placement IDGATE MIGRATE recorded; the configuration \
                         says otherwise: put `{paste}` under tables:"
                    )),
                ));
            }
        }
        Readiness { checks }
    }
}

/// A pooled connection (opened if none is idle) answers COM_PING in time.
pub async fn ping_backend(pool: Arc<BackendPool>, timeout: Duration) -> Result<String, String> {
    let t0 = Instant::now();
    let ping = async {
        let mut lease = pool
            .acquire(Default::default())
            .await
            .map_err(|e| e.message)?;
        // Until the answer is read the connection's state is unknown: if the deadline cuts
        // the ping short, the pool must drop it rather than reuse it.
        lease.broken = true;
        let cmd = mysql_common::constants::Command::COM_PING as u8;
        match lease.simple_command(&[cmd]).await {
            Ok(0x00) => {
                lease.broken = false;
                Ok(())
            }
            Ok(other) => Err(format!("ping answered with packet 0x{other:02x}")),
            Err(e) => Err(e.to_string()),
        }
    };
    match tokio::time::timeout(timeout, ping).await {
        Ok(Ok(())) => Ok(format!("ping {} us", t0.elapsed().as_micros())),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

async fn ping_store(pool: mysql_async::Pool, timeout: Duration) -> Result<String, String> {
    let t0 = Instant::now();
    let ping = async {
        let mut conn = pool.get_conn().await?;
        conn.query_drop("DO 1").await?;
        Ok::<_, mysql_async::Error>(())
    };
    match tokio::time::timeout(timeout, ping).await {
        Ok(Ok(())) => Ok(format!("round trip {} us", t0.elapsed().as_micros())),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

/// Whether `g` can hand out an id now without waiting: a segment generator with ids buffered
/// (or a store to fetch from), a snowflake kind whose worker-id lease is valid.
fn generator_ready(g: &crate::idgen::Generator, store_ok: bool) -> Result<String, String> {
    if let Some(s) = g.as_segment() {
        let (cur, standby) = s.buffered();
        let left = cur + standby.unwrap_or(0);
        return if left > 0 || store_ok {
            Ok(format!("{left} ids buffered"))
        } else {
            let e = s.last_error();
            Err(format!(
                "no ids buffered and the store is down (last error: {e})"
            ))
        };
    }
    if let Some((left_ms, why)) = super::generators::lease_status(g) {
        return match why {
            None => Ok(format!("worker-id lease valid for {left_ms} ms")),
            Some(why) => Err(why),
        };
    }
    Ok("ready".into())
}

/// A mysql_async pool on the sequence store's database (connects on first use).
fn store_pool(config: &Config) -> mysql_async::Pool {
    let b = &config.backends[config.sequence_backend()].value;
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname(b.host.clone())
        .tcp_port(b.port)
        .user(Some(b.user.clone()))
        .pass(Some(b.password.clone()))
        .db_name(Some(config.sequence_store.database.clone()))
        .pool_opts(
            mysql_async::PoolOpts::default()
                .with_constraints(mysql_async::PoolConstraints::new(0, 2).unwrap_or_default()),
        );
    mysql_async::Pool::new(opts)
}
