//! UUIDv7 (RFC 9562): 48-bit Unix milliseconds, version 7, then a 42-bit counter (the 12 bits of
//! `rand_a` and the top 30 bits of `rand_b`, seeded randomly each millisecond, "method 1" of
//! RFC 9562 section 6.2) and 32 random bits. Values are strictly increasing within the process:
//! a clock that goes back keeps the last millisecond, and a full counter borrows the next one.

use std::fmt;
use std::sync::{Arc, Mutex};

use rand::Rng;

use super::clock::Clock;

const COUNTER_BITS: u32 = 42;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uuid7(pub [u8; 16]);

impl Uuid7 {
    /// The 16 bytes, for BINARY(16) columns.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The 36-character hyphenated lower-case form, for CHAR(36) columns.
    pub fn to_hyphenated(&self) -> [u8; 36] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 36];
        let mut j = 0;
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                out[j] = b'-';
                j += 1;
            }
            out[j] = HEX[(b >> 4) as usize];
            out[j + 1] = HEX[(b & 15) as usize];
            j += 2;
        }
        out
    }

    pub fn unix_ms(&self) -> u64 {
        let mut b = [0u8; 8];
        b[2..].copy_from_slice(&self.0[..6]);
        u64::from_be_bytes(b)
    }
}

impl fmt::Display for Uuid7 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.to_hyphenated();
        f.write_str(std::str::from_utf8(&h).map_err(|_| fmt::Error)?)
    }
}

pub struct Uuidv7Gen {
    clock: Arc<dyn Clock>,
    /// (unix ms, counter)
    state: Mutex<(u64, u64)>,
}

fn seed() -> u64 {
    // Top counter bit clear, so a millisecond has at least 2^41 values left.
    rand::rng().random::<u64>() & ((1u64 << (COUNTER_BITS - 1)) - 1)
}

impl Uuidv7Gen {
    pub fn new(clock: Arc<dyn Clock>) -> Uuidv7Gen {
        Uuidv7Gen {
            clock,
            state: Mutex::new((0, 0)),
        }
    }

    /// `n` strictly increasing UUIDv7 values appended to `out`.
    pub fn next_into(&self, n: usize, out: &mut Vec<Uuid7>) {
        out.reserve(n);
        self.generate(n, |u| out.push(u));
    }

    pub fn next(&self) -> Uuid7 {
        let mut one = Uuid7([0; 16]);
        self.generate(1, |u| one = u);
        one
    }

    fn generate(&self, n: usize, mut push: impl FnMut(Uuid7)) {
        let mut rng = rand::rng();
        let now = self.clock.wall_ms() & ((1u64 << 48) - 1);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..n {
            if now > st.0 {
                *st = (now, seed());
            } else {
                st.1 += 1;
                if st.1 >= 1u64 << COUNTER_BITS {
                    *st = (st.0 + 1, seed());
                }
            }
            let (ms, counter) = *st;
            let mut b = [0u8; 16];
            b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
            let ver_rand_a = 0x7000u16 | ((counter >> 30) & 0xfff) as u16;
            b[6..8].copy_from_slice(&ver_rand_a.to_be_bytes());
            let rand_b = ((counter & ((1 << 30) - 1)) << 32) | u64::from(rng.random::<u32>());
            b[8..].copy_from_slice(&((0b10u64 << 62) | rand_b).to_be_bytes());
            push(Uuid7(b));
        }
    }
}
