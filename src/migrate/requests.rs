//! SWITCH, VERIFY and REVERSE sent to any instance: the instance that runs the job does them.
//! The asking instance writes a request into the sequence store (`idgate_migration_requests`);
//! the running instance takes it within `POLL_EVERY`, runs the step as its own admin would, and
//! writes the answer back; the asking session waits for it and answers its client with it. A
//! request nobody took before it expired is never taken later, so no step runs after its
//! client stopped waiting.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::store::{bounded, Store};
use super::verify::Difference;
use super::Migrations;
use crate::idgen::store::DB_NOW_MS;
use crate::wire::errors::SqlError;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS idgate_migration_requests (\
    id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, \
    table_key VARCHAR(200) NOT NULL, \
    step VARCHAR(16) NOT NULL, \
    asked_by VARCHAR(100) NOT NULL, \
    expires_ms BIGINT NOT NULL, \
    taken_by VARCHAR(100) NULL, \
    answered TINYINT NOT NULL DEFAULT 0, \
    answer MEDIUMTEXT NULL, \
    KEY pending (answered, table_key)) ENGINE=InnoDB";

/// How often an instance running jobs looks for requests.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// How long a request waits to be taken: the running instance takes it at its next look.
const TAKE_WITHIN_MS: i64 = 10_000;
/// How long a taken request may run (a SWITCH drains, raises ids and stops the job's tasks,
/// each bounded well under this).
const RUN_WITHIN: Duration = Duration::from_secs(180);
/// Requests older than this are gone whatever became of them (longer than any ask waits).
const STALE_MS: i64 = 3_600_000;
/// How often an instance running jobs deletes stale requests.
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// How often the asking session looks for the answer.
const ANSWER_POLL: Duration = Duration::from_millis(100);

/// A step another instance may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Switch,
    Verify,
    Reverse,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::Switch => "switch",
            Step::Verify => "verify",
            Step::Reverse => "reverse",
        }
    }

    fn from_name(s: &str) -> Option<Step> {
        [Step::Switch, Step::Verify, Step::Reverse]
            .into_iter()
            .find(|st| st.name() == s)
    }
}

/// What a step answered where it ran.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// The OK's info text.
    Info(String),
    /// VERIFY's rows.
    Differences(Vec<Difference>),
}

pub async fn create_table(store: &Store) -> Result<(), String> {
    let mut c = store.conn().await?;
    bounded(c.query_drop(CREATE)).await
}

fn refused(message: impl Into<String>) -> SqlError {
    super::statements::refused(message)
}

/// Asks the instance `owner`, which runs the job `key`, to run `step`, and waits for its answer.
pub async fn ask(
    migrations: &Arc<Migrations>,
    store: &Store,
    key: &str,
    step: Step,
    owner: &str,
) -> Result<Answered, SqlError> {
    let me = &migrations.owner;
    let mut c = store.conn().await.map_err(refused)?;
    bounded(c.exec_drop(
        format!(
            "INSERT INTO idgate_migration_requests (table_key, step, asked_by, expires_ms) \
             VALUES (?, ?, ?, {DB_NOW_MS} + ?)"
        ),
        (key, step.name(), me, TAKE_WITHIN_MS),
    ))
    .await
    .map_err(refused)?;
    let id = c.last_insert_id().unwrap_or(0);
    drop(c);
    let asked = Instant::now();
    let take_within = Duration::from_millis(TAKE_WITHIN_MS as u64);
    let mut taken = false;
    loop {
        tokio::time::sleep(ANSWER_POLL).await;
        let mut c = store.conn().await.map_err(refused)?;
        let row: Option<(Option<String>, i8, Option<String>)> = bounded(c.exec_first(
            "SELECT taken_by, answered, answer FROM idgate_migration_requests WHERE id = ?",
            (id,),
        ))
        .await
        .map_err(refused)?;
        let Some((taken_by, answered, answer)) = row else {
            return Err(refused(format!(
                "the request to {owner} for `{key}` vanished"
            )));
        };
        taken |= taken_by.is_some();
        if answered == 1 {
            let _ =
                bounded(c.exec_drop("DELETE FROM idgate_migration_requests WHERE id = ?", (id,)))
                    .await;
            return decode(answer.as_deref().unwrap_or(""));
        }
        if !taken && asked.elapsed() > take_within + POLL_EVERY * 5 {
            // Expired: the running instance never takes it now.
            let _ = bounded(c.exec_drop(
                "DELETE FROM idgate_migration_requests WHERE id = ? AND taken_by IS NULL",
                (id,),
            ))
            .await;
            if c.affected_rows() == 1 {
                return Err(refused(format!(
                    "the idgate instance {owner} running the migration of `{key}` did not take \
                     the {} within {} s; nothing was done. Try again, or run it there",
                    step.name().to_uppercase(),
                    take_within.as_secs()
                )));
            }
            taken = true;
        }
        if taken && asked.elapsed() > take_within + RUN_WITHIN {
            return Err(refused(format!(
                "the idgate instance {owner} took the {} of `{key}` but gave no answer within \
                 {} s; IDGATE MIGRATE STATUS shows where the job is",
                step.name().to_uppercase(),
                RUN_WITHIN.as_secs()
            )));
        }
    }
}

/// Takes and runs the requests for the jobs this instance runs, until the migrations are gone.
pub fn serve(migrations: &Arc<Migrations>) {
    let weak = Arc::downgrade(migrations);
    tokio::spawn(async move {
        let mut swept = Instant::now();
        loop {
            tokio::time::sleep(POLL_EVERY).await;
            let Some(migrations) = weak.upgrade() else {
                return;
            };
            if migrations.running.is_empty() {
                continue;
            }
            if let Err(e) = take_requests(&migrations).await {
                debug!(error = %e, "looking for migration requests");
            }
            if swept.elapsed() > SWEEP_EVERY {
                swept = Instant::now();
                if let Err(e) = forget_stale(&migrations).await {
                    debug!(error = %e, "deleting stale migration requests");
                }
            }
        }
    });
}

/// Deletes requests whose asker went away without reading them (the table stays tiny).
async fn forget_stale(migrations: &Arc<Migrations>) -> Result<(), String> {
    let store = migrations.store().await?.clone();
    let mut c = store.conn().await?;
    bounded(c.query_drop(format!(
        "DELETE FROM idgate_migration_requests WHERE expires_ms < {DB_NOW_MS} - {STALE_MS}"
    )))
    .await
}

async fn take_requests(migrations: &Arc<Migrations>) -> Result<(), String> {
    let m = migrations;
    let keys: Vec<String> = m.running.iter().map(|r| r.key().clone()).collect();
    let store = m.store().await?.clone();
    let mut c = store.conn().await?;
    let pending: Vec<(u64, String, String)> = bounded(c.query(format!(
        "SELECT id, table_key, step FROM idgate_migration_requests \
         WHERE answered = 0 AND taken_by IS NULL AND expires_ms > {DB_NOW_MS} ORDER BY id"
    )))
    .await?;
    for (id, key, step) in pending {
        if !keys.contains(&key) {
            continue;
        }
        bounded(c.exec_drop(
            format!(
                "UPDATE idgate_migration_requests SET taken_by = ? \
                 WHERE id = ? AND taken_by IS NULL AND expires_ms > {DB_NOW_MS}"
            ),
            (&m.owner, id),
        ))
        .await?;
        if c.affected_rows() != 1 {
            continue;
        }
        let (migrations, store) = (migrations.clone(), store.clone());
        // Each request runs on its own: a SWITCH of one table does not wait for another's.
        tokio::spawn(async move {
            let answer = match Step::from_name(&step) {
                Some(step) => super::statements::run_here(&migrations, &key, step).await,
                None => Err(refused(format!("unknown step `{step}`"))),
            };
            let text = encode(&answer).to_string();
            let r = async {
                let mut c = store.conn().await?;
                bounded(c.exec_drop(
                    "UPDATE idgate_migration_requests SET answered = 1, answer = ? WHERE id = ?",
                    (text, id),
                ))
                .await
            }
            .await;
            if let Err(e) = r {
                warn!(table = %key, error = %e, "cannot write the answer of a migration request");
            }
        });
    }
    Ok(())
}

fn encode(a: &Result<Answered, SqlError>) -> Value {
    match a {
        Ok(Answered::Info(s)) => json!({ "info": s }),
        Ok(Answered::Differences(d)) => json!({
            "differences": d.iter().map(|d| json!([
                d.source, d.first_key, d.last_key, d.source_rows, d.target_rows
            ])).collect::<Vec<_>>()
        }),
        Err(e) => json!({
            "error": [e.code, String::from_utf8_lossy(&e.state), e.message]
        }),
    }
}

fn decode(text: &str) -> Result<Answered, SqlError> {
    let bad = || {
        refused(format!(
            "an unreadable answer from the running instance: {text}"
        ))
    };
    let v: Value = serde_json::from_str(text).map_err(|_| bad())?;
    if let Some(s) = v.get("info").and_then(Value::as_str) {
        return Ok(Answered::Info(s.to_string()));
    }
    if let Some(rows) = v.get("differences").and_then(Value::as_array) {
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let s = |i: usize| r.get(i).and_then(Value::as_str).map(str::to_string);
            let n = |i: usize| r.get(i).and_then(Value::as_u64);
            out.push(Difference {
                source: s(0).ok_or_else(bad)?,
                first_key: s(1).ok_or_else(bad)?,
                last_key: s(2).ok_or_else(bad)?,
                source_rows: n(3).ok_or_else(bad)?,
                target_rows: n(4).ok_or_else(bad)?,
            });
        }
        return Ok(Answered::Differences(out));
    }
    let e = v.get("error").and_then(Value::as_array).ok_or_else(bad)?;
    let code = e.first().and_then(Value::as_u64).ok_or_else(bad)?;
    let state = e.get(1).and_then(Value::as_str).ok_or_else(bad)?;
    let message = e.get(2).and_then(Value::as_str).ok_or_else(bad)?;
    let mut st = *b"HY000";
    if state.len() == 5 {
        st.copy_from_slice(state.as_bytes());
    }
    Err(SqlError::new(code as u16, &st, message.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_back_as_they_were_written() {
        let cases = [
            Ok(Answered::Info("`s.t` switched".into())),
            Ok(Answered::Differences(vec![Difference {
                source: "shard0".into(),
                first_key: "1".into(),
                last_key: "9".into(),
                source_rows: 9,
                target_rows: 8,
            }])),
            Err(SqlError::new(1105, b"HY000", "not ready")),
        ];
        for a in cases {
            let back = decode(&encode(&a).to_string());
            match (&a, &back) {
                (Ok(x), Ok(y)) => assert_eq!(x, y),
                (Err(x), Err(y)) => assert_eq!(
                    (x.code, &x.state, &x.message),
                    (y.code, &y.state, &y.message)
                ),
                _ => panic!("{a:?} came back as {back:?}"),
            }
        }
        assert!(decode("not json").is_err());
    }
}
