//! Prepared INSERTs into tables whose ids idgate generates. The backend prepared the statement
//! as written (so the client got genuine metadata); each execution binds the parameters into the
//! text and runs it through the same rewrite and routing as a text INSERT. The answer is an OK
//! packet, the same in both protocols.

use tokio::io::{AsyncRead, AsyncWrite};

use super::prepared::Emulated;
use super::{End, Session};
use crate::sql::{self, StatementKind};
use crate::wire::errors::SqlError;
use crate::wire::stmt_execute::{self, BoundState};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Marks statement `id` for idgate to execute when it is an INSERT into a configured table.
    pub(super) fn mark_emulated(&mut self, id: u32, stmt: &[u8]) {
        if !matches!(
            sql::classify(stmt),
            StatementKind::Insert | StatementKind::Replace
        ) || !self.proxy.tables.mentioned_in(stmt)
        {
            return;
        }
        let Ok(a) = sql::analyze_insert(stmt) else {
            return;
        };
        let schema = a.table.schema.clone().or_else(|| {
            self.db
                .as_ref()
                .map(|d| String::from_utf8_lossy(d).into_owned())
        });
        if self
            .proxy
            .tables
            .lookup(schema.as_deref(), &a.table.name)
            .is_none()
        {
            return;
        }
        if let Some(st) = self.stmts.get_mut(id) {
            st.emulated = Some(Box::new(Emulated {
                sql: stmt.to_vec(),
                placeholders: a.placeholders.clone(),
                returning: a.returning,
                bound: BoundState::default(),
            }));
        }
    }

    pub(super) fn store_long_data(&mut self, id: u32, packet: &[u8]) {
        let Some(e) = self.stmts.get_mut(id).and_then(|st| st.emulated.as_mut()) else {
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

    pub(super) fn clear_long_data(&mut self, id: u32) {
        if let Some(e) = self.stmts.get_mut(id).and_then(|st| st.emulated.as_mut()) {
            e.bound.long_data.clear();
        }
    }

    pub(super) async fn execute_emulated(&mut self, id: u32, packet: &[u8]) -> Option<End> {
        let charset =
            mysql_common::collations::Collation::resolve((self.hello.collation as u16).into())
                .charset()
                .to_string();
        let bound = {
            let e = self.stmts.get_mut(id).and_then(|st| st.emulated.as_mut())?;
            if e.returning {
                Err(SqlError::new(
                    sql::ER_NOT_SUPPORTED_YET,
                    b"42000",
                    "RETURNING in a server-side prepared INSERT into a table whose ids idgate generates \
                     is not supported; send it as a text query",
                ))
            } else {
                stmt_execute::decode_params(packet, e.placeholders.len(), &mut e.bound).and_then(
                    |params| {
                        let params: Vec<_> = params
                            .into_iter()
                            .map(|p| (p.value, p.column_type))
                            .collect();
                        let charset = if charset.is_empty() {
                            "utf8mb4"
                        } else {
                            charset.as_str()
                        };
                        sql::bind_placeholders(&e.sql, &e.placeholders, &params, charset)
                            .map_err(SqlError::from)
                    },
                )
            }
        };
        let text = match bound {
            Ok(t) => t,
            Err(e) => {
                self.send_error(&e);
                return None;
            }
        };
        self.run_text_insert(&text).await
    }
}
