//! Writes idgate makes on several backends, answered as one statement: a statement split over
//! backends (`exec::primitives::sharded_write`), and the one OK of rows idgate wrote itself
//! (LOAD DATA LOCAL, INSERT … SELECT, writes with unique-key lookups).

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::collect::Collected;
use crate::exec::primitives::bulk_write::BulkOk;
use crate::exec::primitives::key_owner_answer;
use crate::exec::primitives::sharded_write::{self, Answering, Outcome};
use crate::exec::relay::Adjust;
use crate::route::InsertPlan;
use crate::session::End;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs a statement split over several backends (`what` names it in a failed COMMIT's
    /// message). `Ok(Some(false))`: the client got an error. `if_matched`: an UPDATE or DELETE
    /// on the one shard a lookup named, answered only when it matched a row (`Ok(None)`: it
    /// matched none, changed nothing, and the client was told nothing).
    pub(super) async fn run_on_shards(
        &mut self,
        plan: &InsertPlan,
        adj: Adjust,
        (what, if_matched): (&str, bool),
    ) -> Result<Option<bool>, End> {
        let Some(answers) = self.write_parts(plan, what).await? else {
            return Ok(Some(false));
        };
        if if_matched {
            if let [Collected::Ok(ok)] = answers.as_slice() {
                if key_owner_answer::matched(ok) == 0 {
                    return Ok(None);
                }
            }
        }
        self.answer_parts(plan, adj, &answers);
        Ok(Some(true))
    }

    /// Writes a statement split over several backends, all-or-nothing: each part's answer, or
    /// `None` when the client got an error.
    pub(super) async fn write_parts(
        &mut self,
        plan: &InsertPlan,
        what: &str,
    ) -> Result<Option<Vec<Collected>>, End> {
        let parts: Vec<(&str, &[u8])> = plan
            .parts
            .iter()
            .map(|(b, sql, _)| (b.as_str(), sql.as_slice()))
            .collect();
        Ok(match sharded_write::write(self, &parts, what).await? {
            Outcome::Written(answers) => Some(answers),
            Outcome::Failed(e) => {
                self.session.writer.write(&e);
                None
            }
            Outcome::Refused(e) => {
                self.session.writer.send_error(&e);
                None
            }
        })
    }

    /// The one answer of a statement whose parts answered `answers`.
    pub(super) fn answer_parts(&mut self, plan: &InsertPlan, adj: Adjust, answers: &[Collected]) {
        // A write inside the client's transaction (BEGIN or autocommit=0) leaves it open, as
        // MariaDB reports; Connector/J skips ROLLBACK when the flag says no transaction.
        if self.session.in_transaction() {
            self.session.status |= StatusFlags::SERVER_STATUS_IN_TRANS.bits();
        }
        let how = Answering {
            rows_of_parts: plan
                .parts
                .iter()
                .map(|(_, _, rows)| rows.as_slice())
                .collect(),
            broadcast: plan.broadcast,
            insert_id: adj.insert_id.unwrap_or(0),
            insert_id_needs_rows: adj.insert_id.is_some() && adj.insert_id_needs_rows,
            status: self.session.status_with(adj.more_results),
            deprecate_eof: self.session.hello.deprecate_eof(),
            insert: plan.kind,
        };
        sharded_write::answer(&mut self.session.writer, &how, answers);
    }

    /// Sends the statement's one OK; a generated first id becomes the session's
    /// LAST_INSERT_ID(), as after an AUTO_INCREMENT insert.
    pub(super) fn answer_bulk(&mut self, ok: &BulkOk, first_generated: Option<u64>, more: bool) {
        if let Some(id) = first_generated {
            // Set on the default backend before its next statement, which resets its
            // ROW_COUNT(): asking for it is refused.
            self.session.last_insert_id = Some(id);
            self.session.lid_sync = Some(id);
            self.session.counts_elsewhere = true;
        }
        if self.session.in_transaction() {
            self.session.status |= StatusFlags::SERVER_STATUS_IN_TRANS.bits();
        }
        let status = self.session.status_with(more);
        self.session
            .writer
            .send_ok_with(ok.affected, ok.insert_id, status, ok.warnings, &ok.info);
    }
}
