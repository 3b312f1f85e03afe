//! Errors idgate answers with itself, as MySQL error packets: code, SQLSTATE and a message that
//! says what to do. Backend errors never pass through here; they are relayed as they came.

/// An error on its way to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    pub code: u16,
    pub state: [u8; 5],
    pub message: String,
}

impl SqlError {
    pub fn new(code: u16, state: &[u8; 5], message: impl Into<String>) -> Self {
        SqlError {
            code,
            state: *state,
            message: message.into(),
        }
    }

    pub fn encode(&self, buf: &mut Vec<u8>) {
        super::packets::err(buf, self.code, &self.state, self.message.as_bytes());
    }
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code,
            String::from_utf8_lossy(&self.state),
            self.message
        )
    }
}

pub const ER_CON_COUNT_ERROR: u16 = 1040;
pub const ER_HANDSHAKE_ERROR: u16 = 1043;
pub const ER_ACCESS_DENIED_ERROR: u16 = 1045;
pub const ER_UNKNOWN_COM_ERROR: u16 = 1047;
pub const ER_UNKNOWN_ERROR: u16 = 1105;
pub const ER_TABLEACCESS_DENIED_ERROR: u16 = 1142;
pub const ER_NET_PACKET_TOO_LARGE: u16 = 1153;
pub const ER_NET_READ_ERROR: u16 = 1158;
pub const ER_UNKNOWN_STMT_HANDLER: u16 = 1243;
pub const ER_NOT_SUPPORTED_AUTH_MODE: u16 = 1251;
pub const ER_SERVER_SHUTDOWN: u16 = 1053;
pub const CR_SERVER_LOST: u16 = 2013;

pub fn access_denied(user: &[u8], host: &str, used_password: bool) -> SqlError {
    SqlError::new(
        ER_ACCESS_DENIED_ERROR,
        b"28000",
        format!(
            "Access denied for user '{}'@'{}' (using password: {})",
            String::from_utf8_lossy(user),
            host,
            if used_password { "YES" } else { "NO" }
        ),
    )
}

pub fn packet_too_large(limit: usize) -> SqlError {
    SqlError::new(
        ER_NET_PACKET_TOO_LARGE,
        b"08S01",
        format!(
            "Got a packet bigger than idgate's max_packet_size ({limit} bytes); send less per statement or raise max_packet_size in idgate's config"
        ),
    )
}

pub fn unknown_command(cmd: u8) -> SqlError {
    SqlError::new(
        ER_UNKNOWN_COM_ERROR,
        b"08S01",
        format!("Unknown command 0x{cmd:02x}: idgate does not relay this command"),
    )
}

pub fn unknown_statement(id: u32, what: &str) -> SqlError {
    SqlError::new(
        ER_UNKNOWN_STMT_HANDLER,
        b"HY000",
        format!("Unknown prepared statement handler ({id}) given to {what}"),
    )
}

pub fn malformed(what: &str) -> SqlError {
    SqlError::new(
        ER_NET_READ_ERROR,
        b"08S01",
        format!("Malformed {what} packet; the client sent bytes idgate cannot decode"),
    )
}

pub const ER_HOST_IS_BLOCKED: u16 = 1129;
pub const ER_USER_LIMIT_REACHED: u16 = 1226;
pub const ER_MAX_PREPARED_STMT_COUNT_REACHED: u16 = 1461;
pub const ER_OUTOFMEMORY: u16 = 1037;
