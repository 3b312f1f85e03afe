//! One row per migration job, as `IDGATE MIGRATE STATUS` and the operator's console show it: the
//! store's record, the live figures of a job this instance runs, the share copied and the copy's
//! ETA at the pace this run has kept.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use super::store::JobRow;
use super::Migrations;

/// A job's figures.
#[derive(Debug, Clone, Default)]
pub struct JobStatus {
    pub table: String,
    pub phase: String,
    pub rows_copied: u64,
    pub rows_estimated: u64,
    /// Share of the estimated rows copied (100 once every source is copied).
    pub percent: Option<u64>,
    /// Seconds left of the copy at this run's pace (0 once copied; `None` when not measured:
    /// the job runs on another instance, or this run has copied nothing yet).
    pub eta_seconds: Option<u64>,
    pub lag_events: Option<u64>,
    pub lag_seconds: Option<u64>,
    pub last_error: Option<String>,
    pub sources: Vec<String>,
    pub target: String,
    pub owner: Option<String>,
}

/// Every job (or only the job of `only`, `schema.table`), as the store lists them.
pub async fn jobs(m: &Arc<Migrations>, only: Option<&str>) -> Result<Vec<JobStatus>, String> {
    let store = m.store().await?;
    let mut out = Vec::new();
    for j in store.jobs().await? {
        if only.is_some_and(|k| k != j.table_key) {
            continue;
        }
        let streams = store.streams(&j.table_key).await?;
        let estimated: i64 = streams.iter().map(|s| s.rows_estimated).sum();
        let mut copied: i64 = streams.iter().map(|s| s.rows_copied).sum();
        let mut done = !streams.is_empty() && streams.iter().all(|s| s.copy_done);
        let mut pace = None;
        // A job run here shows its live figures; others what their owner last recorded.
        let (phase, lag_e, lag_s) = match m.running.get(&j.table_key) {
            Some(r) => {
                // The stream back after a switch copies nothing: the copy's figures stay.
                // (Until the run has read the store's figures, the store's are the larger.)
                if !r.spec.reverse {
                    let live: i64 = r
                        .streams
                        .iter()
                        .map(|(_, p)| p.rows_copied.load(Relaxed))
                        .sum();
                    copied = copied.max(live);
                    done |= r.streams.iter().all(|(_, p)| p.copy_done.load(Relaxed));
                    pace = r.copy_base.get().map(|&(t0, before)| Pace {
                        since: t0.elapsed(),
                        copied: copied - before,
                    });
                }
                let (e, s) = super::job::lag_of(&r);
                (r.phase(), e, s)
            }
            None => (j.phase.clone(), j.lag_events, j.lag_seconds),
        };
        let mut row = status_of(&j, phase, copied, estimated, done, pace);
        (row.lag_events, row.lag_seconds) = (lag(lag_e), lag(lag_s));
        out.push(row);
    }
    Ok(out)
}

/// Rows this run copied, in how long.
#[derive(Debug, Clone, Copy)]
struct Pace {
    since: Duration,
    copied: i64,
}

fn status_of(
    j: &JobRow,
    phase: String,
    copied: i64,
    estimated: i64,
    done: bool,
    pace: Option<Pace>,
) -> JobStatus {
    JobStatus {
        table: j.table_key.clone(),
        phase,
        rows_copied: copied.max(0) as u64,
        rows_estimated: estimated.max(0) as u64,
        percent: percent(copied, estimated, done),
        eta_seconds: eta(copied, estimated, done, pace),
        last_error: j.last_error.clone(),
        sources: j.sources.clone(),
        target: j.target.clone(),
        owner: j.owner.clone().filter(|_| j.lease_live),
        ..Default::default()
    }
}

/// A lag of -1 is not measured yet.
fn lag(v: i64) -> Option<u64> {
    u64::try_from(v).ok()
}

/// The estimate is the server's guess: a copy not done stays below 100 even past it.
fn percent(copied: i64, estimated: i64, done: bool) -> Option<u64> {
    if done {
        return Some(100);
    }
    if estimated <= 0 {
        return None;
    }
    let p = copied.max(0) as u128 * 100 / estimated as u128;
    Some(p.min(99) as u64)
}

fn eta(copied: i64, estimated: i64, done: bool, pace: Option<Pace>) -> Option<u64> {
    if done {
        return Some(0);
    }
    let pace = pace?;
    let secs = pace.since.as_secs_f64();
    if pace.copied <= 0 || secs < 1.0 {
        return None;
    }
    let left = estimated - copied;
    if left <= 0 {
        // Past the estimate: how much is left is not known.
        return None;
    }
    let per_s = pace.copied as f64 / secs;
    Some((left as f64 / per_s).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_stays_below_100_until_copied() {
        assert_eq!(percent(0, 1000, false), Some(0));
        assert_eq!(percent(500, 1000, false), Some(50));
        assert_eq!(percent(1500, 1000, false), Some(99));
        assert_eq!(percent(10, 0, false), None);
        assert_eq!(percent(10, 0, true), Some(100));
        assert_eq!(percent(900, 1000, true), Some(100));
    }

    #[test]
    fn eta_follows_this_runs_pace() {
        let pace = |s, n| {
            Some(Pace {
                since: Duration::from_secs(s),
                copied: n,
            })
        };
        // 100 rows/s, 800 left: 8 s.
        assert_eq!(eta(1200, 2000, false, pace(10, 1000)), Some(8));
        assert_eq!(eta(1200, 2000, false, None), None);
        assert_eq!(eta(1200, 2000, false, pace(10, 0)), None);
        assert_eq!(eta(2500, 2000, false, pace(10, 1000)), None);
        assert_eq!(eta(2500, 2000, true, None), Some(0));
        // Rounded up: a last second of work is still a second.
        assert_eq!(eta(0, 1, false, pace(10, 1000)), Some(1));
    }
}
