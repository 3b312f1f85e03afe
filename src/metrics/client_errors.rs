//! Errors idgate sent to clients, by MySQL error code, counted where every packet to a client
//! is framed (`wire::framing::PacketWriter`), so idgate's own refusals and relayed backend
//! errors count alike. The label set is bounded: the first `MAX_CODES` distinct codes get a
//! series each, later ones count as `other`. A fixed open-addressing table of atomics keeps
//! counting free of locks.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

/// Distinct codes with a series of their own.
pub const MAX_CODES: usize = 200;
const SLOTS: usize = 256;

pub struct ClientErrors {
    /// (code + 1, 0 = free slot; count).
    slots: Box<[(AtomicU32, AtomicU64)]>,
    used: AtomicUsize,
    other: AtomicU64,
}

impl Default for ClientErrors {
    fn default() -> Self {
        ClientErrors {
            slots: (0..SLOTS)
                .map(|_| (AtomicU32::new(0), AtomicU64::new(0)))
                .collect(),
            used: AtomicUsize::new(0),
            other: AtomicU64::new(0),
        }
    }
}

impl ClientErrors {
    /// Counts an ERR packet with `code`.
    pub fn record(&self, code: u16) {
        let key = u32::from(code) + 1;
        let start = (usize::from(code).wrapping_mul(97)) % SLOTS;
        for probe in 0..SLOTS {
            let (slot_key, count) = &self.slots[(start + probe) % SLOTS];
            let k = slot_key.load(Relaxed);
            if k == key {
                count.fetch_add(1, Relaxed);
                return;
            }
            if k != 0 {
                continue;
            }
            if self.used.fetch_add(1, Relaxed) >= MAX_CODES {
                self.used.fetch_sub(1, Relaxed);
                break;
            }
            match slot_key.compare_exchange(0, key, Relaxed, Relaxed) {
                Ok(_) => {
                    count.fetch_add(1, Relaxed);
                    return;
                }
                Err(other) => {
                    self.used.fetch_sub(1, Relaxed);
                    if other == key {
                        count.fetch_add(1, Relaxed);
                        return;
                    }
                }
            }
        }
        self.other.fetch_add(1, Relaxed);
    }

    /// (code, count) of every code seen, by code, and the `other` count.
    pub fn snapshot(&self) -> (Vec<(u16, u64)>, u64) {
        let mut codes: Vec<(u16, u64)> = self
            .slots
            .iter()
            .filter_map(|(k, c)| {
                let k = k.load(Relaxed);
                let code = u16::try_from(k.checked_sub(1)?).ok()?;
                Some((code, c.load(Relaxed)))
            })
            .collect();
        codes.sort_unstable();
        (codes, self.other.load(Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_beyond_the_cap_count_as_other() {
        let e = ClientErrors::default();
        e.record(1146);
        e.record(1146);
        e.record(0);
        for code in 2000..2000 + MAX_CODES as u16 {
            e.record(code);
        }
        let (codes, other) = e.snapshot();
        assert_eq!(codes.len(), MAX_CODES);
        assert!(codes.contains(&(1146, 2)));
        assert!(codes.contains(&(0, 1)));
        // Two codes did not fit: 2198 and 2199.
        assert_eq!(other, 2);
        e.record(1146);
        assert!(e.snapshot().0.contains(&(1146, 3)));
    }
}
