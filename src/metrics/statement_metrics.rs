//! Statement counters and latencies by route and kind. Every label child is created once at
//! startup and kept in arrays indexed by the enums below, so recording a statement is two
//! atomic adds and a bucket search: no hashing, no lock.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::histogram::AtomicHistogram;
use crate::sql::StatementKind;

/// How idgate ran a statement (the `route` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StmtRoute {
    /// The client's bytes to the default backend.
    Relayed,
    /// A statement about placed tables on one backend.
    SingleShard,
    /// On several shards, answers concatenated (or a write/DDL on each).
    Scatter,
    /// On several shards, answers merged (ORDER BY/LIMIT, GROUP BY, aggregates, DISTINCT).
    Merged,
    /// An INSERT whose ids idgate generated or whose rows it routed.
    InsertIds,
    /// Answered by idgate itself: NEXTVAL, EXPLAIN ROUTE, table lists, refusals.
    Idgate,
    /// BEGIN, COMMIT, ROLLBACK, savepoints (a commit across backends included).
    Transaction,
}

impl StmtRoute {
    pub const ALL: [StmtRoute; 7] = [
        StmtRoute::Relayed,
        StmtRoute::SingleShard,
        StmtRoute::Scatter,
        StmtRoute::Merged,
        StmtRoute::InsertIds,
        StmtRoute::Idgate,
        StmtRoute::Transaction,
    ];

    pub fn label(self) -> &'static str {
        match self {
            StmtRoute::Relayed => "relayed",
            StmtRoute::SingleShard => "single_shard",
            StmtRoute::Scatter => "scatter",
            StmtRoute::Merged => "merged",
            StmtRoute::InsertIds => "insert_ids",
            StmtRoute::Idgate => "idgate",
            StmtRoute::Transaction => "transaction",
        }
    }
}

/// The `kind` label: a small fixed set folded from [`StatementKind`].
pub const KINDS: [&str; 7] = [
    "select",
    "insert",
    "update",
    "delete",
    "ddl",
    "transaction",
    "other",
];

pub fn kind_index(k: StatementKind) -> usize {
    use StatementKind::*;
    match k {
        Select => 0,
        Insert | Replace => 1,
        Update => 2,
        Delete => 3,
        Ddl => 4,
        Begin | Commit | Rollback | Savepoint => 5,
        Set | Use | Show | Explain | Call | Other => 6,
    }
}

pub fn kind_label(k: StatementKind) -> &'static str {
    KINDS[kind_index(k)]
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StmtLabels {
    pub route: &'static str,
    pub kind: &'static str,
}

pub struct Statements {
    pub family: Family<StmtLabels, Counter>,
    /// `family`'s children, [route][kind].
    counters: [[Counter; KINDS.len()]; StmtRoute::ALL.len()],
    /// Latency by route.
    pub durations: [AtomicHistogram; StmtRoute::ALL.len()],
}

impl Default for Statements {
    fn default() -> Self {
        let family = Family::<StmtLabels, Counter>::default();
        let counters = std::array::from_fn(|r| {
            std::array::from_fn(|k| {
                family
                    .get_or_create(&StmtLabels {
                        route: StmtRoute::ALL[r].label(),
                        kind: KINDS[k],
                    })
                    .clone()
            })
        });
        Statements {
            family,
            counters,
            durations: std::array::from_fn(|_| AtomicHistogram::default()),
        }
    }
}

impl Statements {
    pub fn record(&self, route: StmtRoute, kind: StatementKind, took: Duration) {
        let r = route as usize;
        self.counters[r][kind_index(kind)].inc();
        self.durations[r].observe(took);
    }
}
