//! Leaf's dynamic step: a range that lasted less than 15 minutes doubles the step (up to
//! `max_step`), one that lasted 30 minutes or more halves it (down to the configured step).

use std::time::Duration;

pub const FAST: Duration = Duration::from_secs(15 * 60);
pub const SLOW: Duration = Duration::from_secs(30 * 60);

pub fn next_step(current: u64, min: u64, max: u64, lasted: Duration) -> u64 {
    let next = if lasted < FAST {
        current.saturating_mul(2)
    } else if lasted >= SLOW {
        current / 2
    } else {
        current
    };
    next.clamp(min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_halves_and_caps() {
        let m = Duration::from_secs(60);
        assert_eq!(next_step(1000, 1000, 4000, m), 2000);
        assert_eq!(next_step(2000, 1000, 4000, m), 4000);
        assert_eq!(next_step(4000, 1000, 4000, m), 4000);
        assert_eq!(next_step(4000, 1000, 4000, 20 * m), 4000);
        assert_eq!(next_step(4000, 1000, 4000, 30 * m), 2000);
        assert_eq!(next_step(1000, 1000, 4000, 31 * m), 1000);
    }
}
