//! The one OK of a statement whose rows idgate wrote itself on several backends (LOAD DATA
//! LOCAL, INSERT … SELECT, writes with unique-key lookups), and what it changes in the session.

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::wire::packets;

pub(super) use crate::exec::primitives::bulk_write::BulkOk;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Sends the statement's one OK; a generated first id becomes the session's
    /// LAST_INSERT_ID(), as after an AUTO_INCREMENT insert.
    pub(super) fn answer_bulk(&mut self, ok: &BulkOk, first_generated: Option<u64>, more: bool) {
        if let Some(id) = first_generated {
            self.last_insert_id = Some(id);
            self.lid_sync = Some(id);
        }
        if self.in_transaction() {
            self.status |= StatusFlags::SERVER_STATUS_IN_TRANS.bits();
        }
        let status = self.status_with(more);
        let start = self.writer.begin();
        packets::ok(
            self.writer.payload(),
            packets::OK_HEADER,
            ok.affected,
            ok.insert_id,
            status,
            ok.warnings,
            &ok.info,
        );
        self.writer.end(start);
    }
}
