//! Taking a backend connection for the session on first use and giving it the session's state;
//! the connections themselves and their part in the transaction are `exec::SessionConns`.

use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::exec::conns::Held;
use crate::wire::errors::{self, SqlError};

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The index of the session's connection to `backend`, taking one from its pool (and giving it
    /// the session's collation, database and earlier SET statements) on first use.
    pub(super) async fn lease_index(&mut self, backend: &str) -> Result<usize, SqlError> {
        if let Some(i) = self.leases.position(backend) {
            return Ok(i);
        }
        let Some(pool) = self.live.pool_for(
            &self.proxy.pools,
            backend,
            &self.hello.user,
            self.hello.backend_login.as_deref(),
        ) else {
            return Err(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate: no backend named `{backend}`"),
            ));
        };
        let mut lease = pool.acquire(self.found_rows()).await?;
        self.prepare_backend(&mut lease).await?;
        if backend != self.proxy.default_pool.name {
            for stmt in &self.replay {
                lease.query_drop_bytes(stmt).await.map_err(|e| {
                    SqlError::new(
                        errors::ER_UNKNOWN_ERROR,
                        b"HY000",
                        format!("idgate: replaying the session's SET on `{backend}` failed: {e}"),
                    )
                })?;
            }
        }
        Ok(self.leases.push(Held::new(backend.to_string(), lease)))
    }
}
