//! A client command decoded from its first packet, so the session dispatches on a type rather
//! than on raw bytes. Only the header is read: the body stays in the packet, which is relayed
//! as the client sent it.

use mysql_common::constants::Command as Com;

/// What the client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    Quit,
    Ping,
    /// COM_QUERY with its SQL text (any bytes).
    Query(&'a [u8]),
    /// COM_INIT_DB with the database name.
    InitDb(&'a [u8]),
    FieldList,
    Statistics,
    /// COM_SET_OPTION with its option (`None`: the packet is too short to hold one; the
    /// backend decides what that means, as it would for a direct client).
    SetOption(Option<u16>),
    ResetConnection,
    ChangeUser,
    /// COM_STMT_PREPARE with the statement text.
    Prepare(&'a [u8]),
    /// A command on a prepared statement; `id` is `None` when the packet is too short to hold one.
    Stmt {
        kind: StmtCommand,
        id: Option<u32>,
    },
    /// An empty packet.
    Empty,
    /// A command byte idgate does not handle.
    Unknown(u8),
}

/// The commands that name a prepared statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StmtCommand {
    Execute,
    Fetch,
    Reset,
    SendLongData,
    Close,
}

impl StmtCommand {
    /// The name MariaDB uses for it in "Unknown prepared statement handler" errors.
    pub fn name(self) -> &'static str {
        match self {
            StmtCommand::Execute => "mysqld_stmt_execute",
            StmtCommand::Fetch => "mysqld_stmt_fetch",
            StmtCommand::Reset => "mysqld_stmt_reset",
            StmtCommand::SendLongData => "mysqld_stmt_send_long_data",
            StmtCommand::Close => "mysqld_stmt_close",
        }
    }

    /// Whether the server answers it (SEND_LONG_DATA and CLOSE get no answer, even for an
    /// unknown statement).
    pub fn answered(self) -> bool {
        !matches!(self, StmtCommand::SendLongData | StmtCommand::Close)
    }
}

/// A COM_QUERY packet payload carrying `sql`.
pub fn query_packet(sql: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(sql.len() + 1);
    p.push(Com::COM_QUERY as u8);
    p.extend_from_slice(sql);
    p
}

/// The statement id in bytes 1..5 of a COM_STMT_* packet.
pub fn stmt_id(packet: &[u8]) -> Option<u32> {
    let b = packet.get(1..5)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes the command a packet carries.
pub fn decode(packet: &[u8]) -> Command<'_> {
    let Some((&cmd, body)) = packet.split_first() else {
        return Command::Empty;
    };
    let stmt = |kind| Command::Stmt {
        kind,
        id: stmt_id(packet),
    };
    const QUIT: u8 = Com::COM_QUIT as u8;
    const PING: u8 = Com::COM_PING as u8;
    const QUERY: u8 = Com::COM_QUERY as u8;
    const INIT_DB: u8 = Com::COM_INIT_DB as u8;
    const FIELD_LIST: u8 = Com::COM_FIELD_LIST as u8;
    const STATISTICS: u8 = Com::COM_STATISTICS as u8;
    const SET_OPTION: u8 = Com::COM_SET_OPTION as u8;
    const RESET_CONNECTION: u8 = Com::COM_RESET_CONNECTION as u8;
    const CHANGE_USER: u8 = Com::COM_CHANGE_USER as u8;
    const PREPARE: u8 = Com::COM_STMT_PREPARE as u8;
    const EXECUTE: u8 = Com::COM_STMT_EXECUTE as u8;
    const FETCH: u8 = Com::COM_STMT_FETCH as u8;
    const RESET: u8 = Com::COM_STMT_RESET as u8;
    const SEND_LONG_DATA: u8 = Com::COM_STMT_SEND_LONG_DATA as u8;
    const CLOSE: u8 = Com::COM_STMT_CLOSE as u8;
    match cmd {
        QUIT => Command::Quit,
        PING => Command::Ping,
        QUERY => Command::Query(body),
        INIT_DB => Command::InitDb(body),
        FIELD_LIST => Command::FieldList,
        STATISTICS => Command::Statistics,
        SET_OPTION => Command::SetOption(match body.get(..2) {
            Some(&[lo, hi]) => Some(u16::from_le_bytes([lo, hi])),
            _ => None,
        }),
        RESET_CONNECTION => Command::ResetConnection,
        CHANGE_USER => Command::ChangeUser,
        PREPARE => Command::Prepare(body),
        EXECUTE => stmt(StmtCommand::Execute),
        FETCH => stmt(StmtCommand::Fetch),
        RESET => stmt(StmtCommand::Reset),
        SEND_LONG_DATA => stmt(StmtCommand::SendLongData),
        CLOSE => stmt(StmtCommand::Close),
        _ => Command::Unknown(cmd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_headers() {
        assert_eq!(decode(b""), Command::Empty);
        assert_eq!(decode(b"\x03SELECT 1"), Command::Query(b"SELECT 1"));
        assert_eq!(decode(b"\x02app"), Command::InitDb(b"app"));
        assert_eq!(decode(b"\x1b\x00\x00"), Command::SetOption(Some(0)));
        assert_eq!(decode(b"\x1b\x01\x00"), Command::SetOption(Some(1)));
        assert_eq!(decode(b"\x1b\x01"), Command::SetOption(None));
        assert_eq!(
            decode(b"\x17\x07\x00\x00\x00\x00"),
            Command::Stmt {
                kind: StmtCommand::Execute,
                id: Some(7)
            }
        );
        assert_eq!(
            decode(b"\x19\x07"),
            Command::Stmt {
                kind: StmtCommand::Close,
                id: None
            }
        );
        assert_eq!(decode(b"\x05"), Command::Unknown(5));
        assert_eq!(decode(b"\xfe"), Command::Unknown(0xfe));
    }
}
