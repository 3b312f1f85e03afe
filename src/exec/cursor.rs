//! The narrow interface through which a gateway primitive (`primitives/`) does its I/O, as
//! vtgate's primitives work behind a `VCursor`: it runs SELECTs through idgate's routing inside
//! the client's statement (its transaction, its limits) and asks the planner about statements,
//! and never sees the session. The session builds one per statement; tests give a fake one.

use std::future::Future;

use tokio::io::AsyncWrite;

use crate::exec::collect::Collected;
use crate::exec::relay::Client;
use crate::exec::{BackendConn, BackendError};
use crate::route::{PlanContext, Route};
use crate::sql::{BoundColumn, BoundRow};
use crate::wire::errors::SqlError;

/// What an internal SELECT gave.
#[derive(Debug, Default)]
pub struct Fetched {
    pub columns: Vec<BoundColumn>,
    pub rows: Vec<BoundRow>,
}

/// How much of an internal SELECT's answer to keep. `max_rows: u64::MAX` means no row cap
/// (INSERT … SELECT is capped by bytes only).
#[derive(Debug, Clone, Copy)]
pub struct FetchLimits {
    pub max_rows: u64,
    pub max_bytes: u64,
    /// Keep this many rows and drop the rest without an error (EXISTS needs one).
    pub enough: Option<u64>,
}

/// Every call's result is `Ok(Ok(_))`, `Ok(Err(e))` when `e` is the statement's answer (the
/// backend's error, a limit, a refusal) and the session goes on, or `Err(End)` when the session
/// must end (the client left, a backend connection broke mid-answer); primitives pass `End` on
/// untouched.
pub trait Cursor {
    /// Why the session ends, opaque to primitives.
    type End;

    /// The planner's context (database, table rules) for `f`.
    fn plan<T>(&self, f: impl FnOnce(&PlanContext) -> T) -> T;

    /// Where a SELECT/UPDATE/DELETE goes (`None`: the default backend), or why idgate cannot
    /// run it as one statement.
    fn route(&self, stmt: &[u8]) -> Result<Option<Route>, SqlError>;

    /// Runs `select` on `backend` alone (a question about that backend's own tables), within
    /// the statement's transaction and limits, and keeps its answer.
    fn fetch_on(
        &mut self,
        backend: &str,
        select: &[u8],
        limits: FetchLimits,
    ) -> impl Future<Output = Result<Result<Fetched, SqlError>, Self::End>>;

    /// Runs `select` through idgate's routing, as a client's would run, and keeps its answer.
    fn fetch(
        &mut self,
        select: &[u8],
        limits: FetchLimits,
    ) -> impl Future<Output = Result<Result<Fetched, SqlError>, Self::End>>;
}

/// For each connection of a write, the statement that starts its part (`None`: nothing to send).
pub type Starts = Vec<Option<Vec<u8>>>;

/// What a primitive that writes rows itself reaches through: connections on named backends, and
/// a way of making a write on several of them all-or-nothing. A client's statement makes it
/// with savepoints inside the client's transaction, XA branches, or a transaction per backend;
/// a table move with a transaction per backend on connections of its own. Connections are named
/// by the index `lease` gave.
pub trait WriteCursor {
    /// Why the write cannot go on (the client left, a connection broke mid-answer), opaque to
    /// primitives.
    type End;

    /// How the write's parts were made all-or-nothing, for `end`.
    type Txn;

    /// The statement's connection to `backend`, leased if it holds none yet.
    fn lease(
        &mut self,
        backend: &str,
    ) -> impl Future<Output = Result<Result<usize, SqlError>, Self::End>>;

    /// Makes the write on `conns` all-or-nothing; for each, the statement that starts its
    /// part, to send just before its first write.
    fn begin(
        &mut self,
        conns: &[usize],
        savepoint: &'static str,
    ) -> impl Future<Output = Result<(Self::Txn, Starts), Self::End>>;

    /// Keeps (`keep`) or undoes what the write did on every connection; a COMMIT that failed
    /// after others committed comes back for the client (`what` names the statement).
    fn end(
        &mut self,
        conns: &[usize],
        txn: &Self::Txn,
        keep: bool,
        what: &str,
    ) -> impl Future<Output = Result<Option<SqlError>, Self::End>>;

    /// A connection `begin` covered that the write did not use: it takes no part in `end`.
    fn unused(&mut self, conn: usize, txn: &Self::Txn);

    /// Queues a statement on `conn` (sent with `flush`, answered in order by `answer`).
    fn queue(&mut self, conn: usize, sql: &[u8]);

    /// Sends what is queued on `conn`.
    fn flush(&mut self, conn: usize) -> impl Future<Output = Result<(), Self::End>>;

    /// The answer to the next statement sent on `conn`.
    fn answer(&mut self, conn: usize) -> impl Future<Output = Result<Collected, Self::End>>;

    /// Reads back what the write left on `backend` with `select`. A client's statement reads on
    /// a connection of its own once its rows are committed, so the client's connection keeps
    /// its warnings and ROW_COUNT(); here, on the write's connection to `backend`.
    fn read_back(
        &mut self,
        backend: &str,
        select: &[u8],
    ) -> impl Future<Output = Result<Result<Collected, SqlError>, Self::End>> {
        read_on_write_conn(self, backend, select)
    }
}

/// `select` on the write's own connection to `backend`, answered.
pub async fn read_on_write_conn<C: WriteCursor + ?Sized>(
    c: &mut C,
    backend: &str,
    select: &[u8],
) -> Result<Result<Collected, SqlError>, C::End> {
    let conn = match c.lease(backend).await? {
        Ok(conn) => conn,
        Err(e) => return Ok(Err(e)),
    };
    c.queue(conn, select);
    c.flush(conn).await?;
    Ok(Ok(c.answer(conn).await?))
}

/// What `LOAD DATA LOCAL` into a placed table reaches through beyond a write's connections:
/// each connection itself (its own LOAD asks idgate for a file, which idgate streams), and the
/// client's file.
pub trait LoadCursor: WriteCursor {
    /// The connection `lease` named.
    fn conn(&mut self, conn: usize) -> &mut crate::exec::BackendConn;

    /// The session's end for a connection that broke mid-answer.
    fn lost(&mut self, e: crate::exec::BackendError) -> Self::End;

    /// Asks the client for its file `name`.
    fn ask_file(&mut self, name: &[u8]) -> impl Future<Output = Result<(), Self::End>>;

    /// The client's next packet of the file into `buf` (empty: the file is over), within the
    /// session's read timeout.
    fn file_packet(&mut self, buf: &mut Vec<u8>) -> impl Future<Output = Result<(), Self::End>>;

    /// The client's file is read: its next packet is a command again.
    fn file_read(&mut self);
}

/// What a primitive that answers the client with several backends' results (a concatenation, a
/// merge, DDL on every backend) reaches through: the statement's connections, in the client's
/// transaction, and the client. Connections are named by the index `connection` or
/// `send_to_all` gave.
pub trait RelayCursor {
    /// Why the session ends, opaque to primitives.
    type End;

    /// The client's side of the connection.
    type Client: AsyncWrite + Unpin;

    /// The statement's connection to `backend`, leased if it holds none yet (not joined to the
    /// client's transaction: for statements that end any transaction, DDL).
    fn connection(
        &mut self,
        backend: &str,
    ) -> impl Future<Output = Result<Result<usize, SqlError>, Self::End>>;

    /// `send_to_all`, telling the client when a connection could not be had (`Ok(None)`).
    fn send_to_all_or_tell(
        &mut self,
        backends: &[String],
        packet: &[u8],
    ) -> impl Future<Output = Result<Option<Vec<usize>>, Self::End>> {
        async move {
            match self.send_to_all(backends, packet).await? {
                Ok(idx) => Ok(Some(idx)),
                Err(e) => {
                    self.send_error(&e);
                    Ok(None)
                }
            }
        }
    }

    /// The statement's connection to `backend`, leased if it holds none yet, joined to the
    /// client's transaction.
    fn joined(
        &mut self,
        backend: &str,
    ) -> impl Future<Output = Result<Result<usize, SqlError>, Self::End>>;

    /// Leases a connection on each backend, joins each to the client's transaction and sends
    /// `packet` on all of them, pipelined. `Ok(Err(e))`: a connection could not be had and
    /// nothing was sent.
    fn send_to_all(
        &mut self,
        backends: &[String],
        packet: &[u8],
    ) -> impl Future<Output = Result<Result<Vec<usize>, SqlError>, Self::End>>;

    /// The connection `conn` names.
    fn conn(&mut self, conn: usize) -> &mut BackendConn;

    /// The client, to answer it.
    fn client(&mut self) -> Client<'_, Self::Client>;

    /// The connections `conns` name, in that order, and the client to relay their answers to.
    fn relay_parts(&mut self, conns: &[usize])
        -> (Vec<&mut BackendConn>, Client<'_, Self::Client>);

    /// The session's end for a relay that failed: the client left, or a connection broke
    /// mid-answer (the client is told).
    fn failed(&mut self, e: BackendError) -> Self::End;

    /// Answers the client with `e`.
    fn send_error(&mut self, e: &SqlError);

    /// The session's status flags for an answer (`more`: more results follow).
    fn status(&self, more: bool) -> u16;

    /// Bytes a merge may hold at once (`merge_memory_limit`).
    fn merge_memory_limit(&self) -> u64;

    /// Counts the rows a merge gave, for the statement's observation.
    fn merged(&mut self, rows: u64);
}
