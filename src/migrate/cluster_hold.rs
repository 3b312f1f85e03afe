//! A SWITCH or REVERSE holds statements about its tables on every live idgate instance, not only
//! on the one that runs it, so that no instance still routing by the old placement writes there
//! once the switch has begun (it would meet the fence, or on a backend that keeps the table
//! match nothing behind the view of `hide`). Each instance beats in the sequence store
//! (`idgate_instances`) and looks for switches under way (`idgate_switch_holds`) every
//! `LOOK_EVERY`; it holds their tables and says so (`idgate_switch_acks`). The switching
//! instance goes on only once every live instance has said so, within `ACK_WAIT`, else the
//! switch is refused naming the instances that did not. When the switch's row goes, each
//! instance reads the placements the store records and lets its held statements go on to them.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use tracing::{debug, warn};

use super::store::{bounded, Store};
use super::Migrations;
use crate::idgen::store::DB_NOW_MS;

const CREATE_INSTANCES: &str = "CREATE TABLE IF NOT EXISTS idgate_instances (\
    instance VARCHAR(100) NOT NULL PRIMARY KEY, \
    seen_ms BIGINT NOT NULL) ENGINE=InnoDB";
const CREATE_HOLDS: &str = "CREATE TABLE IF NOT EXISTS idgate_switch_holds (\
    table_key VARCHAR(200) NOT NULL PRIMARY KEY, \
    switching_by VARCHAR(100) NOT NULL, \
    expires_ms BIGINT NOT NULL) ENGINE=InnoDB";
const CREATE_ACKS: &str = "CREATE TABLE IF NOT EXISTS idgate_switch_acks (\
    table_key VARCHAR(200) NOT NULL, \
    instance VARCHAR(100) NOT NULL, \
    PRIMARY KEY (table_key, instance)) ENGINE=InnoDB";

/// How often an instance looks for switches under way.
const LOOK_EVERY: Duration = Duration::from_millis(200);
/// How often an instance says it is alive.
const BEAT_EVERY: Duration = Duration::from_secs(1);
/// An instance not heard from for this long is not waited for.
const LIVE_MS: i64 = 3_000;
/// How long a switch waits for every live instance to hold its tables.
const ACK_WAIT: Duration = Duration::from_secs(2);
/// A switch's hold ends by itself after this, should its instance die mid-switch (each held
/// statement waits at most `route::hold::HOLD_TIMEOUT` anyway).
const EXPIRES_MS: i64 = 60_000;
/// Instances not heard from for this long are forgotten.
const FORGET_MS: i64 = 86_400_000;

pub async fn create_tables(store: &Store) -> Result<(), String> {
    let mut c = store.conn().await?;
    for sql in [CREATE_INSTANCES, CREATE_HOLDS, CREATE_ACKS] {
        bounded(c.query_drop(sql)).await?;
    }
    Ok(())
}

/// Statements about `keys` held on every live instance, until [`Everywhere::release`].
pub struct Everywhere {
    store: Store,
    keys: Vec<String>,
}

impl Everywhere {
    /// Ends the hold: the other instances read the placements the store records now and let
    /// their statements go on.
    pub async fn release(self) {
        if let Err(e) = forget(&self.store, &self.keys).await {
            warn!(tables = ?self.keys, error = %e, "cannot end the hold on other instances; it \
                  ends by itself within a minute");
        }
    }
}

async fn forget(store: &Store, keys: &[String]) -> Result<(), String> {
    let mut c = store.conn().await?;
    for k in keys {
        bounded(c.exec_drop("DELETE FROM idgate_switch_holds WHERE table_key = ?", (k,))).await?;
        bounded(c.exec_drop("DELETE FROM idgate_switch_acks WHERE table_key = ?", (k,))).await?;
    }
    Ok(())
}

/// Asks every live instance to hold statements about `keys` and waits until each says it does.
pub async fn hold_everywhere(
    migrations: &Migrations,
    store: &Store,
    keys: &[String],
) -> Result<Everywhere, String> {
    let me = &migrations.owner;
    let everywhere = Everywhere {
        store: store.clone(),
        keys: keys.to_vec(),
    };
    let asked = async {
        let mut c = store.conn().await?;
        for k in keys {
            bounded(c.exec_drop("DELETE FROM idgate_switch_acks WHERE table_key = ?", (k,)))
                .await?;
            bounded(c.exec_drop(
                format!(
                    "REPLACE INTO idgate_switch_holds (table_key, switching_by, expires_ms) \
                     VALUES (?, ?, {DB_NOW_MS} + ?)"
                ),
                (k, me, EXPIRES_MS),
            ))
            .await?;
        }
        Ok::<_, String>(())
    }
    .await;
    if let Err(e) = asked {
        everywhere.release().await;
        return Err(format!(
            "cannot ask the other idgate instances to hold: {e}"
        ));
    }
    let deadline = Instant::now() + ACK_WAIT;
    loop {
        let missing = match not_holding(store, me, keys).await {
            Ok(m) => m,
            Err(e) => {
                everywhere.release().await;
                return Err(format!("cannot read which idgate instances hold: {e}"));
            }
        };
        if missing.is_empty() {
            return Ok(everywhere);
        }
        if Instant::now() > deadline {
            everywhere.release().await;
            return Err(format!(
                "the idgate instances {} did not hold statements about the table within {} ms \
                 (each looks every {} ms); try again, or stop the ones that are gone",
                missing.into_iter().collect::<Vec<_>>().join(", "),
                ACK_WAIT.as_millis(),
                LOOK_EVERY.as_millis()
            ));
        }
        tokio::time::sleep(LOOK_EVERY / 2).await;
    }
}

/// Live instances other than `me` that have not said they hold every one of `keys`.
async fn not_holding(store: &Store, me: &str, keys: &[String]) -> Result<BTreeSet<String>, String> {
    let mut c = store.conn().await?;
    let live: Vec<String> = bounded(c.exec(
        format!(
            "SELECT instance FROM idgate_instances WHERE seen_ms > {DB_NOW_MS} - ? AND \
             instance <> ?"
        ),
        (LIVE_MS, me),
    ))
    .await?;
    let mut missing = BTreeSet::new();
    for k in keys {
        let acked: Vec<String> = bounded(c.exec(
            "SELECT instance FROM idgate_switch_acks WHERE table_key = ?",
            (k,),
        ))
        .await?;
        missing.extend(live.iter().filter(|i| !acked.contains(i)).cloned());
    }
    Ok(missing)
}

/// This instance's part, until the migrations are gone: it beats, and holds the tables other
/// instances switch.
pub fn serve(migrations: &Arc<Migrations>) {
    let weak = Arc::downgrade(migrations);
    tokio::spawn(async move {
        let mut beat = Instant::now() - BEAT_EVERY;
        loop {
            let Some(migrations) = weak.upgrade() else {
                return;
            };
            if beat.elapsed() >= BEAT_EVERY {
                beat = Instant::now();
                if let Err(e) = say_alive(&migrations).await {
                    debug!(error = %e, "telling other instances this one is alive");
                }
            }
            if let Err(e) = follow_holds(&migrations).await {
                debug!(error = %e, "looking for switches under way");
            }
            drop(migrations);
            tokio::time::sleep(LOOK_EVERY).await;
        }
    });
}

async fn say_alive(migrations: &Migrations) -> Result<(), String> {
    let store = migrations.store().await?.clone();
    let mut c = store.conn().await?;
    bounded(c.exec_drop(
        format!("REPLACE INTO idgate_instances (instance, seen_ms) VALUES (?, {DB_NOW_MS})"),
        (&migrations.owner,),
    ))
    .await?;
    bounded(c.exec_drop(
        format!("DELETE FROM idgate_instances WHERE seen_ms < {DB_NOW_MS} - ?"),
        (FORGET_MS,),
    ))
    .await
}

/// Holds what other instances switch now, says so, and ends the holds of switches that ended
/// (after reading the placements they recorded).
async fn follow_holds(migrations: &Arc<Migrations>) -> Result<(), String> {
    let m = migrations;
    let holds = &m.proxy.migrations.holds;
    let store = m.store().await?.clone();
    let mut c = store.conn().await?;
    let under_way: Vec<String> = bounded(c.exec(
        format!(
            "SELECT table_key FROM idgate_switch_holds WHERE expires_ms > {DB_NOW_MS} AND \
             switching_by <> ?"
        ),
        (&m.owner,),
    ))
    .await?;
    for k in &under_way {
        holds.hold_remote(k);
        bounded(c.exec_drop(
            "INSERT IGNORE INTO idgate_switch_acks (table_key, instance) VALUES (?, ?)",
            (k, &m.owner),
        ))
        .await?;
    }
    drop(c);
    let ended: Vec<String> = holds
        .remote_keys()
        .into_iter()
        .filter(|k| !under_way.contains(k))
        .collect();
    if !ended.is_empty() {
        // The switch recorded its placements before its hold ended: route by them first. Until
        // they are read, the statements stay held (each gets 1205 past its bound), rather than
        // going on to the placement the switch left.
        if let Err(e) = super::follow_placements(migrations).await {
            warn!(error = %e, "cannot read the placements a switch recorded; still holding");
            return Ok(());
        }
        for k in ended {
            holds.release_remote(&k);
        }
    }
    Ok(())
}
