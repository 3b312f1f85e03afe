//! Reads a backend's accounts for `users_from_backend`: the rows of `mysql.user` for the name a
//! client logs in with, each with its host pattern, plugin, mysql_native_password hash and
//! `REQUIRE` (ssl_type and the certificate's names).
//! idgate's own account there needs `SELECT` on `mysql.user`.

use std::fmt::Write;
use std::time::Duration;

use super::BackendConn;
use crate::config::Backend;
use crate::wire::auth::backend_users::{Account, AccountSource, Loading, TlsRequirement};
use crate::wire::auth::parse_native_hash;

/// Longest a read may take (connect included); the logins waiting for it wait no longer.
const READ_TIMEOUT: Duration = Duration::from_secs(3);

pub struct UserTable {
    pub backend: String,
    pub cfg: Backend,
    /// The connection reads go over, kept between logins (one read at a time, in login order).
    conn: tokio::sync::Mutex<Option<BackendConn>>,
}

impl UserTable {
    pub fn new(backend: String, cfg: Backend) -> UserTable {
        UserTable {
            backend,
            cfg,
            conn: Default::default(),
        }
    }
}

/// The statement reading `user`'s rows; the name goes as a hex literal, which no quote or
/// sql_mode can break.
fn accounts_of(user: &[u8]) -> String {
    let mut sql = String::from(
        "SELECT User, Host, plugin, authentication_string, ssl_type, x509_issuer, x509_subject, \
         ssl_cipher FROM mysql.user WHERE User = ",
    );
    if user.is_empty() {
        sql.push_str("''");
    } else {
        sql.push_str("X'");
        for b in user {
            let _ = write!(sql, "{b:02x}");
        }
        sql.push('\'');
    }
    sql
}

impl AccountSource for UserTable {
    fn load<'a>(&'a self, user: &'a [u8]) -> Loading<'a> {
        Box::pin(async move {
            let read = async {
                let mut held = self.conn.lock().await;
                // A kept connection the backend closed meanwhile (wait_timeout) is replaced once.
                if let Some(mut c) = held.take().filter(|c| !c.broken) {
                    if let Ok(rows) = c.query_rows(&accounts_of(user)).await {
                        *held = Some(c);
                        return Ok(rows);
                    }
                }
                let mut c = BackendConn::connect(
                    &self.backend,
                    &self.cfg,
                    Default::default(),
                    READ_TIMEOUT,
                )
                .await
                .map_err(|e| e.to_string())?;
                let rows = c.query_rows(&accounts_of(user)).await.map_err(|e| {
                    format!(
                        "{e}; idgate's account on backend `{}` needs SELECT on mysql.user",
                        self.backend
                    )
                })?;
                *held = Some(c);
                Ok(rows)
            };
            let rows = tokio::time::timeout(READ_TIMEOUT, read)
                .await
                .unwrap_or_else(|_| Err(format!("backend `{}` did not answer", self.backend)))?;
            Ok(rows.into_iter().filter_map(account).collect())
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
    let mut text =
        || String::from_utf8_lossy(&it.next().flatten().unwrap_or_default()).into_owned();
    let (ssl_type, issuer, subject, cipher) = (text(), text(), text(), text());
    let tls = TlsRequirement::of_row(&ssl_type, &issuer, &subject, &cipher);
    let native = match plugin.as_str() {
        "" | "mysql_native_password" => parse_native_hash(&hash),
        _ => None,
    };
    Some(Account {
        user,
        host,
        plugin,
        native,
        tls,
    })
}

#[cfg(test)]
mod tests {
    use super::accounts_of;

    #[test]
    fn the_name_is_a_hex_literal_whatever_it_holds() {
        assert!(accounts_of(b"a'b").ends_with("WHERE User = X'612762'"));
        assert!(accounts_of(b"").ends_with("WHERE User = ''"));
    }
}
