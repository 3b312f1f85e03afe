//! UPDATE assigning a column of a unique key held through a lookup (`unique: global`), in one
//! transaction with the lookup: the row it changes is read and locked on the shards, the key's
//! new value is claimed in the lookup (a value some other row holds is MariaDB's 1062), the
//! UPDATE runs on the shards, and the old value is released. One row at a time: an UPDATE that
//! matches several rows is refused, since their new values could meet each other before any
//! of them is written.

use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::primitives::{unique_key_update, unique_write};
use crate::route::TableRule;
use crate::session::End;
use crate::sql::UpdateParts;
use crate::unique::{GlobalKey, KeyColumn};
use crate::wire::errors::SqlError;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs an UPDATE assigning a `unique: global` key's column (see the module's notes).
    /// `Ok(false)`: the client got an error.
    pub(super) async fn key_update(
        &mut self,
        stmt: &[u8],
        parts: &UpdateParts,
        rule: &TableRule,
        more: bool,
    ) -> Result<bool, End> {
        let schema = match (&parts.table.schema, &self.session.db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => {
                self.session.writer.send_error(&SqlError::new(
                    1046,
                    b"3D000",
                    "No database selected",
                ));
                return Ok(false);
            }
        };
        let all = self
            .session
            .proxy
            .unique
            .keys_of(&schema, &parts.table.name)
            .unwrap_or_else(|| Vec::new().into());
        let assigned = |c: &str| {
            parts
                .assigned
                .iter()
                .find(|a| a.column.eq_ignore_ascii_case(c))
        };
        let keys: Vec<&GlobalKey> = all
            .iter()
            .filter(|k| k.columns.iter().any(|c| assigned(&c.name).is_some()))
            .collect();
        // Every column of those keys, as the row holds it now.
        let mut read: Vec<KeyColumn> = Vec::new();
        for c in keys.iter().flat_map(|k| &k.columns) {
            if !read.iter().any(|r| r.name.eq_ignore_ascii_case(&c.name)) {
                read.push(c.clone());
            }
        }
        let backends = keys.iter().map(|k| k.backend.as_str());
        let mut conns = match unique_write::open(self, backends, rule.backends()).await? {
            Ok(w) => w,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        let condition = parts.condition.as_ref().and_then(|r| stmt.get(r.clone()));
        let outcome = unique_key_update::update_row(
            self, &mut conns, stmt, parts, rule, &schema, &keys, &read, condition,
        )
        .await?;
        let ok = match conns.close(self, outcome, "UPDATE").await? {
            Ok(ok) => ok,
            Err(f) => {
                f.send(&mut self.session.writer);
                return Ok(false);
            }
        };
        self.answer_bulk(&ok, None, more);
        Ok(true)
    }
}
