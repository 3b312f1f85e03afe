//! The answers to `IDGATE MIGRATE …` and `SHOW IDGATE MIGRATIONS` (admin users only; the
//! caller has checked the right).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::requests::{self, Answered};
use super::start;
use super::store::{is_finished, JobRow};
use crate::admin::result_set::{num, text, Col, ResultSet};
use crate::admin::statements::Answer;
use crate::proxy::Proxy;
use crate::sql::admin_migrate::{MigrateStatement, MigrateStep, TableName};
use crate::wire::errors::{self, SqlError};

/// Longest wait of CANCEL for the job's owner to undo the copy.
const CANCEL_WAIT: Duration = Duration::from_secs(60);

/// MySQL's ER_NO_DB_ERROR.
const ER_NO_DB: u16 = 1046;

pub fn refused(message: impl Into<String>) -> SqlError {
    SqlError::new(errors::ER_UNKNOWN_ERROR, b"HY000", message.into())
}

/// Answers one statement; `db` is the session's current database.
pub async fn answer(proxy: &Arc<Proxy>, db: Option<&str>, stmt: MigrateStatement) -> Answer {
    let r = match stmt {
        MigrateStatement::Malformed(why) => {
            Err(SqlError::new(crate::sql::ER_PARSE_ERROR, b"42000", why))
        }
        MigrateStatement::Start { table, entry } => match key(&table, db) {
            Ok((schema, name)) => start_job(proxy, &schema, &name, &entry).await,
            Err(e) => Err(e),
        },
        MigrateStatement::Status { table } => {
            let k = match table.map(|t| key(&t, db)).transpose() {
                Ok(k) => k.map(|(s, n)| format!("{s}.{n}")),
                Err(e) => return Answer::Err(e),
            };
            return match status(proxy, k.as_deref()).await {
                Ok(rs) => Answer::Rows(rs),
                Err(e) => Answer::Err(e),
            };
        }
        MigrateStatement::Step { step, table } => {
            let k = match key(&table, db) {
                Ok((s, n)) => format!("{s}.{n}"),
                Err(e) => return Answer::Err(e),
            };
            match step {
                MigrateStep::Cancel => cancel(proxy, &k).await,
                MigrateStep::Switch => switch(proxy, &k, true).await,
                MigrateStep::Complete => complete(proxy, &k).await,
                MigrateStep::Reverse => reverse(proxy, &k, true).await,
                MigrateStep::Verify => {
                    return match verify(proxy, &k, true).await {
                        Ok(d) => Answer::Rows(differences(d)),
                        Err(e) => Answer::Err(e),
                    }
                }
            }
        }
    };
    match r {
        Ok(info) => Answer::Ok(info),
        Err(e) => Answer::Err(e),
    }
}

/// `schema.table` of a statement's table, the current database filling in.
fn key(t: &TableName, db: Option<&str>) -> Result<(String, String), SqlError> {
    match t.schema.as_deref().or(db) {
        Some(s) => Ok((s.to_string(), t.name.clone())),
        None => Err(SqlError::new(ER_NO_DB, b"3D000", "No database selected")),
    }
}

async fn start_job(
    proxy: &Arc<Proxy>,
    schema: &str,
    table: &str,
    entry: &str,
) -> Result<String, SqlError> {
    let m = &proxy.migrations;
    let store = m.store(proxy).await.map_err(refused)?.clone();
    let k = format!("{schema}.{table}");
    if let Some(j) = store.job(&k).await.map_err(refused)? {
        if !is_finished(&j.phase) {
            return Err(refused(format!(
                "a migration of `{k}` is already {}; IDGATE MIGRATE CANCEL {k} ends it",
                j.phase
            )));
        }
    }
    let (spec, job, streams) = start::prepare(proxy, schema, table, entry).await?;
    let sources = job.sources.join(", ");
    let targets = spec.target.backends().join(", ");
    if !store
        .create(&job, &streams, &m.owner)
        .await
        .map_err(refused)?
    {
        // Another START won the race; undo what this one created.
        let _ = super::job::cleanup(&spec).await;
        return Err(refused(format!("a migration of `{k}` is already running")));
    }
    super::Migrations::run(proxy, spec, store, "copying".into());
    Ok(format!(
        "migration of `{k}` started: copying from {sources} to {targets}; IDGATE MIGRATE STATUS \
         shows its progress"
    ))
}

async fn status(proxy: &Arc<Proxy>, only: Option<&str>) -> Result<ResultSet, SqlError> {
    let store = proxy.migrations.store(proxy).await.map_err(refused)?;
    let mut rs = ResultSet::new(&[
        ("table", Col::Text(200)),
        ("phase", Col::Text(16)),
        ("rows_copied", Col::UInt),
        ("rows_estimated", Col::UInt),
        ("lag_events", Col::UInt),
        ("lag_seconds", Col::UInt),
        ("last_error", Col::Text(1024)),
        ("sources", Col::Text(1024)),
        ("target", Col::Text(1024)),
        ("owner", Col::Text(100)),
    ]);
    for j in store.jobs().await.map_err(refused)? {
        if only.is_some_and(|k| k != j.table_key) {
            continue;
        }
        let streams = store.streams(&j.table_key).await.map_err(refused)?;
        let copied: i64 = streams.iter().map(|s| s.rows_copied).sum();
        let estimated: i64 = streams.iter().map(|s| s.rows_estimated).sum();
        // A job run here shows its live lag; others the lag their owner last recorded.
        let (lag_events, lag_seconds, phase) = match proxy.migrations.running.get(&j.table_key) {
            Some(r) => {
                let (e, s) = super::job::lag_of(&r);
                (e, s, r.phase())
            }
            None => (j.lag_events, j.lag_seconds, j.phase.clone()),
        };
        let lag = |v: i64| if v < 0 { None } else { num(v) };
        rs.row(&[
            text(j.table_key.clone()),
            text(phase),
            num(copied.max(0)),
            num(estimated.max(0)),
            lag(lag_events),
            lag(lag_seconds),
            j.last_error.clone(),
            text(j.sources.join(",")),
            text(j.target.clone()),
            owner(&j),
        ]);
    }
    Ok(rs)
}

/// Runs `step` of the job `k`, which this instance runs, for another instance that was asked.
pub(super) async fn run_here(
    proxy: &Arc<Proxy>,
    k: &str,
    step: requests::Step,
) -> Result<Answered, SqlError> {
    match step {
        requests::Step::Switch => switch(proxy, k, false).await.map(Answered::Info),
        requests::Step::Verify => verify(proxy, k, false).await.map(Answered::Differences),
        requests::Step::Reverse => reverse(proxy, k, false).await.map(Answered::Info),
    }
}

/// The instance that runs the job, when it is another live one this one may ask
/// (`may_ask`: not itself answering another instance's request).
fn asked_owner(proxy: &Proxy, j: &JobRow, may_ask: bool) -> Option<String> {
    owner(j).filter(|o| may_ask && *o != proxy.migrations.owner && !is_finished(&j.phase))
}

/// Asks the instance `o` for `step` and expects an info text back.
async fn ask_for_info(
    proxy: &Arc<Proxy>,
    store: &super::store::Store,
    k: &str,
    step: requests::Step,
    o: &str,
) -> Result<String, SqlError> {
    match requests::ask(proxy, store, k, step, o).await? {
        Answered::Info(s) => Ok(s),
        Answered::Differences(_) => Err(refused("the running instance answered with rows")),
    }
}

async fn switch(proxy: &Arc<Proxy>, k: &str, may_ask: bool) -> Result<String, SqlError> {
    let m = &proxy.migrations;
    let store = m.store(proxy).await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    let Some(running) = m.running.get(k).map(|r| r.clone()) else {
        if let Some(o) = asked_owner(proxy, &j, may_ask).filter(|_| j.phase != "switched") {
            // This instance's statements about the table wait too, and then run on the
            // placement the store records, instead of meeting the old placement's fence.
            let (schema, table) = k.split_once('.').unwrap_or(("", k));
            let hold = m.holds.hold(schema, table);
            let r = ask_for_info(proxy, &store, k, requests::Step::Switch, &o).await;
            if r.is_ok() {
                if let Err(e) = super::follow_placements(proxy).await {
                    tracing::warn!(table = %k, error = %e, "cannot read the new placement yet");
                }
            }
            drop(hold);
            return r;
        }
        return Err(refused(match owner(&j) {
            Some(o) if j.phase != "switched" && !is_finished(&j.phase) => {
                format!("the migration of `{k}` runs on the idgate instance {o}; run SWITCH there")
            }
            _ => format!(
                "the migration of `{k}` is {}; SWITCH needs it `ready`",
                j.phase
            ),
        }));
    };
    let spec = running.spec.clone();
    let held = super::switch::switch(proxy, &store, &spec, &j.target, &running)
        .await
        .map_err(|e| {
            refused(format!(
                "`{k}` was not switched, its placement is unchanged: {e}"
            ))
        })?;
    Ok(format!(
        "`{k}` switched to its new placement; statements about it were held for {} ms",
        held.as_millis()
    ))
}

async fn verify(
    proxy: &Arc<Proxy>,
    k: &str,
    may_ask: bool,
) -> Result<Vec<super::verify::Difference>, SqlError> {
    let m = &proxy.migrations;
    let store = m.store(proxy).await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    let Some(running) = m.running.get(k).map(|r| r.clone()) else {
        if let Some(o) = asked_owner(proxy, &j, may_ask) {
            return match requests::ask(proxy, &store, k, requests::Step::Verify, &o).await? {
                Answered::Differences(d) => Ok(d),
                Answered::Info(_) => Err(refused("the running instance answered without rows")),
            };
        }
        return Err(refused(match owner(&j) {
            Some(o) => {
                format!("the migration of `{k}` runs on the idgate instance {o}; run VERIFY there")
            }
            None => format!(
                "the migration of `{k}` is {}; VERIFY compares a job that runs",
                j.phase
            ),
        }));
    };
    let phase = running.phase();
    if !matches!(phase.as_str(), "catching_up" | "ready") {
        return Err(refused(format!(
            "the migration of `{k}` is {phase}; VERIFY compares once the copy is done"
        )));
    }
    let spec = running.spec.clone();
    let from = start::current_rule(proxy, &spec.schema, &spec.table);
    super::verify::verify(&spec, &from, &running)
        .await
        .map_err(refused)
}

/// VERIFY's answer: one row per range that differs.
fn differences(diffs: Vec<super::verify::Difference>) -> ResultSet {
    let mut rs = ResultSet::new(&[
        ("source", Col::Text(100)),
        ("first_key", Col::Text(256)),
        ("last_key", Col::Text(256)),
        ("source_rows", Col::UInt),
        ("target_rows", Col::UInt),
    ]);
    for d in diffs {
        rs.row(&[
            text(d.source),
            text(d.first_key),
            text(d.last_key),
            num(d.source_rows),
            num(d.target_rows),
        ]);
    }
    rs
}

async fn reverse(proxy: &Arc<Proxy>, k: &str, may_ask: bool) -> Result<String, SqlError> {
    let m = &proxy.migrations;
    let store = m.store(proxy).await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    if j.phase != "switched" {
        return Err(refused(format!(
            "the migration of `{k}` is {}; REVERSE follows SWITCH (before it, CANCEL ends the job)",
            j.phase
        )));
    }
    let running = m
        .running
        .get(k)
        .map(|r| r.clone())
        .filter(|r| r.spec.reverse);
    let Some(running) = running else {
        if let Some(o) = asked_owner(proxy, &j, may_ask) {
            return ask_for_info(proxy, &store, k, requests::Step::Reverse, &o).await;
        }
        return Err(refused(match owner(&j) {
            Some(o) => format!(
                "the stream back of `{k}` runs on the idgate instance {o}; run REVERSE there"
            ),
            None => format!(
                "`{k}` has no stream back to its old placement (the new placement's backends need \
                 log_bin, binlog_format=ROW and binlog_row_image=FULL at SWITCH)"
            ),
        }));
    };
    let forward = start::spec_of(proxy, &j).await.map_err(refused)?;
    let held = super::switch::reverse(proxy, &store, &forward, &running)
        .await
        .map_err(|e| refused(format!("`{k}` was not reversed: {e}")))?;
    Ok(format!(
        "`{k}` is back on its old placement; statements about it were held for {} ms",
        held.as_millis()
    ))
}

async fn complete(proxy: &Arc<Proxy>, k: &str) -> Result<String, SqlError> {
    let store = proxy
        .migrations
        .store(proxy)
        .await
        .map_err(refused)?
        .clone();
    let j = job_of(&store, k).await?;
    if j.phase != "switched" {
        return Err(refused(format!(
            "the migration of `{k}` is {}; COMPLETE follows SWITCH (before it, CANCEL ends the job)",
            j.phase
        )));
    }
    // The stream back ends first.
    if let Some(r) = proxy.migrations.running.get(k).map(|r| r.clone()) {
        r.stop();
        let deadline = Instant::now() + CANCEL_WAIT;
        while proxy.migrations.running.contains_key(k) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let spec = start::spec_of(proxy, &j).await.map_err(refused)?;
    let done = super::switch::complete(&spec).await.map_err(refused)?;
    store.force_phase(k, "complete").await.map_err(refused)?;
    Ok(format!("migration of `{k}` complete: {done}"))
}

/// The job of `k`, or the error that there is none.
async fn job_of(store: &super::store::Store, k: &str) -> Result<JobRow, SqlError> {
    store
        .job(k)
        .await
        .map_err(refused)?
        .ok_or_else(|| refused(format!("there is no migration of `{k}`")))
}

fn owner(j: &JobRow) -> Option<String> {
    j.owner.clone().filter(|_| j.lease_live)
}

async fn cancel(proxy: &Arc<Proxy>, k: &str) -> Result<String, SqlError> {
    let m = &proxy.migrations;
    let store = m.store(proxy).await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    if is_finished(&j.phase) {
        return Err(refused(format!(
            "the migration of `{k}` is already {}",
            j.phase
        )));
    }
    if matches!(j.phase.as_str(), "switching" | "switched") {
        return Err(refused(format!(
            "the migration of `{k}` is {}: the table is served by its new placement; IDGATE \
             MIGRATE COMPLETE ends the job",
            j.phase
        )));
    }
    store.force_phase(k, "cancelling").await.map_err(refused)?;
    // Nobody runs it (a failed job, or its instance is gone): run it here to undo it.
    if !m.running.contains_key(k)
        && !j.lease_live
        && store.claim(k, &m.owner).await.map_err(refused)?
    {
        let spec = start::spec_of(proxy, &j).await.map_err(refused)?;
        super::Migrations::run(proxy, spec, store.clone(), "cancelling".into());
    }
    let deadline = Instant::now() + CANCEL_WAIT;
    loop {
        let now = store.job(k).await.map_err(refused)?;
        match now {
            Some(j) if j.phase == "cancelled" => {
                return Ok(format!(
                    "migration of `{k}` cancelled; the table is served and placed as before"
                ))
            }
            Some(j) if Instant::now() > deadline => {
                return Err(refused(format!(
                    "the cancel of `{k}` has not finished within {} s{}; IDGATE MIGRATE STATUS \
                     shows it",
                    CANCEL_WAIT.as_secs(),
                    j.last_error.map(|e| format!(" ({e})")).unwrap_or_default()
                )))
            }
            None => return Err(refused(format!("the migration of `{k}` is gone"))),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}
