//! A SELECT idgate runs for itself (the inner query of a subquery or derived table): routed as
//! a client's SELECT would be (one shard, every shard concatenated, or merged), its answer kept
//! in memory as column definitions and text values instead of going to the client. Bounded:
//! at most `max_subquery_rows` rows and `merge_memory_limit` bytes; past either the statement
//! gets a clear error and the session goes on.

use mysql_common::constants::{ColumnFlags, ColumnType};
use tokio::io::{AsyncRead, AsyncWrite};

use super::cursor::StatementExec;
use super::fetch_charset::{read_set, NATIVE_RESULTS, RESULTS_BACK};
use crate::exec::capture::{Capture, Overflow};
use crate::exec::merge::parse_text_row;
use crate::exec::relay::Client;
use crate::exec::{scatter, BackendError};
use crate::route::Route;
use crate::session::End;
use crate::sql::{self, BoundColumn};
use crate::wire::errors::SqlError;
use crate::wire::framing::PacketWriter;
use crate::wire::packets;

pub(super) use crate::exec::{FetchLimits, Fetched};

#[derive(Debug, thiserror::Error)]
pub(super) enum FetchError {
    #[error(
        "the subquery over sharded tables gives more than max_subquery_rows ({0}) rows, which \
         idgate runs first and binds into the outer statement; narrow it (WHERE, LIMIT) or raise \
         max_subquery_rows"
    )]
    TooManyRows(u64),
    #[error(
        "Out of memory: the subquery over sharded tables gives more than idgate's \
         merge_memory_limit ({0} bytes); narrow it (WHERE, LIMIT, fewer columns) or raise \
         merge_memory_limit"
    )]
    TooManyBytes(u64),
    #[error("the subquery over sharded tables is not a SELECT idgate can run on its own")]
    NotASelect,
    #[error("a shard sent a malformed answer to the subquery")]
    Malformed,
    /// The backend's own error (or a routing or merge refusal): the statement's answer as is.
    #[error("{}", .0.message)]
    Answer(SqlError),
}

impl From<FetchError> for SqlError {
    fn from(e: FetchError) -> SqlError {
        let msg = e.to_string();
        match e {
            FetchError::Answer(e) => e,
            FetchError::TooManyBytes(_) => SqlError::new(1037, b"HY001", msg),
            _ => SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg),
        }
    }
}

/// The fields of a column definition the literals need.
fn bound_column(def: &[u8]) -> Option<BoundColumn> {
    let mut rest = def;
    let mut name = Vec::new();
    for i in 0..6 {
        let s = packets::get_lenenc_str(&mut rest)?;
        if i == 4 {
            name = s.to_vec();
        }
    }
    let f = packets::column_fixed_fields(def)?;
    Some(BoundColumn {
        name,
        charset: u16::from_le_bytes([f[0], f[1]]),
        ty: ColumnType::try_from(f[6]).ok()?,
        flags: ColumnFlags::from_bits_truncate(u16::from_le_bytes([f[7], f[8]])),
        decimals: f[9],
    })
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs `select` on `route` (already decided by the caller) and keeps its answer; the
    /// failure stays a `FetchError` so callers can word the limits their own way.
    pub(super) async fn fetch_routed(
        &mut self,
        select: &[u8],
        route: Route,
        limits: FetchLimits,
    ) -> Result<Result<Fetched, FetchError>, End> {
        let scope = self.scope;
        let replica = self.replica;
        let s = &mut *self.session;
        let (backends, packet, merge) = match route {
            Route::One(b) => (vec![b], crate::wire::command::query_packet(select), None),
            Route::Concat(bs) => (bs, crate::wire::command::query_packet(select), None),
            Route::Merge(bs, m) => {
                let packet = crate::wire::command::query_packet(&m.shard_sql);
                (bs, packet, Some(m))
            }
            // ByKey: never here, internal reads take the general route.
            Route::Write { .. } | Route::Everywhere(_) | Route::ByKey(_) => {
                return Ok(Err(FetchError::NotASelect))
            }
        };
        let mut idx = Vec::with_capacity(backends.len());
        for b in &backends {
            match s.read_index(b, replica).await {
                Ok(i) => idx.push(i),
                Err(e) => return Ok(Err(FetchError::Answer(e))),
            }
        }
        let native = crate::wire::command::query_packet(NATIVE_RESULTS);
        let back = crate::wire::command::query_packet(RESULTS_BACK);
        for &i in &idx {
            s.join_transaction(i, scope).await?;
            let l = s.leases.get_mut(i);
            l.write_command(&native);
            l.write_command(&packet);
            l.write_command(&back);
        }
        for &i in &idx {
            if let Err(e) = s.leases.get_mut(i).flush().await {
                return Err(s.backend_lost(e));
            }
        }
        let mut refused = None;
        for &i in &idx {
            let be = &mut **s.leases.get_mut(i);
            match read_set(be).await {
                Ok(r) => refused = refused.or(r.err()),
                Err(e) => return Err(s.backend_lost(e)),
            }
            be.next_response();
        }
        if let Some(e) = refused {
            // Each connection still answers the SELECT and the SET after it.
            for &i in &idx {
                let be = &mut **s.leases.get_mut(i);
                let drained = async {
                    crate::exec::collect::collect(be).await?;
                    be.next_response();
                    read_set(be).await
                };
                if let Err(e) = drained.await {
                    return Err(s.backend_lost(e));
                }
            }
            return Ok(Err(FetchError::Answer(e)));
        }
        let memory_limit = s.live.config.merge_memory_limit;
        let max_bytes = limits.max_bytes.min(memory_limit);
        let mut writer = PacketWriter::new(Capture::new(limits.max_rows, max_bytes, limits.enough));
        let mut client = Client {
            writer: &mut writer,
            deprecate_eof: false,
        };
        let mut conns = s.leases.conns(&idx);
        let relayed = match &merge {
            None => scatter::relay_concat(&mut conns, &mut client, 0)
                .await
                .map(|_| Ok(None)),
            Some(m) => crate::exec::merge::relay_merged(
                &mut conns,
                &mut client,
                &m.plan,
                (m.offset, m.limit),
                0,
                false,
                memory_limit,
                m.key_types.as_deref(),
            )
            .await
            .map(|r| r.map(|r| Some(r.rows))),
        };
        drop(conns);
        // The SET after the SELECT is read once the SELECT's answer was read whole; a relay
        // that stopped early leaves its connections in an unknown state, so they go.
        if relayed.is_err() {
            for &i in &idx {
                s.leases.get_mut(i).broken = true;
            }
            s.leases.drop_broken();
        } else {
            for &i in &idx {
                let be = &mut **s.leases.get_mut(i);
                be.next_response();
                match read_set(be).await {
                    Ok(Ok(())) => {}
                    // The session's results character set could not be put back: its next
                    // answers would come unconverted, so the connection goes.
                    Ok(Err(e)) => {
                        return Err(s.backend_lost(BackendError::Protocol(format!(
                            "character_set_results not restored: {}",
                            e.message
                        ))))
                    }
                    Err(e) => return Err(s.backend_lost(e)),
                }
            }
        }
        match relayed {
            Ok(Ok(Some(merged))) => self.obs.merged(&s.proxy.metrics, merged),
            Ok(Ok(None)) => {}
            Ok(Err(msg)) => {
                let e = SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg);
                return Ok(Err(FetchError::Answer(e)));
            }
            Err(BackendError::ClientGone(_)) => return Ok(Err(FetchError::Malformed)),
            Err(e) => return Err(s.backend_lost(e)),
        }
        if writer.flush().await.is_err() {
            return Ok(Err(FetchError::Malformed));
        }
        let cap = writer.inner();
        Ok(collected(cap, limits.max_rows, max_bytes))
    }
}

/// The captured answer as columns and rows, or the error it is.
fn collected(cap: &Capture, max_rows: u64, max_bytes: u64) -> Result<Fetched, FetchError> {
    if let Some(e) = &cap.error {
        let (code, state, msg) = packets::parse_err(e);
        let msg = String::from_utf8_lossy(msg).into_owned();
        return Err(FetchError::Answer(SqlError::new(code, &state, msg)));
    }
    match cap.overflow {
        Some(Overflow::Rows) => return Err(FetchError::TooManyRows(max_rows)),
        Some(Overflow::Bytes) => return Err(FetchError::TooManyBytes(max_bytes)),
        None => {}
    }
    if cap.no_rows || !cap.complete() {
        return Err(FetchError::NotASelect);
    }
    let columns = cap
        .columns
        .iter()
        .map(|d| bound_column(d))
        .collect::<Option<Vec<_>>>()
        .ok_or(FetchError::Malformed)?;
    let rows = cap
        .rows
        .iter()
        .map(|r| parse_text_row(r).filter(|v| v.len() == columns.len()))
        .collect::<Option<Vec<_>>>()
        .ok_or(FetchError::Malformed)?;
    Ok(Fetched { columns, rows })
}
