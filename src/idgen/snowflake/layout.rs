//! Bit layout of snowflake-style IDs, highest to lowest: `timestamp | worker | sequence | slot`
//! (slot bits only for the biased kind). Encoding, decoding and the date the layout runs out.

use crate::idgen::config::{invalid, TimeUnit};
use crate::idgen::error::Result;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub timestamp_bits: u32,
    pub worker_bits: u32,
    pub sequence_bits: u32,
    pub slot_bits: u32,
    pub unit: TimeUnit,
    pub epoch_ms: u64,
}

/// The parts of one ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    pub tick: u64,
    pub worker: u64,
    pub sequence: u64,
    pub slot: u64,
}

const YEAR_MS: u64 = 365 * 24 * 3600 * 1000;

impl Layout {
    pub fn validate(&self, name: &str) -> Result<()> {
        let total = self.timestamp_bits + self.worker_bits + self.sequence_bits + self.slot_bits;
        if total > 63 {
            return Err(invalid(
                name,
                format!(
                    "the layout has {total} bits (timestamp {} + worker {} + sequence {} + slot {}); at most 63 fit a positive BIGINT",
                    self.timestamp_bits, self.worker_bits, self.sequence_bits, self.slot_bits
                ),
            ));
        }
        if self.timestamp_bits < 20 || self.sequence_bits == 0 {
            return Err(invalid(
                name,
                "`timestamp_bits` must be at least 20 and `sequence_bits` at least 1",
            ));
        }
        let now = crate::idgen::clock::Clock::wall_ms(&crate::idgen::clock::SystemClock);
        if self.epoch_ms > now {
            return Err(invalid(name, "`epoch_ms` lies in the future"));
        }
        let end = self.end_ms();
        if end <= now {
            return Err(invalid(
                name,
                format!(
                    "the layout ran out on {}; use a later `epoch_ms` or more `timestamp_bits`",
                    format_ms(end)
                ),
            ));
        }
        if end - now < YEAR_MS {
            tracing::warn!(generator = name, ends = %format_ms(end), "ID layout runs out within a year");
        } else {
            tracing::info!(generator = name, ends = %format_ms(end), "ID layout valid until");
        }
        Ok(())
    }

    /// Unix milliseconds at which the timestamp field overflows.
    pub fn end_ms(&self) -> u64 {
        let ticks = 1u64 << self.timestamp_bits;
        self.epoch_ms
            .saturating_add(ticks.saturating_mul(self.unit.ms()))
    }

    pub fn max_tick(&self) -> u64 {
        (1u64 << self.timestamp_bits) - 1
    }
    pub fn seq_capacity(&self) -> u64 {
        1u64 << self.sequence_bits
    }
    pub fn worker_capacity(&self) -> u64 {
        1u64 << self.worker_bits
    }

    /// Tick of a wall-clock time (0 before the epoch).
    pub fn tick_of(&self, wall_ms: u64) -> u64 {
        wall_ms.saturating_sub(self.epoch_ms) / self.unit.ms()
    }
    /// Duration of `ticks` ticks in milliseconds.
    pub fn ticks_ms(&self, ticks: u64) -> u64 {
        ticks.saturating_mul(self.unit.ms())
    }

    pub fn encode(&self, p: Parts) -> u64 {
        let s = self.slot_bits;
        let q = s + self.sequence_bits;
        let w = q + self.worker_bits;
        (p.tick << w) | (p.worker << q) | (p.sequence << s) | p.slot
    }

    pub fn decode(&self, id: u64) -> Parts {
        let mask = |b: u32| (1u64 << b) - 1;
        let s = self.slot_bits;
        let q = s + self.sequence_bits;
        let w = q + self.worker_bits;
        Parts {
            tick: id >> w,
            worker: (id >> q) & mask(self.worker_bits),
            sequence: (id >> s) & mask(self.sequence_bits),
            slot: id & mask(s),
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix milliseconds (proleptic Gregorian, UTC).
pub fn format_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
