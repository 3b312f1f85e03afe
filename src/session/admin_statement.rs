//! Sends the answer to one of idgate's admin statements (`SHOW IDGATE …`, `IDGATE RELOAD`).

use mysql_common::constants::ColumnType;
use tokio::io::{AsyncRead, AsyncWrite};

use super::observe::Observed;
use super::query::Step;
use super::{End, Session};
use crate::admin::statements::{self, Answer};
use crate::sql::AdminStatement;
use crate::wire::errors::SqlError;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Answers `stmt`, which the client wrote as `text`.
    pub(super) async fn admin_statement(
        &mut self,
        stmt: AdminStatement,
        text: &[u8],
        more: bool,
        obs: &mut Observed,
    ) -> Step {
        // idgate answered: the default backend's row counts are not this statement's.
        self.counts_elsewhere = true;
        match stmt {
            // `KILL [QUERY] id` with idgate's session ids.
            AdminStatement::Kill { id, query } => {
                if id == u64::from(self.registered.id()) && !query {
                    // As MariaDB: a session that kills itself is told so, and its connection
                    // closes.
                    self.writer.send_error(&SqlError::new(
                        ER_CONNECTION_KILLED,
                        b"70100",
                        "Connection was killed",
                    ));
                    return Step::End(End::Fatal("killed itself".into()));
                }
                return match crate::admin::kill::kill(&self.proxy, &self.hello.user, id, query)
                    .await
                {
                    Ok(()) => self.ok_step(more).unwrap_or(Step::Ok),
                    Err(e) => {
                        self.writer.send_error(&e);
                        Step::Failed
                    }
                };
            }
            // `KILL [QUERY] USER name`: the count of sessions killed as affected rows; a
            // session that named its own user ends after that answer, as on MariaDB.
            AdminStatement::KillUser { user, query } => {
                let me = self.registered.id();
                return match crate::admin::kill::kill_user(
                    &self.proxy,
                    &self.hello.user,
                    me,
                    &user,
                    query,
                )
                .await
                {
                    Ok((killed, itself)) => {
                        let status = self.status_with(more);
                        self.writer.send_ok(killed, 0, status);
                        if itself && !query {
                            return Step::End(End::Fatal("killed itself".into()));
                        }
                        Step::Ok
                    }
                    Err(e) => {
                        self.writer.send_error(&e);
                        Step::Failed
                    }
                };
            }
            AdminStatement::KillQueryId { query_id } => {
                let killed =
                    crate::admin::kill::kill_query_id(&self.proxy, &self.hello.user, query_id)
                        .await;
                return match killed {
                    Ok(()) => self.ok_step(more).unwrap_or(Step::Ok),
                    Err(e) => {
                        self.writer.send_error(&e);
                        Step::Failed
                    }
                };
            }
            AdminStatement::ProcessListQuery { tables } => {
                return self.processlist_query(text, &tables, more, obs).await;
            }
            AdminStatement::ConnectionId { column } => {
                // idgate's id of this session, in the column MariaDB describes (INT UNSIGNED,
                // 10 wide).
                let status = self.status_with(more);
                let id = u64::from(self.registered.id());
                let deprecate_eof = self.hello.deprecate_eof();
                let ty = (ColumnType::MYSQL_TYPE_LONG, 10);
                self.writer
                    .send_unsigned(&column, id, ty, status, deprecate_eof);
                return Step::Ok;
            }
            AdminStatement::KillUnsupported(form) => {
                self.writer
                    .send_error(&crate::admin::kill::unsupported(form));
                return Step::Failed;
            }
            _ => {}
        }
        let answer = match stmt {
            // The current database names an unqualified table.
            AdminStatement::Migrate(m) if statements::is_admin(&self.proxy, &self.hello.user) => {
                let db = self.db.as_deref().map(String::from_utf8_lossy);
                crate::migrate::answer(&self.control.migrations, db.as_deref(), m).await
            }
            AdminStatement::ProcessList { full } => {
                let caller = crate::admin::processlist::Caller {
                    user: &self.hello.user,
                    session: self.registered.id(),
                    statement: text,
                    collation: u16::from(self.hello.collation),
                };
                Answer::Rows(crate::admin::processlist::answer(&self.proxy, caller, full).await)
            }
            stmt => {
                statements::answer(&self.control, &self.hello.user, &self.peer_host, stmt).await
            }
        };
        let status = self.status_with(more);
        match answer {
            Answer::Rows(rs) => {
                let deprecate_eof = self.hello.deprecate_eof();
                self.writer.send_result_set(
                    &rs.columns,
                    rs.rows.iter().map(Vec::as_slice),
                    0,
                    status,
                    deprecate_eof,
                );
                Step::Ok
            }
            Answer::Ok(info) => {
                self.writer.send_ok_with(0, 0, status, 0, info.as_bytes());
                Step::Ok
            }
            Answer::Err(e) => {
                self.writer.send_error(&e);
                Step::Failed
            }
        }
    }
    /// A SELECT reading `information_schema.PROCESSLIST`: run on the default backend with
    /// idgate's sessions in the table's place (`admin::processlist_table`).
    async fn processlist_query(
        &mut self,
        text: &[u8],
        tables: &[std::ops::Range<usize>],
        more: bool,
        obs: &mut Observed,
    ) -> Step {
        let caller = crate::admin::processlist::Caller {
            user: &self.hello.user,
            session: self.registered.id(),
            statement: text,
            collation: u16::from(self.hello.collation),
        };
        let rewritten =
            match crate::admin::processlist_table::rewrite(&self.proxy, caller, text, tables).await
            {
                Ok(sql) => sql,
                Err(e) => {
                    self.writer
                        .send_error(&SqlError::new(e.code, e.state, e.message));
                    return Step::Failed;
                }
            };
        let adj = crate::exec::relay::Adjust {
            more_results: more,
            ..Default::default()
        };
        let packet = crate::wire::command::query_packet(&rewritten);
        let scope = self.statement_scope(&rewritten, crate::sql::StatementKind::Select);
        let reply = crate::exec::relay::Reply::Results;
        match self
            .forward_with(&packet, reply, None, adj, scope, obs)
            .await
        {
            Ok(true) => Step::Ok,
            Ok(false) => Step::Failed,
            Err(end) => Step::End(end),
        }
    }
}

/// MariaDB's ER_CONNECTION_KILLED.
const ER_CONNECTION_KILLED: u16 = 1927;
