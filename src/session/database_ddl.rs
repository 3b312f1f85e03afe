//! `CREATE`/`DROP`/`ALTER DATABASE` on every backend (`exec::primitives::database_ddl`), and
//! what it changes in the session: the current database, the status flags.

use tokio::io::{AsyncRead, AsyncWrite};

use super::query::Step;
use super::Session;
use crate::exec::primitives::database_ddl;
use crate::exec::StatementScope;
use crate::sql::{DatabaseDdl, DatabaseVerb};
use crate::wire::packets;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Runs the database statement on `backends` (the default one first).
    pub(super) async fn run_database_ddl(
        &mut self,
        packet: &[u8],
        ddl: &DatabaseDdl,
        backends: &[String],
        more: bool,
        scope: StatementScope,
    ) -> Step {
        match database_ddl::run(&mut self.cursor(scope), packet, ddl, backends).await {
            Ok(Ok(ok)) => {
                if let Some(name) = ddl.name.as_deref() {
                    // As on MariaDB, dropping the current database leaves none selected.
                    if ddl.verb == DatabaseVerb::Drop && self.db.as_deref() == Some(name) {
                        self.db = None;
                    }
                }
                self.proxy.metadata.clear();
                if !self.xa_mode() && ok.status != 0 {
                    self.status = ok.status;
                }
                let status = self.status_with(more);
                let start = self.writer.begin();
                packets::ok(
                    self.writer.payload(),
                    packets::OK_HEADER,
                    ok.affected_rows,
                    ok.last_insert_id,
                    status,
                    ok.warnings,
                    b"",
                );
                self.writer.end(start);
                Step::Ok
            }
            Ok(Err(e)) => {
                self.writer.send_error(&e);
                Step::Failed
            }
            Err(end) => Step::End(end),
        }
    }
}
