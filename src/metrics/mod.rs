//! The counters the statement path, the sessions and the listeners bump: typed families and
//! atomics that serving an id or a statement updates without touching a registry. The admin
//! listener's registry (`admin::metrics`) reads them, with what other modules keep, at scrape
//! time.

pub mod client_errors;
pub mod histogram;
pub mod outcomes;
pub mod statement_metrics;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use self::client_errors::ClientErrors;
use self::outcomes::{Refusals, XaCommits};
use self::statement_metrics::{Statements, StmtRoute};
use crate::sql::StatementKind;

/// Which ID-service front end answered, and how.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IdServiceLabels {
    /// `http` or `resp`.
    pub protocol: &'static str,
    /// `ok`, `denied` (authentication or rights), `refused` (bad request, unknown generator)
    /// or `failed` (the generator could not serve).
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerClosedLabels {
    /// `admin`, `id_http` or `id_resp`.
    pub listener: &'static str,
    /// `made_room` or `full`.
    pub reason: &'static str,
}

/// The metrics of one idgate process, shared through `Proxy::metrics`.
pub struct Metrics {
    pub client_connections_accepted: Counter,
    pub client_connections_open: Gauge,
    pub id_service_requests: Family<IdServiceLabels, Counter>,
    pub id_service_connections_open: Gauge,
    /// Connections the ID-service and admin listeners closed to make room or refused.
    pub listener_connections_closed: Family<ListenerClosedLabels, Counter>,
    /// Statements by route and kind, and their latency by route.
    pub statements: Arc<Statements>,
    /// Error packets sent to clients, by code (counted by each session's packet writer).
    pub client_errors: Arc<ClientErrors>,
    /// Rows read from shards to merge them into one answer.
    pub merged_rows: Counter,
    pub refusals: Refusals,
    pub xa_commits: XaCommits,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// The counters a listener's connection table counts into.
    pub fn table_counts(&self, listener: &'static str) -> crate::limits::conn_table::TableCounts {
        let get = |reason| {
            self.listener_connections_closed
                .get_or_create(&ListenerClosedLabels { listener, reason })
                .clone()
        };
        crate::limits::conn_table::TableCounts {
            made_room: get("made_room"),
            full: get("full"),
        }
    }

    pub fn new() -> Metrics {
        let m = Metrics {
            client_connections_accepted: Counter::default(),
            client_connections_open: Gauge::default(),
            id_service_requests: Family::default(),
            id_service_connections_open: Gauge::default(),
            listener_connections_closed: Family::default(),
            statements: Default::default(),
            client_errors: Default::default(),
            merged_rows: Counter::default(),
            refusals: Refusals::default(),
            xa_commits: XaCommits::default(),
        };
        // Every series exists from the start, so rates work from the first scrape.
        for listener in ["admin", "id_http", "id_resp"] {
            let _ = m.table_counts(listener);
        }
        for protocol in ["http", "resp"] {
            for outcome in ["ok", "denied", "refused", "failed"] {
                let _ = m
                    .id_service_requests
                    .get_or_create(&IdServiceLabels { protocol, outcome });
            }
        }
        m
    }

    /// Counts one statement a client sent: how it ran and how long it took. The one call the
    /// statement paths make (see `session::observe`).
    pub fn statement(&self, route: StmtRoute, kind: StatementKind, took: Duration) {
        self.statements.record(route, kind, took);
    }

    /// Counts a MySQL client connection until the returned guard drops.
    pub fn client_connected(self: &Arc<Self>) -> OpenGuard {
        self.client_connections_accepted.inc();
        OpenGuard::new(&self.client_connections_open)
    }
}

/// Decrements an "open" gauge when dropped.
pub struct OpenGuard(Gauge);

impl OpenGuard {
    pub fn new(g: &Gauge) -> OpenGuard {
        g.inc();
        OpenGuard(g.clone())
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}
