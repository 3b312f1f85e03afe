//! Where statements are measured: every COM_QUERY statement and every COM_STMT_EXECUTE is
//! counted once, by route and kind, with its latency (`admin::Metrics::statement`), and logged
//! when slower than `slow_statement_ms`. The planner's arms stay untouched: the route comes
//! from the plan (`route_of`) or, for an executed prepared statement idgate runs itself, from
//! the path it took (`Observed::took_route`).

use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};

use super::query::Step;
use super::{End, Session};
use crate::admin::slow_log::{self, SlowStatement};
use crate::exec::relay::Relayed;
use crate::exec::StatementScope;
use crate::metrics::statement_metrics::StmtRoute;
use crate::route::Plan;
use crate::route::Route;
use crate::sql::{self, StatementKind};
use crate::wire::command::StmtCommand;

/// What measuring one client command learns while it runs: made by the command's measurement
/// (`observed_query`, `observed_execute`) and handed down to what runs it.
#[derive(Debug, Default)]
pub(super) struct Observed {
    /// Statements of the current COM_QUERY already counted.
    counted: u32,
    /// Inside a COM_STMT_EXECUTE: the route its path took (counted once, by the execute).
    in_execute: bool,
    route: Option<StmtRoute>,
    /// Rows the backends returned or the statement changed, where idgate relays them.
    rows: u64,
}

impl Observed {
    /// For a COM_STMT_EXECUTE, counted once by its measurement whatever path it takes.
    pub(super) fn execute() -> Observed {
        Observed {
            in_execute: true,
            ..Observed::default()
        }
    }

    /// The route an executed prepared statement took inside idgate.
    pub(super) fn took_route(&mut self, route: StmtRoute) {
        self.route = Some(route);
    }

    /// Rows a relayed answer carried (or changed).
    pub(super) fn relayed(&mut self, r: &Relayed) {
        self.rows = r.rows + r.ok.map_or(0, |ok| ok.affected_rows);
    }

    /// Who ran the statement being observed, and its rows so far, for the statement's log.
    fn who<'a>(&self, user: &'a [u8], database: Option<&'a [u8]>) -> Who<'a> {
        Who {
            user,
            database,
            rows: self.rows,
        }
    }

    /// Rows read from the shards for a merge (also counted in `metrics`).
    pub(super) fn merged(&mut self, metrics: &crate::metrics::Metrics, rows: u64) {
        metrics.merged_rows.inc_by(rows);
        self.rows = rows;
    }
}

/// What the slow log shows of a statement prepared on the backend.
const ON_THE_BACKEND: &[u8] = b"(prepared statement; its text is on the backend)";

/// Who ran a statement, for the slow log.
struct Who<'a> {
    user: &'a [u8],
    database: Option<&'a [u8]>,
    rows: u64,
}

/// Counts a finished statement by route and kind, and logs it when slower than
/// `slow_statement_ms`.
fn measured(
    proxy: &crate::proxy::Proxy,
    who: Who<'_>,
    text: impl FnOnce() -> Vec<u8>,
    route: StmtRoute,
    kind: StatementKind,
    took: Duration,
) {
    proxy.metrics.statement(route, kind, took);
    let slow = proxy
        .config
        .slow_statement_ms
        .is_some_and(|ms| took >= Duration::from_millis(ms));
    if slow {
        slow_log::log(&SlowStatement {
            user: who.user,
            database: who.database,
            route,
            kind,
            took,
            rows: who.rows,
            text: &text(),
        });
    }
}

/// How a plan runs, for the `route` label.
fn route_of(plan: &Plan, kind: StatementKind) -> StmtRoute {
    match plan {
        Plan::Forward(
            StatementKind::Begin
            | StatementKind::Commit
            | StatementKind::Rollback
            | StatementKind::Savepoint,
        ) => StmtRoute::Transaction,
        Plan::Forward(_) => StmtRoute::Relayed,
        Plan::Insert(_) | Plan::LoadData(_) => StmtRoute::InsertIds,
        Plan::Routed(r, _) => dml_route(r),
        Plan::Database { .. } => StmtRoute::Scatter,
        // Inner queries run and combined by idgate before the outer one.
        Plan::Subqueries(_) | Plan::Join(_) | Plan::KeyUpdate(_) | Plan::Lifted { .. } => {
            StmtRoute::Merged
        }
        Plan::NextValues { .. }
        | Plan::ExplainRoute(_)
        | Plan::ListTables { .. }
        | Plan::Admin(_) => StmtRoute::Idgate,
        Plan::Refuse(_) if matches!(kind, StatementKind::Commit | StatementKind::Rollback) => {
            StmtRoute::Transaction
        }
        Plan::Refuse(_) => StmtRoute::Idgate,
    }
}

pub(super) fn dml_route(r: &Route) -> StmtRoute {
    match r {
        Route::One(_) => StmtRoute::SingleShard,
        Route::Concat(_) | Route::Write { .. } | Route::Everywhere(_) => StmtRoute::Scatter,
        Route::Merge(..) => StmtRoute::Merged,
        Route::ByKey(_) => StmtRoute::SingleShard,
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// COM_QUERY, measured. Statements idgate plans are counted one by one in `run_step`; a
    /// query relayed whole without planning counts once, by its first statement's kind.
    pub(super) async fn observed_query(
        &mut self,
        packet: &[u8],
        scope: StatementScope,
        t0: Instant,
    ) -> Option<End> {
        let mut obs = Observed::default();
        let end = self.query(packet, scope, &mut obs).await;
        if obs.counted == 0 {
            let stmt = &packet[1..];
            let who = obs.who(&self.hello.user, self.db.as_deref());
            let (route, kind, took) = (StmtRoute::Relayed, sql::classify(stmt), t0.elapsed());
            measured(&self.proxy, who, || stmt.to_vec(), route, kind, took);
        }
        end
    }

    /// One planned statement, measured.
    pub(super) async fn run_step(
        &mut self,
        stmt: &[u8],
        plan: Plan,
        packet: &[u8],
        more: bool,
        obs: &mut Observed,
    ) -> Step {
        // Planning read the kind of most statements already.
        let kind = plan.kind().unwrap_or_else(|| sql::classify(stmt));
        let route = route_of(&plan, kind);
        if obs.in_execute {
            obs.route = Some(route);
            return self.run_plan(stmt, plan, packet, more, obs).await;
        }
        let t0 = Instant::now();
        obs.rows = 0;
        let step = self.run_plan(stmt, plan, packet, more, obs).await;
        obs.counted += 1;
        let (who, took) = (obs.who(&self.hello.user, self.db.as_deref()), t0.elapsed());
        measured(&self.proxy, who, || stmt.to_vec(), route, kind, took);
        step
    }

    /// COM_STMT_EXECUTE, measured: relayed unless idgate ran it (`Observed::took_route`).
    pub(super) async fn observed_execute(
        &mut self,
        packet: &[u8],
        id: Option<u32>,
        scope: StatementScope,
        t0: Instant,
    ) -> Option<End> {
        let mut obs = Observed::execute();
        // Its kind as prepared: one forgotten while it ran (a backend timeout forgets them all)
        // still counts as what it was, as on the short path (`relay_execute`).
        let kind = id
            .and_then(|id| self.stmts.get(id))
            .map_or(StatementKind::Other, |s| s.kind);
        let end = self
            .on_statement(packet, StmtCommand::Execute, id, scope, &mut obs)
            .await;
        let route = obs.route.unwrap_or(StmtRoute::Relayed);
        let text = || {
            id.and_then(|id| self.stmts.get(id))
                .and_then(|s| s.emulated.as_ref())
                .map_or_else(|| ON_THE_BACKEND.to_vec(), |e| e.sql.clone())
        };
        let who = obs.who(&self.hello.user, self.db.as_deref());
        measured(&self.proxy, who, text, route, kind, t0.elapsed());
        end
    }

    /// Counts a COM_STMT_EXECUTE of a statement of `kind` relayed as prepared
    /// (`relay_execute`: the statement's kind is known, its text is on the backend).
    pub(super) fn relayed_execute_measured(
        &self,
        kind: StatementKind,
        obs: &Observed,
        t0: Instant,
    ) {
        let route = obs.route.unwrap_or(StmtRoute::Relayed);
        let who = obs.who(&self.hello.user, self.db.as_deref());
        measured(
            &self.proxy,
            who,
            || ON_THE_BACKEND.to_vec(),
            route,
            kind,
            t0.elapsed(),
        );
    }
}
