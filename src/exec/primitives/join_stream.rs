//! A row-wise join run in the gateway a batch of driving rows at a time (no grouping,
//! aggregates, DISTINCT, ORDER BY or LIMIT: each answer row comes from one driving row): the
//! driving table's rows are fetched with its own conditions, then for each batch of them the
//! further tables' rows (`join_bind`), and the statement runs on the default backend over that
//! batch's literal tables; its rows go to the client before the next batch
//! (`join_batch_relay`), so the further tables are bounded per batch.

use mysql_common::constants::StatusFlags;

use super::join_batch_relay::{relay_batch, BatchEnd, Streamed};
use super::{join_bind, GatewayLimits};
use crate::exec::{Cursor, Fetched, RelayCursor};
use crate::route::join_steps::{join_steps, BATCH};
use crate::route::JoinShape;
use crate::sql;
use crate::wire::packets;

/// How the join's answer is written, and its bounds.
pub struct Streaming<'a> {
    /// Rows in the binary protocol (a prepared statement's).
    pub binary: bool,
    /// More results follow.
    pub more: bool,
    /// The default backend, which runs each batch's statement.
    pub default: &'a str,
    pub limits: GatewayLimits,
}

/// A row-wise join a batch of driving rows at a time (see the module's notes); `binary`:
/// rows in the binary protocol (a prepared statement's). `Ok(false)`: it ended in an error
/// the client was sent.
pub async fn run<C>(
    c: &mut C,
    stmt: &[u8],
    shape: &JoinShape,
    how: Streaming<'_>,
) -> Result<bool, <C as Cursor>::End>
where
    C: Cursor + RelayCursor<End = <C as Cursor>::End>,
{
    let Streaming {
        binary,
        more,
        default,
        limits,
    } = how;
    let steps = c.plan(|ctx| join_steps(shape, ctx));
    let d = steps.driver();
    let mut driver_bytes = 0u64;
    let driver_sql = crate::route::side_select(stmt, &shape.sides[d], None);
    let fetched =
        join_bind::fetch_side(c, &driver_sql, shape, d, 0, &mut driver_bytes, limits).await?;
    let driven = match fetched {
        Ok(f) => f,
        Err(e) => {
            c.send_error(&e);
            return Ok(false);
        }
    };
    let batches = driven.rows.len().div_ceil(BATCH).max(1);
    let columns = driven.columns;
    let mut rows = driven.rows.into_iter();
    let mut st = Streamed::default();
    for _ in 0..batches {
        let batch: Vec<sql::BoundRow> = rows.by_ref().take(BATCH).collect();
        let mut got: Vec<Option<Fetched>> = shape.sides.iter().map(|_| None).collect();
        got[d] = Some(Fetched {
            columns: columns.clone(),
            rows: batch,
        });
        // The driving rows stay held; each batch's further rows count on top of them.
        let mut used = driver_bytes;
        let further =
            join_bind::fetch_further(c, stmt, shape, &steps, &mut got, &mut used, limits).await?;
        let bound = match further.and_then(|()| join_bind::bind_fetched(stmt, shape, got)) {
            Ok(b) => b,
            Err(e) => {
                c.send_error(&e);
                return Ok(false);
            }
        };
        let packet = crate::wire::command::query_packet(&bound);
        let one = [default.to_string()];
        let Some(idx) = c.send_to_all_or_tell(&one, &packet).await? else {
            return Ok(false);
        };
        let end = {
            let (mut conns, mut client) = c.relay_parts(&idx);
            let Some(be) = conns.first_mut() else {
                return Ok(false);
            };
            let end = relay_batch(be, &mut client, &mut st, binary).await;
            if end.is_err() {
                be.broken = true;
            }
            end
        };
        match end {
            Ok(BatchEnd::Done) => {}
            Ok(BatchEnd::Failed(err)) => {
                c.client().writer.write(&err);
                return Ok(false);
            }
            Err(e) => return Err(c.failed(e)),
        }
    }
    let status = StatusFlags::from_bits_retain(c.status(more));
    let client = c.client();
    let start = client.writer.begin();
    packets::terminator(
        client.writer.payload(),
        client.deprecate_eof,
        st.warnings,
        status,
    );
    client.writer.end(start);
    c.merged(st.rows);
    Ok(true)
}
