//! SAVEPOINTs of the client's transaction: run on every participant, and remembered for
//! connections that join later.

use super::SessionConns;
use crate::exec::BackendError;
use crate::sql::SavepointAction;

#[derive(Debug, thiserror::Error)]
pub enum SavepointError {
    /// A participant refused the statement.
    #[error("{message} (on backend `{backend}`)")]
    Refused {
        backend: String,
        code: u16,
        message: String,
    },
    #[error(transparent)]
    Backend(BackendError),
}

impl SessionConns {
    /// Runs SAVEPOINT / RELEASE SAVEPOINT / ROLLBACK TO `stmt` on every participant other than
    /// the default backend's connection (whose answer is the client's), stopping at the first
    /// failure.
    pub async fn savepoint_on_others(
        &mut self,
        stmt: &[u8],
        default: &str,
    ) -> Result<(), SavepointError> {
        for h in self
            .held
            .iter_mut()
            .filter(|h| h.in_txn && h.backend != default)
        {
            match h.lease.query_drop_bytes(stmt).await {
                Ok(()) => {}
                Err(BackendError::Server { code, message }) => {
                    return Err(SavepointError::Refused {
                        backend: h.backend.clone(),
                        code,
                        message,
                    })
                }
                Err(e) => return Err(SavepointError::Backend(e)),
            }
        }
        Ok(())
    }

    /// Keeps the savepoint list in step with a savepoint statement that succeeded.
    pub fn note_savepoint(&mut self, action: SavepointAction, name: Vec<u8>) {
        let list = &mut self.txn.savepoints;
        // Savepoint names compare as MariaDB compares them: case-insensitively.
        let pos = list.iter().position(|s| s.eq_ignore_ascii_case(&name));
        match action {
            SavepointAction::Set => {
                if let Some(k) = pos {
                    list.remove(k);
                }
                list.push(name);
            }
            // RELEASE drops the savepoint and later ones; ROLLBACK TO keeps it, drops later ones.
            SavepointAction::Release => list.truncate(pos.unwrap_or(list.len())),
            SavepointAction::RollbackTo => list.truncate(pos.map_or(list.len(), |k| k + 1)),
        }
    }
}
