//! A small deterministic generator (64-bit LCG) for generated test data and queries, so every
//! run checks the same cases.

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// `value`, or NULL `percent` of the time.
    pub fn or_null(&mut self, percent: u64, value: impl FnOnce(&mut Rng) -> String) -> String {
        let v = value(self);
        if self.below(100) < percent {
            "NULL".into()
        } else {
            v
        }
    }
}
