//! Before an UPDATE/DELETE with ORDER BY/LIMIT over shards runs as a write of the rows an
//! ordered SELECT of their ids picked (`route::ordered_write`): the id column must be a unique key
//! by itself, or `id IN (…)` would reach rows beyond the LIMIT. Asked of one shard each time:
//! such statements are rare, and a key dropped meanwhile must not be trusted from a cache.

use crate::exec::metadata::quote_literal;
use crate::exec::{Cursor, FetchLimits};
use crate::route::UniqueId;
use crate::wire::errors::SqlError;

/// Whether `u.column` alone is a unique key (PRIMARY or UNIQUE, no prefix) of its table on
/// `u.backend`. `Ok(Err(_))`: the backend's error is the statement's answer.
pub async fn is_unique_by_itself<C: Cursor>(
    c: &mut C,
    u: &UniqueId,
) -> Result<Result<bool, SqlError>, C::End> {
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
    let fetched = c.fetch_on(&u.backend, sql.as_bytes(), limits).await?;
    Ok(fetched.map(|f| !f.rows.is_empty()))
}
