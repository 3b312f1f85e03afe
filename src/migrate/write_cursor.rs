//! The connections a table move writes through, as a [`WriteCursor`], so that moved rows go
//! out through the same batch writer as a client's INSERT … SELECT (`exec::primitives::
//! bulk_write`): each backend's share in bounded statements, one per backend per round, sent to
//! all before any answer is read, in a transaction per backend.

use std::collections::BTreeMap;

use super::writer::{exec, WRITE_TIMEOUT};
use crate::config::Backend;
use crate::exec::collect::{collect, Collected};
use crate::exec::{BackendConn, WriteCursor};
use crate::wire::command::query_packet;
use crate::wire::errors::{self, SqlError};

/// Settings of every session that writes moved rows: values as the copy reads them (UTC
/// times), an explicit 0 stays 0, no check of foreign keys to rows not moved yet, and the fence
/// of a switched table passed (`fence::BYPASS`: the stream back to the old placement).
const SESSION_SETUP: &str = "SET NAMES utf8mb4, time_zone = '+00:00', \
    sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION', foreign_key_checks = 0, \
    @idgate_fence_bypass = 1";

/// One write's connections, taken from the move's idle ones (or opened) and given back by
/// [`MoveCursor::finish`] when they are still usable.
pub struct MoveCursor<'a> {
    backends: &'a BTreeMap<String, Backend>,
    idle: &'a mut BTreeMap<String, BackendConn>,
    conns: Vec<(String, BackendConn)>,
}

impl<'a> MoveCursor<'a> {
    pub fn new(
        backends: &'a BTreeMap<String, Backend>,
        idle: &'a mut BTreeMap<String, BackendConn>,
    ) -> MoveCursor<'a> {
        MoveCursor {
            backends,
            idle,
            conns: Vec::new(),
        }
    }

    /// Gives the connections back for the next write; after a broken one (`healthy` false)
    /// every connection of this write is closed instead, as its transaction state is unknown.
    pub async fn finish(self, healthy: bool) {
        for (backend, c) in self.conns {
            if healthy {
                self.idle.insert(backend, c);
            } else {
                c.close().await;
            }
        }
    }

    fn conn(&mut self, i: usize) -> &mut BackendConn {
        &mut self.conns[i].1
    }

    async fn open(&self, backend: &str) -> Result<BackendConn, String> {
        let cfg = self
            .backends
            .get(backend)
            .ok_or_else(|| format!("backend `{backend}` is not configured"))?;
        let mut c = BackendConn::connect(backend, cfg, Default::default(), WRITE_TIMEOUT)
            .await
            .map_err(|e| format!("writing to backend `{backend}`: {e}"))?;
        exec(&mut c, SESSION_SETUP).await?;
        Ok(c)
    }
}

impl WriteCursor for MoveCursor<'_> {
    /// What broke, for the job's log and retry.
    type End = String;
    type Txn = ();

    async fn lease(&mut self, backend: &str) -> Result<Result<usize, SqlError>, String> {
        if let Some(i) = self.conns.iter().position(|(b, _)| b == backend) {
            return Ok(Ok(i));
        }
        let c = match self.idle.remove(backend) {
            Some(c) => c,
            None => match self.open(backend).await {
                Ok(c) => c,
                Err(e) => return Ok(Err(SqlError::new(errors::ER_UNKNOWN_ERROR, b"HY000", e))),
            },
        };
        self.conns.push((backend.to_string(), c));
        Ok(Ok(self.conns.len() - 1))
    }

    async fn begin(
        &mut self,
        conns: &[usize],
        _savepoint: &'static str,
    ) -> Result<((), Vec<Option<Vec<u8>>>), String> {
        Ok(((), vec![Some(b"BEGIN".to_vec()); conns.len()]))
    }

    /// Its BEGIN goes with its first statement: one never used has nothing to end.
    fn unused(&mut self, _conn: usize, _txn: &()) {}

    async fn end(
        &mut self,
        conns: &[usize],
        _txn: &(),
        keep: bool,
        what: &str,
    ) -> Result<Option<SqlError>, String> {
        let sql: &[u8] = if keep { b"COMMIT" } else { b"ROLLBACK" };
        for &c in conns {
            self.queue(c, sql);
            self.flush(c).await?;
        }
        let mut failed = None;
        for &c in conns {
            if let Collected::Err(e) = self.answer(c).await? {
                let (code, _, msg) = crate::wire::packets::parse_err(&e);
                failed.get_or_insert_with(|| {
                    SqlError::new(
                        code,
                        b"HY000",
                        format!(
                            "{what} on backend `{}`: {}",
                            self.conns[c].0,
                            String::from_utf8_lossy(msg)
                        ),
                    )
                });
            }
        }
        Ok(failed)
    }

    fn queue(&mut self, conn: usize, sql: &[u8]) {
        self.conn(conn).write_command(&query_packet(sql));
    }

    async fn flush(&mut self, conn: usize) -> Result<(), String> {
        let backend = self.conns[conn].0.clone();
        match tokio::time::timeout(WRITE_TIMEOUT, self.conn(conn).flush()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("writing to backend `{backend}`: {e}")),
            Err(_) => Err(format!(
                "writing to backend `{backend}`: no answer within {} s",
                WRITE_TIMEOUT.as_secs()
            )),
        }
    }

    async fn answer(&mut self, conn: usize) -> Result<Collected, String> {
        let backend = self.conns[conn].0.clone();
        let be = self.conn(conn);
        match tokio::time::timeout(WRITE_TIMEOUT, collect(be)).await {
            Ok(Ok(c)) => {
                be.next_response();
                Ok(c)
            }
            Ok(Err(e)) => Err(format!("writing to backend `{backend}`: {e}")),
            Err(_) => Err(format!(
                "writing to backend `{backend}`: no answer within {} s",
                WRITE_TIMEOUT.as_secs()
            )),
        }
    }
}
