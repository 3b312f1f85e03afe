//! Ending a transaction on its participants: ROLLBACK everywhere; one-phase COMMIT when at
//! most one participant wrote; otherwise XA PREPARE on all (pipelined), the decision recorded in
//! the sequence store, then XA COMMIT on all. After the decision the transaction is committed:
//! a backend that does not answer its XA COMMIT is finished by recovery.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tracing::warn;

use super::{End, Session};
use crate::exec::collect::{collect, Collected};
use crate::exec::BackendError;
use crate::wire::command::query_packet;
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;
use crate::xa::xid_sql;

/// One connection's part in a transaction being ended.
struct Part {
    i: usize,
    backend: String,
    xa: Option<Arc<[u8]>>,
    wrote: bool,
}

impl Part {
    fn xid(&self) -> String {
        xid_sql(
            self.xa.as_deref().unwrap_or_default(),
            self.backend.as_bytes(),
        )
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Writes each connection's commands, sends them all, and reads every answer. A connection
    /// that fails is marked broken and reported as `Err`.
    async fn pipeline(
        &mut self,
        cmds: Vec<(usize, Vec<String>)>,
    ) -> Vec<(usize, Result<Vec<Collected>, BackendError>)> {
        for (i, list) in &cmds {
            let be = self.leases.get_mut(*i);
            for c in list {
                be.write_command(&query_packet(c.as_bytes()));
            }
        }
        let mut out = Vec::with_capacity(cmds.len());
        let mut flushed = Vec::with_capacity(cmds.len());
        for (i, _) in &cmds {
            flushed.push(self.leases.get_mut(*i).flush().await);
        }
        for ((i, list), f) in cmds.into_iter().zip(flushed) {
            let be = self.leases.get_mut(i);
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

    /// Ends the transaction on every participant. `Some`: what the client is to hear (the
    /// transaction did not commit). Broken connections are dropped afterwards.
    pub(super) async fn finish_participants(
        &mut self,
        commit: bool,
    ) -> Result<Option<SqlError>, End> {
        let gtrid = self.txn.gtrid.take();
        self.txn.savepoints.clear();
        let mut parts = Vec::new();
        for (i, h) in self.leases.held_mut().iter_mut().enumerate() {
            if h.in_txn {
                parts.push(Part {
                    i,
                    backend: h.backend.clone(),
                    xa: h.xa.clone(),
                    wrote: h.wrote,
                });
                h.leave_txn();
            }
        }
        if parts.is_empty() {
            return Ok(None);
        }
        let r = if !commit {
            self.rollback_parts(&parts, &[]).await;
            None
        } else {
            let writers = parts.iter().filter(|p| p.wrote).count();
            let all_xa = parts.iter().all(|p| p.xa.is_some());
            let r = match gtrid {
                Some(g) if writers > 1 && all_xa => self.two_phase(&parts, &g).await,
                _ => self.one_phase(&parts).await,
            };
            if parts.iter().any(|p| p.xa.is_some()) {
                let two_phase = writers > 1 && all_xa && self.proxy.xa.is_some();
                self.proxy.metrics.xa_commits.inc(two_phase, r.is_none());
            }
            r
        };
        self.leases.drop_broken();
        Ok(r)
    }

    /// XA END + XA ROLLBACK (or ROLLBACK) on each part; `prepared` parts only need XA ROLLBACK.
    async fn rollback_parts(&mut self, parts: &[Part], prepared: &[usize]) {
        let cmds = parts
            .iter()
            .filter(|p| !self.leases.get_mut(p.i).broken)
            .map(|p| {
                let c = match &p.xa {
                    Some(_) if prepared.contains(&p.i) => vec![format!("XA ROLLBACK {}", p.xid())],
                    Some(_) => vec![
                        format!("XA END {}", p.xid()),
                        format!("XA ROLLBACK {}", p.xid()),
                    ],
                    None => vec!["ROLLBACK".to_string()],
                };
                (p.i, c)
            })
            .collect();
        for (i, r) in self.pipeline(cmds).await {
            // The last answer says whether the branch is gone; a branch left in place must
            // not stay on a pooled connection.
            if let Ok(got) = r {
                if let Some(Collected::Err(e)) = got.last() {
                    let (code, _, msg) = packets::parse_err(e);
                    // XAER_NOTA: the backend already rolled the branch back (deadlock).
                    if code != 1397 {
                        warn!(code, error = %String::from_utf8_lossy(msg), "XA ROLLBACK failed; closing the connection");
                        self.leases.get_mut(i).broken = true;
                    }
                }
            }
        }
    }

    /// The first error a part's commands got, with `if_err` added to a backend's error and
    /// `if_lost` to a lost connection (where the outcome may be unknown).
    fn part_error(
        p: &Part,
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
    async fn one_phase(&mut self, parts: &[Part]) -> Option<SqlError> {
        let writer = parts.iter().position(|p| p.wrote);
        let end = |p: &Part| format!("XA END {}", p.xid());
        let commit = |p: &Part| match &p.xa {
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
                (p.i, c)
            })
            .collect();
        let results = self.pipeline(cmds).await;
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
                self.rollback_parts(parts, &[parts[0].i]).await;
            }
            return failure;
        }
        let Some(w) = writer.map(|k| &parts[k]) else {
            if failure.is_some() {
                let all: Vec<usize> = parts.iter().map(|p| p.i).collect();
                self.rollback_parts(parts, &all).await;
            }
            return failure;
        };
        if failure.is_some() {
            // Every branch still open rolls back; `XA ROLLBACK` works after `XA END`.
            let all: Vec<usize> = parts.iter().map(|p| p.i).collect();
            self.rollback_parts(parts, &all).await;
            return failure;
        }
        // Step 2: the writer commits.
        let results = self.pipeline(vec![(w.i, vec![commit(w)])]).await;
        let e = Self::part_error(w, rolled_back, unknown, &results[0].1);
        if e.is_some() {
            self.rollback_parts(std::slice::from_ref(w), &[w.i]).await;
        }
        e
    }

    /// Several participants wrote: prepare all, log the decision, commit all.
    async fn two_phase(&mut self, parts: &[Part], gtrid: &Arc<[u8]>) -> Option<SqlError> {
        let Some(coord) = self.proxy.xa.clone() else {
            return self.one_phase(parts).await;
        };
        coord.begin_prepare(gtrid);
        let cmds = parts
            .iter()
            .map(|p| {
                (
                    p.i,
                    vec![
                        format!("XA END {}", p.xid()),
                        format!("XA PREPARE {}", p.xid()),
                    ],
                )
            })
            .collect();
        let results = self.pipeline(cmds).await;
        let suffix = "; the transaction was rolled back on every backend";
        let mut failure = None;
        let mut prepared = Vec::new();
        for (p, (_, r)) in parts.iter().zip(&results) {
            match Self::part_error(p, suffix, suffix, r) {
                // A lost connection is already broken (the backend rolls back a branch that did
                // not prepare); an ERR leaves the branch idle or rolled back: XA ROLLBACK ends it.
                Some(e) => {
                    failure.get_or_insert(e);
                    prepared.push(p.i);
                }
                None => prepared.push(p.i),
            }
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
            let live: Vec<usize> = prepared;
            self.rollback_parts(parts, &live).await;
            coord.end_prepare(gtrid);
            if parts.iter().any(|p| self.leases.get_mut(p.i).broken) {
                // A prepared branch may be left on a closed connection: recovery rolls it back.
                coord.wake.notify_one();
            }
            return Some(e);
        }
        coord.end_prepare(gtrid);
        // Decided: from here the transaction is committed, whatever a backend answers now.
        let cmds = parts
            .iter()
            .map(|p| (p.i, vec![format!("XA COMMIT {}", p.xid())]))
            .collect();
        let results = self.pipeline(cmds).await;
        let mut unfinished = false;
        for (p, (_, r)) in parts.iter().zip(&results) {
            if let Some(e) = Self::part_error(p, "", "", r) {
                warn!(
                    backend = %p.backend,
                    gtrid = %String::from_utf8_lossy(gtrid),
                    error = %e.message,
                    "XA COMMIT failed after the commit decision; recovery will commit the branch"
                );
                // Closing the connection frees the prepared branch for recovery.
                self.leases.get_mut(p.i).broken = true;
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
