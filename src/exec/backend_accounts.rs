//! Reads a backend's accounts for `users_from_backend`: every row of `mysql.user` with its host
//! pattern, plugin and mysql_native_password hash. idgate's own account there needs
//! `SELECT` on `mysql.user`.

use std::time::Duration;

use super::BackendConn;
use crate::config::Backend;
use crate::wire::auth::backend_users::{Account, AccountSource, Loading};
use crate::wire::auth::parse_native_hash;

/// Longest a read may take (connect included); the logins waiting for it wait no longer.
const READ_TIMEOUT: Duration = Duration::from_secs(3);

const ACCOUNTS: &str = "SELECT User, Host, plugin, authentication_string FROM mysql.user";

pub struct UserTable {
    pub backend: String,
    pub cfg: Backend,
}

impl AccountSource for UserTable {
    fn load(&self) -> Loading<'_> {
        Box::pin(async move {
            let read = async {
                let mut c = BackendConn::connect(
                    &self.backend,
                    &self.cfg,
                    Default::default(),
                    READ_TIMEOUT,
                )
                .await
                .map_err(|e| e.to_string())?;
                let rows = c.query_rows(ACCOUNTS).await.map_err(|e| {
                    format!(
                        "{e}; idgate's account on backend `{}` needs SELECT on mysql.user",
                        self.backend
                    )
                })?;
                c.close().await;
                Ok(rows.into_iter().filter_map(account).collect())
            };
            tokio::time::timeout(READ_TIMEOUT, read)
                .await
                .unwrap_or_else(|_| Err(format!("backend `{}` did not answer", self.backend)))
        })
    }
}

/// One row as an account; a hash that does not parse leaves the account uncheckable.
fn account(row: Vec<Option<Vec<u8>>>) -> Option<Account> {
    let mut it = row.into_iter();
    let user = it.next()??;
    let host = String::from_utf8(it.next()??).ok()?;
    let plugin = String::from_utf8(it.next().flatten().unwrap_or_default()).ok()?;
    let hash = String::from_utf8(it.next().flatten().unwrap_or_default()).ok()?;
    let native = match plugin.as_str() {
        "" | "mysql_native_password" => parse_native_hash(&hash),
        _ => None,
    };
    Some(Account {
        user,
        host,
        plugin,
        native,
    })
}
