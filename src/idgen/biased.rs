//! Biased ("gene") snowflake: `timestamp | worker | sequence | slot`, where `slot` is the lowest
//! `slot_bits` of the row's bias value (e.g. `user_id`) and every slot has its own sequence. So
//! `id & mask == bias & mask` always, and uniqueness rests on (tick, worker, sequence) within a
//! slot, never on the copied bits.

use crate::idgen::store_pool::StorePool;
use std::sync::Arc;

use super::clock::Clock;
use super::config::SnowflakeConfig;
use super::error::Result;
use super::metrics::Metrics;
use super::snowflake::core::{Core, Step};
use super::snowflake::layout::{Layout, Parts};

pub struct BiasedGen {
    core: Arc<Core>,
    mask: u64,
}

impl BiasedGen {
    pub async fn build(
        name: &str,
        cfg: &SnowflakeConfig,
        pool: Option<&StorePool>,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
    ) -> Result<BiasedGen> {
        let layout = cfg.validate(name, true)?;
        let slots = 1usize << layout.slot_bits;
        let core = Core::start(name, cfg, layout, slots, pool, clock, metrics).await?;
        Ok(BiasedGen {
            core,
            mask: (1u64 << layout.slot_bits) - 1,
        })
    }

    fn one(&self, bias: u64) -> std::result::Result<u64, Step> {
        let slot = bias & self.mask;
        let (tick, worker, sequence) = self.core.take(slot as usize, 1)?;
        Ok(self.core.layout.encode(Parts {
            tick,
            worker,
            sequence,
            slot,
        }))
    }

    /// One ID per bias value, in order, appended to `out`.
    pub async fn next_into(&self, bias: &[u64], out: &mut Vec<u64>) -> Result<()> {
        out.reserve(bias.len());
        for &b in bias {
            let id = match self.one(b) {
                Ok(id) => id,
                Err(_) => self.core.with_waits(|| self.one(b)).await?,
            };
            out.push(id);
        }
        Metrics::add(&self.core.metrics.ids_issued, bias.len() as u64);
        Ok(())
    }

    /// The fast path for one value: `None` when the caller must take the async path.
    #[inline]
    pub fn try_next(&self, bias: u64) -> Option<u64> {
        let id = self.one(bias).ok()?;
        Metrics::add(&self.core.metrics.ids_issued, 1);
        Some(id)
    }

    pub fn mask(&self) -> u64 {
        self.mask
    }

    pub fn layout(&self) -> &Layout {
        &self.core.layout
    }

    /// The worker id issued under now (a leased one changes after a takeover).
    pub fn worker_id(&self) -> u64 {
        self.core.worker_id()
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
