//! Snowflake generators: `timestamp | worker | sequence` IDs from a configurable layout, with a
//! fixed or leased worker id and bounded handling of clocks that go back.

pub(crate) mod core;
pub mod layout;
pub(crate) mod lease;

use crate::idgen::store_pool::StorePool;
use std::sync::Arc;

use self::core::{Core, Step};
use self::layout::Parts;
use super::clock::Clock;
use super::config::SnowflakeConfig;
use super::error::Result;
use super::metrics::Metrics;
use super::IdBlock;

pub use self::layout::Layout;

pub struct SnowflakeGen {
    core: Arc<Core>,
}

impl SnowflakeGen {
    pub async fn build(
        name: &str,
        cfg: &SnowflakeConfig,
        pool: Option<&StorePool>,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
    ) -> Result<SnowflakeGen> {
        let layout = cfg.validate(name, false)?;
        let core = Core::start(name, cfg, layout, 1, pool, clock, metrics).await?;
        Ok(SnowflakeGen { core })
    }

    fn take(&self, n: u64) -> std::result::Result<IdBlock, Step> {
        let (tick, worker, seq) = self.core.take(0, n)?;
        Metrics::add(&self.core.metrics.ids_issued, n);
        let first = self.core.layout.encode(Parts {
            tick,
            worker,
            sequence: seq,
            slot: 0,
        });
        Ok(IdBlock { first, count: n })
    }

    /// The fast path: `None` when the caller must take the async path (wait or error).
    #[inline]
    pub fn try_next_block(&self, n: u64) -> Option<IdBlock> {
        if n == 0 {
            return None;
        }
        self.take(n).ok()
    }

    /// `n` contiguous IDs (one tick, `n` consecutive sequence numbers); `n` is at most
    /// 2^sequence_bits.
    pub async fn next_block(&self, n: u64) -> Result<IdBlock> {
        if n == 0 {
            return Ok(IdBlock { first: 0, count: 0 });
        }
        self.core.with_waits(|| self.take(n)).await
    }

    pub fn layout(&self) -> &Layout {
        &self.core.layout
    }

    /// The worker id issued under now (a leased one changes after a takeover).
    pub fn worker_id(&self) -> u64 {
        self.core.worker_id()
    }

    /// Unix ms of the highest timestamp issued so far.
    pub fn last_issued_ms(&self) -> u64 {
        self.core.last_issued_ms()
    }

    /// For a leased worker id: ms of lease left and, when it may not issue now, why.
    pub fn lease_status(&self) -> Option<(u64, Option<String>)> {
        self.core.lease_status()
    }

    /// How far (ms) issued timestamps run ahead of the clock.
    pub fn borrowed_ms(&self) -> u64 {
        self.core.borrowed_ms()
    }

    pub async fn shutdown(&self) {
        self.core.shutdown().await;
    }
}
