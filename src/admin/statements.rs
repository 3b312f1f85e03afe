//! idgate's admin statements on the MySQL port (`SHOW IDGATE …`, `IDGATE RELOAD`), for users with
//! `admin: true`: what they answer, as result sets any MySQL client reads.

use super::result_set::{datetime, num, text, yes_no, Col, ResultSet};
use super::Control;
use crate::proxy::Proxy;
use crate::route::Placement;
use crate::sql::AdminStatement;
use crate::wire::errors::{self, SqlError};

/// MySQL's ER_SPECIFIC_ACCESS_DENIED_ERROR.
pub const ER_SPECIFIC_ACCESS_DENIED: u16 = 1227;
/// MySQL's ER_UNSUPPORTED_PS.
pub const ER_UNSUPPORTED_PS: u16 = 1295;

pub use crate::exec::result_set::Answer;

/// Answers `stmt` for `user` (checked against the configuration as it is now, so revoking
/// `admin` binds open sessions too).
pub async fn answer(control: &Control, user: &[u8], host: &str, stmt: AdminStatement) -> Answer {
    let proxy = &control.proxy;
    if !is_admin(proxy, user) {
        return Answer::Err(access_denied(user, host));
    }
    match stmt {
        AdminStatement::Status => Answer::Rows(status(proxy, &control.reloads)),
        AdminStatement::Backends => Answer::Rows(backends(proxy).await),
        AdminStatement::Generators => Answer::Rows(generators(proxy)),
        AdminStatement::Sessions => Answer::Rows(sessions(proxy)),
        AdminStatement::Tables => Answer::Rows(tables(proxy)),
        AdminStatement::Reload => {
            match crate::reload::reload(proxy, &control.reloads, "IDGATE RELOAD").await {
                Ok(a) if a.changed.is_empty() => Answer::Ok(format!(
                    "configuration generation {} kept: the file has no changes",
                    a.generation
                )),
                Ok(a) => Answer::Ok(format!(
                    "configuration generation {} applied; changed: {}",
                    a.generation,
                    a.changed.join(", ")
                )),
                Err(e) => Answer::Err(SqlError::new(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!("idgate: reload refused: {e}"),
                )),
            }
        }
        // Answered by the session, which knows who asks (`admin::kill`, `admin::processlist`).
        AdminStatement::Kill { .. }
        | AdminStatement::KillExpression { .. }
        | AdminStatement::KillUser { .. }
        | AdminStatement::KillQueryId { .. } => Answer::Err(super::kill::unsupported("KILL here")),
        AdminStatement::ProcessList { .. }
        | AdminStatement::ConnectionId { .. }
        | AdminStatement::ProcessListQuery { .. }
        | AdminStatement::PseudoThreadId => {
            Answer::Err(super::kill::unsupported("a session's statement here"))
        }
        AdminStatement::KillUnsupported(form) => Answer::Err(super::kill::unsupported(form)),
        AdminStatement::Migrate(m) => crate::migrate::answer(&control.migrations, None, m).await,
        AdminStatement::Switchover(s) => super::switchover::answer(proxy, s).await,
        AdminStatement::UnknownShow => Answer::Err(SqlError::new(
            crate::sql::ER_PARSE_ERROR,
            b"42000",
            "Unknown SHOW IDGATE statement; idgate has SHOW IDGATE STATUS, BACKENDS, GENERATORS, \
             SESSIONS, TABLES and MIGRATIONS, IDGATE RELOAD and IDGATE MIGRATE",
        )),
    }
}

/// Whether `user` has `admin: true` in the configuration as it is now.
pub fn is_admin(proxy: &Proxy, user: &[u8]) -> bool {
    proxy.user(user).is_some_and(|u| u.admin)
}

/// 1227 as MySQL words it, naming what grants the right here.
pub fn access_denied(user: &[u8], host: &str) -> SqlError {
    SqlError::new(
        ER_SPECIFIC_ACCESS_DENIED,
        b"42000",
        format!(
            "Access denied; you need (at least one of) the idgate admin privilege(s) for this \
             operation: set `admin: true` for user '{}'@'{host}' in idgate's configuration",
            String::from_utf8_lossy(user)
        ),
    )
}

/// What a prepared admin statement gets: they run as plain queries only.
pub fn not_preparable() -> SqlError {
    SqlError::new(
        ER_UNSUPPORTED_PS,
        b"HY000",
        "This command is not supported in the prepared statement protocol yet: send SHOW IDGATE \
         … and IDGATE RELOAD as plain queries",
    )
}

fn status(proxy: &Proxy, reloads: &crate::reload::Reloads) -> ResultSet {
    let mut rs = ResultSet::new(&[
        ("Version", Col::Text(64)),
        ("Server_version", Col::Text(128)),
        ("Uptime", Col::UInt),
        ("Threads_connected", Col::UInt),
        ("Connections", Col::UInt),
        ("Config_generation", Col::UInt),
        ("Config_file", Col::Text(512)),
        ("Last_reload", Col::DateTime),
        ("Last_reload_trigger", Col::Text(32)),
        ("Last_reload_outcome", Col::Text(2048)),
    ]);
    let last = reloads.last();
    let outcome = last.as_ref().map(|o| match &o.result {
        Ok(g) => format!("applied generation {g}"),
        Err(e) => format!("refused: {e}"),
    });
    rs.row(&[
        text(env!("CARGO_PKG_VERSION")),
        text(String::from_utf8_lossy(&proxy.server_version)),
        num(proxy.started.elapsed().as_secs()),
        num(proxy.sessions.len()),
        num(proxy.connections_accepted()),
        num(proxy.plan_generation()),
        reloads.path().map(|p| p.display().to_string()),
        last.as_ref().and_then(|o| datetime(o.at)),
        last.as_ref().map(|o| o.trigger.to_string()),
        outcome,
    ]);
    rs
}

async fn backends(proxy: &Proxy) -> ResultSet {
    let mut rs = ResultSet::new(&[
        ("Name", Col::Text(64)),
        ("Address", Col::Text(255)),
        ("User", Col::Text(64)),
        ("Pool_in_use", Col::UInt),
        ("Pool_idle", Col::UInt),
        ("Pool_max", Col::UInt),
        ("Reachable", Col::Text(3)),
        ("Detail", Col::Text(512)),
        ("Role", Col::Text(16)),
        ("Read_only", Col::Text(3)),
        ("Lag_s", Col::UInt),
        ("Gtid_position", Col::Text(512)),
        ("Why", Col::Text(512)),
        ("Reads", Col::UInt),
    ]);
    for r in super::backend_rows::rows(proxy).await {
        let node = r.node;
        rs.row(&[
            text(r.name),
            text(node.address),
            text(r.user),
            num(r.in_use),
            num(r.idle),
            num(r.max),
            yes_no(r.reachable),
            text(r.detail),
            text(node.role),
            node.read_only.and_then(yes_no),
            node.lag_s.and_then(num),
            text(node.gtid_position),
            text(node.why),
            node.reads.and_then(num),
        ]);
    }
    rs
}

fn generators(proxy: &Proxy) -> ResultSet {
    use crate::idgen::metrics::Metrics as GenMetrics;
    let mut rs = ResultSet::new(&[
        ("Name", Col::Text(64)),
        ("Kind", Col::Text(16)),
        ("Ids_issued", Col::UInt),
        ("Buffered", Col::UInt),
        ("Step", Col::UInt),
        ("Worker_id", Col::UInt),
        ("Lease_left_ms", Col::UInt),
        ("Problem", Col::Text(512)),
    ]);
    let mut all: Vec<_> = proxy.idgen.iter().collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    for (name, g) in all {
        let m = g.metrics();
        let segment = g.as_segment();
        let buffered = segment.map(|s| {
            let (current, standby) = s.buffered();
            current + standby.unwrap_or(0)
        });
        let lease = super::generators::lease_status(g);
        let problem = match (&lease, segment) {
            (Some((_, Some(why))), _) => Some(why.clone()),
            (_, Some(s)) => Some(s.last_error()).filter(|e| !e.is_empty()),
            _ => None,
        };
        rs.row(&[
            text(name.as_str()),
            text(g.kind()),
            num(GenMetrics::get(&m.ids_issued)),
            buffered.and_then(num),
            segment.and_then(|s| num(s.current_step())),
            super::generators::worker_id(g).and_then(num),
            lease.and_then(|(left, _)| num(left)),
            problem,
        ]);
    }
    rs
}

fn sessions(proxy: &Proxy) -> ResultSet {
    let mut rs = ResultSet::new(&[
        ("Id", Col::UInt),
        ("User", Col::Text(128)),
        ("Host", Col::Text(64)),
        ("db", Col::Text(64)),
        ("Command", Col::Text(16)),
        ("Time", Col::UInt),
        ("In_transaction", Col::Text(3)),
        ("Pinned", Col::Text(32)),
    ]);
    for s in proxy.sessions.rows() {
        rs.row(&[
            num(s.id),
            text(s.user),
            text(s.host),
            s.db,
            text(s.command),
            num(s.time_s),
            yes_no(s.in_transaction),
            s.pinned.and_then(text),
        ]);
    }
    rs
}

fn tables(proxy: &Proxy) -> ResultSet {
    let mut rs = ResultSet::new(&[
        ("Name", Col::Text(129)),
        ("Placement", Col::Text(16)),
        ("Backends", Col::Text(1024)),
        ("Sharding_columns", Col::Text(256)),
        ("Algorithm", Col::Text(16)),
        ("Generator", Col::Text(64)),
        ("Id_column", Col::Text(64)),
        ("Placed_by", Col::Text(16)),
        ("Configuration_entry", Col::Text(1024)),
    ]);
    let tables = proxy.tables.load();
    let mut rules: Vec<_> = tables.rules().collect();
    rules.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
    for r in rules {
        let name = match &r.schema {
            Some(s) => format!("{s}.{}", r.name),
            None => r.name.clone(),
        };
        let (placement, backends, columns, algorithm) = match &r.placement {
            Placement::Single { backend } => ("single", backend.clone(), None, None),
            Placement::Broadcast { backends } => ("broadcast", backends.join(","), None, None),
            Placement::Sharded {
                columns,
                algorithm,
                shards,
            } => (
                "sharded",
                shards.join(","),
                text(columns.join(",")),
                text(algorithm.name()),
            ),
        };
        // A table IDGATE MIGRATE moved: the entry to put under `tables:` while the
        // configuration file still says otherwise.
        let (placed_by, paste) = match crate::migrate::placements::moved_placement(proxy, r) {
            Some((_, paste)) => ("IDGATE MIGRATE", paste),
            None => ("configuration", None),
        };
        rs.row(&[
            text(name),
            text(placement),
            text(backends),
            columns,
            algorithm,
            r.generator.clone(),
            text(r.id_column.as_str()),
            text(placed_by),
            paste,
        ]);
    }
    rs
}
