//! The cursor gateway primitives (`exec::primitives`) run through for one statement of the
//! session: its connections, its transaction and the statement's scope, its planning context.

use tokio::io::{AsyncRead, AsyncWrite};

use super::fetch::{FetchLimits, Fetched};
use crate::exec::collect::{collect, Collected};
use crate::exec::relay::Client;
use crate::exec::{
    BackendConn, BackendError, Cursor, LoadCursor, RelayCursor, StatementScope, WriteCursor,
};
use crate::route::{PlanContext, Route};
use crate::session::{End, Session};
use crate::wire::command::query_packet;
use crate::wire::errors;
use crate::wire::errors::SqlError;
use crate::wire::framing::FrameError;
use crate::wire::packets;
use std::time::Duration;

/// How a write's parts on several backends are made all-or-nothing, as MariaDB's own statement
/// is: in the client's transaction each part sits behind a savepoint; otherwise each backend
/// gets a transaction of its own (an XA branch in XA mode), committed only if every part
/// succeeded.
pub(in crate::session) struct BulkTxn {
    /// Inside the client's transaction: a savepoint on each backend.
    in_txn: bool,
    /// Autocommit in XA mode: one XA branch per backend, committed with two-phase commit.
    xa_auto: bool,
    savepoint: &'static str,
}

impl BulkTxn {
    /// Autocommit in XA mode: each connection is an XA branch of its own.
    fn xa_auto(&self) -> bool {
        self.xa_auto
    }
}

/// The cursor gateway primitives run through for one statement of the session: its
/// connections, its transaction and `scope`, its planning context.
pub(in crate::session) struct StatementExec<'a, R, W> {
    pub(in crate::session) session: &'a mut Session<R, W>,
    pub(in crate::session) scope: StatementScope,
    /// What the statement's measurement learns on the way (route, rows).
    pub(in crate::session) obs: &'a mut crate::session::observe::Observed,
    /// The client's statement may read replicas (`reads: replica`): its reads of backends
    /// with replicas go there.
    pub(in crate::session) replica: bool,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Cursor for StatementExec<'_, R, W> {
    type End = End;

    fn plan<T>(&self, f: impl FnOnce(&PlanContext) -> T) -> T {
        self.session.with_plan_context(f)
    }

    fn route(&self, stmt: &[u8]) -> Result<Option<Route>, SqlError> {
        self.session.route_dml(stmt, false)
    }

    async fn fetch_on(
        &mut self,
        backend: &str,
        select: &[u8],
        limits: FetchLimits,
    ) -> Result<Result<Fetched, SqlError>, End> {
        let route = Route::One(backend.to_string());
        Ok(self
            .fetch_routed(select, route, limits)
            .await?
            .map_err(SqlError::from))
    }

    async fn fetch(
        &mut self,
        select: &[u8],
        limits: FetchLimits,
    ) -> Result<Result<Fetched, SqlError>, End> {
        let route = match self.session.route_dml(select, false) {
            Ok(Some(r)) => r,
            Ok(None) => Route::One(self.session.proxy.default_pool.name.clone()),
            Err(e) => return Ok(Err(e)),
        };
        Ok(self
            .fetch_routed(select, route, limits)
            .await?
            .map_err(SqlError::from))
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> WriteCursor for StatementExec<'_, R, W> {
    type End = End;
    type Txn = BulkTxn;

    async fn lease(&mut self, backend: &str) -> Result<Result<usize, SqlError>, End> {
        Ok(self.session.lease_index(backend).await)
    }

    async fn begin(
        &mut self,
        conns: &[usize],
        savepoint: &'static str,
    ) -> Result<(BulkTxn, Vec<Option<Vec<u8>>>), End> {
        let s = &mut *self.session;
        let in_txn = s.in_transaction();
        if in_txn {
            for &i in conns {
                s.join_transaction(i, self.scope).await?;
            }
        }
        let xa_auto = !in_txn && s.proxy.xa.is_some();
        let begin = if in_txn {
            vec![Some(format!("SAVEPOINT {savepoint}").into_bytes()); conns.len()]
        } else if xa_auto {
            let proxy = s.proxy.clone();
            s.leases.xa_autocommit_branches(conns, proxy.xa.as_deref())
        } else {
            vec![Some(b"START TRANSACTION".to_vec()); conns.len()]
        };
        Ok((
            BulkTxn {
                in_txn,
                xa_auto,
                savepoint,
            },
            begin,
        ))
    }

    async fn end(
        &mut self,
        conns: &[usize],
        txn: &BulkTxn,
        keep: bool,
        what: &str,
    ) -> Result<Option<SqlError>, End> {
        let s = &mut *self.session;
        if txn.in_txn {
            let sql = if keep {
                format!("RELEASE SAVEPOINT {}", txn.savepoint)
            } else {
                format!("ROLLBACK TO SAVEPOINT {}", txn.savepoint)
            };
            for &i in conns {
                if let Err(e) = s.leases.get_mut(i).query_drop(&sql).await {
                    return Err(s.backend_lost(e));
                }
            }
            return Ok(None);
        }
        if txn.xa_auto {
            return Ok(s.finish_participants(keep).await);
        }
        let failed_on = match s.leases.finish_all(conns, keep).await {
            Ok(f) => f,
            Err(e) => return Err(s.backend_lost(e)),
        };
        Ok(failed_on.first().map(|(i, e)| {
            let (code, _, msg) = packets::parse_err(e);
            let backend = s.leases.held_mut()[*i].backend.clone();
            SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!(
                    "idgate: COMMIT failed on backend `{backend}` ({code}: {}) after the other \
                     shards committed; check the rows of this {what} on `{backend}`",
                    String::from_utf8_lossy(msg)
                ),
            )
        }))
    }

    fn unused(&mut self, conn: usize, txn: &BulkTxn) {
        // Its XA branch was never started: the connection is not in the session's XA
        // transaction.
        if txn.xa_auto() {
            self.session.leases.held_mut()[conn].leave_txn();
        }
    }

    fn queue(&mut self, conn: usize, sql: &[u8]) {
        self.session
            .leases
            .get_mut(conn)
            .write_command(&query_packet(sql));
    }

    async fn flush(&mut self, conn: usize) -> Result<(), End> {
        match self.session.leases.get_mut(conn).flush().await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.session.backend_lost(e)),
        }
    }

    async fn answer(&mut self, conn: usize) -> Result<Collected, End> {
        let be = self.session.leases.get_mut(conn);
        match collect(be).await {
            Ok(c) => {
                be.next_response();
                Ok(c)
            }
            Err(e) => Err(self.session.backend_lost(e)),
        }
    }

    async fn read_back(
        &mut self,
        backend: &str,
        select: &[u8],
    ) -> Result<Result<Collected, SqlError>, End> {
        if !self.session.in_transaction() {
            if let Some(answer) = self.read_apart(backend, select).await {
                return Ok(answer);
            }
        }
        // In the client's transaction its rows are visible on its own connection only; the
        // read resets that connection's ROW_COUNT(), so asking for it is refused.
        self.session.counts_elsewhere = true;
        crate::exec::cursor::read_on_write_conn(self, backend, select).await
    }
}

/// Longest a read-back waits for a spare connection before it reads on the session's own.
const SPARE_WAIT: Duration = Duration::from_millis(200);

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// `select` on a connection of `backend`'s pool other than the session's, so the session's
    /// keeps its warnings and ROW_COUNT(); `None` when none is free within `SPARE_WAIT`.
    async fn read_apart(
        &mut self,
        backend: &str,
        select: &[u8],
    ) -> Option<Result<Collected, SqlError>> {
        let s = &*self.session;
        let pool = s.live.pool_for(
            &s.proxy.pools,
            backend,
            &s.hello.user,
            s.hello.backend_login.as_deref(),
        )?;
        let flags =
            crate::exec::backend::LoginFlags::of_client(s.hello.capabilities, s.hello.mariadb);
        let mut lease = tokio::time::timeout(SPARE_WAIT, pool.acquire(flags))
            .await
            .ok()?
            .ok()?;
        lease.write_command(&query_packet(select));
        let answer = match lease.flush().await {
            Ok(()) => collect(&mut lease).await,
            Err(e) => Err(e),
        };
        match &answer {
            Ok(_) => lease.next_response(),
            Err(_) => lease.broken = true,
        }
        Some(answer.map_err(|e| {
            SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate: reading back on `{backend}` failed: {e}"),
            )
        }))
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LoadCursor for StatementExec<'_, R, W> {
    fn conn(&mut self, conn: usize) -> &mut BackendConn {
        self.session.leases.get_mut(conn)
    }

    fn lost(&mut self, e: BackendError) -> End {
        self.session.backend_lost(e)
    }

    async fn ask_file(&mut self, name: &[u8]) -> Result<(), End> {
        let s = &mut *self.session;
        let start = s.writer.begin();
        s.writer.payload().push(LOCAL_INFILE);
        s.writer.payload().extend_from_slice(name);
        s.writer.end(start);
        if s.writer.flush().await.is_err() {
            return Err(End::ClientGone);
        }
        s.reader.seq = s.writer.seq;
        Ok(())
    }

    async fn file_packet(&mut self, buf: &mut Vec<u8>) -> Result<(), End> {
        let s = &mut *self.session;
        let read_timeout = Duration::from_secs(s.live.config.net_read_timeout);
        match tokio::time::timeout(read_timeout, s.reader.read(buf)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(FrameError::TooLarge { limit, .. })) => {
                s.writer.send_error(&errors::packet_too_large(limit));
                Err(End::Fatal("file packet too large".into()))
            }
            Ok(Err(_)) | Err(_) => Err(End::ClientGone),
        }
    }

    fn file_read(&mut self) {
        self.session.writer.seq = self.session.reader.seq;
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> RelayCursor for StatementExec<'_, R, W> {
    type End = End;
    type Client = W;

    async fn connection(&mut self, backend: &str) -> Result<Result<usize, SqlError>, End> {
        Ok(self.session.read_index(backend, self.replica).await)
    }

    async fn joined(&mut self, backend: &str) -> Result<Result<usize, SqlError>, End> {
        let i = match self.session.read_index(backend, self.replica).await {
            Ok(i) => i,
            Err(e) => return Ok(Err(e)),
        };
        self.session.join_transaction(i, self.scope).await?;
        Ok(Ok(i))
    }

    async fn send_to_all(
        &mut self,
        backends: &[String],
        packet: &[u8],
    ) -> Result<Result<Vec<usize>, SqlError>, End> {
        let replica = self.replica;
        let s = &mut *self.session;
        let mut idx = Vec::with_capacity(backends.len());
        for b in backends {
            match s.read_index(b, replica).await {
                Ok(i) => idx.push(i),
                Err(e) => return Ok(Err(e)),
            }
        }
        for &i in &idx {
            s.join_transaction(i, self.scope).await?;
            s.leases.get_mut(i).write_command(packet);
        }
        for &i in &idx {
            if let Err(e) = s.leases.get_mut(i).flush().await {
                return Err(s.backend_lost(e));
            }
        }
        Ok(Ok(idx))
    }

    fn conn(&mut self, conn: usize) -> &mut BackendConn {
        self.session.leases.get_mut(conn)
    }

    fn client(&mut self) -> Client<'_, W> {
        let deprecate_eof = self.session.hello.deprecate_eof();
        Client {
            writer: &mut self.session.writer,
            deprecate_eof,
        }
    }

    fn relay_parts(&mut self, conns: &[usize]) -> (Vec<&mut BackendConn>, Client<'_, W>) {
        let s = &mut *self.session;
        let deprecate_eof = s.hello.deprecate_eof();
        let client = Client {
            writer: &mut s.writer,
            deprecate_eof,
        };
        (s.leases.conns(conns), client)
    }

    fn failed(&mut self, e: BackendError) -> End {
        match e {
            BackendError::ClientGone(_) => End::ClientGone,
            e => self.session.backend_lost(e),
        }
    }

    fn send_error(&mut self, e: &SqlError) {
        self.session.writer.send_error(e);
    }

    fn status(&self, more: bool) -> u16 {
        self.session.status_with(more).bits()
    }

    fn merge_memory_limit(&self) -> u64 {
        self.session.live.config.merge_memory_limit
    }

    fn merged(&mut self, rows: u64) {
        self.obs.merged(&self.session.proxy.metrics, rows);
    }
}

/// The local-infile request byte: idgate asking the client for its file.
const LOCAL_INFILE: u8 = 0xfb;
