//! Before an UPDATE/DELETE with ORDER BY/LIMIT over shards runs as a write of the rows an
//! ordered SELECT of their ids picked (`route::ordered_write`): the id column must be a unique key
//! by itself, or `id IN (…)` would reach rows beyond the LIMIT. Asked of one shard each time:
//! such statements are rare, and a key dropped meanwhile must not be trusted from a cache.

use tokio::io::{AsyncRead, AsyncWrite};

use super::fetch::FetchLimits;
use super::{End, Session};
use crate::exec::metadata::quote_literal;
use crate::exec::StatementScope;
use crate::route::{Route, UniqueId};
use crate::wire::errors::SqlError;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Whether `u.column` alone is a unique key (PRIMARY or UNIQUE, no prefix) of its table on
    /// `u.backend`. `Ok(Err(_))`: the backend's error is the statement's answer.
    pub(super) async fn is_unique_by_itself(
        &mut self,
        u: &UniqueId,
        scope: StatementScope,
    ) -> Result<Result<bool, SqlError>, End> {
        let schema = match &u.schema {
            Some(s) => quote_literal(s),
            None => "DATABASE()".to_string(),
        };
        let sql = format!(
            "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = {schema} \
             AND TABLE_NAME = {} AND NON_UNIQUE = 0 GROUP BY INDEX_NAME HAVING COUNT(*) = 1 \
             AND MAX(COLUMN_NAME) = {} AND MAX(SUB_PART) IS NULL",
            quote_literal(&u.table),
            quote_literal(&u.column)
        );
        let limits = FetchLimits {
            max_rows: 1_000,
            max_bytes: 1 << 20,
            enough: Some(1),
        };
        let route = Route::One(u.backend.clone());
        let fetched = self
            .cursor(scope)
            .fetch_routed(sql.as_bytes(), route, limits)
            .await?;
        Ok(fetched.map(|f| !f.rows.is_empty()).map_err(SqlError::from))
    }
}
