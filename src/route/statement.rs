//! What to do with one statement: relay it, answer it in idgate, route it over placed tables
//! (one backend, a scatter with a merge, a write on several shards, DDL everywhere), insert
//! with ids, load a file, run its subqueries or its join in the gateway, or refuse it with a
//! clear error. A pure function of the statement and a [`StatementContext`]: the session runs
//! the [`Plan`] it gets and never decides a route itself.

use std::ops::Range;
use std::sync::Arc;

use super::cache::PlanCache;
use super::plan::{PlanContext, Route};
use super::statement_gateway::{insert_subqueries, join_plan, subquery_plan};
use super::statement_load::{plan_load_data, plan_other, refuse_bypass};
use super::statement_meta::route_metadata;
use super::TableRule;
use crate::config::User;
use crate::sql::{self, InsertAnalysis, SessionQuery, StatementKind};
use crate::wire::errors::{self, SqlError};

/// What to do with one statement.
#[derive(Debug)]
pub enum Plan {
    /// Send it to the default backend as it is (its kind, for the bookkeeping after it).
    Forward(StatementKind),
    Insert(Box<(InsertAnalysis, Arc<TableRule>)>),
    /// An UPDATE assigning a column of a unique key held through a lookup (`unique: global`):
    /// idgate claims the new value before the shards change the row.
    KeyUpdate(Box<(sql::UpdateParts, Arc<TableRule>)>),
    /// `LOAD DATA LOCAL INFILE` into a table idgate places or fills ids for.
    LoadData(Box<(sql::LoadData, Arc<TableRule>)>),
    NextValues {
        generator: String,
        count: u64,
        column: String,
    },
    /// A statement about placed tables, with its kind.
    Routed(Route, StatementKind),
    /// A SELECT, UPDATE or DELETE whose subqueries over placed tables run first.
    Subqueries(Vec<sql::Subquery>),
    /// A join of tables not placed alike, run in the gateway.
    Join(Box<super::JoinShape>),
    /// A statement the shards cannot answer alone, run as this one instead: a SELECT computing
    /// on aggregates across shards (its aggregates in a derived table idgate merges,
    /// `route::lift_aggregates`), or an UPDATE/DELETE with ORDER BY/LIMIT writing the rows an
    /// ordered SELECT of their ids picks (`route::ordered_write`). If that is not one idgate can
    /// run, the refusal.
    Lifted {
        sql: String,
        refusal: SqlError,
        /// The id column the rewrite picks rows by, which must be a unique key by itself.
        unique_id: Option<UniqueId>,
    },
    /// `SHOW TABLES`-like: the default backend's list plus tables placed elsewhere.
    ListTables {
        backends: Vec<String>,
        names: Vec<String>,
    },
    /// `CREATE`/`DROP`/`ALTER DATABASE`: on every backend, the default one (first) answering.
    Database {
        ddl: sql::DatabaseDdl,
        backends: Vec<String>,
    },
    /// `EXPLAIN ROUTE …`: the byte range of the explained statement.
    ExplainRoute(Range<usize>),
    Refuse(SqlError),
    /// `SHOW IDGATE …` / `IDGATE RELOAD`: answered by idgate.
    Admin(sql::AdminStatement),
}

impl Plan {
    /// The statement's kind, when planning already read it.
    pub fn kind(&self) -> Option<StatementKind> {
        match self {
            Plan::Forward(k) | Plan::Routed(_, k) => Some(*k),
            Plan::Insert(boxed) if boxed.0.replace => Some(StatementKind::Replace),
            Plan::Insert(_) => Some(StatementKind::Insert),
            Plan::NextValues { .. } | Plan::Join(_) | Plan::Lifted { .. } => {
                Some(StatementKind::Select)
            }
            Plan::ListTables { .. } => Some(StatementKind::Show),
            Plan::Database { .. } => Some(StatementKind::Ddl),
            Plan::KeyUpdate(_) => Some(StatementKind::Update),
            _ => None,
        }
    }
}

/// Who is asking, for the rights idgate checks itself (NEXTVAL on a generator).
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    pub user: &'a User,
    pub host: &'a str,
}

/// What planning a statement needs from the session and the configuration.
#[derive(Clone, Copy)]
pub struct StatementContext<'a> {
    /// The current database and the tables' placement.
    pub tables: PlanContext<'a>,
    /// Plans kept by statement shape, and the configuration generation they belong to.
    pub plans: &'a PlanCache,
    pub generation: u64,
    pub default_backend: &'a str,
    /// Every backend, the default one first.
    pub backends: &'a [String],
    /// Any generator is configured (`NEXTVAL` may name one).
    pub generators: bool,
    /// The client announced CLIENT_LOCAL_FILES.
    pub local_files: bool,
    /// `None`: the user is no longer configured (a reload removed it); nothing is denied here.
    pub caller: Option<Caller<'a>>,
}

impl StatementContext<'_> {
    /// The plan kept for `stmt`'s shape, bound to its literals. `Ok(None)`: forward it.
    pub fn route(&self, stmt: &[u8]) -> Result<Option<Route>, SqlError> {
        self.plans.route(stmt, &self.tables, self.generation, false)
    }

    /// [`StatementContext::route`] for the client's own statement: a lookup may pick its shard.
    pub fn route_by_key(&self, stmt: &[u8]) -> Result<Option<Route>, SqlError> {
        self.plans.route(stmt, &self.tables, self.generation, true)
    }

    /// MariaDB's refusal of NEXTVAL on a sequence the user may not write, for a generator the
    /// user's `generators` list leaves out.
    fn generator_denied(&self, generator: &str) -> Option<SqlError> {
        let c = self.caller?;
        if c.user.may_call(generator) {
            return None;
        }
        Some(SqlError::new(
            errors::ER_TABLEACCESS_DENIED_ERROR,
            b"42000",
            format!(
                "INSERT command denied to user '{}'@'{}' for generator `{generator}`; \
                 list it in the user's `generators` in idgate's configuration",
                c.user.name, c.host
            ),
        ))
    }
}

/// Decides what to do with one statement; cheap unless it names a configured table.
pub fn plan(stmt: &[u8], ctx: &StatementContext) -> Plan {
    if let Some(a) = sql::admin_statement(stmt) {
        // A SELECT that may read a configured table is routed as before: its
        // `@@pseudo_thread_id` stays the backend connection's (docs: differences).
        let routed = matches!(a, sql::AdminStatement::PseudoThreadId)
            && ctx.tables.tables.mentioned_in(stmt);
        if !routed {
            return Plan::Admin(a);
        }
    }
    if let Some(inner) = sql::explain_route_target(stmt) {
        let start = inner.as_ptr() as usize - stmt.as_ptr() as usize;
        return Plan::ExplainRoute(start..start + inner.len());
    }
    let tables = ctx.tables.tables;
    let kind = sql::classify(stmt);
    if kind == StatementKind::Select && ctx.generators {
        if let Some(SessionQuery::NextValues {
            generator,
            count,
            column,
            ..
        }) = sql::session_query(stmt)
        {
            if let Some(e) = ctx.generator_denied(&generator) {
                return Plan::Refuse(e);
            }
            return Plan::NextValues {
                generator,
                count,
                column,
            };
        }
    }
    if kind == StatementKind::Ddl && ctx.backends.len() > 1 {
        // A database lives on every backend: the shards must have it for their tables.
        if let Some(ddl) = sql::database_ddl(stmt) {
            return Plan::Database {
                ddl,
                backends: ctx.backends.to_vec(),
            };
        }
    }
    match kind {
        StatementKind::Insert | StatementKind::Replace if tables.mentioned_in(stmt) => {
            let a = match sql::analyze_insert(stmt) {
                Ok(a) => a,
                Err(e) => return Plan::Refuse(e.into()),
            };
            let schema = a.table.schema.as_deref().or(ctx.tables.db);
            if let Some(subs) = insert_subqueries(stmt, &a, &ctx.tables) {
                return Plan::Subqueries(subs);
            }
            match tables.lookup_shared(schema, &a.table.name) {
                Some(rule) => {
                    let rule = rule.clone();
                    Plan::Insert(Box::new((a, rule)))
                }
                None => match reads_placed_tables(stmt, &a, ctx) {
                    Some(rule) => Plan::Insert(Box::new((a, rule))),
                    None => Plan::Forward(kind),
                },
            }
        }
        StatementKind::Select
        | StatementKind::Update
        | StatementKind::Delete
        | StatementKind::Ddl
            if tables.placed_mentioned_in(stmt) =>
        {
            if kind == StatementKind::Update && tables.has_global_unique() {
                if let Some(plan) = key_update(stmt, ctx) {
                    return plan;
                }
            }
            match ctx.route_by_key(stmt) {
                Ok(Some(route)) => Plan::Routed(route, kind),
                Ok(None) => Plan::Forward(kind),
                Err(e) => subquery_plan(stmt, &ctx.tables)
                    .or_else(|| join_plan(stmt, &e, &ctx.tables))
                    .or_else(|| lifted(stmt, kind, &e, &ctx.tables))
                    .unwrap_or(Plan::Refuse(e)),
            }
        }
        StatementKind::Other if tables.mentioned_in(stmt) => {
            if let Some(plan) = plan_load_data(stmt, ctx) {
                return plan;
            }
            match refuse_bypass(stmt, tables) {
                Some(e) => Plan::Refuse(e),
                None => plan_other(stmt, ctx.local_files),
            }
        }
        StatementKind::Other => plan_other(stmt, ctx.local_files),
        StatementKind::Show | StatementKind::Explain | StatementKind::Select => {
            route_metadata(stmt, kind, ctx).unwrap_or(Plan::Forward(kind))
        }
        _ => Plan::Forward(kind),
    }
}

/// The refusal a statement gets whatever its parameters, given at COM_STMT_PREPARE instead of
/// preparing it on the default backend (which may hold none of the tables it reads): a
/// recursive common table expression over a sharded table.
pub fn refused_when_prepared(stmt: &[u8], ctx: &PlanContext) -> Option<SqlError> {
    if !ctx.tables.placed_mentioned_in(stmt) || sql::classify(stmt) != StatementKind::Select {
        return None;
    }
    let a = sql::analyze_dml(stmt).ok()?;
    super::colocate::check_recursive_reads(ctx, &a).err()
}

/// A column that must be a unique key of its table by itself, checked on one of its shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueId {
    pub backend: String,
    /// `None`: the session's database.
    pub schema: Option<String>,
    pub table: String,
    pub column: String,
}

/// A SELECT refused for computing on aggregates across shards, lifted into one over a derived
/// table of those aggregates; an UPDATE/DELETE refused for its ORDER BY/LIMIT across shards,
/// rewritten to write the rows an ordered SELECT of their ids picks.
fn lifted(stmt: &[u8], kind: StatementKind, refusal: &SqlError, ctx: &PlanContext) -> Option<Plan> {
    match kind {
        StatementKind::Select => lift(stmt, refusal).map(|sql| Plan::Lifted {
            sql,
            refusal: refusal.clone(),
            unique_id: None,
        }),
        StatementKind::Update | StatementKind::Delete => ordered_write(stmt, kind, refusal, ctx),
        _ => None,
    }
}

/// An UPDATE/DELETE of a sharded table refused for needing its ORDER BY/LIMIT across shards.
fn ordered_write(
    stmt: &[u8],
    kind: StatementKind,
    refusal: &SqlError,
    ctx: &PlanContext,
) -> Option<Plan> {
    if !refusal.message.contains(ORDERED_WRITE_REFUSED) {
        return None;
    }
    let a = sql::analyze_dml(stmt).ok()?;
    // A multi-table UPDATE's LIMIT counts joined rows: no SELECT of one table's ids picks them.
    if a.multi_table {
        return None;
    }
    let target = a.target?;
    let schema = target.schema.as_deref().or(ctx.db);
    let rule = ctx.tables.lookup(schema, &target.name)?;
    let w = super::ordered_write(stmt, &rule.id_column)?;
    let first = rule.backends().first()?.clone();
    if w.limit_zero {
        // Writes nothing: one shard checks the statement and answers as one server.
        return Some(Plan::Routed(Route::One(first), kind));
    }
    let refusal = SqlError::new(
        refusal.code,
        &refusal.state,
        format!(
            "{} (idgate picks the rows across shards itself when the table's id column `{}` is a \
             unique key by itself)",
            refusal.message, rule.id_column
        ),
    );
    Some(Plan::Lifted {
        sql: w.sql,
        refusal,
        unique_id: Some(UniqueId {
            backend: first,
            schema: target.schema.clone(),
            table: target.name.clone(),
            column: rule.id_column.clone(),
        }),
    })
}

/// What the planner's refusal of an UPDATE/DELETE with ORDER BY/LIMIT over shards says.
pub const ORDERED_WRITE_REFUSED: &str = "needs ORDER BY/LIMIT across them";

/// The statement a SELECT whose answers from several shards idgate could not merge (the
/// `refusal`) is run as, when its items compute on aggregates (`route::lift_aggregates`).
pub fn lift(stmt: &[u8], refusal: &SqlError) -> Option<String> {
    if !refusal.message.contains(super::MERGE_REFUSED) {
        return None;
    }
    super::lift_aggregates(stmt).or_else(|| super::lift_windows(stmt))
}

/// An UPDATE of one table that assigns literals to columns of its keys held through lookups
/// (and no sharding column): planned as a [`Plan::KeyUpdate`]. Other UPDATEs of such columns
/// are refused by the planner.
fn key_update(stmt: &[u8], ctx: &StatementContext) -> Option<Plan> {
    // Only the table itself: a subquery over other tables needs the planner's steps.
    let a = sql::analyze_dml(stmt).ok()?;
    let [target] = a.relations.as_slice() else {
        return None;
    };
    let tables = ctx.tables.tables;
    let rule = tables.lookup_shared(target.schema.as_deref().or(ctx.tables.db), &target.name)?;
    let key_columns = tables.global_key_columns(rule);
    let is_key = |c: &str| key_columns.iter().any(|k| k.eq_ignore_ascii_case(c));
    if !a.assigned.iter().any(|c| is_key(c)) {
        return None;
    }
    // Only now the values: most UPDATEs of such a table change other columns.
    let parts = sql::update_parts(stmt)?;
    let super::Placement::Sharded { columns, .. } = &rule.placement else {
        return None;
    };
    let literal = |a: &sql::Assigned| {
        matches!(
            a.kind,
            sql::ValueKind::Int(_) | sql::ValueKind::Str(_) | sql::ValueKind::Null
        )
    };
    for a in &parts.assigned {
        let moves = columns.iter().any(|c| c.eq_ignore_ascii_case(&a.column))
            || a.column.eq_ignore_ascii_case(&rule.id_column);
        if moves || (is_key(&a.column) && !literal(a)) {
            return None;
        }
    }
    Some(Plan::KeyUpdate(Box::new((parts, rule.clone()))))
}

/// For an `INSERT … SELECT` into a table on the default backend (not configured, so no ids to
/// fill) whose SELECT reads sharded or broadcast tables: a rule placing the target there, so
/// idgate reads the SELECT through its routing and writes the rows, as it does for configured
/// targets. Forwarded, the default backend would read only its own part of a sharded table.
pub(super) fn reads_placed_tables(
    stmt: &[u8],
    a: &InsertAnalysis,
    ctx: &StatementContext,
) -> Option<Arc<TableRule>> {
    let sql::InsertBody::Select { query } = &a.body else {
        return None;
    };
    let source = stmt.get(query.clone())?;
    if !ctx.tables.tables.placed_mentioned_in(source) {
        return None;
    }
    Some(Arc::new(TableRule {
        schema: a.table.schema.clone(),
        name: a.table.name.clone(),
        // No generator: every row keeps the values the SELECT gives it.
        id_column: String::new(),
        generator: None,
        explicit_ids: Default::default(),
        bias_column: None,
        unique: None,
        placement: super::Placement::Single {
            backend: ctx.default_backend.to_string(),
        },
    }))
}
