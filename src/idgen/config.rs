//! YAML settings of one generator, tagged by `kind`.

use serde::{Deserialize, Serialize};

use super::error::{IdGenError, Result};
use super::snowflake::layout::Layout;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum GeneratorConfig {
    Segment(SegmentConfig),
    Snowflake(SnowflakeConfig),
    /// A snowflake whose lowest `slot_bits` copy the row's bias value (same settings as snowflake
    /// plus `slot_bits` and `bias_column`).
    Biased(SnowflakeConfig),
    Uuidv7(Uuidv7Config),
}

impl GeneratorConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            GeneratorConfig::Segment(_) => "segment",
            GeneratorConfig::Snowflake(_) => "snowflake",
            GeneratorConfig::Biased(_) => "biased",
            GeneratorConfig::Uuidv7(_) => "uuidv7",
        }
    }

    pub fn validate(&self, name: &str) -> Result<()> {
        match self {
            GeneratorConfig::Segment(c) => c.validate(name),
            GeneratorConfig::Snowflake(c) => c.validate(name, false).map(|_| ()),
            GeneratorConfig::Biased(c) => c.validate(name, true).map(|_| ()),
            GeneratorConfig::Uuidv7(_) => Ok(()),
        }
    }
}

pub(crate) fn invalid(name: &str, reason: impl Into<String>) -> IdGenError {
    IdGenError::Config {
        name: name.to_string(),
        reason: reason.into(),
    }
}

/// `kind: segment`: ranges reserved in `idgate_segments`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SegmentConfig {
    /// Row key in `idgate_segments`; defaults to the generator's name.
    pub tag: Option<String>,
    /// First ID of a new tag; raising it later moves the high-water mark up (never down).
    pub start: u64,
    /// IDs per range (the minimum step when the step adapts).
    pub step: u32,
    /// Upper bound of the dynamic step.
    pub max_step: u32,
    /// Adapt the step to the consumption rate (Leaf's rule).
    pub dynamic_step: bool,
    /// Fraction of the current range consumed at which the next range is fetched.
    pub preload_at: f64,
    /// How long a request waits for a range when both buffers are empty.
    pub max_wait_ms: u64,
    /// Timeout of one statement on the sequence store.
    pub store_timeout_ms: u64,
    pub description: Option<String>,
}

impl Default for SegmentConfig {
    fn default() -> Self {
        SegmentConfig {
            tag: None,
            start: 1,
            step: 1000,
            max_step: 1_000_000,
            dynamic_step: true,
            preload_at: 0.1,
            max_wait_ms: 2000,
            store_timeout_ms: 2000,
            description: None,
        }
    }
}

impl SegmentConfig {
    pub fn validate(&self, name: &str) -> Result<()> {
        let tag = self.tag.as_deref().unwrap_or(name);
        if tag.is_empty() || tag.len() > 128 {
            return Err(invalid(name, "`tag` must be 1 to 128 characters"));
        }
        if self.start == 0 || self.start > i64::MAX as u64 / 2 {
            return Err(invalid(name, "`start` must be between 1 and 2^62"));
        }
        if self.step == 0 {
            return Err(invalid(name, "`step` must be at least 1"));
        }
        if self.max_step < self.step {
            return Err(invalid(
                name,
                format!(
                    "`max_step` ({}) must be >= `step` ({})",
                    self.max_step, self.step
                ),
            ));
        }
        if !(self.preload_at > 0.0 && self.preload_at < 1.0) {
            return Err(invalid(
                name,
                "`preload_at` must be a fraction between 0 and 1, e.g. 0.1",
            ));
        }
        if self.max_wait_ms == 0 || self.store_timeout_ms == 0 {
            return Err(invalid(
                name,
                "`max_wait_ms` and `store_timeout_ms` must be above 0",
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    Ms,
    S,
}

impl TimeUnit {
    pub fn ms(self) -> u64 {
        match self {
            TimeUnit::Ms => 1,
            TimeUnit::S => 1000,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SequenceStart {
    /// Every tick starts at sequence 0 (IDs of a quiet system all end in the same bits).
    Zero,
    /// A random start in the first 1/16 of the sequence space.
    Random,
    /// The start rotates with the tick, spreading `id % N` evenly.
    Rotating,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// 41 timestamp bits in ms, 10 worker bits, 12 sequence bits (runs ~69 years from the epoch).
    Standard,
    /// 53 bits in all, safe as a JavaScript number: 31 bits of seconds, 8 worker bits, 14 sequence bits.
    Js53,
}

/// `kind: snowflake`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SnowflakeConfig {
    /// A preset layout; explicit `*_bits`/`unit` settings override it.
    pub preset: Preset,
    pub timestamp_bits: Option<u32>,
    pub worker_bits: Option<u32>,
    pub sequence_bits: Option<u32>,
    pub unit: Option<TimeUnit>,
    /// Epoch in Unix milliseconds (default 2024-01-01T00:00:00Z).
    pub epoch_ms: u64,
    /// A fixed worker id for single-node setups; when absent a worker id is leased in the store.
    pub worker_id: Option<u64>,
    /// Group of nodes sharing a worker-id space in `idgate_workers`; defaults to the generator name.
    pub lease_group: Option<String>,
    pub lease_ttl_ms: u64,
    pub heartbeat_ms: u64,
    /// Stop issuing this long before the lease could expire (measured on the local monotonic clock).
    pub lease_safety_ms: u64,
    pub max_backward_wait_ms: u64,
    /// How far ahead of the clock IDs may be issued (clock steps back, bursts above the layout rate).
    pub max_borrow_ms: u64,
    pub sequence_start: SequenceStart,
    pub store_timeout_ms: u64,
    /// Biased kind only (when `sequence_bits` is not set, it defaults to the preset's minus
    /// `slot_bits`): how many low bits of the ID copy the low bits of the bias value (1..=12).
    pub slot_bits: Option<u32>,
    /// Biased kind only: the column whose value supplies the low bits (used by the INSERT rewriter).
    pub bias_column: Option<String>,
}

pub const DEFAULT_EPOCH_MS: u64 = 1_704_067_200_000;

impl Default for SnowflakeConfig {
    fn default() -> Self {
        SnowflakeConfig {
            preset: Preset::Standard,
            timestamp_bits: None,
            worker_bits: None,
            sequence_bits: None,
            unit: None,
            epoch_ms: DEFAULT_EPOCH_MS,
            worker_id: None,
            lease_group: None,
            lease_ttl_ms: 30_000,
            heartbeat_ms: 3_000,
            lease_safety_ms: 5_000,
            max_backward_wait_ms: 5,
            max_borrow_ms: 2_000,
            sequence_start: SequenceStart::Rotating,
            store_timeout_ms: 2_000,
            slot_bits: None,
            bias_column: None,
        }
    }
}

impl SnowflakeConfig {
    pub fn layout(&self, name: &str, slot_bits: u32) -> Result<Layout> {
        let (t, w, s, u): (u32, u32, u32, TimeUnit) = match self.preset {
            Preset::Standard => (41, 10, 12, TimeUnit::Ms),
            Preset::Js53 => (31, 8, 14, TimeUnit::S),
        };
        let l = Layout {
            timestamp_bits: self.timestamp_bits.unwrap_or(t),
            worker_bits: self.worker_bits.unwrap_or(w),
            // Biased: by default the slot bits come out of the sequence (the per-slot sequences
            // together keep the preset's rate).
            sequence_bits: self
                .sequence_bits
                .unwrap_or_else(|| s.saturating_sub(slot_bits).max(1)),
            slot_bits,
            unit: self.unit.unwrap_or(u),
            epoch_ms: self.epoch_ms,
        };
        l.validate(name)?;
        Ok(l)
    }

    /// Checks the settings and returns the layout (`biased` selects the biased kind's rules).
    pub fn validate(&self, name: &str, biased: bool) -> Result<Layout> {
        let slot_bits = match (biased, self.slot_bits) {
            (false, None) => 0,
            (false, Some(_)) => {
                return Err(invalid(name, "`slot_bits` is only for `kind: biased`"));
            }
            (true, None) => return Err(invalid(name, "`kind: biased` needs `slot_bits` (1..=12)")),
            (true, Some(b)) if !(1..=12).contains(&b) => {
                return Err(invalid(name, "`slot_bits` must be between 1 and 12"));
            }
            (true, Some(b)) => b,
        };
        if !biased && self.bias_column.is_some() {
            return Err(invalid(name, "`bias_column` is only for `kind: biased`"));
        }
        let l = self.layout(name, slot_bits)?;
        self.validate_rest(name, &l)?;
        Ok(l)
    }

    fn validate_rest(&self, name: &str, l: &Layout) -> Result<()> {
        if let Some(w) = self.worker_id {
            if w >= 1u64 << l.worker_bits {
                return Err(invalid(
                    name,
                    format!(
                        "`worker_id` {w} does not fit in {} worker bits",
                        l.worker_bits
                    ),
                ));
            }
        }
        if self.worker_id.is_none() {
            if self.heartbeat_ms == 0 || self.lease_ttl_ms == 0 {
                return Err(invalid(
                    name,
                    "`heartbeat_ms` and `lease_ttl_ms` must be above 0",
                ));
            }
            if self.heartbeat_ms + self.lease_safety_ms >= self.lease_ttl_ms {
                return Err(invalid(
                    name,
                    "`heartbeat_ms` + `lease_safety_ms` must be below `lease_ttl_ms`, or the lease lapses between heartbeats",
                ));
            }
        }
        if self.store_timeout_ms == 0 {
            return Err(invalid(name, "`store_timeout_ms` must be above 0"));
        }
        if let Some(g) = &self.lease_group {
            if g.is_empty() || g.len() > 128 {
                return Err(invalid(name, "`lease_group` must be 1 to 128 characters"));
            }
        }
        Ok(())
    }
}

/// `kind: uuidv7`: no settings.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Uuidv7Config {}
