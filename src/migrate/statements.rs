//! The answers to `IDGATE MIGRATE …` and `SHOW IDGATE MIGRATIONS` (admin users only; the
//! caller has checked the right).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::requests::{self, Answered};
use super::start;
use super::store::{is_finished, JobRow};
use super::Migrations;
use crate::exec::result_set::{num, text, Answer, Col, ResultSet};
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
pub async fn answer(
    migrations: &Arc<Migrations>,
    db: Option<&str>,
    stmt: MigrateStatement,
) -> Answer {
    let r = match stmt {
        MigrateStatement::Malformed(why) => {
            Err(SqlError::new(crate::sql::ER_PARSE_ERROR, b"42000", why))
        }
        MigrateStatement::Start { table, entry } => match key(&table, db) {
            Ok((schema, name)) => start_job(migrations, &schema, &name, &entry).await,
            Err(e) => Err(e),
        },
        MigrateStatement::Status { table } => {
            let k = match table.map(|t| key(&t, db)).transpose() {
                Ok(k) => k.map(|(s, n)| format!("{s}.{n}")),
                Err(e) => return Answer::Err(e),
            };
            return match status(migrations, k.as_deref()).await {
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
                MigrateStep::Cancel => cancel(migrations, &k).await,
                MigrateStep::Switch => switch(migrations, &k, true).await,
                MigrateStep::Complete => complete(migrations, &k).await,
                MigrateStep::Reverse => reverse(migrations, &k, true).await,
                MigrateStep::Verify => {
                    return match verify(migrations, &k, true).await {
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
    migrations: &Arc<Migrations>,
    schema: &str,
    table: &str,
    entry: &str,
) -> Result<String, SqlError> {
    let proxy = &migrations.proxy;
    let m = migrations;
    let store = m.store().await.map_err(refused)?.clone();
    let k = format!("{schema}.{table}");
    let partners = super::group::partners(proxy, schema, table, entry).map_err(refused)?;
    let jobs = store.jobs().await.map_err(refused)?;
    let busy = |key: &str| {
        jobs.iter()
            .find(|j| j.table_key == key && !is_finished(&j.phase))
    };
    if let Some(j) = busy(&k) {
        return Err(refused(format!(
            "a migration of `{k}` is already {}; IDGATE MIGRATE CANCEL {k} ends it",
            j.phase
        )));
    }
    for p in &partners {
        let pk = format!("{schema}.{}", p.table);
        if let Some(j) = busy(&pk) {
            return Err(refused(format!(
                "`{pk}` is placed alike `{k}` and must move with it, but a migration of `{pk}` \
                 is already {}; IDGATE MIGRATE CANCEL {pk} ends it",
                j.phase
            )));
        }
    }
    let mut prepared = vec![start::prepare(proxy, schema, table, entry).await?];
    for p in &partners {
        match start::prepare(proxy, schema, &p.table, &p.entry).await {
            Ok(x) => prepared.push(x),
            // A rule for a table this database does not have.
            Err(e) if e.code == start::ER_NO_SUCH_TABLE => {}
            Err(e) => {
                undo_prepared(&prepared).await;
                return Err(refused(format!(
                    "`{schema}.{}` is placed alike `{k}` and must move with it, but cannot: {}",
                    p.table, e.message
                )));
            }
        }
    }
    let records: Vec<_> = prepared
        .iter()
        .map(|(_, job, streams)| (job.clone(), streams.clone()))
        .collect();
    if !store.create(&records, &m.owner).await.map_err(refused)? {
        // Another START won the race; undo what this one created.
        undo_prepared(&prepared).await;
        return Err(refused(format!("a migration of `{k}` is already running")));
    }
    let sources = prepared[0].1.sources.join(", ");
    let targets = prepared[0].0.target.backends().join(", ");
    let with: Vec<String> = prepared[1..]
        .iter()
        .map(|(spec, ..)| format!("`{}`", spec.key))
        .collect();
    for (spec, ..) in prepared {
        Migrations::run(migrations, spec, store.clone(), "copying".into());
    }
    let together = if with.is_empty() {
        String::new()
    } else {
        format!(
            " (with {}, placed alike: they move together)",
            with.join(", ")
        )
    };
    Ok(format!(
        "migration of `{k}` started{together}: copying from {sources} to {targets}; IDGATE \
         MIGRATE STATUS shows its progress"
    ))
}

/// Undoes what preparing jobs created on their new backends.
async fn undo_prepared(prepared: &[(super::job::Spec, JobRow, Vec<super::store::StreamRow>)]) {
    for (spec, ..) in prepared {
        if let Err(e) = super::job::cleanup(spec).await {
            tracing::warn!(table = %spec.key, error = %e, "cannot undo a refused START");
        }
    }
}

async fn status(migrations: &Arc<Migrations>, only: Option<&str>) -> Result<ResultSet, SqlError> {
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
        ("percent", Col::UInt),
        ("eta_seconds", Col::UInt),
    ]);
    for j in super::status_rows::jobs(migrations, only)
        .await
        .map_err(refused)?
    {
        rs.row(&[
            text(j.table),
            text(j.phase),
            num(j.rows_copied),
            num(j.rows_estimated),
            j.lag_events.and_then(num),
            j.lag_seconds.and_then(num),
            j.last_error,
            text(j.sources.join(",")),
            text(j.target),
            j.owner,
            j.percent.and_then(num),
            j.eta_seconds.and_then(num),
        ]);
    }
    Ok(rs)
}

/// Runs `step` of the job `k`, which this instance runs, for another instance that was asked.
pub(super) async fn run_here(
    migrations: &Arc<Migrations>,
    k: &str,
    step: requests::Step,
) -> Result<Answered, SqlError> {
    match step {
        requests::Step::Switch => switch(migrations, k, false).await.map(Answered::Info),
        requests::Step::Verify => verify(migrations, k, false)
            .await
            .map(Answered::Differences),
        requests::Step::Reverse => reverse(migrations, k, false).await.map(Answered::Info),
    }
}

/// The instance that runs the job, when it is another live one this one may ask
/// (`may_ask`: not itself answering another instance's request).
fn asked_owner(migrations: &Migrations, j: &JobRow, may_ask: bool) -> Option<String> {
    owner(j).filter(|o| may_ask && *o != migrations.owner && !is_finished(&j.phase))
}

/// Asks the instance `o` for `step` and expects an info text back.
async fn ask_for_info(
    migrations: &Arc<Migrations>,
    store: &super::store::Store,
    k: &str,
    step: requests::Step,
    o: &str,
) -> Result<String, SqlError> {
    match requests::ask(migrations, store, k, step, o).await? {
        Answered::Info(s) => Ok(s),
        Answered::Differences(_) => Err(refused("the running instance answered with rows")),
    }
}

/// The jobs that move together with `k` (itself first), and those of them run here.
async fn group_here(
    migrations: &Arc<Migrations>,
    store: &super::store::Store,
    j: &JobRow,
) -> Result<(Vec<JobRow>, Vec<Arc<super::job::Running>>), SqlError> {
    let proxy = &migrations.proxy;
    let jobs = store.jobs().await.map_err(refused)?;
    let group = super::group::group_of(proxy, j, &jobs);
    let here = group
        .iter()
        .filter_map(|g| migrations.running.get(&g.table_key).map(|r| r.clone()))
        .collect();
    Ok((group, here))
}

/// The refusal for tables that move together but whose jobs run on different instances.
fn split_group(group: &[JobRow]) -> SqlError {
    let owners: Vec<String> = group
        .iter()
        .map(|g| format!("`{}` on {}", g.table_key, owner(g).unwrap_or("none".into())))
        .collect();
    refused(format!(
        "{} are placed alike and switch together, but their jobs run on different idgate \
         instances ({}); try again when one instance runs them all (an instance takes over \
         the jobs of its group)",
        super::group::named(group),
        owners.join(", ")
    ))
}

/// " (with `b`, placed alike)" for a group of more than one table, else nothing.
fn with_others(group: &[JobRow]) -> String {
    if group.len() < 2 {
        return String::new();
    }
    format!(
        " together with {} (placed alike)",
        super::group::named(&group[1..])
    )
}

async fn switch(migrations: &Arc<Migrations>, k: &str, may_ask: bool) -> Result<String, SqlError> {
    let proxy = &migrations.proxy;
    let m = migrations;
    let store = m.store().await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    let (group, here) = group_here(migrations, &store, &j).await?;
    if here.is_empty() {
        if let Some(o) = asked_owner(migrations, &j, may_ask).filter(|_| j.phase != "switched") {
            // This instance's statements about the tables wait too, and then run on the
            // placements the store records, instead of meeting the old placements' fence.
            let holds: Vec<_> = group
                .iter()
                .map(|g| {
                    let (schema, table) = g.table_key.split_once('.').unwrap_or(("", k));
                    proxy.migrations.holds.hold(schema, table)
                })
                .collect();
            let r = ask_for_info(migrations, &store, k, requests::Step::Switch, &o).await;
            if r.is_ok() {
                if let Err(e) = super::follow_placements(migrations).await {
                    tracing::warn!(table = %k, error = %e, "cannot read the new placement yet");
                }
            }
            drop(holds);
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
    }
    if here.len() < group.len() {
        return Err(split_group(&group));
    }
    let members: Vec<super::switch::Member> = group
        .iter()
        .zip(here)
        .map(|(g, running)| super::switch::Member {
            spec: running.spec.clone(),
            entry: g.target.clone(),
            running,
        })
        .collect();
    let held = super::switch::switch(migrations, &store, &members)
        .await
        .map_err(|e| {
            refused(format!(
                "`{k}`{} was not switched, placements are unchanged: {e}",
                with_others(&group)
            ))
        })?;
    Ok(format!(
        "`{k}`{} switched to its new placement; statements about it were held for {} ms",
        with_others(&group),
        held.as_millis()
    ))
}

async fn verify(
    migrations: &Arc<Migrations>,
    k: &str,
    may_ask: bool,
) -> Result<Vec<super::verify::Difference>, SqlError> {
    let proxy = &migrations.proxy;
    let m = migrations;
    let store = m.store().await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    let Some(running) = m.running.get(k).map(|r| r.clone()) else {
        if let Some(o) = asked_owner(migrations, &j, may_ask) {
            return match requests::ask(migrations, &store, k, requests::Step::Verify, &o).await? {
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

async fn reverse(migrations: &Arc<Migrations>, k: &str, may_ask: bool) -> Result<String, SqlError> {
    let proxy = &migrations.proxy;
    let m = migrations;
    let store = m.store().await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    if j.phase != "switched" {
        return Err(refused(format!(
            "the migration of `{k}` is {}; REVERSE follows SWITCH (before it, CANCEL ends the job)",
            j.phase
        )));
    }
    let (group, here) = group_here(migrations, &store, &j).await?;
    let here: Vec<_> = here.into_iter().filter(|r| r.spec.reverse).collect();
    if here.is_empty() {
        if let Some(o) = asked_owner(migrations, &j, may_ask) {
            return ask_for_info(migrations, &store, k, requests::Step::Reverse, &o).await;
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
    }
    if here.len() < group.len() {
        return Err(split_group(&group));
    }
    let mut members = Vec::new();
    for (g, running) in group.iter().zip(here) {
        let forward = start::spec_of(proxy, g).await.map_err(refused)?;
        members.push(super::switch::Back { forward, running });
    }
    let held = super::switch::reverse(migrations, &store, &members)
        .await
        .map_err(|e| {
            refused(format!(
                "`{k}`{} was not reversed: {e}",
                with_others(&group)
            ))
        })?;
    Ok(format!(
        "`{k}`{} is back on its old placement; statements about it were held for {} ms",
        with_others(&group),
        held.as_millis()
    ))
}

async fn complete(migrations: &Arc<Migrations>, k: &str) -> Result<String, SqlError> {
    let proxy = &migrations.proxy;
    let store = migrations.store().await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    if j.phase != "switched" {
        return Err(refused(format!(
            "the migration of `{k}` is {}; COMPLETE follows SWITCH (before it, CANCEL ends the job)",
            j.phase
        )));
    }
    let (group, _) = group_here(migrations, &store, &j).await?;
    let mut done = Vec::new();
    for g in group.iter().filter(|g| g.phase == "switched") {
        let gk = &g.table_key;
        // The stream back ends first.
        if let Some(r) = migrations.running.get(gk).map(|r| r.clone()) {
            r.stop();
            let deadline = Instant::now() + CANCEL_WAIT;
            while migrations.running.contains_key(gk) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let spec = start::spec_of(proxy, g).await.map_err(refused)?;
        let d = super::switch::complete(&spec).await.map_err(refused)?;
        store.force_phase(gk, "complete").await.map_err(refused)?;
        done.push(if gk == k { d } else { format!("`{gk}`: {d}") });
    }
    Ok(format!(
        "migration of `{k}`{} complete: {}",
        with_others(&group),
        done.join("; ")
    ))
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

/// CANCEL of `k` cancels every table that moves with it.
async fn cancel(migrations: &Arc<Migrations>, k: &str) -> Result<String, SqlError> {
    let m = migrations;
    let store = m.store().await.map_err(refused)?.clone();
    let j = job_of(&store, k).await?;
    let (group, _) = group_here(migrations, &store, &j).await?;
    let mut done = cancel_one(migrations, &store, j).await?;
    for g in group.into_iter().skip(1) {
        let gk = g.table_key.clone();
        cancel_one(migrations, &store, g).await.map_err(|e| {
            refused(format!(
                "`{k}` was cancelled, `{gk}` (placed alike) not: {}",
                e.message
            ))
        })?;
        done = format!("{done}; `{gk}` (placed alike) too");
    }
    Ok(done)
}

async fn cancel_one(
    migrations: &Arc<Migrations>,
    store: &super::store::Store,
    j: JobRow,
) -> Result<String, SqlError> {
    let proxy = &migrations.proxy;
    let m = migrations;
    let k = j.table_key.as_str();
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
        Migrations::run(migrations, spec, store.clone(), "cancelling".into());
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
