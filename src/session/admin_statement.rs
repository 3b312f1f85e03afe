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
    /// `KILL [QUERY] id` with idgate's session ids.
    async fn kill(&mut self, id: u64, query: bool, more: bool) -> Step {
        if id == u64::from(self.registered.id()) && !query {
            // As MariaDB: a session that kills itself is told so, and its connection closes.
            self.writer.send_error(&SqlError::new(
                ER_CONNECTION_KILLED,
                b"70100",
                "Connection was killed",
            ));
            return Step::End(End::Fatal("killed itself".into()));
        }
        match crate::admin::kill::kill(&self.proxy, &self.hello.user, id, query).await {
            Ok(()) => self.ok_step(more).unwrap_or(Step::Ok),
            Err(e) => {
                self.writer.send_error(&e);
                Step::Failed
            }
        }
    }

    /// The id a `KILL expr` names: the expression as MariaDB takes it (its integer value), run on
    /// the session's default connection, so its user variables, sequences and rights are the
    /// session's, with the session's own id for `CONNECTION_ID()` and `@@pseudo_thread_id`.
    async fn kill_target(&mut self, expr: &[u8]) -> Result<u64, SqlError> {
        self.kill_reads_values_only(expr).await?;
        let set_own = self.sets_pseudo_thread_id();
        let expr = crate::sql::with_session_id(expr, self.registered.id(), set_own);
        let mut sql = b"SELECT CAST((\n".to_vec();
        sql.extend_from_slice(&expr);
        sql.extend_from_slice(b"\n) AS SIGNED)");
        let rows = self.backend().await?.query_rows(&sql).await;
        let rows = rows.map_err(|e| match e {
            // A call of no function there (no such stored one, or no database to hold it):
            // MariaDB takes it for a stored function and refuses it before looking.
            crate::exec::backend::BackendError::Server { code, .. }
                if code == ER_SP_DOES_NOT_EXIST || code == ER_NO_DB_ERROR =>
            {
                stored_function_refused()
            }
            crate::exec::backend::BackendError::Server { code, message } => {
                SqlError::new(code, b"HY000", message)
            }
            e => SqlError::new(
                crate::wire::errors::CR_SERVER_LOST,
                b"HY000",
                format!("idgate: {e}"),
            ),
        })?;
        let value = rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .flatten()
            .and_then(|v| String::from_utf8(v).ok())
            .and_then(|t| t.parse::<i64>().ok())
            .unwrap_or(0);
        // MariaDB takes the value as an unsigned thread id.
        Ok(value as u64)
    }

    /// MariaDB's refusal of a KILL expression that reads a table or calls a stored function
    /// (ER_SUBQUERIES_NOT_SUPPORTED); an unqualified call is a stored function when the current
    /// database has a function of that name.
    async fn kill_reads_values_only(&mut self, expr: &[u8]) -> Result<(), SqlError> {
        let refused = stored_function_refused;
        let calls = match crate::sql::expression_reach(expr) {
            crate::sql::ExpressionReach::Tables => return Err(refused()),
            crate::sql::ExpressionReach::Calls(c) if c.is_empty() || self.db.is_none() => {
                return Ok(())
            }
            crate::sql::ExpressionReach::Calls(c) => c,
        };
        let mut sql = b"SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = \
            'FUNCTION' AND ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME IN ("
            .to_vec();
        for (i, name) in calls.iter().enumerate() {
            if i > 0 {
                sql.push(b',');
            }
            // A hex literal: no quote in the name can break the statement.
            sql.extend_from_slice(b"CONVERT(X'");
            for b in name {
                sql.extend_from_slice(format!("{b:02x}").as_bytes());
            }
            sql.extend_from_slice(b"' USING utf8mb4)");
        }
        sql.push(b')');
        let rows = self.backend().await?.query_rows(&sql).await.map_err(|e| {
            SqlError::new(
                crate::wire::errors::CR_SERVER_LOST,
                b"HY000",
                format!("idgate: {e}"),
            )
        })?;
        let stored = rows
            .first()
            .and_then(|r| r.first())
            .and_then(|v| v.as_deref())
            .is_some_and(|v| v != b"0");
        if stored {
            return Err(refused());
        }
        Ok(())
    }

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
            AdminStatement::Kill { id, query } => return self.kill(id, query, more).await,
            AdminStatement::KillExpression { expr, query } => {
                return match self.kill_target(&text[expr]).await {
                    Ok(id) => self.kill(id, query, more).await,
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
            AdminStatement::PseudoThreadId => {
                // The client's own value once it set one: the backend reads which, on the
                // connection taken here, which runs the SELECT.
                let thread = match self.backend().await {
                    Ok(be) => be.connection_id,
                    Err(e) => {
                        self.writer.send_error(&e);
                        return Step::Failed;
                    }
                };
                let id = self.registered.id();
                let rewritten = crate::sql::with_session_pseudo_thread_id(text, id, thread);
                return self.forward_select(&rewritten, more, obs).await;
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
        self.forward_select(&rewritten, more, obs).await
    }

    /// Whether the session SET its own `pseudo_thread_id` (kept among the SETs it replays).
    fn sets_pseudo_thread_id(&self) -> bool {
        self.replay
            .iter()
            .any(|s| crate::sql::mentions(s, b"pseudo_thread_id"))
    }

    /// Runs `rewritten`, a SELECT idgate made from the client's, on the default backend.
    async fn forward_select(&mut self, rewritten: &[u8], more: bool, obs: &mut Observed) -> Step {
        let adj = crate::exec::relay::Adjust {
            more_results: more,
            ..Default::default()
        };
        let packet = crate::wire::command::query_packet(rewritten);
        let scope = self.statement_scope(rewritten, crate::sql::StatementKind::Select);
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

/// MariaDB's ER_SUBQUERIES_NOT_SUPPORTED.
const ER_SUBQUERIES_NOT_SUPPORTED: u16 = 1970;

/// MariaDB's ER_SP_DOES_NOT_EXIST and ER_NO_DB_ERROR.
const ER_SP_DOES_NOT_EXIST: u16 = 1305;
const ER_NO_DB_ERROR: u16 = 1046;

/// MariaDB's refusal of a KILL expression reading a table or calling a stored function.
fn stored_function_refused() -> SqlError {
    SqlError::new(
        ER_SUBQUERIES_NOT_SUPPORTED,
        b"42000",
        "KILL does not support subqueries or stored functions",
    )
}

/// MariaDB's ER_CONNECTION_KILLED.
const ER_CONNECTION_KILLED: u16 = 1927;
