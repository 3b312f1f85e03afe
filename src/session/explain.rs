//! `EXPLAIN ROUTE <statement>`: the rows `route::explain` makes of the plan idgate would run
//! (one per backend with the SQL it would get and how the answers would be combined), written
//! as a result set.

use mysql_common::constants::{ColumnFlags, ColumnType};
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::route::explain;
use crate::wire::packets;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Answers `EXPLAIN ROUTE …` with a result set; false when the client got an error.
    pub(super) fn explain_route(&mut self, stmt: &[u8], more: bool) -> bool {
        let rows = match self.with_statement_context(|ctx| explain::explain(stmt, ctx)) {
            Ok(r) => r,
            Err(e) => {
                self.writer.send_error(&e);
                return false;
            }
        };
        let columns: Vec<Vec<u8>> = ["backend", "sql", "merge"]
            .iter()
            .map(|name| {
                let mut def = Vec::new();
                // utf8mb4_general_ci text, as SHOW statements answer.
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
            .iter()
            .map(|r| {
                let mut p = Vec::new();
                for v in r {
                    packets::put_lenenc_str(&mut p, v.as_bytes());
                }
                p
            })
            .collect();
        let status = self.status_with(more);
        let deprecate_eof = self.deprecate_eof();
        self.writer.send_result_set(
            &columns,
            packed.iter().map(Vec::as_slice),
            0,
            status,
            deprecate_eof,
        );
        true
    }
}
