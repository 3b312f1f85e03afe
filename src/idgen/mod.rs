//! ID generation engine: named generators that hand out globally unique IDs.
//!
//! Build a [`Generator`] per configured name with [`Generator::build`] (or all of them with
//! [`IdGen::build`]), keep it in an `Arc`, and ask it for IDs:
//! - [`Generator::next_block`]: `n` contiguous 64-bit IDs (segment, snowflake);
//! - [`Generator::next_biased`]: one ID per bias value, in order (biased);
//! - [`Generator::next_uuids`]: `n` UUIDv7 values (uuidv7).
//!
//! Call [`Generator::shutdown`] (or [`IdGen::shutdown`]) on a clean exit to release worker leases.
//! Must not: know about tables, SQL text or sessions; its only I/O is the sequence store.

pub mod biased;
pub mod clock;
pub mod config;
pub mod error;
pub mod metrics;
pub mod segment;
pub mod snowflake;
pub(crate) mod store;
pub mod store_pool;
pub mod uuidv7;

use crate::idgen::store_pool::StorePool;
use std::collections::BTreeMap;
use std::sync::Arc;

use self::biased::BiasedGen;
pub use self::clock::{Clock, SystemClock, TestClock};
pub use self::config::GeneratorConfig;
pub use self::error::{IdGenError, Result};
pub use self::metrics::Metrics;
use self::segment::SegmentGen;
use self::snowflake::SnowflakeGen;
use self::uuidv7::{Uuid7, Uuidv7Gen};

/// `count` contiguous IDs starting at `first`: `first ..= first + count - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdBlock {
    pub first: u64,
    pub count: u64,
}

/// New ids as a generator's kind makes them (`Generator::next_ids`).
#[derive(Debug)]
pub enum NewIds {
    /// Contiguous (segment, snowflake).
    Block(IdBlock),
    /// One per id asked for, in order (biased).
    Numbers(Vec<u64>),
    Uuids(Vec<Uuid7>),
}

impl NewIds {
    /// The first numeric id (what LAST_INSERT_ID() becomes); none for UUIDs.
    pub fn first(&self) -> Option<u64> {
        match self {
            NewIds::Block(b) => Some(b.first),
            NewIds::Numbers(n) => n.first().copied(),
            NewIds::Uuids(_) => None,
        }
    }

    /// The `i`-th numeric id; none for UUIDs.
    pub fn number(&self, i: usize) -> Option<u64> {
        match self {
            NewIds::Block(b) => (i < b.count as usize).then(|| b.first + i as u64),
            NewIds::Numbers(n) => n.get(i).copied(),
            NewIds::Uuids(_) => None,
        }
    }
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
    Snowflake(SnowflakeGen),
    Biased(BiasedGen),
    Uuidv7(Uuidv7Gen),
}

impl Generator {
    /// Builds a generator from its config. `pool` is the sequence store (required by segment
    /// generators and by snowflake kinds without a fixed `worker_id`). Must run inside a Tokio
    /// runtime: segment generators start a background fetcher, leased workers a heartbeat.
    pub async fn build(
        name: &str,
        cfg: &GeneratorConfig,
        pool: Option<&StorePool>,
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
            GeneratorConfig::Snowflake(c) => {
                Kind::Snowflake(SnowflakeGen::build(name, c, pool, clock, metrics.clone()).await?)
            }
            GeneratorConfig::Biased(c) => {
                Kind::Biased(BiasedGen::build(name, c, pool, clock, metrics.clone()).await?)
            }
            GeneratorConfig::Uuidv7(_) => Kind::Uuidv7(Uuidv7Gen::new(clock)),
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
            Kind::Snowflake(_) => "snowflake",
            Kind::Biased(_) => "biased",
            Kind::Uuidv7(_) => "uuidv7",
        }
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

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
            Kind::Snowflake(g) => g.try_next_block(n),
            _ => None,
        }
    }

    /// `n` contiguous IDs (segment, snowflake).
    pub async fn next_block(&self, n: u64) -> Result<IdBlock> {
        match &self.kind {
            Kind::Segment(g) => g.next_block(n).await,
            Kind::Snowflake(g) => g.next_block(n).await,
            _ => Err(self.wrong_kind("next_block")),
        }
    }

    /// Biased generators: one ID per bias value, in order, appended to `out`
    /// (`id & mask == bias & mask`).
    pub async fn next_biased(&self, bias: &[u64], out: &mut Vec<u64>) -> Result<()> {
        match &self.kind {
            Kind::Biased(g) => g.next_into(bias, out).await,
            _ => Err(self.wrong_kind("next_biased")),
        }
    }

    /// UUIDv7 generators: `n` strictly increasing values appended to `out`.
    pub fn next_uuids(&self, n: usize, out: &mut Vec<Uuid7>) -> Result<()> {
        match &self.kind {
            Kind::Uuidv7(g) => {
                g.next_into(n, out);
                Metrics::add(&self.metrics.ids_issued, n as u64);
                Ok(())
            }
            _ => Err(self.wrong_kind("next_uuids")),
        }
    }

    /// Each id of a biased generator copies a bias value (the caller supplies one per id).
    pub fn takes_bias(&self) -> bool {
        matches!(self.kind, Kind::Biased(_))
    }

    /// `count` new ids of whatever kind the generator makes; `bias` holds one value per id when
    /// [`Generator::takes_bias`] (otherwise it is not read).
    pub async fn next_ids(&self, count: usize, bias: &[u64]) -> Result<NewIds> {
        match &self.kind {
            Kind::Uuidv7(_) => {
                let mut out = Vec::with_capacity(count);
                self.next_uuids(count, &mut out)?;
                Ok(NewIds::Uuids(out))
            }
            Kind::Biased(_) => {
                let mut out = Vec::with_capacity(count);
                self.next_biased(bias, &mut out).await?;
                Ok(NewIds::Numbers(out))
            }
            _ => {
                let n = count as u64;
                let block = match self.try_next_block(n) {
                    Some(b) => b,
                    None => self.next_block(n).await?,
                };
                Ok(NewIds::Block(block))
            }
        }
    }

    pub fn as_segment(&self) -> Option<&SegmentGen> {
        match &self.kind {
            Kind::Segment(g) => Some(g),
            _ => None,
        }
    }

    pub fn as_snowflake(&self) -> Option<&SnowflakeGen> {
        match &self.kind {
            Kind::Snowflake(g) => Some(g),
            _ => None,
        }
    }

    pub fn as_biased(&self) -> Option<&BiasedGen> {
        match &self.kind {
            Kind::Biased(g) => Some(g),
            _ => None,
        }
    }

    pub fn as_uuidv7(&self) -> Option<&Uuidv7Gen> {
        match &self.kind {
            Kind::Uuidv7(g) => Some(g),
            _ => None,
        }
    }

    /// Stops issuing and releases what the generator holds in the store (worker leases, recording
    /// the last issued timestamp for the next owner).
    pub async fn shutdown(&self) {
        match &self.kind {
            Kind::Segment(g) => g.shutdown(),
            Kind::Snowflake(g) => g.shutdown().await,
            Kind::Biased(g) => g.shutdown().await,
            Kind::Uuidv7(_) => {}
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
        pool: Option<&StorePool>,
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

    pub fn is_empty(&self) -> bool {
        self.generators.is_empty()
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
