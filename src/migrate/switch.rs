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
use crate::exec::BackendConn;
use crate::proxy::Proxy;

/// SWITCH refuses while the new placement is further behind than this.
pub const MAX_LAG_SECONDS: i64 = 5;
/// Longest wait for the catch-up to reach the source's final position.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the job's tasks to stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Switches the job `spec` runs as `running`; returns how long statements were held.
pub async fn switch(
    proxy: &Arc<Proxy>,
    store: &Store,
    spec: &Spec,
    entry: &str,
    running: &Arc<Running>,
) -> Result<Duration, String> {
    let phase = running.phase();
    if phase != "ready" {
        return Err(format!(
            "the new placement is not ready (the job is {phase}); SWITCH when IDGATE MIGRATE \
             STATUS shows `ready`"
        ));
    }
    let (_, lag) = super::job::lag_of(running);
    if lag > MAX_LAG_SECONDS {
        return Err(format!(
            "the new placement is {lag} s behind (at most {MAX_LAG_SECONDS} s to switch); \
             try again when it has caught up"
        ));
    }
    let owner = &proxy.migrations.owner;
    running.switching.store(true, Ordering::Release);
    if let Err(e) = store.set_phase(&spec.key, owner, "switching", None).await {
        running.switching.store(false, Ordering::Release);
        return Err(e);
    }
    let hold = proxy.migrations.holds.hold(&spec.schema, &spec.table);
    info!(table = %spec.key, "switching: statements about the table are held");
    let r = cut_over(proxy, store, spec, entry, running).await;
    let held = hold.since.elapsed();
    drop(hold);
    proxy
        .migrations
        .switch_holds
        .insert(spec.key.clone(), held.as_secs_f64());
    if r.is_err() {
        let _ = store.set_phase(&spec.key, owner, "ready", None).await;
        running.switching.store(false, Ordering::Release);
    }
    match &r {
        Ok(()) => info!(table = %spec.key, held_ms = held.as_millis() as u64, "switched"),
        Err(e) => warn!(table = %spec.key, error = %e, "switch undone"),
    }
    r.map(|()| held)
}

async fn cut_over(
    proxy: &Arc<Proxy>,
    store: &Store,
    spec: &Spec,
    entry: &str,
    running: &Arc<Running>,
) -> Result<(), String> {
    // Fence every source; a failure takes the fences off again.
    let mut fenced = Vec::new();
    for s in &spec.sources {
        let cfg = spec.backends.get(s).ok_or("source not configured")?;
        match super::fence::install(s, cfg, &spec.schema, &spec.table, &spec.target).await {
            Ok(()) => fenced.push(s.clone()),
            Err(e) => {
                unfence(spec, &fenced).await;
                return Err(e);
            }
        }
    }
    let undo = |e: String| async {
        unfence(spec, &spec.sources).await;
        e
    };
    // Nothing changes the moved rows on the sources now: drain to where they are.
    if let Err(e) = drain(spec, running).await {
        return Err(undo(e).await);
    }
    // Ids: the generator above everything the source held or handed out.
    let mut floor = 0;
    if let Some(g) = &spec.target.generator {
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
            Ok(f) => floor = f,
            Err(e) => return Err(undo(e).await),
        }
    }
    // Where the stream back to the old placement starts, on each new backend with a binlog.
    let reverse = reverse_positions(spec).await;
    let positions = reverse.as_ref().map(Vec::as_slice).unwrap_or_default();
    if let Err(e) = store.switched(&spec.key, entry, floor, positions).await {
        // The answer may be lost while the commit was made: the store decides.
        let recorded = store.job(&spec.key).await.ok().flatten();
        if recorded.is_none_or(|j| j.phase != "switched") {
            return Err(undo(e).await);
        }
    }
    // The job's tasks stop: the sources change no more.
    running.stop();
    let deadline = Instant::now() + STOP_TIMEOUT;
    while proxy.migrations.running.contains_key(&spec.key) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let moved = store.placements().await.unwrap_or_default();
    proxy.set_tables(super::placements::tables_with(proxy, &moved));
    proxy.migrations.set_applied_placements(moved);
    match reverse {
        Ok(_) => super::start_reverse(proxy, store, &spec.key).await,
        Err(why) => {
            warn!(table = %spec.key, reason = %why, "no stream back to the old placement: REVERSE will be refused")
        }
    }
    Ok(())
}

/// Each new backend's binlog position now; an error says why one cannot be streamed from.
async fn reverse_positions(spec: &Spec) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for b in spec.target.backends() {
        let cfg = spec.backends.get(b).ok_or("backend not configured")?;
        let mut c = BackendConn::connect(b, cfg, false, CONNECT_TIMEOUT)
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
        let mut c = BackendConn::connect(s, cfg, false, CONNECT_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        let r = if spec.target.backends().contains(s) {
            prune(&mut c, spec, s)
                .await
                .map(|n| format!("{n} moved rows deleted on `{s}`"))
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

/// Deletes on `source` the rows its new placement puts elsewhere, in key order and bounded
/// chunks; returns how many.
async fn prune(c: &mut BackendConn, spec: &Spec, source: &str) -> Result<u64, String> {
    const CHUNK: usize = 2_000;
    let shape = &spec.shape;
    let table = format!("{}.{}", quote_ident(&spec.schema), quote_ident(&spec.table));
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

/// `IDGATE MIGRATE REVERSE` after a switch, on the instance streaming back: statements are
/// held; the new placement is fenced as the old one was; the stream back drains; the old
/// placement's ids are raised above everything handed out since the switch; the old placement
/// is unfenced and routed by again; then the new placement is emptied as CANCEL empties it.
pub async fn reverse(
    proxy: &Arc<Proxy>,
    store: &Store,
    forward: &Spec,
    running: &Arc<Running>,
) -> Result<Duration, String> {
    let back = running.spec.clone();
    running.switching.store(true, Ordering::Release);
    let hold = proxy.migrations.holds.hold(&back.schema, &back.table);
    info!(table = %back.key, "reversing: statements about the table are held");
    let r = reverse_cut_over(proxy, store, forward, &back, running).await;
    let held = hold.since.elapsed();
    drop(hold);
    if r.is_err() {
        running.switching.store(false, Ordering::Release);
    }
    r?;
    running.stop();
    let deadline = Instant::now() + STOP_TIMEOUT;
    while proxy.migrations.running.contains_key(&back.key) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The new placement serves no more: its fence off, its copy undone.
    unfence(&back, &back.sources).await;
    super::job::cleanup(forward).await?;
    for b in back.sources.iter().filter(|b| forward.sources.contains(b)) {
        let cfg = back.backends.get(b).ok_or("backend not configured")?;
        let mut c = BackendConn::connect(b, cfg, false, CONNECT_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        let r = prune(&mut c, &back, b).await;
        c.close().await;
        r?;
    }
    info!(table = %back.key, held_ms = held.as_millis() as u64, "reversed");
    Ok(held)
}

async fn reverse_cut_over(
    proxy: &Arc<Proxy>,
    store: &Store,
    forward: &Spec,
    back: &Spec,
    running: &Arc<Running>,
) -> Result<(), String> {
    // Backends of both placements carry the old fence; the new one replaces it there.
    let mut fenced = Vec::new();
    for b in &back.sources {
        let cfg = back.backends.get(b).ok_or("backend not configured")?;
        if forward.sources.contains(b) {
            super::fence::remove(b, cfg, &back.schema, &back.table).await?;
        }
        let r = super::fence::install(b, cfg, &back.schema, &back.table, &back.target).await;
        if let Err(e) = r {
            unfence(back, &fenced).await;
            refence(forward).await;
            return Err(e);
        }
        fenced.push(b.clone());
    }
    let undo = |e: String| async {
        unfence(back, &back.sources).await;
        refence(forward).await;
        e
    };
    if let Err(e) = drain(back, running).await {
        return Err(undo(e).await);
    }
    // Ids handed out since the switch stay above what the old placement hands out.
    let top = match super::ids::highest(
        proxy,
        &back.sources,
        &back.schema,
        &back.table,
        &back.target.id_column,
    )
    .await
    {
        Ok(t) => t,
        Err(e) => return Err(undo(e).await),
    };
    let raised = match &back.target.generator {
        Some(g) => super::ids::raise(proxy, g, top).await,
        None => raise_auto_increment(back, top).await,
    };
    if let Err(e) = raised {
        return Err(undo(e).await);
    }
    unfence(forward, &forward.sources).await;
    if let Err(e) = store.reversed(&back.key).await {
        let recorded = store.job(&back.key).await.ok().flatten();
        if recorded.is_none_or(|j| j.phase != "reversed") {
            refence(forward).await;
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
        let mut c = BackendConn::connect(b, cfg, false, CONNECT_TIMEOUT)
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
