//! Which prepared statements idgate executes itself (`statement/prepared_execute.rs` runs
//! them). The backend prepared each as written (so the client got genuine metadata); each
//! execution decodes the parameters and:
//! - INSERT into a generated table, UPDATE/DELETE on a placed table: binds them into the text and
//!   runs it through the same rewrite and routing as a text statement (the answer is an OK
//!   packet, the same in both protocols);
//! - SELECT on a placed table: routes by the bound values, then executes a prepared statement on
//!   each shard reached, so rows come back in the binary protocol;
//! - SELECT with subqueries over sharded tables: binds them into the text, runs the inner
//!   queries first as a text query would, and writes the outer statement's rows in the binary
//!   protocol (`statement/subquery.rs`);
//! - SELECT joining tables not placed alike: binds them into the text, runs the join in the
//!   gateway as a text query would, and writes the final statement's rows in the binary
//!   protocol (`statement/join.rs`).

use tokio::io::{AsyncRead, AsyncWrite};

use super::prepared::{Emulated, EmulatedKind};
use super::Session;
use crate::route::{self};
use crate::sql::{self, StatementKind};
use crate::wire::stmt_execute::BoundState;

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// A relayed statement is looked at again when tables were placed otherwise since its
    /// prepare (a table moved by IDGATE MIGRATE): when it now concerns a configured table,
    /// idgate runs it itself from now on, where the table is. True when it does.
    pub(super) fn follow_new_placements(&mut self, id: u32) -> bool {
        let now = self.proxy.tables_generation();
        let Some(st) = self.stmts.get_mut(id) else {
            return false;
        };
        if st.generation == now {
            return false;
        }
        st.generation = now;
        let Some(text) = st.relayed_text.clone() else {
            return false;
        };
        self.mark_emulated(id, &text);
        let emulated = self.stmts.get(id).is_some_and(|s| s.emulated.is_some());
        if emulated {
            self.stmts.drop_relayed_text(id);
        }
        emulated
    }

    /// Marks statement `id` for idgate to execute when it concerns a configured table.
    pub(super) fn mark_emulated(&mut self, id: u32, stmt: &[u8]) {
        let about_connections = match sql::admin_statement(stmt) {
            Some(sql::AdminStatement::ConnectionId { .. }) => Some(EmulatedKind::ConnectionId),
            Some(sql::AdminStatement::ProcessList { .. }) => Some(EmulatedKind::ProcessList),
            _ => None,
        };
        if let Some(kind) = about_connections {
            if let Some(st) = self.stmts.get_mut(id) {
                st.emulated = Some(Box::new(Emulated {
                    kind,
                    prepared_on: Default::default(),
                    sql: stmt.to_vec(),
                    insert: None,
                    placeholders: Vec::new(),
                    returning: false,
                    select: None,
                    bound: BoundState::default(),
                }));
            }
            return;
        }
        // A database lives on every backend: its DDL runs through idgate's plan too.
        let database = self.proxy.backend_names.len() > 1 && sql::database_ddl(stmt).is_some();
        if !database && !self.proxy.tables.load().mentioned_in(stmt) {
            return;
        }
        let mut insert = None;
        let mut select = None;
        let (kind, placeholders, returning) = match sql::classify(stmt) {
            StatementKind::Insert | StatementKind::Replace => {
                let Ok(a) = sql::analyze_insert(stmt) else {
                    return;
                };
                let schema = a.table.schema.clone().or_else(|| {
                    self.db
                        .as_ref()
                        .map(|d| String::from_utf8_lossy(d).into_owned())
                });
                // Subqueries in its values run first through idgate: each execution binds its
                // parameters into the text and plans it as a text statement.
                let subqueries_first = self
                    .with_plan_context(|ctx| route::insert_subqueries(stmt, &a, ctx))
                    .is_some();
                // A SELECT over placed tables must be read through idgate whatever the target.
                let reads_placed = matches!(&a.body, sql::InsertBody::Select { query }
                    if stmt.get(query.clone())
                        .is_some_and(|q| self.proxy.tables.load().placed_mentioned_in(q)));
                if !reads_placed
                    && !subqueries_first
                    && self
                        .proxy
                        .tables
                        .load()
                        .lookup(schema.as_deref(), &a.table.name)
                        .is_none()
                {
                    return;
                }
                if subqueries_first {
                    (EmulatedKind::Write, a.placeholders.clone(), false)
                } else {
                    let r = (EmulatedKind::Insert, a.placeholders.clone(), a.returning);
                    insert = Some(Box::new(a));
                    r
                }
            }
            k @ (StatementKind::Select | StatementKind::Update | StatementKind::Delete)
                if self.proxy.tables.load().placed_mentioned_in(stmt) =>
            {
                // Only statements that routing would not simply leave on the default backend.
                let generation = self.proxy.plan_generation();
                let planned =
                    self.with_plan_context(|ctx| self.proxy.plans.plan_for(stmt, ctx, generation));
                if let Ok((plan, literals)) = &planned {
                    if matches!(plan.bind(stmt, literals, false), Ok(None)) {
                        return;
                    }
                }
                let kind = if k == StatementKind::Select {
                    select = planned.ok().and_then(|(plan, literals)| {
                        route::prepared::PreparedSelect::new(plan, literals, generation)
                            .map(Box::new)
                    });
                    EmulatedKind::Select
                } else {
                    EmulatedKind::Write
                };
                (kind, sql::placeholder_offsets(stmt), false)
            }
            // DDL the plan sends to several backends.
            StatementKind::Ddl
                if database || self.proxy.tables.load().placed_mentioned_in(stmt) =>
            {
                (EmulatedKind::Write, sql::placeholder_offsets(stmt), false)
            }
            _ => return,
        };
        if let Some(st) = self.stmts.get_mut(id) {
            st.emulated = Some(Box::new(Emulated {
                kind,
                prepared_on: Default::default(),
                sql: stmt.to_vec(),
                insert,
                placeholders,
                returning,
                select,
                bound: BoundState::default(),
            }));
        }
    }
}
