//! COM_STMT_SEND_LONG_DATA under `max_packet_size`: the bytes sent for one parameter of one
//! statement are counted, and past the cap the rest is dropped and the next EXECUTE fails with
//! MariaDB's own error for a parameter longer than max_allowed_packet. Holds for statements
//! relayed to the backend and for those idgate executes itself (which keep the data in memory).

use std::collections::HashMap;

use crate::wire::errors::{self, SqlError};

/// Long-data bytes per parameter since the statement last executed or was reset.
#[derive(Debug, Clone, Default)]
pub struct LongDataTally {
    bytes: HashMap<u16, u64>,
    /// A parameter went past the cap: the next EXECUTE fails.
    pub(super) overflowed: bool,
}

impl LongDataTally {
    /// Nothing was sent since the statement last executed (or was reset).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty() && !self.overflowed
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.overflowed = false;
    }
}

/// The error MariaDB 10.11 gives at EXECUTE (checked against a real server).
pub fn too_long(limit: u64) -> SqlError {
    SqlError::new(
        errors::ER_UNKNOWN_ERROR,
        b"HY000",
        format!(
            "Parameter of prepared statement which is set through mysql_send_long_data() is longer than 'max_allowed_packet' bytes (idgate's max_packet_size, {limit})"
        ),
    )
}

impl super::prepared::Statements {
    /// Counts a SEND_LONG_DATA packet against `limit` bytes per parameter; `false`: past the
    /// cap, drop it.
    pub fn long_data_fits(&mut self, client_id: u32, packet: &[u8], limit: u64) -> bool {
        let Some(st) = self.get_mut(client_id) else {
            return true;
        };
        let Some(p) = packet.get(5..7) else {
            return true;
        };
        let param = u16::from_le_bytes([p[0], p[1]]);
        let len = packet.len().saturating_sub(7) as u64;
        let tally = &mut st.long_data;
        if tally.overflowed {
            return false;
        }
        let total = tally.bytes.entry(param).or_default();
        *total = total.saturating_add(len);
        if *total > limit {
            tally.overflowed = true;
            if let Some(e) = st.emulated.as_mut() {
                // Whatever was kept is of no use any more.
                e.bound.long_data.clear();
            }
            return false;
        }
        true
    }

    /// COM_STMT_PREPARE past `max` statements gets MariaDB's ERROR 1461.
    pub fn refuse_past(&self, max: usize) -> Result<(), SqlError> {
        if self.len() < max {
            return Ok(());
        }
        Err(SqlError::new(
            errors::ER_MAX_PREPARED_STMT_COUNT_REACHED,
            b"42000",
            format!(
                "Can't create more than max_prepared_stmt_count statements (current value: {max}); close statements the session no longer uses (idgate counts them per session)"
            ),
        ))
    }

    /// Keeps a SEND_LONG_DATA chunk of a statement idgate executes itself.
    pub fn store_long_data(&mut self, id: u32, packet: &[u8]) {
        let Some(e) = self.get_mut(id).and_then(|st| st.emulated.as_mut()) else {
            return;
        };
        if let Some(param) = packet.get(5..7) {
            let param = u16::from_le_bytes([param[0], param[1]]);
            e.bound
                .long_data
                .entry(param)
                .or_default()
                .extend_from_slice(packet.get(7..).unwrap_or_default());
        }
    }

    pub fn clear_long_data(&mut self, id: u32) {
        if let Some(e) = self.get_mut(id).and_then(|st| st.emulated.as_mut()) {
            e.bound.long_data.clear();
        }
    }
}
