//! Moving a table's placement while it serves (`IDGATE MIGRATE …`): a snapshot copy of each
//! source backend onto the new placement, then its binlog applied from the snapshot's position
//! until the new placement keeps up (`ready`). Jobs live in the sequence store, so whichever
//! instance holds a job's lease runs it, and a restarted or another instance takes it over.
//! Must not: hold a client session; route by itself (it asks `route` where a row goes).

pub mod binlog;
mod cluster_hold;
pub mod columns;
pub mod copy;
pub mod fence;
mod group;
pub mod hide;
mod ids;
pub mod job;
pub mod placements;
pub mod plan;
pub mod progress;
mod requests;
pub mod source;
mod start;
mod statements;
pub mod status_rows;
pub mod store;
mod switch;
mod verify;
mod write_cursor;
pub mod writer;

use std::sync::{Arc, Weak};
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::OnceCell;
use tracing::{debug, info, warn};

pub use statements::answer;

use crate::proxy::Proxy;
use store::Store;

/// How often an instance looks for jobs nobody runs (a restart, a dead instance's jobs).
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// This instance's jobs, and its way to the store. Held above the proxy (by the server, the
/// admin listener and the sessions); what statements must know of it is
/// [`crate::route::moving::Moving`] in the proxy, which the jobs fill.
pub struct Migrations {
    /// The runtime state the jobs route and connect by.
    pub proxy: Arc<Proxy>,
    /// Who this instance is in the store's leases.
    pub owner: String,
    store: OnceCell<Store>,
    pub running: DashMap<String, Arc<job::Running>>,
    /// Seconds the last SWITCH of each table held statements here (a metric).
    pub switch_holds: DashMap<String, f64>,
}

impl Migrations {
    pub fn new(proxy: Arc<Proxy>) -> Arc<Migrations> {
        let host = std::env::var("HOSTNAME").unwrap_or_default();
        Arc::new(Migrations {
            proxy,
            owner: format!(
                "{host}:{}:{:08x}",
                std::process::id(),
                rand::random::<u32>()
            ),
            store: OnceCell::new(),
            running: DashMap::new(),
            switch_holds: DashMap::new(),
        })
    }

    /// The store, its tables created on first use.
    pub async fn store(&self) -> Result<&Store, String> {
        self.store
            .get_or_try_init(|| async {
                let pool = crate::proxy::sequence_store_pool(&self.proxy.config)
                    .await
                    .map_err(|e| format!("sequence store: {e}"))?;
                Store::open(pool).await
            })
            .await
    }

    /// Runs the job in `row` here (its lease already held).
    fn run(m: &Arc<Migrations>, spec: job::Spec, store: Store, phase: String) {
        let key = spec.key.clone();
        let weak: Weak<Migrations> = Arc::downgrade(m);
        let done_key = key.clone();
        let running = job::spawn(spec, store, m.owner.clone(), phase, move |me| {
            if let Some(m) = weak.upgrade() {
                // Only this run: a run started after it (the stream back) stays.
                m.running.remove_if(&done_key, |_, r| Arc::ptr_eq(r, me));
            }
        });
        m.running.insert(key, running);
    }
}

/// Starts the stream back to the old placement of a job just switched here.
pub(crate) async fn start_reverse(m: &Arc<Migrations>, store: &Store, key: &str) {
    let proxy = &m.proxy;
    let r = async {
        if !store.claim(key, &m.owner).await? {
            return Err("another instance holds the job".to_string());
        }
        let j = store.job(key).await?.ok_or("the job is gone")?;
        start::reverse_spec_of(proxy, &j).await
    }
    .await;
    match r {
        Ok(spec) => Migrations::run(m, spec, store.clone(), "switched".into()),
        Err(e) => warn!(table = %key, error = %e, "cannot stream back to the old placement yet"),
    }
}

/// Looks for jobs no live instance runs and takes them over, and serves other instances'
/// requests for the jobs run here, until `m` is gone.
pub fn watch(m: &Arc<Migrations>) {
    requests::serve(m);
    cluster_hold::serve(m);
    let weak = Arc::downgrade(m);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let Some(m) = weak.upgrade() else {
                return;
            };
            if let Err(e) = follow_placements(&m).await {
                debug!(error = %e, "reading moved tables' placements");
            }
            if let Err(e) = take_over(&m).await {
                debug!(error = %e, "looking for migrations to run");
            }
        }
    });
}

/// Routes by the placements the store holds (at start, before any client is served, and
/// whenever another instance switched a table).
pub async fn follow_placements(m: &Arc<Migrations>) -> Result<(), String> {
    let moved = m.store().await?.placements().await?;
    placements::apply(m, &moved).await;
    Ok(())
}

async fn take_over(m: &Arc<Migrations>) -> Result<(), String> {
    let proxy = &m.proxy;
    let store = m.store().await?.clone();
    let jobs = store.jobs().await?;
    for j in jobs.iter().cloned() {
        let idle = !j.lease_live || j.owner.as_deref() == Some(m.owner.as_str());
        let active = matches!(
            j.phase.as_str(),
            "copying" | "catching_up" | "ready" | "cancelling" | "switching" | "switched"
        );
        if !active || !idle || m.running.contains_key(&j.table_key) {
            continue;
        }
        // Tables that move together are run by one instance: the one running any of them.
        let elsewhere = group::group_of(proxy, &j, &jobs)
            .iter()
            .any(|g| g.lease_live && g.owner.as_deref().is_some_and(|o| o != m.owner));
        if elsewhere {
            continue;
        }
        if !store.claim(&j.table_key, &m.owner).await? {
            continue;
        }
        if j.phase == "switched" {
            // Its stream back to the old placement, if the switch recorded one.
            if store.reverse_streams(&j.table_key).await?.is_empty() {
                store.release(&j.table_key, &m.owner).await?;
                continue;
            }
            match start::reverse_spec_of(proxy, &j).await {
                Ok(spec) => Migrations::run(m, spec, store.clone(), j.phase.clone()),
                Err(e) => {
                    warn!(table = %j.table_key, error = %e, "cannot stream back here");
                    store.release(&j.table_key, &m.owner).await?;
                }
            }
            continue;
        }
        match start::spec_of(proxy, &j).await {
            Ok(spec) => {
                info!(table = %j.table_key, phase = %j.phase, "taking over migration");
                let mut phase = j.phase.clone();
                if phase == "switching" {
                    // Its instance died in the switch, before the new placement was recorded:
                    // the old placement serves on, unfenced.
                    for s in &spec.sources {
                        if let Some(cfg) = spec.backends.get(s) {
                            fence::remove(s, cfg, &spec.schema, &spec.table).await?;
                        }
                    }
                    hide::show_all(&spec).await?;
                    store
                        .set_phase(&j.table_key, &m.owner, "ready", None)
                        .await?;
                    phase = "ready".into();
                }
                Migrations::run(m, spec, store.clone(), phase);
            }
            Err(e) => {
                warn!(table = %j.table_key, error = %e, "cannot run migration here");
                let _ = store
                    .set_phase(&j.table_key, &m.owner, "failed", Some(&e))
                    .await;
                let _ = store.release(&j.table_key, &m.owner).await;
            }
        }
    }
    Ok(())
}
