//! LOAD DATA LOCAL INFILE on the default backend: the backend asks for a file, and idgate passes
//! the request to the client only if the client announced CLIENT_LOCAL_FILES and sent a
//! `LOAD … LOCAL` statement; the client's file packets are carried to the backend as they come.
//! idgate never opens a file itself: it only carries bytes the client chose to send.

use mysql_common::constants::{Command, StatusFlags};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::exec::relay::{self, Adjust, Client, Reply};
use crate::exec::BackendConn;
use crate::exec::BackendError;
use crate::sql;
use crate::wire::framing::{FrameError, PacketReader, PacketWriter};

/// Why carrying a file stopped short.
pub(super) enum CarryError {
    /// The client went away or broke the protocol while sending the file.
    Client(FrameError),
    /// Writing to the client failed, or the backend failed (after the client finished its file).
    Backend(BackendError),
}

/// Whether the backend's request for a file, answering the client's command `packet`, may go to
/// the client: only if the client announced CLIENT_LOCAL_FILES and sent a `LOAD … LOCAL`
/// statement, directly, as a prepared statement (`prepared_load_local`: the COM_STMT_EXECUTE's
/// statement was prepared from one), or by an SQL `EXECUTE` of a statement the session
/// prepared. A backend asking for a file at any other time is not obeyed.
pub(super) fn may_ask_for_file(
    local_files: bool,
    packet: &[u8],
    prepared_load_local: bool,
) -> bool {
    if !local_files {
        return false;
    }
    match packet.first() {
        Some(&c) if c == Command::COM_STMT_EXECUTE as u8 => prepared_load_local,
        Some(&c) if c == Command::COM_QUERY as u8 => {
            let sql = &packet[1..];
            sql::split_statements(sql).into_iter().any(|r| {
                sql::is_load_local(&sql[r.clone()]) || sql::first_word(&sql[r]) == b"EXECUTE"
            })
        }
        _ => false,
    }
}

/// Reads the rest of the backend's answer after a declined file, for no client; returns the
/// last status flags.
pub(super) async fn drain_declined(
    be: &mut BackendConn,
    reply: Reply,
    adj: Adjust,
) -> Result<u16, BackendError> {
    let mut nowhere = PacketWriter::new(tokio::io::sink());
    let mut client = Client {
        writer: &mut nowhere,
        deprecate_eof: false,
    };
    let adj = Adjust {
        local_infile: false, // a further request is declined by the relay itself
        ..adj
    };
    let r = relay::relay(be, &mut client, reply, adj).await?;
    Ok(r.status & !StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits())
}

/// Passes the backend's request (in `be.packet`) to the client, then carries the client's
/// packets to the backend up to and including the empty one that ends the file. Afterwards both
/// sides' sequence numbers are where the backend's answer continues them.
pub(super) async fn carry_file<R, W>(
    reader: &mut PacketReader<R>,
    writer: &mut PacketWriter<W>,
    be: &mut BackendConn,
    buf: &mut Vec<u8>,
    read_timeout: std::time::Duration,
) -> Result<(), CarryError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    be.begin_file();
    writer.write(&be.packet);
    writer
        .flush()
        .await
        .map_err(|e| CarryError::Backend(BackendError::ClientGone(e)))?;
    reader.seq = writer.seq;
    // A backend that fails mid-file is reported once the client has finished sending, so the
    // client reads the error where it expects the answer.
    let mut backend_failed = None;
    loop {
        // A client that stops sending mid-file is given up after net_read_timeout.
        match tokio::time::timeout(read_timeout, reader.read(buf)).await {
            Ok(r) => r.map_err(CarryError::Client)?,
            Err(_) => {
                return Err(CarryError::Client(FrameError::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no file data within net_read_timeout",
                ))))
            }
        }
        if backend_failed.is_some() {
            if buf.is_empty() {
                break;
            }
            continue;
        }
        let sent = if buf.is_empty() {
            be.end_file().await
        } else {
            be.send_file_packet(buf).await
        };
        if let Err(e) = sent {
            backend_failed = Some(e);
        }
        if buf.is_empty() {
            break;
        }
    }
    writer.seq = reader.seq;
    match backend_failed {
        Some(e) => Err(CarryError::Backend(e)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::may_ask_for_file;

    #[test]
    fn the_client_is_asked_only_for_its_own_load_local() {
        let q = b"\x03LOAD DATA LOCAL INFILE 'f.tsv' INTO TABLE t";
        assert!(may_ask_for_file(true, q, false));
        assert!(!may_ask_for_file(false, q, false));
        assert!(may_ask_for_file(
            true,
            b"\x03SELECT 1; load xml local infile 'f.xml' into table t; SELECT 2",
            false
        ));
        assert!(!may_ask_for_file(
            true,
            b"\x03SELECT 'LOAD DATA LOCAL INFILE'",
            false
        ));
        assert!(!may_ask_for_file(
            true,
            b"\x03LOAD DATA INFILE '/tmp/f.tsv' INTO TABLE t",
            false
        ));
        // A statement the session prepared: by SQL, or through the binary protocol.
        assert!(may_ask_for_file(true, b"\x03EXECUTE s", false));
        assert!(may_ask_for_file(true, b"\x17\x01\x00\x00\x00\x00", true));
        assert!(!may_ask_for_file(true, b"\x17\x01\x00\x00\x00\x00", false));
        assert!(!may_ask_for_file(false, b"\x17\x01\x00\x00\x00\x00", true));
    }
}
