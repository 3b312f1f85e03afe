//! ID generation engine: named generators that hand out globally unique IDs.
//!
//! Build a [`Generator`] per configured name with [`Generator::build`] (or all of them with
//! [`IdGen::build`]), keep it in an `Arc`, and ask it for IDs:
//! - [`Generator::next_block`]: `n` contiguous 64-bit IDs (segment, snowflake);
//! - [`Generator::next_biased`]: one ID per bias value, in order (biased);
//! - [`Generator::next_uuids`]: `n` UUIDv7 values (uuidv7).
//!
//! Call [`Generator::shutdown`] (or [`IdGen::shutdown`]) on a clean exit to release worker leases.

pub mod clock;
pub mod config;
pub mod error;
pub mod metrics;
pub mod segment;
pub mod snowflake;
pub(crate) mod store;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use self::clock::{Clock, SystemClock, TestClock};
pub use self::config::GeneratorConfig;
pub use self::error::{IdGenError, Result};
pub use self::metrics::Metrics;
use self::segment::SegmentGen;

/// `count` contiguous IDs starting at `first`: `first ..= first + count - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdBlock {
    pub first: u64,
    pub count: u64,
}

impl IdBlock {
    pub fn last(&self) -> u64 {
        self.first + self.count.saturating_sub(1)
    }
    pub fn iter(&self) -> std::ops::Range<u64> {
        self.first..self.first + self.count
    }
}

/// One configured generator.
pub struct Generator {
    name: String,
    metrics: Arc<Metrics>,
    kind: Kind,
}

enum Kind {
    Segment(SegmentGen),
}

impl Generator {
    /// Builds a generator from its config. `pool` is the sequence store (required by segment
    /// generators and by snowflake kinds without a fixed `worker_id`). Must run inside a Tokio
    /// runtime: segment generators start a background fetcher, leased workers a heartbeat.
    pub async fn build(
        name: &str,
        cfg: &GeneratorConfig,
        pool: Option<&mysql_async::Pool>,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Generator>> {
        cfg.validate(name)?;
        let metrics = Arc::new(Metrics::default());
        let need_pool = || {
            pool.cloned().ok_or_else(|| IdGenError::NoStore {
                name: name.to_string(),
            })
        };
        let kind = match cfg {
            GeneratorConfig::Segment(c) => Kind::Segment(
                SegmentGen::build(name, c, need_pool()?, clock, metrics.clone()).await?,
            ),
            _ => {
                return Err(IdGenError::Config {
                    name: name.to_string(),
                    reason: "kind not built yet".into(),
                })
            }
        };
        Ok(Arc::new(Generator {
            name: name.to_string(),
            metrics,
            kind,
        }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> &'static str {
        match &self.kind {
            Kind::Segment(_) => "segment",
        }
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    #[allow(dead_code)]
    fn wrong_kind(&self, op: &'static str) -> IdGenError {
        IdGenError::WrongKind {
            name: self.name.clone(),
            kind: self.kind(),
            op,
        }
    }

    /// Fast path without awaiting: `Some` when the block could be served from memory right away.
    #[inline]
    pub fn try_next_block(&self, n: u64) -> Option<IdBlock> {
        match &self.kind {
            Kind::Segment(g) => g.try_next_block(n),
        }
    }

    /// `n` contiguous IDs (segment, snowflake).
    pub async fn next_block(&self, n: u64) -> Result<IdBlock> {
        match &self.kind {
            Kind::Segment(g) => g.next_block(n).await,
        }
    }

    /// Segment generators only: the underlying generator (step, test hooks).
    pub fn as_segment(&self) -> Option<&SegmentGen> {
        match &self.kind {
            Kind::Segment(g) => Some(g),
        }
    }

    /// Stops issuing and releases what the generator holds in the store (worker leases).
    pub async fn shutdown(&self) {
        match &self.kind {
            Kind::Segment(g) => g.shutdown(),
        }
    }
}

/// The registry of all configured generators, by name.
#[derive(Default)]
pub struct IdGen {
    generators: BTreeMap<String, Arc<Generator>>,
}

impl IdGen {
    /// Builds every configured generator (system clock).
    pub async fn build(
        configs: &BTreeMap<String, GeneratorConfig>,
        pool: Option<&mysql_async::Pool>,
    ) -> Result<IdGen> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let mut generators = BTreeMap::new();
        for (name, cfg) in configs {
            match Generator::build(name, cfg, pool, clock.clone()).await {
                Ok(g) => {
                    generators.insert(name.clone(), g);
                }
                Err(e) => {
                    for g in generators.values() {
                        Generator::shutdown(g).await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(IdGen { generators })
    }

    pub fn get(&self, name: &str) -> Result<&Arc<Generator>> {
        self.generators
            .get(name)
            .ok_or_else(|| IdGenError::UnknownGenerator(name.to_string()))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Arc<Generator>)> {
        self.generators.iter()
    }

    pub async fn shutdown(&self) {
        for g in self.generators.values() {
            g.shutdown().await;
        }
    }
}
