//! The steps of a join idgate runs in the gateway: which table drives (one equated to a literal
//! on its sharding column reads one shard; else the shape's choice) and the order the others
//! are fetched in, each by the key values of a table fetched before it, pinned to the owning
//! shards when that key is its sharding column. Pure: the session's join runner follows the
//! steps, and `EXPLAIN ROUTE` shows them.

use super::plan::PlanContext;
use super::statement_gateway::sharding_columns;
use crate::route::{JoinShape, JoinSide};

/// Distinct key values per fetch of a further table, and driving rows per batch of a row-wise
/// join: an IN list a shard reads by index, short enough to keep each statement small.
pub const BATCH: usize = 500;

/// One fetch of a gateway join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    pub side: usize,
    /// `(side fetched before, its column, this side's column)` the batches use; `None`: read
    /// whole.
    pub key: Option<(usize, String, String)>,
    /// The key is this side's sharding column: each batch goes to the shards owning it.
    pub pinned: bool,
}

/// The fetches of a gateway join; the first is the driving table's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steps {
    pub fetches: Vec<Fetch>,
}

impl Steps {
    pub fn driver(&self) -> usize {
        self.fetches.first().map_or(0, |f| f.side)
    }
}

fn is_sharding_column(ctx: &PlanContext, side: &JoinSide, column: &str) -> bool {
    sharding_columns(ctx, side).is_some_and(|cs| cs.iter().any(|c| c.eq_ignore_ascii_case(column)))
}

/// The steps of `shape`'s join.
pub fn join_steps(shape: &JoinShape, ctx: &PlanContext) -> Steps {
    let driver = shape
        .drivers()
        .find(|&i| {
            let s = &shape.sides[i];
            s.pinned.iter().any(|c| is_sharding_column(ctx, s, c))
        })
        .unwrap_or(shape.driver);
    let prefer = |k: &super::JoinKey| is_sharding_column(ctx, &shape.sides[k.to], &k.to_column);
    let fetches = shape
        .fetch_order(driver, &prefer)
        .into_iter()
        .map(|st| Fetch {
            side: st.side,
            pinned: st.key.is_some_and(&prefer),
            key: st
                .key
                .map(|k| (k.from, k.from_column.clone(), k.to_column.clone())),
        })
        .collect();
    Steps { fetches }
}
