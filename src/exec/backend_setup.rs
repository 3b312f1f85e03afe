//! What a session's backend connection must match before it runs the session's statements: the
//! session's database, its client's collation, IGNORE_SPACE when the client announced it, and
//! multi-statements as the client may send them. Handed over by the session as a value; a
//! pooled connection may still carry an earlier session's database, and a reset one the pool's
//! collation.

use mysql_common::constants::Command;

use super::backend::{BackendError, CurrentDb, POOL_COLLATION};
use super::Lease;
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

pub struct SessionSetup<'a> {
    pub db: Option<&'a [u8]>,
    pub collation: u8,
    pub ignore_space: bool,
    pub multi_statements: bool,
}

fn lost(e: BackendError) -> SqlError {
    SqlError::new(errors::CR_SERVER_LOST, b"HY000", format!("idgate: {e}"))
}

impl SessionSetup<'_> {
    /// Brings a fresh (or freshly reset) connection to the session's database and collation. A
    /// database an earlier session selected is switched, or cleared when this session has none.
    pub async fn prepare(&self, lease: &mut Lease) -> Result<(), SqlError> {
        self.select_db(lease).await?;
        self.set_collation(lease).await?;
        if self.ignore_space {
            // MariaDB turns IGNORE_SPACE on for a client that announced it (`COUNT (*)` then
            // parses); a pooled connection logged in without it, so it is turned on here.
            lease
                .query_drop("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',IGNORE_SPACE')")
                .await
                .map_err(lost)?;
        }
        // The backend must parse the client's packets with the client's powers: a client without
        // multi-statements never gets a second statement run, whoever sends it.
        lease
            .set_multi_statements(self.multi_statements)
            .await
            .map_err(lost)
    }

    async fn select_db(&self, lease: &mut Lease) -> Result<(), SqlError> {
        match (self.db, &lease.database) {
            (Some(db), CurrentDb::Named(cur)) if cur == db => {}
            (Some(db), _) => {
                let mut cmd = vec![Command::COM_INIT_DB as u8];
                cmd.extend_from_slice(db);
                let first = lease.simple_command(&cmd).await.map_err(lost)?;
                if first == packets::ERR_HEADER {
                    let (code, state, msg) = packets::parse_err(&lease.packet);
                    return Err(SqlError::new(code, &state, String::from_utf8_lossy(msg)));
                }
                lease.database = CurrentDb::Named(db.to_vec());
            }
            (None, CurrentDb::None) => {}
            (None, _) => lease.change_user_no_db().await.map_err(lost)?,
        }
        Ok(())
    }

    /// Gives the connection the client's collation (a pooled one starts with utf8mb4_general_ci).
    pub async fn set_collation(&self, lease: &mut Lease) -> Result<(), SqlError> {
        if lease.collation != self.collation {
            let c = mysql_common::collations::Collation::resolve(u16::from(self.collation).into());
            if c.id() != mysql_common::collations::CollationId::UNKNOWN_COLLATION_ID {
                let exact = format!("SET NAMES '{}' COLLATE '{}'", c.charset(), c.collation());
                if lease.query_drop(&exact).await.is_err() {
                    // MariaDB lacks some MySQL 8 collations (utf8mb4_0900_ai_ci): keep the charset.
                    lease
                        .query_drop(&format!("SET NAMES '{}'", c.charset()))
                        .await
                        .map_err(lost)?;
                }
            }
            lease.collation = self.collation;
        }
        Ok(())
    }

    /// A client's new login (COM_CHANGE_USER) on a connection it keeps: a connection of the
    /// client's own account logs in again, so the backend judges the account as it is now (as
    /// MariaDB judges a COM_CHANGE_USER); any other is reset. Then the session's collation and
    /// database.
    pub async fn log_in_again(&self, lease: &mut Lease) -> Result<(), SqlError> {
        if !lease.pool().reauthenticates() {
            return self.reset(lease).await;
        }
        match lease.change_user_no_db().await {
            Ok(()) => self.prepare(lease).await,
            Err(BackendError::Server { code, message }) => {
                Err(super::pool::login_refused(code, message))
            }
            Err(e) => Err(lost(e)),
        }
    }

    /// COM_RESET_CONNECTION on one held connection, then the session's collation and database.
    pub async fn reset(&self, lease: &mut Lease) -> Result<(), SqlError> {
        match lease
            .simple_command(&[Command::COM_RESET_CONNECTION as u8])
            .await
        {
            Ok(packets::OK_HEADER) => {
                lease.collation = POOL_COLLATION;
                self.prepare(lease).await
            }
            Ok(_) => {
                let (code, state, msg) = packets::parse_err(&lease.packet);
                Err(SqlError::new(code, &state, String::from_utf8_lossy(msg)))
            }
            Err(e) => {
                lease.broken = true;
                Err(lost(e))
            }
        }
    }
}
