//! Whole answers idgate writes to a client itself, in the client's framing: an OK, an error, a
//! result set. The session decides what to answer; these only write it.

use mysql_common::constants::StatusFlags;
use tokio::io::AsyncWrite;

use super::errors::SqlError;
use super::framing::PacketWriter;
use super::packets;

impl<W: AsyncWrite + Unpin> PacketWriter<W> {
    /// An error packet.
    pub fn send_error(&mut self, e: &SqlError) {
        let start = self.begin();
        e.encode(self.payload());
        self.end(start);
    }

    /// An OK packet with `status` and no warnings or info.
    pub fn send_ok(&mut self, affected_rows: u64, last_insert_id: u64, status: StatusFlags) {
        let start = self.begin();
        packets::ok(
            self.payload(),
            packets::OK_HEADER,
            affected_rows,
            last_insert_id,
            status,
            0,
            b"",
        );
        self.end(start);
    }

    /// A whole result set: column definitions, rows (text protocol packets) and the
    /// terminator, with or without the EOF after the definitions (`deprecate_eof`).
    pub fn send_result_set<'a>(
        &mut self,
        columns: &[Vec<u8>],
        rows: impl IntoIterator<Item = &'a [u8]>,
        warnings: u16,
        status: StatusFlags,
        deprecate_eof: bool,
    ) {
        let mut count = Vec::new();
        packets::put_lenenc_int(&mut count, columns.len() as u64);
        self.write(&count);
        for c in columns {
            self.write(c);
        }
        if !deprecate_eof {
            let start = self.begin();
            packets::eof(self.payload(), 0, status);
            self.end(start);
        }
        for row in rows {
            self.write(row);
        }
        let start = self.begin();
        packets::terminator(self.payload(), deprecate_eof, warnings, status);
        self.end(start);
    }
}
