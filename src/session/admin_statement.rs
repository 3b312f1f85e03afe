//! Sends the answer to one of idgate's admin statements (`SHOW IDGATE …`, `IDGATE RELOAD`).

use tokio::io::{AsyncRead, AsyncWrite};

use super::query::Step;
use super::Session;
use crate::admin::statements::{self, Answer};
use crate::sql::AdminStatement;
use crate::wire::packets;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    pub(super) async fn admin_statement(&mut self, stmt: AdminStatement, more: bool) -> Step {
        // idgate answered: the default backend's row counts are not this statement's.
        self.counts_elsewhere = true;
        let answer = statements::answer(&self.proxy, &self.hello.user, &self.peer_host, stmt).await;
        let status = self.status_with(more);
        match answer {
            Answer::Rows(rs) => {
                self.send_result_set(&rs.columns, rs.rows.iter().map(Vec::as_slice), 0, status);
                Step::Ok
            }
            Answer::Ok(info) => {
                let start = self.writer.begin();
                packets::ok(
                    self.writer.payload(),
                    packets::OK_HEADER,
                    0,
                    0,
                    status,
                    0,
                    info.as_bytes(),
                );
                self.writer.end(start);
                Step::Ok
            }
            Answer::Err(e) => {
                self.send_error(&e);
                Step::Failed
            }
        }
    }
}
