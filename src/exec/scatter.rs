//! A SELECT sent to several shards, answered as one result set: the first shard's column
//! definitions, then every shard's rows in turn, streamed (nothing is held but the packet in
//! hand), and one terminator with the warnings added up.

use mysql_common::constants::StatusFlags;
use tokio::io::AsyncWrite;

use super::backend::{BackendConn, BackendError};
use super::relay::{Client, Relayed};
use crate::wire::packets;

/// The error for a scattered SELECT a shard answered with OK instead of rows.
pub(crate) fn no_rows_over_shards() -> Vec<u8> {
    let mut e = Vec::new();
    packets::err(
        &mut e,
        crate::sql::ER_NOT_SUPPORTED_YET,
        b"42000",
        b"SELECT ... INTO over several shards is not supported; pin the SELECT to one shard with its sharding column",
    );
    e
}

fn protocol(what: &str) -> BackendError {
    BackendError::Protocol(what.to_string())
}

/// Relays the answers of `shards` (each was sent the same SELECT) as one result set.
pub async fn relay_concat<W: AsyncWrite + Unpin>(
    shards: &mut [&mut BackendConn],
    client: &mut Client<'_, W>,
    add_status: u16,
) -> Result<Relayed, BackendError> {
    let mut out = Relayed::default();
    let mut warnings = 0u16;
    let mut status = 0u16;
    let mut failed: Option<Vec<u8>> = None;
    let mut header_sent = false;
    for be in shards.iter_mut() {
        let r = relay_one(
            be,
            client,
            &mut header_sent,
            &mut failed,
            &mut warnings,
            &mut status,
        )
        .await;
        if r.is_err() {
            be.broken = true;
        }
        r?;
    }
    if let Some(err) = failed {
        client.writer.write(&err);
        out.error = true;
        return Ok(out);
    }
    out.status = terminate(client, warnings, status, add_status);
    Ok(out)
}

/// The status flag saying more results follow, when `more`.
pub fn more_results(more: bool) -> u16 {
    if more {
        StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits()
    } else {
        0
    }
}

/// Writes the end of a result set with the backends' `status` (their MORE_RESULTS replaced by
/// `add_status`'s); the status sent.
fn terminate<W: AsyncWrite + Unpin>(
    client: &mut Client<'_, W>,
    warnings: u16,
    status: u16,
    add_status: u16,
) -> u16 {
    let status = StatusFlags::from_bits_retain(
        (status & !StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits()) | add_status,
    );
    let start = client.writer.begin();
    packets::terminator(
        client.writer.payload(),
        client.deprecate_eof,
        warnings,
        status,
    );
    client.writer.end(start);
    status.bits()
}

async fn relay_one<W: AsyncWrite + Unpin>(
    be: &mut BackendConn,
    client: &mut Client<'_, W>,
    header_sent: &mut bool,
    failed: &mut Option<Vec<u8>>,
    warnings: &mut u16,
    status: &mut u16,
) -> Result<(), BackendError> {
    be.read().await?;
    if packets::is_err(&be.packet) {
        failed.get_or_insert_with(|| be.packet.clone());
        return Ok(());
    }
    if be.packet.first() == Some(&packets::OK_HEADER) {
        // `SELECT … INTO @var` answers with OK: the answer is complete, the connection in step.
        failed.get_or_insert_with(no_rows_over_shards);
        return Ok(());
    }
    let mut p = &be.packet[..];
    let columns = packets::get_lenenc_int(&mut p).ok_or_else(|| protocol("column count"))?;
    let send_header = !*header_sent && failed.is_none();
    if send_header {
        client.writer.write(&be.packet);
    }
    for _ in 0..columns {
        be.read().await?;
        if send_header {
            client.writer.write(&be.packet);
        }
    }
    be.read().await?; // EOF after the column definitions
    if send_header && !client.deprecate_eof {
        client.writer.write(&be.packet);
    }
    *header_sent |= send_header;
    loop {
        be.read().await?;
        if packets::is_eof(&be.packet) {
            let (w, s) = packets::parse_eof(&be.packet);
            *warnings = warnings.saturating_add(w);
            *status = s.bits();
            return Ok(());
        }
        if packets::is_err(&be.packet) {
            failed.get_or_insert_with(|| be.packet.clone());
            return Ok(());
        }
        if failed.is_none() {
            pass_row(client, &be.packet).await?;
        }
    }
}

/// Writes one row to the client, sending what is buffered once there is enough.
async fn pass_row<W: AsyncWrite + Unpin>(
    client: &mut Client<'_, W>,
    row: &[u8],
) -> Result<(), BackendError> {
    client.writer.write(row);
    client
        .writer
        .maybe_flush()
        .await
        .map_err(BackendError::ClientGone)
}

/// Relays `be`'s answer to the SELECT just sent on it when it holds a row. `Ok(None)`: it held
/// none, or was an OK (`SELECT … INTO`); it was read to its end and nothing was written, so
/// another route can answer. An error is relayed.
pub async fn relay_if_rows<W: AsyncWrite + Unpin>(
    be: &mut BackendConn,
    client: &mut Client<'_, W>,
    add_status: u16,
) -> Result<Option<Relayed>, BackendError> {
    let r = relay_rows_of_one(be, client, add_status).await;
    if r.is_err() {
        be.broken = true;
    }
    r
}

async fn relay_rows_of_one<W: AsyncWrite + Unpin>(
    be: &mut BackendConn,
    client: &mut Client<'_, W>,
    add_status: u16,
) -> Result<Option<Relayed>, BackendError> {
    let failed = |client: &mut Client<'_, W>, err: &[u8]| {
        client.writer.write(err);
        Some(Relayed {
            error: true,
            ..Relayed::default()
        })
    };
    be.read().await?;
    if packets::is_err(&be.packet) {
        return Ok(failed(client, &be.packet));
    }
    if be.packet.first() == Some(&packets::OK_HEADER) {
        return Ok(None);
    }
    let mut p = &be.packet[..];
    let columns = packets::get_lenenc_int(&mut p).ok_or_else(|| protocol("column count"))?;
    // The header waits until a row shows the answer is this shard's.
    let mut head = Vec::with_capacity((columns as usize).min(4096) + 2); // n from the backend
    head.push(be.packet.clone());
    for _ in 0..columns {
        be.read().await?;
        head.push(be.packet.clone());
    }
    be.read().await?; // EOF after the column definitions
    if !client.deprecate_eof {
        head.push(be.packet.clone());
    }
    be.read().await?;
    if packets::is_eof(&be.packet) {
        return Ok(None);
    }
    if packets::is_err(&be.packet) {
        return Ok(failed(client, &be.packet));
    }
    for h in &head {
        client.writer.write(h);
    }
    loop {
        pass_row(client, &be.packet).await?;
        be.read().await?;
        if packets::is_err(&be.packet) {
            return Ok(failed(client, &be.packet));
        }
        if packets::is_eof(&be.packet) {
            let (warnings, status) = packets::parse_eof(&be.packet);
            return Ok(Some(Relayed {
                status: terminate(client, warnings, status.bits(), add_status),
                ..Relayed::default()
            }));
        }
    }
}
