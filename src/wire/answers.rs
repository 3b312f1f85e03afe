//! Whole answers idgate writes to a client itself, in the client's framing: an OK, an error, a
//! result set. The session decides what to answer; these only write it.

use mysql_common::constants::{ColumnFlags, ColumnType, StatusFlags};
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
        self.send_ok_with(affected_rows, last_insert_id, status, 0, b"");
    }

    /// An OK packet with warnings and an info text.
    pub fn send_ok_with(
        &mut self,
        affected_rows: u64,
        last_insert_id: u64,
        status: StatusFlags,
        warnings: u16,
        info: &[u8],
    ) {
        let start = self.begin();
        packets::ok(
            self.payload(),
            packets::OK_HEADER,
            affected_rows,
            last_insert_id,
            status,
            warnings,
            info,
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
            if self.extended_metadata && !packets::has_extended_metadata(c) {
                let start = self.begin();
                packets::add_extended_metadata(c, self.payload());
                self.end(start);
            } else {
                self.write(c);
            }
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

    /// A one-row, one-column result set with an unsigned integer of the type and width `ty`.
    pub fn send_unsigned(
        &mut self,
        column: &str,
        value: u64,
        (ty, width): (ColumnType, u32),
        status: StatusFlags,
        deprecate_eof: bool,
    ) {
        let mut def = Vec::new();
        let flags =
            ColumnFlags::NOT_NULL_FLAG | ColumnFlags::UNSIGNED_FLAG | ColumnFlags::BINARY_FLAG;
        packets::column_def(&mut def, column.as_bytes(), 63, width, ty, flags, 0);
        let mut row = Vec::new();
        packets::put_lenenc_str(&mut row, value.to_string().as_bytes());
        self.send_result_set(&[def], [row.as_slice()], 0, status, deprecate_eof);
    }

    /// A result set of text columns named `names` (utf8mb4 strings, as SHOW statements answer),
    /// one row per item of `rows`.
    pub fn send_text_table<'a>(
        &mut self,
        names: &[&str],
        rows: impl IntoIterator<Item = &'a [String]>,
        status: StatusFlags,
        deprecate_eof: bool,
    ) {
        let columns: Vec<Vec<u8>> = names
            .iter()
            .map(|name| {
                let mut def = Vec::new();
                packets::column_def(
                    &mut def,
                    name.as_bytes(),
                    45,
                    4 * 65535,
                    ColumnType::MYSQL_TYPE_VAR_STRING,
                    ColumnFlags::NOT_NULL_FLAG,
                    0x27,
                );
                def
            })
            .collect();
        let packed: Vec<Vec<u8>> = rows
            .into_iter()
            .map(|r| {
                let mut p = Vec::new();
                for v in r {
                    packets::put_lenenc_str(&mut p, v.as_bytes());
                }
                p
            })
            .collect();
        self.send_result_set(
            &columns,
            packed.iter().map(Vec::as_slice),
            0,
            status,
            deprecate_eof,
        );
    }

    /// A one-row, one-column result set in the binary protocol with an INT UNSIGNED value
    /// (10 wide, never NULL).
    pub fn send_unsigned_int_binary(
        &mut self,
        column: &str,
        value: u32,
        status: StatusFlags,
        deprecate_eof: bool,
    ) {
        let mut def = Vec::new();
        let flags =
            ColumnFlags::NOT_NULL_FLAG | ColumnFlags::UNSIGNED_FLAG | ColumnFlags::BINARY_FLAG;
        let ty = ColumnType::MYSQL_TYPE_LONG;
        packets::column_def(&mut def, column.as_bytes(), 63, 10, ty, flags, 0);
        // The row's header and its NULL bitmap (no NULLs), then the value.
        let mut row = vec![0x00, 0x00];
        row.extend_from_slice(&value.to_le_bytes());
        self.send_result_set(&[def], [row.as_slice()], 0, status, deprecate_eof);
    }
}
