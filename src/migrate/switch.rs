//! `IDGATE MIGRATE SWITCH`: the cut-over, on the instance that runs the job. Statements about
//! the table are held in idgate; the old placement is fenced at the data (which also waits for
//! transactions that wrote the table to end); the catch-up drains to the source's position
//! after the fence; the generator is raised above every id the source handed out; the new
//! placement is recorded in the store and routed by; the held statements go on to it. Any
//! failure before the record undoes every step, and the held statements go on to the old
//! placement. `IDGATE MIGRATE COMPLETE` then takes the fence off and removes what moved away.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::columns::quote_ident;
use super::job::{Running, Spec};
use super::store::Store;
use super::writer::{exec, Change, Writer};
use super::Migrations;
use crate::exec::BackendConn;
use crate::proxy::Proxy;

/// SWITCH refuses while the new placement is further behind than this.
pub const MAX_LAG_SECONDS: i64 = 5;
/// Longest wait for the catch-up to reach the source's final position.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the job's tasks to stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One table of a SWITCH (tables placed alike switch together): its job's plan, its new
/// placement's entry, and the job as this instance runs it.
pub struct Member {
    pub spec: Arc<Spec>,
    pub entry: String,
    pub running: Arc<Running>,
}

/// Switches `members` together; returns how long statements about them were held.
pub async fn switch(
    migrations: &Arc<Migrations>,
    store: &Store,
    members: &[Member],
) -> Result<Duration, String> {
    if members.is_empty() {
        return Err("no table to switch".into());
    }
    for m in members {
        let phase = m.running.phase();
        let k = &m.spec.key;
        if phase != "ready" {
            return Err(format!(
                "the new placement of `{k}` is not ready (the job is {phase}); SWITCH when \
                 IDGATE MIGRATE STATUS shows `ready`"
            ));
        }
        let (_, lag) = super::job::lag_of(&m.running);
        if lag > MAX_LAG_SECONDS {
            return Err(format!(
                "the new placement of `{k}` is {lag} s behind (at most {MAX_LAG_SECONDS} s to \
                 switch); try again when it has caught up"
            ));
        }
    }
    let owner = &migrations.owner;
    let back_to_ready = |upto: usize| async move {
        for m in &members[..upto] {
            let _ = store.set_phase(&m.spec.key, owner, "ready", None).await;
            m.running.switching.store(false, Ordering::Release);
        }
    };
    for (i, m) in members.iter().enumerate() {
        m.running.switching.store(true, Ordering::Release);
        if let Err(e) = store.set_phase(&m.spec.key, owner, "switching", None).await {
            back_to_ready(i + 1).await;
            return Err(e);
        }
    }
    let specs: Vec<&Spec> = members.iter().map(|m| &*m.spec).collect();
    let keys = keys_of(specs.iter().copied());
    let step = cut_over(migrations, store, members);
    let (r, held) = while_held(migrations, store, &specs, "switching", step).await;
    for m in members {
        migrations
            .switch_holds
            .insert(m.spec.key.clone(), held.as_secs_f64());
    }
    if r.is_err() {
        back_to_ready(members.len()).await;
    }
    match &r {
        Ok(()) => info!(tables = %keys, held_ms = held.as_millis() as u64, "switched"),
        Err(e) => warn!(tables = %keys, error = %e, "switch undone"),
    }
    r.map(|()| held)
}

/// Holds statements about the tables of `specs`, here and on every other live instance, while
/// `step` runs; returns its result and how long statements were held.
async fn while_held(
    migrations: &Arc<Migrations>,
    store: &Store,
    specs: &[&Spec],
    what: &str,
    step: impl std::future::Future<Output = Result<(), String>>,
) -> (Result<(), String>, Duration) {
    let holds: Vec<_> = specs
        .iter()
        .map(|s| migrations.proxy.migrations.holds.hold(&s.schema, &s.table))
        .collect();
    let keys = keys_of(specs.iter().copied());
    info!(tables = %keys, "{what}: statements about the tables are held");
    let since = Instant::now();
    let all: Vec<String> = specs.iter().map(|s| s.key.clone()).collect();
    let r = match super::cluster_hold::hold_everywhere(migrations, store, &all).await {
        Ok(everywhere) => {
            let r = step.await;
            everywhere.release().await;
            r
        }
        Err(e) => Err(e),
    };
    let held = since.elapsed();
    drop(holds);
    (r, held)
}

/// Waits (at most `STOP_TIMEOUT`) until the jobs of `specs` no longer run here.
async fn wait_stopped<'a>(migrations: &Migrations, specs: impl Iterator<Item = &'a Spec> + Clone) {
    let deadline = Instant::now() + STOP_TIMEOUT;
    let running = || {
        specs
            .clone()
            .any(|s| migrations.running.contains_key(&s.key))
    };
    while running() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The tables' keys, for the log.
fn keys_of<'a>(specs: impl Iterator<Item = &'a Spec>) -> String {
    specs.map(|s| s.key.as_str()).collect::<Vec<_>>().join(", ")
}

async fn cut_over(
    migrations: &Arc<Migrations>,
    store: &Store,
    members: &[Member],
) -> Result<(), String> {
    let proxy = &migrations.proxy;
    // Fence every source of every table; a failure takes the fences off again.
    let mut fenced: Vec<(&Spec, String)> = Vec::new();
    for spec in members.iter().map(|m| &*m.spec) {
        for s in &spec.sources {
            let cfg = spec.backends.get(s).ok_or("source not configured")?;
            match super::fence::install(s, cfg, &spec.schema, &spec.table, &spec.target).await {
                Ok(()) => fenced.push((spec, s.clone())),
                Err(e) => {
                    for (spec, s) in &fenced {
                        unfence(spec, std::slice::from_ref(s)).await;
                    }
                    return Err(e);
                }
            }
        }
    }
    let undo = |e: String| async {
        for m in members {
            if let Err(e) = super::hide::show_all(&m.spec).await {
                warn!(table = %m.spec.key, error = %e, "cannot show the moved rows again");
            }
            unfence(&m.spec, &m.spec.sources).await;
        }
        e
    };
    // Nothing changes the moved rows on the sources now: drain to where they are.
    for m in members {
        if let Err(e) = drain(&m.spec, &m.running).await {
            return Err(undo(e).await);
        }
    }
    // Ids: each generator above everything its table's source held or handed out.
    let mut floors = Vec::new();
    for spec in members.iter().map(|m| &*m.spec) {
        let Some(g) = &spec.target.generator else {
            floors.push(0);
            continue;
        };
        let r = async {
            let f = super::ids::highest(
                proxy,
                &spec.sources,
                &spec.schema,
                &spec.table,
                &spec.target.id_column,
            )
            .await?;
            super::ids::raise(proxy, g, f).await?;
            Ok::<_, String>(f)
        }
        .await;
        match r {
            Ok(f) => floors.push(f),
            Err(e) => return Err(undo(e).await),
        }
    }
    // Backends that keep the table show only the rows they keep from now on.
    for spec in members.iter().map(|m| &*m.spec) {
        if let Err(e) = hide(spec).await {
            return Err(undo(e).await);
        }
    }
    // Where each stream back to the old placement starts, on each new backend with a binlog.
    let mut reverse = Vec::new();
    for m in members {
        reverse.push(reverse_positions(&m.spec).await);
    }
    let records: Vec<super::store::Switched> = members
        .iter()
        .zip(&floors)
        .zip(&reverse)
        .map(|((m, floor), r)| super::store::Switched {
            key: &m.spec.key,
            entry: &m.entry,
            id_floor: *floor,
            reverse: r.as_ref().map(Vec::as_slice).unwrap_or_default(),
        })
        .collect();
    if let Err(e) = store.switched(&records).await {
        // The answer may be lost while the commit was made: the store decides.
        let recorded = store.job(&members[0].spec.key).await.ok().flatten();
        if recorded.is_none_or(|j| j.phase != "switched") {
            return Err(undo(e).await);
        }
    }
    // The jobs' tasks stop: the sources change no more.
    for m in members {
        m.running.stop();
    }
    wait_stopped(migrations, members.iter().map(|m| &*m.spec)).await;
    let moved = store.placements().await.unwrap_or_default();
    proxy.set_tables(super::placements::tables_with(proxy, &moved));
    proxy.migrations.set_applied_placements(moved);
    for (m, r) in members.iter().zip(reverse) {
        match r {
            Ok(_) => super::start_reverse(migrations, store, &m.spec.key).await,
            Err(why) => {
                warn!(table = %m.spec.key, reason = %why, "no stream back to the old placement: REVERSE will be refused")
            }
        }
    }
    Ok(())
}

/// [`super::hide::hide`] on every backend of `spec` that keeps the table.
async fn hide(spec: &Spec) -> Result<(), String> {
    for b in super::hide::kept_on(spec) {
        let cfg = spec.backends.get(&b).ok_or("backend not configured")?;
        super::hide::hide(&b, cfg, &spec.schema, &spec.table, &spec.target).await?;
    }
    Ok(())
}

/// Each new backend's binlog position now; an error says why one cannot be streamed from.
async fn reverse_positions(spec: &Spec) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for b in spec.target.backends() {
        let cfg = spec.backends.get(b).ok_or("backend not configured")?;
        let mut c = BackendConn::connect(b, cfg, Default::default(), CONNECT_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        let checked = super::source::check_binlog(&mut c, b).await;
        c.close().await;
        checked?;
        out.push((
            b.clone(),
            super::binlog::position_now(b, cfg).await?.to_string(),
        ));
    }
    Ok(out)
}

async fn unfence(spec: &Spec, sources: &[String]) {
    for s in sources {
        if let Some(cfg) = spec.backends.get(s) {
            if let Err(e) = super::fence::remove(s, cfg, &spec.schema, &spec.table).await {
                warn!(table = %spec.key, source = %s, error = %e, "cannot take the fence off");
            }
        }
    }
}

/// Waits until every source's catch-up has applied what its binlog holds now.
async fn drain(spec: &Spec, running: &Running) -> Result<(), String> {
    for (source, progress) in &running.streams {
        let cfg = spec.backends.get(source).ok_or("source not configured")?;
        let last = super::binlog::position_now(source, cfg).await?;
        let deadline = Instant::now() + DRAIN_TIMEOUT;
        while progress.applied().behind(&last) > 0 {
            if Instant::now() > deadline {
                return Err(format!(
                    "the catch-up from `{source}` did not reach {last} within {} s",
                    DRAIN_TIMEOUT.as_secs()
                ));
            }
            if let Some(e) = progress.error() {
                return Err(format!("the catch-up from `{source}` failed: {e}"));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(())
}

/// `IDGATE MIGRATE COMPLETE` after a switch: the fence comes off; an old table on a backend
/// the new placement does not use is kept renamed (`<table>_idgate_old`), and rows a split
/// moved off a backend that keeps the table are deleted there.
pub async fn complete(spec: &Spec) -> Result<String, String> {
    let mut done = Vec::new();
    for s in &spec.sources {
        let cfg = spec.backends.get(s).ok_or("source not configured")?;
        super::fence::remove(s, cfg, &spec.schema, &spec.table).await?;
        let mut c = BackendConn::connect(s, cfg, Default::default(), CONNECT_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        let r = if spec.target.backends().contains(s) {
            // The moved rows go from the full table, which then takes its name back.
            let pruned = async {
                let holder = super::hide::holder(&mut c, &spec.schema, &spec.table).await?;
                prune(&mut c, spec, s, &holder).await
            }
            .await;
            match pruned {
                Ok(n) => super::hide::show(s, cfg, &spec.schema, &spec.table)
                    .await
                    .map(|()| format!("{n} moved rows deleted on `{s}`")),
                Err(e) => Err(e),
            }
        } else {
            let old: String = format!("{}_idgate_old", spec.table)
                .chars()
                .take(64)
                .collect();
            exec(
                &mut c,
                &format!(
                    "RENAME TABLE {q}.{} TO {q}.{}",
                    quote_ident(&spec.table),
                    quote_ident(&old),
                    q = quote_ident(&spec.schema)
                ),
            )
            .await
            .map(|()| {
                format!(
                    "the old table is kept on `{s}` as `{}`.`{old}`",
                    spec.schema
                )
            })
        };
        c.close().await;
        done.push(r?);
    }
    Ok(done.join("; "))
}

/// Deletes from `name`, `spec`'s table on `source`, the rows its new placement puts elsewhere,
/// in key order and bounded chunks; returns how many.
async fn prune(c: &mut BackendConn, spec: &Spec, source: &str, name: &str) -> Result<u64, String> {
    const CHUNK: usize = 2_000;
    let shape = &spec.shape;
    let table = format!("{}.{}", quote_ident(&spec.schema), quote_ident(name));
    let w = Writer::new(
        &spec.schema,
        &spec.table,
        spec.shape.clone(),
        spec.target.clone(),
        Default::default(),
    );
    exec(
        c,
        "SET time_zone = '+00:00', character_set_results = binary",
    )
    .await?;
    let mut last: Option<Vec<Vec<u8>>> = None;
    let mut deleted = 0u64;
    loop {
        let filter = last
            .as_ref()
            .map(|k| format!(" WHERE {}", shape.pk_after(k)))
            .unwrap_or_default();
        let sql = format!(
            "SELECT {} FROM {table}{filter} ORDER BY {} LIMIT {CHUNK}",
            shape.column_list(),
            shape.pk_order()
        );
        let chunk = tokio::time::timeout(Duration::from_secs(120), c.query_rows(&sql))
            .await
            .map_err(|_| "reading rows to delete timed out".to_string())?
            .map_err(|e| e.to_string())?;
        let Some(tail) = chunk.last() else {
            break;
        };
        last = Some(shape.pk_of(tail));
        let n = chunk.len();
        let gone: Vec<Change> = chunk
            .into_iter()
            .filter(|r| w.places(r).is_ok_and(|p| !p.iter().any(|b| b == source)))
            .map(Change::Delete)
            .collect();
        if !gone.is_empty() {
            let where_: Vec<String> = gone
                .iter()
                .map(|ch| match ch {
                    Change::Delete(r) | Change::Upsert(r) => format!("({})", shape.pk_equals(r)),
                })
                .collect();
            exec(
                c,
                &format!("DELETE FROM {table} WHERE {}", where_.join(" OR ")),
            )
            .await?;
            deleted += gone.len() as u64;
        }
        if n < CHUNK {
            break;
        }
    }
    Ok(deleted)
}

/// One table of a REVERSE: its job's forward plan, and its stream back as this instance runs it.
pub struct Back {
    pub forward: Spec,
    pub running: Arc<Running>,
}

/// `IDGATE MIGRATE REVERSE` after a switch (tables placed alike go back together), on the
/// instance streaming back: statements are held; the new placement is fenced as the old one
/// was; the streams back drain; the old placement's ids are raised above everything handed
/// out since the switch; the old placement is unfenced and routed by again; then the new
/// placement is emptied as CANCEL empties it.
pub async fn reverse(
    migrations: &Arc<Migrations>,
    store: &Store,
    members: &[Back],
) -> Result<Duration, String> {
    if members.is_empty() {
        return Err("no table to reverse".into());
    }
    for m in members {
        m.running.switching.store(true, Ordering::Release);
    }
    let specs: Vec<&Spec> = members.iter().map(|m| &*m.running.spec).collect();
    let keys = keys_of(specs.iter().copied());
    let step = reverse_cut_over(&migrations.proxy, store, members);
    let (r, held) = while_held(migrations, store, &specs, "reversing", step).await;
    if r.is_err() {
        for m in members {
            m.running.switching.store(false, Ordering::Release);
        }
    }
    r?;
    for m in members {
        m.running.stop();
    }
    wait_stopped(migrations, members.iter().map(|m| &*m.running.spec)).await;
    // The new placement serves no more: its fence off, its copy undone.
    for Back { forward, running } in members {
        let back = &running.spec;
        unfence(back, &back.sources).await;
        super::job::cleanup(forward).await?;
        for b in back.sources.iter().filter(|b| forward.sources.contains(b)) {
            let cfg = back.backends.get(b).ok_or("backend not configured")?;
            let mut c = BackendConn::connect(b, cfg, Default::default(), CONNECT_TIMEOUT)
                .await
                .map_err(|e| e.to_string())?;
            let r = prune(&mut c, back, b, &back.table).await;
            c.close().await;
            r?;
        }
    }
    info!(tables = %keys, held_ms = held.as_millis() as u64, "reversed");
    Ok(held)
}

async fn reverse_cut_over(
    proxy: &Arc<Proxy>,
    store: &Store,
    members: &[Back],
) -> Result<(), String> {
    let undo = |e: String| async {
        for Back { forward, running } in members {
            unfence(&running.spec, &running.spec.sources).await;
            if let Err(e) = hide(forward).await {
                warn!(table = %forward.key, error = %e, "cannot hide the moved rows again");
            }
            refence(forward).await;
        }
        e
    };
    // Backends of both placements carry the old fence; the new one replaces it there.
    for Back { forward, running } in members {
        let back = &running.spec;
        for b in &back.sources {
            let cfg = back.backends.get(b).ok_or("backend not configured")?;
            let r = async {
                if forward.sources.contains(b) {
                    super::fence::remove(b, cfg, &back.schema, &back.table).await?;
                }
                super::fence::install(b, cfg, &back.schema, &back.table, &back.target).await
            }
            .await;
            if let Err(e) = r {
                return Err(undo(e).await);
            }
        }
    }
    for m in members {
        if let Err(e) = drain(&m.running.spec, &m.running).await {
            return Err(undo(e).await);
        }
    }
    // The old placement's backends show every row again (before AUTO_INCREMENT is raised there).
    for m in members {
        if let Err(e) = super::hide::show_all(&m.forward).await {
            return Err(undo(e).await);
        }
    }
    // Ids handed out since the switch stay above what the old placement hands out.
    for back in members.iter().map(|m| &m.running.spec) {
        let raised = async {
            let top = super::ids::highest(
                proxy,
                &back.sources,
                &back.schema,
                &back.table,
                &back.target.id_column,
            )
            .await?;
            match &back.target.generator {
                Some(g) => super::ids::raise(proxy, g, top).await,
                None => raise_auto_increment(back, top).await,
            }
        }
        .await;
        if let Err(e) = raised {
            return Err(undo(e).await);
        }
    }
    for m in members {
        unfence(&m.forward, &m.forward.sources).await;
    }
    let keys: Vec<&str> = members
        .iter()
        .map(|m| m.running.spec.key.as_str())
        .collect();
    if let Err(e) = store.reversed(&keys).await {
        let recorded = store.job(keys[0]).await.ok().flatten();
        if recorded.is_none_or(|j| j.phase != "reversed") {
            return Err(undo(e).await);
        }
    }
    let moved = store.placements().await.unwrap_or_default();
    proxy.set_tables(super::placements::tables_with(proxy, &moved));
    proxy.migrations.set_applied_placements(moved);
    Ok(())
}

/// Puts the old placement's fence back (a REVERSE undone).
async fn refence(forward: &Spec) {
    for s in &forward.sources {
        if let Some(cfg) = forward.backends.get(s) {
            let _ = super::fence::remove(s, cfg, &forward.schema, &forward.table).await;
            if let Err(e) =
                super::fence::install(s, cfg, &forward.schema, &forward.table, &forward.target)
                    .await
            {
                warn!(table = %forward.key, source = %s, error = %e, "cannot put the fence back");
            }
        }
    }
}

/// The old tables' AUTO_INCREMENT above `top` (a table that had no generator before the move).
async fn raise_auto_increment(back: &Spec, top: u64) -> Result<(), String> {
    for b in back.target.backends() {
        let cfg = back.backends.get(b).ok_or("backend not configured")?;
        let mut c = BackendConn::connect(b, cfg, Default::default(), CONNECT_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        let r = exec(
            &mut c,
            &format!(
                "ALTER TABLE {}.{} AUTO_INCREMENT = {}",
                quote_ident(&back.schema),
                quote_ident(&back.table),
                top.saturating_add(1)
            ),
        )
        .await;
        c.close().await;
        r.map_err(|e| format!("raising AUTO_INCREMENT on `{b}`: {e}"))?;
    }
    Ok(())
}
