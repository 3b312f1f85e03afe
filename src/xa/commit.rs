//! Ending a transaction on its participants: ROLLBACK everywhere; one-phase COMMIT when at
//! most one participant wrote; otherwise XA PREPARE on all (pipelined), the decision recorded in
//! the sequence store, then XA COMMIT on all. After the decision the transaction is committed:
//! a backend that does not answer its XA COMMIT is finished by recovery. The session hands in
//! its participating connections; nothing here knows about clients.

use std::sync::Arc;

use tracing::warn;

use super::{xid_sql, Coordinator};
use crate::exec::collect::{collect, Collected};
use crate::exec::{BackendConn, BackendError};
use crate::wire::command::query_packet;
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// One connection's part in a transaction being ended.
pub struct Participant<'a> {
    pub conn: &'a mut BackendConn,
    pub backend: String,
    /// The branch's gtrid when the connection joined as an XA branch.
    pub xa: Option<Arc<[u8]>>,
    pub wrote: bool,
}

impl Participant<'_> {
    fn xid(&self) -> String {
        xid_sql(
            self.xa.as_deref().unwrap_or_default(),
            self.backend.as_bytes(),
        )
    }
}

/// How a transaction ends, for the commit counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    RolledBack,
    OnePhase,
    TwoPhase,
}

/// Ends the transaction on `parts`: ROLLBACK when `commit` is false, else one- or two-phase
/// commit (two-phase when several participants wrote as XA branches of `gtrid` and `coord`
/// records decisions). `Some`: what the client is to hear, the transaction did not commit.
/// Connections that failed are left marked broken.
pub async fn finish(
    parts: &mut [Participant<'_>],
    commit: bool,
    gtrid: Option<&Arc<[u8]>>,
    coord: Option<&Coordinator>,
) -> (Ending, Option<SqlError>) {
    if !commit {
        Commit::rollback_parts(parts, &[]).await;
        return (Ending::RolledBack, None);
    }
    let writers = parts.iter().filter(|p| p.wrote).count();
    let all_xa = parts.iter().all(|p| p.xa.is_some());
    match (gtrid, coord) {
        (Some(g), Some(c)) if writers > 1 && all_xa => {
            (Ending::TwoPhase, Commit::two_phase(parts, g, c).await)
        }
        _ => (Ending::OnePhase, Commit::one_phase(parts).await),
    }
}

/// The steps of [`finish`].
struct Commit;

impl Commit {
    /// Writes each connection's commands, sends them all, and reads every answer. A connection
    /// that fails is marked broken and reported as `Err`.
    async fn pipeline(
        parts: &mut [Participant<'_>],
        cmds: Vec<(usize, Vec<String>)>,
    ) -> Vec<(usize, Result<Vec<Collected>, BackendError>)> {
        for (i, list) in &cmds {
            let be = &mut *parts[*i].conn;
            for c in list {
                be.write_command(&query_packet(c.as_bytes()));
            }
        }
        let mut out = Vec::with_capacity(cmds.len());
        let mut flushed = Vec::with_capacity(cmds.len());
        for (i, _) in &cmds {
            flushed.push(parts[*i].conn.flush().await);
        }
        for ((i, list), f) in cmds.into_iter().zip(flushed) {
            let be = &mut *parts[i].conn;
            let r = async {
                f?;
                let mut got = Vec::with_capacity(list.len());
                for _ in &list {
                    got.push(collect(be).await?);
                    be.next_response();
                }
                Ok(got)
            }
            .await;
            if r.is_err() {
                be.broken = true;
            }
            out.push((i, r));
        }
        out
    }

    /// XA END + XA ROLLBACK (or ROLLBACK) on each part; `prepared` parts only need XA ROLLBACK.
    async fn rollback_parts(parts: &mut [Participant<'_>], prepared: &[usize]) {
        let cmds = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.conn.broken)
            .map(|(k, p)| {
                let c = match &p.xa {
                    Some(_) if prepared.contains(&k) => vec![format!("XA ROLLBACK {}", p.xid())],
                    Some(_) => vec![
                        format!("XA END {}", p.xid()),
                        format!("XA ROLLBACK {}", p.xid()),
                    ],
                    None => vec!["ROLLBACK".to_string()],
                };
                (k, c)
            })
            .collect();
        for (i, r) in Self::pipeline(parts, cmds).await {
            // The last answer says whether the branch is gone; a branch left in place must
            // not stay on a pooled connection.
            if let Ok(got) = r {
                if let Some(Collected::Err(e)) = got.last() {
                    let (code, _, msg) = packets::parse_err(e);
                    // XAER_NOTA: the backend already rolled the branch back (deadlock).
                    if code != 1397 {
                        warn!(code, error = %String::from_utf8_lossy(msg), "XA ROLLBACK failed; closing the connection");
                        parts[i].conn.broken = true;
                    }
                }
            }
        }
    }

    /// The first error a part's commands got, with `if_err` added to a backend's error and
    /// `if_lost` to a lost connection (where the outcome may be unknown).
    fn part_error(
        p: &Participant<'_>,
        if_err: &str,
        if_lost: &str,
        r: &Result<Vec<Collected>, BackendError>,
    ) -> Option<SqlError> {
        let what = if_err;
        match r {
            Ok(got) => got.iter().find_map(|c| match c {
                Collected::Err(e) => {
                    let (code, state, msg) = packets::parse_err(e);
                    Some(SqlError::new(
                        code,
                        &state,
                        format!(
                            "{} (on backend `{}`){what}",
                            String::from_utf8_lossy(msg),
                            p.backend
                        ),
                    ))
                }
                _ => None,
            }),
            Err(e) => Some(SqlError::new(
                errors::CR_SERVER_LOST,
                b"HY000",
                format!(
                    "idgate: lost backend `{}` during COMMIT ({e}){if_lost}",
                    p.backend
                ),
            )),
        }
    }

    /// At most one participant wrote: each commits on its own, the writer last, so that a
    /// participant whose branch the backend already rolled back (a deadlock there) rolls back
    /// the writer too, as MySQL rolls back the whole transaction.
    async fn one_phase(parts: &mut [Participant<'_>]) -> Option<SqlError> {
        let writer = parts.iter().position(|p| p.wrote);
        let end = |p: &Participant<'_>| format!("XA END {}", p.xid());
        let commit = |p: &Participant<'_>| match &p.xa {
            Some(_) => format!("XA COMMIT {} ONE PHASE", p.xid()),
            None => "COMMIT".to_string(),
        };
        let single = parts.len() == 1;
        // Step 1: readers commit; the writer only ends its branch (or everything, when alone).
        let cmds = parts
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let c = match (&p.xa, Some(k) == writer && !single) {
                    (Some(_), true) => vec![end(p)],
                    (None, true) => vec![],
                    (Some(_), false) => vec![end(p), commit(p)],
                    (None, false) => vec![commit(p)],
                };
                (k, c)
            })
            .collect();
        let results = Self::pipeline(parts, cmds).await;
        let unknown = "; whether the transaction committed there is unknown";
        let rolled_back = "; the transaction was rolled back on every backend";
        let mut failure = None;
        for (p, (_, r)) in parts.iter().zip(&results) {
            // Only a lost single participant may have committed; a reader lost in step 1 did
            // not keep the writer from rolling back.
            let if_lost = if single { unknown } else { rolled_back };
            if let Some(e) = Self::part_error(p, rolled_back, if_lost, r) {
                failure.get_or_insert(e);
            }
        }
        if single {
            if failure.is_some() {
                Self::rollback_parts(parts, &[0]).await;
            }
            return failure;
        }
        let all: Vec<usize> = (0..parts.len()).collect();
        let Some(w) = writer else {
            if failure.is_some() {
                Self::rollback_parts(parts, &all).await;
            }
            return failure;
        };
        if failure.is_some() {
            // Every branch still open rolls back; `XA ROLLBACK` works after `XA END`.
            Self::rollback_parts(parts, &all).await;
            return failure;
        }
        // Step 2: the writer commits.
        let results = Self::pipeline(parts, vec![(w, vec![commit(&parts[w])])]).await;
        let e = results
            .first()
            .and_then(|(_, r)| Self::part_error(&parts[w], rolled_back, unknown, r));
        if e.is_some() {
            Self::rollback_parts(std::slice::from_mut(&mut parts[w]), &[0]).await;
        }
        e
    }

    /// Several participants wrote: prepare all, log the decision, commit all.
    async fn two_phase(
        parts: &mut [Participant<'_>],
        gtrid: &Arc<[u8]>,
        coord: &Coordinator,
    ) -> Option<SqlError> {
        coord.begin_prepare(gtrid);
        let cmds = parts
            .iter()
            .enumerate()
            .map(|(k, p)| {
                (
                    k,
                    vec![
                        format!("XA END {}", p.xid()),
                        format!("XA PREPARE {}", p.xid()),
                    ],
                )
            })
            .collect();
        let results = Self::pipeline(parts, cmds).await;
        let suffix = "; the transaction was rolled back on every backend";
        let mut failure = None;
        let mut prepared = Vec::new();
        for (k, (p, (_, r))) in parts.iter().zip(&results).enumerate() {
            // A lost connection is already broken (the backend rolls back a branch that did
            // not prepare); an ERR leaves the branch idle or rolled back: XA ROLLBACK ends it.
            if let Some(e) = Self::part_error(p, suffix, suffix, r) {
                failure.get_or_insert(e);
            }
            prepared.push(k);
        }
        let names: Vec<String> = parts.iter().map(|p| p.backend.clone()).collect();
        if failure.is_none() {
            if let Err(e) = coord.log.record(gtrid, &names).await {
                failure = Some(SqlError::new(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!("idgate: could not record the commit decision in the sequence store ({e}){suffix}"),
                ));
            }
        }
        if let Some(e) = failure {
            Self::rollback_parts(parts, &prepared).await;
            coord.end_prepare(gtrid);
            if parts.iter().any(|p| p.conn.broken) {
                // A prepared branch may be left on a closed connection: recovery rolls it back.
                coord.wake.notify_one();
            }
            return Some(e);
        }
        coord.end_prepare(gtrid);
        // Decided: from here the transaction is committed, whatever a backend answers now.
        let cmds = parts
            .iter()
            .enumerate()
            .map(|(k, p)| (k, vec![format!("XA COMMIT {}", p.xid())]))
            .collect();
        let results = Self::pipeline(parts, cmds).await;
        let mut unfinished = false;
        for (p, (_, r)) in parts.iter_mut().zip(&results) {
            if let Some(e) = Self::part_error(p, "", "", r) {
                warn!(
                    backend = %p.backend,
                    gtrid = %String::from_utf8_lossy(gtrid),
                    error = %e.message,
                    "XA COMMIT failed after the commit decision; recovery will commit the branch"
                );
                // Closing the connection frees the prepared branch for recovery.
                p.conn.broken = true;
                unfinished = true;
            }
        }
        if unfinished {
            coord.wake.notify_one();
        } else if let Err(e) = coord.log.forget(gtrid).await {
            warn!(error = %e, "could not delete a finished commit decision; recovery will");
        }
        None
    }
}
