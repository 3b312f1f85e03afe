//! Statements that would silently bypass idgate's ids or shards if they went to the default
//! backend as they are: LOAD DATA into a table whose ids idgate generates or whose rows it
//! places, and HANDLER or LOCK TABLES on a sharded or broadcast table.

use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::route::Placement;
use crate::sql::{self, TableNames};
use crate::wire::errors::SqlError;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// `Some`: the statement names a configured table in a way idgate cannot honour.
    pub(super) fn refuse_bypass(&self, stmt: &[u8]) -> Option<SqlError> {
        let verb = String::from_utf8_lossy(&sql::first_word(stmt)).into_owned();
        if !matches!(verb.as_str(), "LOAD" | "HANDLER" | "LOCK") {
            return None;
        }
        let rule = self.proxy.tables.rules().find(|r| {
            let placed = !matches!(r.placement, Placement::Single { .. });
            let concerned = placed || (verb == "LOAD" && r.generator.is_some());
            concerned && sql::identifiers_mention(stmt, &TableNames::new([r.name.as_str()]))
        })?;
        let what = match verb.as_str() {
            "LOAD" => "LOAD DATA/XML",
            "HANDLER" => "HANDLER",
            _ => "LOCK TABLES",
        };
        Some(SqlError::new(
            sql::ER_NOT_SUPPORTED_YET,
            b"42000",
            format!(
                "{what} on table `{}` is not supported through idgate: it would reach only the \
                 default backend and skip idgate's ids and shards; use INSERT/SELECT statements",
                rule.name
            ),
        ))
    }
}
