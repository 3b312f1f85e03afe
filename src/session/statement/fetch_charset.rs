//! An internal SELECT reads its answer with `character_set_results = NULL`: values come in
//! their columns' own character sets and each column definition names its real collation.
//! With a results character set, MariaDB converts every text column and reports that set's
//! default collation instead, so a literal table built from the rows would compare and sort
//! a `utf8mb4_bin` column as `utf8mb4_general_ci`. The session's own setting is put back right
//! after the SELECT, in the same pipelined write.

use crate::exec::collect::{collect, Collected};
use crate::exec::{BackendConn, BackendError};
use crate::wire::errors::SqlError;
use crate::wire::packets;

/// Sent before the SELECT.
pub(super) const NATIVE_RESULTS: &[u8] =
    b"SET @idgate_results = @@session.character_set_results, @@session.character_set_results = NULL";
/// Sent after it: the session's setting again, and no variable left behind.
pub(super) const RESULTS_BACK: &[u8] =
    b"SET @@session.character_set_results = @idgate_results, @idgate_results = NULL";

/// Reads the answer to one of the SETs above. `Ok(Err(_))`: the backend refused it.
pub(super) async fn read_set(be: &mut BackendConn) -> Result<Result<(), SqlError>, BackendError> {
    match collect(be).await? {
        Collected::Ok(_) => Ok(Ok(())),
        Collected::Err(e) => {
            let (code, state, msg) = packets::parse_err(&e);
            Ok(Err(SqlError::new(
                code,
                &state,
                String::from_utf8_lossy(msg).into_owned(),
            )))
        }
        Collected::Rows { .. } => Err(BackendError::Protocol(
            "rows in answer to SET character_set_results".into(),
        )),
    }
}
