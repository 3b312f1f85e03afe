//! The answer of a row-wise join run in the gateway a batch of driving rows at a time: each
//! batch's final statement is relayed as it arrives, as parts of one result set — the first
//! batch's column definitions, every batch's rows (in the binary protocol for a prepared
//! statement), and one terminator with the warnings added up, written by the caller.

use tokio::io::AsyncWrite;

use crate::exec::merge::{binary_row, column_info, parse_text_row, ColumnInfo};
use crate::exec::relay::Client;
use crate::exec::{BackendConn, BackendError};
use crate::wire::packets;

/// What the batches relayed so far have given.
#[derive(Debug, Default)]
pub struct Streamed {
    /// Column definitions written (by the first batch).
    pub header_sent: bool,
    /// Columns of the first batch: every later batch must give as many.
    pub columns: u64,
    /// The first batch's columns, to encode binary rows by.
    infos: Vec<ColumnInfo>,
    pub warnings: u16,
    pub rows: u64,
}

/// How one batch's answer ended.
#[derive(Debug)]
pub enum BatchEnd {
    /// Its rows are written; the backend is ready for the next statement.
    Done,
    /// The backend's error (or idgate's, for an answer it cannot use), to end the result set
    /// with; the backend's answer was read to its end.
    Failed(Vec<u8>),
}

fn err_packet(msg: &str) -> Vec<u8> {
    let mut e = Vec::new();
    packets::err(
        &mut e,
        crate::sql::ER_NOT_SUPPORTED_YET,
        b"42000",
        msg.as_bytes(),
    );
    e
}

fn protocol(what: &str) -> BackendError {
    BackendError::Protocol(what.to_string())
}

/// Relays the answer `be` gives to one batch's final statement.
pub async fn relay_batch<W: AsyncWrite + Unpin>(
    be: &mut BackendConn,
    client: &mut Client<'_, W>,
    st: &mut Streamed,
    binary: bool,
) -> Result<BatchEnd, BackendError> {
    be.read().await?;
    if packets::is_err(&be.packet) {
        return Ok(BatchEnd::Failed(be.packet.clone()));
    }
    if be.packet.first() == Some(&packets::OK_HEADER) {
        return Ok(BatchEnd::Failed(err_packet(
            "a join idgate runs in the gateway must give rows (no SELECT … INTO)",
        )));
    }
    let mut p = &be.packet[..];
    let columns = packets::get_lenenc_int(&mut p).ok_or_else(|| protocol("column count"))?;
    let first = !st.header_sent;
    let mut failed = None;
    if first {
        client.writer.write(&be.packet);
        st.columns = columns;
    } else if columns != st.columns {
        failed = Some(err_packet(
            "the batches of a join idgate runs in the gateway gave different columns",
        ));
    }
    for _ in 0..columns {
        be.read().await?;
        if first {
            client.writer.write(&be.packet);
            if binary {
                let info = column_info(&be.packet)
                    .ok_or_else(|| protocol("malformed column definition"))?;
                st.infos.push(info);
            }
        }
    }
    be.read().await?; // EOF after the column definitions
    if first && !client.deprecate_eof {
        client.writer.write(&be.packet);
    }
    st.header_sent = true;
    loop {
        be.read().await?;
        if packets::is_eof(&be.packet) {
            let (w, _) = packets::parse_eof(&be.packet);
            st.warnings = st.warnings.saturating_add(w);
            return Ok(failed.map_or(BatchEnd::Done, BatchEnd::Failed));
        }
        if packets::is_err(&be.packet) {
            return Ok(BatchEnd::Failed(
                failed.unwrap_or_else(|| be.packet.clone()),
            ));
        }
        if failed.is_some() {
            continue;
        }
        if binary {
            let row = parse_text_row(&be.packet)
                .filter(|v| v.len() == st.infos.len())
                .ok_or_else(|| protocol("malformed row"))
                .and_then(|v| binary_row(&v, &st.infos).map_err(|m| protocol(&m)));
            match row {
                Ok(r) => client.writer.write(&r),
                Err(e) => {
                    failed = Some(err_packet(&format!(
                        "idgate could not write a row of the join in the binary protocol: {e}"
                    )));
                    continue;
                }
            }
        } else {
            client.writer.write(&be.packet);
        }
        st.rows += 1;
        client
            .writer
            .maybe_flush()
            .await
            .map_err(BackendError::ClientGone)?;
    }
}
