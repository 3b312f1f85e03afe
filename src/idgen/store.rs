//! Small helpers shared by the code that talks to the sequence store.

use std::future::Future;
use std::time::Duration;

use super::error::{IdGenError, Result};

/// Runs one store operation with a timeout, naming the generator and the step in errors.
pub(crate) async fn bounded<T, F>(
    name: &str,
    during: &'static str,
    timeout: Duration,
    f: F,
) -> Result<T>
where
    F: Future<Output = std::result::Result<T, mysql_async::Error>>,
{
    match tokio::time::timeout(timeout, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(source)) => Err(IdGenError::Store {
            name: name.to_string(),
            during,
            source,
        }),
        Err(_) => Err(IdGenError::StoreTimeout {
            name: name.to_string(),
            during,
            timeout,
        }),
    }
}

/// The store's clock in Unix milliseconds, as an SQL expression.
pub(crate) const DB_NOW_MS: &str = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";
