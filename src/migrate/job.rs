//! One job run by this instance: a task per source backend (copy, then catch-up, retried from
//! the saved position after a failure) and a supervisor that renews the lease, derives the
//! phase from the streams' progress, measures the lag against the source, and carries out a
//! CANCEL made on any instance.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{info, warn};

use super::binlog::follow::{Follower, Stop};
use super::binlog::gtid::Position;
use super::columns::{quote_ident, TableShape};
use super::copy::CopyTask;
use super::progress::StreamProgress;
use super::source::rows;
use super::store::Store;
use super::writer::{exec, Writer};
use crate::config::Backend;
use crate::exec::BackendConn;
use crate::route::TableRule;

/// How often the supervisor looks at the streams and renews the lease.
const TICK: Duration = Duration::from_secs(1);
/// Wait before a stream that failed is opened again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Longest wait to connect for the lag measure or the cleanup.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a job needs, rebuilt from its row in the store on whichever instance runs it.
pub struct Spec {
    pub key: String,
    pub schema: String,
    pub table: String,
    pub target: Arc<TableRule>,
    pub sources: Vec<String>,
    pub created_on: Vec<String>,
    pub shape: Arc<TableShape>,
    pub backends: BTreeMap<String, Backend>,
    /// The stream back after a switch: `sources` are the new placement's backends and `target`
    /// the old placement; nothing is copied, and the phase stays `switched`.
    pub reverse: bool,
    /// `migrations.copy_rest_percent` when the job started here.
    pub rest_percent: u32,
}

/// A job this instance runs, as STATUS and CANCEL see it.
pub struct Running {
    pub spec: Arc<Spec>,
    pub streams: Vec<(String, Arc<StreamProgress>)>,
    pub phase: Mutex<String>,
    /// A SWITCH is under way: the supervisor leaves the phase alone.
    pub switching: std::sync::atomic::AtomicBool,
    /// When this run started copying and the rows copied before it (its pace, for the ETA).
    pub copy_base: std::sync::OnceLock<(std::time::Instant, i64)>,
    stop: watch::Sender<bool>,
}

impl Running {
    pub fn phase(&self) -> String {
        self.phase.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Stops the job's tasks here (another instance may take it over).
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }
}

/// Starts running `spec` (its lease is held by `owner`); `done` is called when it ends here.
pub fn spawn(
    spec: Spec,
    store: Store,
    owner: String,
    phase: String,
    done: impl FnOnce(&Arc<Running>) + Send + 'static,
) -> Arc<Running> {
    let (stop, stop_rx) = watch::channel(false);
    let spec = Arc::new(spec);
    let running = Arc::new(Running {
        spec: spec.clone(),
        streams: spec
            .sources
            .iter()
            .map(|s| (s.clone(), Arc::new(StreamProgress::new())))
            .collect(),
        phase: Mutex::new(phase),
        switching: Default::default(),
        copy_base: Default::default(),
        stop,
    });
    let r = running.clone();
    tokio::spawn(async move {
        supervise(spec, store, owner, r.clone(), stop_rx).await;
        done(&r);
    });
    running
}

/// The supervisor: streams started, then once a second the lease, the phase and the lag.
async fn supervise(
    spec: Arc<Spec>,
    store: Store,
    owner: String,
    running: Arc<Running>,
    mut stop: watch::Receiver<bool>,
) {
    let (stream_stop, _) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    let saved = if spec.reverse {
        reverse_rows(&store, &spec.key).await
    } else {
        store.streams(&spec.key).await.unwrap_or_default()
    };
    for (source, progress) in &running.streams {
        let row = saved
            .iter()
            .find(|s| &s.source == source)
            .cloned()
            .unwrap_or_default();
        progress
            .rows_copied
            .store(row.rows_copied, Ordering::Relaxed);
        progress
            .rows_estimated
            .store(row.rows_estimated, Ordering::Relaxed);
        progress
            .events_applied
            .store(row.events_applied, Ordering::Relaxed);
        progress.copy_done.store(row.copy_done, Ordering::Relaxed);
        let task = StreamTask {
            spec: spec.clone(),
            store: store.clone(),
            source: source.clone(),
            progress: progress.clone(),
            saved: row,
        };
        let rx = stream_stop.subscribe();
        tasks.spawn(async move { task.run(rx).await });
    }
    let before: i64 = saved.iter().map(|s| s.rows_copied).sum();
    let _ = running.copy_base.set((std::time::Instant::now(), before));
    let mut fatal: Option<String> = None;
    let mut tick = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            _ = tick.tick() => {}
            Some(ended) = tasks.join_next(), if !tasks.is_empty() => {
                match ended {
                    Ok(Err(e)) => fatal = Some(e),
                    Err(e) => fatal = Some(format!("a stream task ended: {e}")),
                    Ok(Ok(())) => {}
                }
            }
        }
        match store.claim(&spec.key, &owner).await {
            Ok(true) => {}
            Ok(false) => {
                // CANCEL elsewhere finished it, or another instance holds it now.
                info!(table = %spec.key, "migration no longer held by this instance");
                break;
            }
            Err(e) => {
                warn!(table = %spec.key, error = %e, "cannot renew the migration's lease");
                continue;
            }
        }
        let stored = store.job(&spec.key).await.ok().flatten();
        if stored.as_ref().is_some_and(|j| j.phase == "cancelling") {
            let _ = stream_stop.send(true);
            while tasks.join_next().await.is_some() {}
            let outcome = cleanup(&spec).await;
            let (phase, error) = match &outcome {
                Ok(()) => ("cancelled", None),
                Err(e) => ("cancelling", Some(e.as_str())),
            };
            if let Err(e) = store.set_phase(&spec.key, &owner, phase, error).await {
                warn!(table = %spec.key, error = %e, "cannot record the cancel");
            }
            set_phase(&running, phase);
            if outcome.is_ok() {
                info!(table = %spec.key, "migration cancelled; the table is as it was");
                let _ = store.release(&spec.key, &owner).await;
                return;
            }
            continue;
        }
        if running.switching.load(Ordering::Acquire) {
            continue;
        }
        if spec.reverse {
            // Switched: only the lag is kept (REVERSE drains to the end).
            measure_lag(&spec, &running).await;
            let (events, seconds) = lag_of(&running);
            let _ = store.set_lag(&spec.key, events, seconds).await;
            continue;
        }
        if let Some(e) = &fatal {
            let _ = stream_stop.send(true);
            if running.phase() != "failed" {
                warn!(table = %spec.key, error = %e, "migration failed");
                let _ = store.set_phase(&spec.key, &owner, "failed", Some(e)).await;
                set_phase(&running, "failed");
            }
            continue;
        }
        measure_lag(&spec, &running).await;
        let phase = phase_of(&running);
        let error = running.streams.iter().find_map(|(_, p)| p.error());
        if phase != running.phase() || stored.as_ref().is_some_and(|j| j.last_error != error) {
            info!(table = %spec.key, phase = %phase, "migration phase");
            if store
                .set_phase(&spec.key, &owner, &phase, error.as_deref())
                .await
                .is_ok()
            {
                set_phase(&running, &phase);
            }
        }
        let (events, seconds) = lag_of(&running);
        let _ = store.set_lag(&spec.key, events, seconds).await;
    }
    let _ = stream_stop.send(true);
    while tasks.join_next().await.is_some() {}
    let _ = store.release(&spec.key, &owner).await;
}

/// The reverse streams' saved positions, as the forward streams' rows (copied already).
async fn reverse_rows(store: &Store, key: &str) -> Vec<super::store::StreamRow> {
    let rows = store.reverse_streams(key).await.unwrap_or_default();
    rows.into_iter()
        .map(|(backend, pos, events)| super::store::StreamRow {
            source: backend,
            start_gtid: pos.clone(),
            gtid_pos: pos,
            copy_done: true,
            events_applied: events,
            ..Default::default()
        })
        .collect()
}

fn set_phase(running: &Running, phase: &str) {
    if let Ok(mut p) = running.phase.lock() {
        *p = phase.to_string();
    }
}

/// `copying` until every source is copied, then `catching_up` until no source has a group
/// left to apply, then `ready`.
fn phase_of(running: &Running) -> String {
    let copied = running
        .streams
        .iter()
        .all(|(_, p)| p.copy_done.load(Ordering::Relaxed));
    if !copied {
        return "copying".into();
    }
    let caught_up = running
        .streams
        .iter()
        .all(|(_, p)| p.lag_events.load(Ordering::Relaxed) == 0);
    if caught_up { "ready" } else { "catching_up" }.into()
}

/// The largest lag of the sources (-1 while unmeasured).
pub fn lag_of(running: &Running) -> (i64, i64) {
    let events = running
        .streams
        .iter()
        .map(|(_, p)| p.lag_events.load(Ordering::Relaxed))
        .fold(0, |acc, l| if acc < 0 || l < 0 { -1 } else { acc.max(l) });
    let seconds = running
        .streams
        .iter()
        .map(|(_, p)| p.lag_seconds.load(Ordering::Relaxed))
        .max()
        .unwrap_or(0);
    (events, seconds)
}

/// Reads each copied source's binlog position and compares it with what is applied.
async fn measure_lag(spec: &Spec, running: &Running) {
    for (source, progress) in &running.streams {
        if !progress.copy_done.load(Ordering::Relaxed) {
            continue;
        }
        let Some(cfg) = spec.backends.get(source) else {
            continue;
        };
        let Ok(source_pos) = super::binlog::position_now(source, cfg).await else {
            continue;
        };
        // Groups written before the previous measure and not applied yet: the lag of a stream
        // that keeps up is 0 even while the source writes (the store may be on it).
        let previous = progress
            .measured
            .lock()
            .ok()
            .and_then(|mut m| m.replace(source_pos.clone()));
        let applied = progress.applied();
        let behind = applied.behind(previous.as_ref().unwrap_or(&source_pos)) as i64;
        progress.lag_events.store(behind, Ordering::Relaxed);
        let seconds = if behind == 0 {
            0
        } else {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            let last = i64::from(progress.last_group_time.load(Ordering::Relaxed));
            if last > 0 {
                (now - last).max(0)
            } else {
                0
            }
        };
        progress.lag_seconds.store(seconds, Ordering::Relaxed);
    }
}

/// Undoes a job that has not switched: tables idgate created are dropped, rows copied into
/// tables that were there (empty) are deleted. Backends that serve the table now received no
/// rows (`plan`), so they are left alone.
pub async fn cleanup(spec: &Spec) -> Result<(), String> {
    let table = format!("{}.{}", quote_ident(&spec.schema), quote_ident(&spec.table));
    for backend in spec.target.backends() {
        if spec.sources.contains(backend) {
            continue;
        }
        let Some(cfg) = spec.backends.get(backend) else {
            continue;
        };
        let sql = if spec.created_on.contains(backend) {
            format!("DROP TABLE IF EXISTS {table}")
        } else {
            format!("DELETE FROM {table}")
        };
        let mut c = BackendConn::connect(backend, cfg, Default::default(), CONNECT_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        let r = exec(&mut c, &sql).await;
        c.close().await;
        r.map_err(|e| format!("undoing the copy on `{backend}`: {e}"))?;
    }
    Ok(())
}

/// One source backend's work.
struct StreamTask {
    spec: Arc<Spec>,
    store: Store,
    source: String,
    progress: Arc<StreamProgress>,
    saved: super::store::StreamRow,
}

impl StreamTask {
    /// Copies (unless done) and then follows the binlog until stopped; an error that retrying
    /// cannot mend ends the job.
    async fn run(self, mut stop: watch::Receiver<bool>) -> Result<(), String> {
        let spec = &self.spec;
        let cfg = spec
            .backends
            .get(&self.source)
            .ok_or_else(|| format!("backend `{}` is not configured", self.source))?
            .clone();
        let mut writer = Writer::new(
            &spec.schema,
            &spec.table,
            spec.shape.clone(),
            spec.target.clone(),
            spec.backends.clone(),
        );
        if spec.reverse {
            // The old placement's full table on backends that keep it (`hide`).
            for b in super::hide::kept_on(spec) {
                writer = writer.renamed_on(&b, super::hide::base_name(&spec.table));
            }
        }
        let mut start = self.saved.gtid_pos.clone();
        let mut after = self.saved.copied_through.clone();
        let mut first = self.saved.start_gtid.is_empty();
        while !self.progress.copy_done.load(Ordering::Relaxed) {
            let copy = CopyTask {
                key: &spec.key,
                source: &self.source,
                source_cfg: &cfg,
                store: &self.store,
                progress: &self.progress,
                first,
                rest_percent: spec.rest_percent,
            };
            let r = tokio::select! {
                _ = stop.changed() => return Ok(()),
                r = copy.run(&mut writer, after.as_deref()) => r,
            };
            match r {
                Ok(snapshot) => {
                    if first {
                        start = snapshot;
                    }
                    self.progress.copy_done.store(true, Ordering::Relaxed);
                    self.progress.set_error(None);
                    info!(table = %spec.key, source = %self.source,
                        rows = self.progress.rows_copied.load(Ordering::Relaxed), "copy done");
                }
                Err(e) => {
                    warn!(table = %spec.key, source = %self.source, error = %e, "copy failed; retrying");
                    self.progress.set_error(Some(e));
                    writer.close().await;
                    tokio::select! {
                        _ = stop.changed() => return Ok(()),
                        _ = tokio::time::sleep(RETRY_AFTER) => {}
                    }
                    // Go on after what the store says was copied, from the first snapshot.
                    if let Ok(rows) = self.store.streams(&spec.key).await {
                        if let Some(r) = rows.into_iter().find(|r| r.source == self.source) {
                            start = r.gtid_pos;
                            after = r.copied_through;
                            first = r.start_gtid.is_empty();
                            self.progress
                                .rows_copied
                                .store(r.rows_copied, Ordering::Relaxed);
                        }
                    }
                }
            }
        }
        let mut position = Position::parse(&start)?;
        let source_server_id = self.server_id(&cfg).await;
        let server_id = super::binlog::server_id(&spec.key, &self.source, source_server_id);
        loop {
            let mut follower = Follower::new(
                &spec.key,
                &self.source,
                &self.store,
                &self.progress,
                position.clone(),
            );
            follower.reverse = spec.reverse;
            self.progress.set_applied(&position);
            let stopped = match super::binlog::open(&self.source, &cfg, server_id, &position).await
            {
                Ok(mut stream) => {
                    let s = follower.run(&mut stream, &mut writer, &mut stop).await;
                    drop(stream);
                    s
                }
                Err(e) => Stop::Retry(e),
            };
            position = follower.resume_position();
            match stopped {
                Stop::Asked => return Ok(()),
                Stop::Fatal(e) => {
                    self.progress.set_error(Some(e.clone()));
                    return Err(e);
                }
                Stop::Retry(e) => {
                    warn!(table = %spec.key, source = %self.source, error = %e, "catch-up interrupted; resuming");
                    self.progress.set_error(Some(e));
                    writer.close().await;
                    tokio::select! {
                        _ = stop.changed() => return Ok(()),
                        _ = tokio::time::sleep(RETRY_AFTER) => {}
                    }
                }
            }
        }
    }

    /// The source's own server id (a replica's must differ).
    async fn server_id(&self, cfg: &Backend) -> u32 {
        let Ok(mut c) =
            BackendConn::connect(&self.source, cfg, Default::default(), CONNECT_TIMEOUT).await
        else {
            return 0;
        };
        let r = rows(&mut c, "SELECT @@global.server_id").await;
        c.close().await;
        r.ok()
            .and_then(|r| r.into_iter().next())
            .and_then(|r| r.into_iter().next().flatten())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}
