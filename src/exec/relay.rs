//! Relays a backend's response to one command to the client without decoding rows or column
//! definitions: an answer that arrived whole in one pass (`relay_whole`), others packet by
//! packet. Backend connections always use classic EOF packets; for clients
//! that negotiated CLIENT_DEPRECATE_EOF the EOFs are dropped or turned into OK terminators here.

use mysql_common::constants::StatusFlags;
use tokio::io::AsyncWrite;

use super::backend::{BackendConn, BackendError};
use crate::wire::framing::PacketWriter;
use crate::wire::packets::{self, OkInfo};

/// The shape of response a command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// COM_QUERY / COM_STMT_EXECUTE: OK, ERR or result sets, possibly several.
    Results,
    /// COM_STMT_PREPARE: statement OK, parameter and column definitions.
    Prepare,
    /// COM_STMT_FETCH: rows and an EOF.
    Rows,
    /// COM_FIELD_LIST: column definitions and an EOF.
    Fields,
    /// COM_SET_OPTION: EOF or ERR.
    Eof,
    /// One packet relayed as it is (OK/ERR answers, COM_STATISTICS' text).
    Single,
}

/// What the client was told, for the session's bookkeeping.
#[derive(Debug, Default, Clone, Copy)]
pub struct Relayed {
    /// Status flags of the last packet relayed.
    pub status: u16,
    /// The last OK packet, if the response ended with one.
    pub ok: Option<OkInfo>,
    /// For COM_STMT_PREPARE: (backend statement id, parameters, columns).
    pub prepared: Option<(u32, u16, u16)>,
    pub error: bool,
    /// The backend asked for a LOCAL INFILE file (the request is in the connection's packet):
    /// the caller carries it, then relays the rest of the answer with `relay` again.
    pub file_request: bool,
    /// Row packets read from the backend(s) (for metrics and the slow statement log).
    pub rows: u64,
}

pub struct Client<'a, W> {
    pub writer: &'a mut PacketWriter<W>,
    pub deprecate_eof: bool,
}

/// How idgate adjusts what it relays.
#[derive(Debug, Default, Clone, Copy)]
pub struct Adjust {
    /// For COM_STMT_PREPARE: the statement id the client is to see.
    pub client_stmt_id: Option<u32>,
    /// The insert id the final OK packet reports (idgate generated the ids).
    pub insert_id: Option<u64>,
    /// The insert id is an explicit value, reported only if a row was written (MySQL reports 0
    /// when nothing was inserted).
    pub insert_id_needs_rows: bool,
    /// The OK that ends the response is not relayed: it stays in the backend connection's
    /// packet buffer for the caller, who writes it (`Client::final_ok`) once it knows the insert
    /// id (an upsert's, `InsertPlan::upsert`).
    pub hold_ok: bool,
    /// More results follow this response (idgate runs a multi-statement one by one).
    pub more_results: bool,
    /// A LOCAL INFILE request is handed back to the caller (`Relayed::file_request`); without
    /// this the backend gets an empty file and the relay goes on.
    pub local_infile: bool,
    /// The command is a COM_STMT_EXECUTE that asked for a cursor: a result whose end of column
    /// definitions says SERVER_STATUS_CURSOR_EXISTS then carries no rows (they come with
    /// COM_STMT_FETCH). MariaDB sets the same flag on results a stored program produces while it
    /// has a cursor of its own open, whose rows do follow.
    pub cursor_requested: bool,
    /// A pass over the buffered answer (`relay_whole`) already found it needs the general path.
    pub whole_tried: bool,
}

impl Adjust {
    /// Whether `command` (a client command packet) is a COM_STMT_EXECUTE asking for a cursor.
    pub fn asks_for_cursor(command: &[u8]) -> bool {
        const CURSOR_TYPES: u8 = 0x01 | 0x02 | 0x04; // read only, for update, scrollable
        command.first() == Some(&(mysql_common::constants::Command::COM_STMT_EXECUTE as u8))
            && command
                .get(5)
                .is_some_and(|flags| flags & CURSOR_TYPES != 0)
    }
}

impl Adjust {
    fn status_bits(&self) -> u16 {
        if self.more_results {
            StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits()
        } else {
            0
        }
    }
}

impl<W: AsyncWrite + Unpin> Client<'_, W> {
    pub(super) fn forward(&mut self, p: &[u8]) {
        self.writer.write(p);
    }

    /// Relays a classic EOF as the client expects it (EOF, or OK with the 0xfe header), with
    /// `add_status` flags set.
    pub(super) fn terminator(&mut self, eof: &[u8], add_status: u16) {
        if !self.deprecate_eof && add_status == 0 {
            self.forward(eof);
            return;
        }
        let (warnings, status) = packets::parse_eof(eof);
        let status = status | StatusFlags::from_bits_retain(add_status);
        let start = self.writer.begin();
        packets::terminator(self.writer.payload(), self.deprecate_eof, warnings, status);
        self.writer.end(start);
    }

    /// Relays the OK packet that ends a response, adjusted as asked.
    pub fn final_ok(&mut self, ok: &[u8], adj: &Adjust) {
        if adj.insert_id.is_none() && !adj.more_results {
            self.forward(ok);
            return;
        }
        let affected = packets::parse_ok(ok).map_or(0, |o| o.affected_rows);
        let insert_id = match (adj.insert_id, affected) {
            (Some(_), 0) if adj.insert_id_needs_rows => Some(0),
            (id, _) => id,
        };
        let start = self.writer.begin();
        if !packets::patch_ok(ok, insert_id, adj.status_bits(), self.writer.payload()) {
            self.writer.payload().extend_from_slice(ok);
        }
        self.writer.end(start);
    }
}

fn protocol(what: &str) -> BackendError {
    BackendError::Protocol(what.to_string())
}

/// Relays the whole response to the command just sent on `be`. On an error the backend
/// connection is marked broken unless the response was read to its end.
pub async fn relay<W: AsyncWrite + Unpin>(
    be: &mut BackendConn,
    client: &mut Client<'_, W>,
    reply: Reply,
    adj: Adjust,
) -> Result<Relayed, BackendError> {
    let r = match reply {
        // Most answers arrive whole: they are relayed in one pass, not packet by packet.
        Reply::Results if super::relay_whole::applies(&adj) => match be.wait_for_answer().await {
            Ok(()) => match super::relay_whole::relay_whole(be.unread(), client, false) {
                Some(out) => Ok(out),
                None => relay_inner(be, client, reply, &adj).await,
            },
            Err(e) => Err(e),
        },
        _ => relay_inner(be, client, reply, &adj).await,
    };
    if r.is_err() {
        be.broken = true;
    }
    r
}

async fn relay_inner<W: AsyncWrite + Unpin>(
    be: &mut BackendConn,
    client: &mut Client<'_, W>,
    reply: Reply,
    adj: &Adjust,
) -> Result<Relayed, BackendError> {
    let mut out = Relayed::default();
    match reply {
        Reply::Single => {
            be.read().await?;
            client.forward(&be.packet);
            out.error = packets::is_err(&be.packet);
            if let Some(ok) = (be.packet.first() == Some(&packets::OK_HEADER))
                .then(|| packets::parse_ok(&be.packet))
                .flatten()
            {
                out.status = ok.status;
                out.ok = Some(ok);
            }
        }
        Reply::Eof => {
            be.read().await?;
            if packets::is_eof(&be.packet) {
                out.status = packets::parse_eof(&be.packet).1.bits();
                let p = std::mem::take(&mut be.packet);
                client.terminator(&p, 0);
                be.packet = p;
            } else {
                out.error = packets::is_err(&be.packet);
                client.forward(&be.packet);
            }
        }
        Reply::Fields | Reply::Rows => {
            out.status = relay_until_eof(be, client, &mut out, 0).await?;
        }
        Reply::Prepare => relay_prepare(be, client, adj.client_stmt_id, &mut out).await?,
        Reply::Results => loop {
            be.read().await?;
            match be.packet.first() {
                Some(&packets::OK_HEADER) => {
                    let ok =
                        packets::parse_ok(&be.packet).ok_or_else(|| protocol("short OK packet"))?;
                    if ok.status & StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits() == 0 {
                        if !adj.hold_ok {
                            client.final_ok(&be.packet, adj);
                        }
                    } else {
                        client.forward(&be.packet);
                    }
                    out.status = ok.status;
                    out.ok = Some(ok);
                }
                Some(&packets::ERR_HEADER) => {
                    client.forward(&be.packet);
                    out.error = true;
                    return Ok(out);
                }
                Some(&packets::LOCAL_INFILE_HEADER) => {
                    if adj.local_infile {
                        out.file_request = true;
                        return Ok(out);
                    }
                    be.decline_file().await?;
                    continue; // the answer to the statement follows
                }
                _ => {
                    out.ok = None;
                    let mut p = &be.packet[..];
                    let columns =
                        packets::get_lenenc_int(&mut p).ok_or_else(|| protocol("column count"))?;
                    client.forward(&be.packet);
                    for _ in 0..columns {
                        be.read().await?;
                        client.forward(&be.packet);
                    }
                    be.read().await?;
                    if !packets::is_eof(&be.packet) {
                        return Err(protocol("missing EOF after column definitions"));
                    }
                    let (_, status) = packets::parse_eof(&be.packet);
                    if adj.cursor_requested
                        && status.contains(StatusFlags::SERVER_STATUS_CURSOR_EXISTS)
                        && !status.contains(StatusFlags::SERVER_MORE_RESULTS_EXISTS)
                    {
                        // COM_STMT_EXECUTE opened a cursor: rows come with COM_STMT_FETCH.
                        let p = std::mem::take(&mut be.packet);
                        client.terminator(&p, 0);
                        be.packet = p;
                        out.status = status.bits();
                    } else {
                        if !client.deprecate_eof {
                            client.forward(&be.packet);
                        }
                        out.status =
                            relay_until_eof(be, client, &mut out, adj.status_bits()).await?;
                        if out.error {
                            return Ok(out);
                        }
                    }
                }
            }
            if out.status & StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits() == 0 {
                return Ok(out);
            }
            client
                .writer
                .maybe_flush()
                .await
                .map_err(BackendError::ClientGone)?;
        },
    }
    Ok(out)
}

/// Relays packets up to and including the terminating EOF (or an ERR); returns the EOF's status.
/// `add_status` is set on the EOF unless it announces more results of its own.
async fn relay_until_eof<W: AsyncWrite + Unpin>(
    be: &mut BackendConn,
    client: &mut Client<'_, W>,
    out: &mut Relayed,
    add_status: u16,
) -> Result<u16, BackendError> {
    loop {
        be.read().await?;
        if packets::is_eof(&be.packet) {
            let own = packets::parse_eof(&be.packet).1;
            let add = if own.contains(StatusFlags::SERVER_MORE_RESULTS_EXISTS) {
                0
            } else {
                add_status
            };
            let p = std::mem::take(&mut be.packet);
            client.terminator(&p, add);
            be.packet = p;
            return Ok(packets::parse_eof(&be.packet).1.bits());
        }
        client.forward(&be.packet);
        if packets::is_err(&be.packet) {
            out.error = true;
            return Ok(0);
        }
        out.rows += 1;
        client
            .writer
            .maybe_flush()
            .await
            .map_err(BackendError::ClientGone)?;
    }
}

async fn relay_prepare<W: AsyncWrite + Unpin>(
    be: &mut BackendConn,
    client: &mut Client<'_, W>,
    client_stmt_id: Option<u32>,
    out: &mut Relayed,
) -> Result<(), BackendError> {
    be.read().await?;
    if packets::is_err(&be.packet) {
        client.forward(&be.packet);
        out.error = true;
        return Ok(());
    }
    if be.packet.len() < 12 || be.packet[0] != packets::OK_HEADER {
        return Err(protocol("statement prepare answer"));
    }
    let p = &be.packet;
    let backend_id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
    let columns = u16::from_le_bytes([p[5], p[6]]);
    let params = u16::from_le_bytes([p[7], p[8]]);
    out.prepared = Some((backend_id, params, columns));
    if let Some(id) = client_stmt_id {
        be.packet[1..5].copy_from_slice(&id.to_le_bytes());
    }
    client.forward(&be.packet);
    for count in [params, columns] {
        if count == 0 {
            continue;
        }
        for _ in 0..count {
            be.read().await?;
            client.forward(&be.packet);
        }
        be.read().await?;
        if !packets::is_eof(&be.packet) {
            return Err(protocol("missing EOF after statement definitions"));
        }
        if !client.deprecate_eof {
            client.forward(&be.packet);
        }
    }
    Ok(())
}
