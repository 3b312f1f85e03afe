//! The double buffer of reserved ranges. Taking a block is a CAS on the current slot's `next`;
//! switching slots and refilling the standby slot happen under a short, never-awaited lock.
//!
//! Why stale readers are safe: ranges of one generator only ever increase, so a slot's `next`
//! never returns to a value it had before; a thread that read a slot before a refill fails its CAS.
//! A refill writes `next` before `end`, so no reader sees an old `next` with a new `end` and wins.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;

#[derive(Debug, Default)]
struct Slot {
    /// The range's first id (only read by `view`).
    first: AtomicU64,
    next: AtomicU64,
    /// Exclusive end.
    end: AtomicU64,
    /// `next` value at which the standby range should be fetched.
    preload_mark: AtomicU64,
}

/// One slot as the operator's console draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotView {
    /// The range `[first, end)` it holds (or held, once used up).
    pub first: u64,
    pub end: u64,
    /// The id the next take from it starts at.
    pub next: u64,
    /// Where taking from it asks for the standby range.
    pub preload_mark: u64,
    /// It is the slot ids are taken from now.
    pub current: bool,
    /// For the standby slot: a fetched range waits in it.
    pub ready: bool,
}

/// A range `[first, end)` of reserved IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub first: u64,
    pub end: u64,
}

#[derive(Debug, Default)]
pub struct Buffers {
    slots: [Slot; 2],
    cur: AtomicUsize,
    standby_ready: AtomicBool,
    /// Set when a fetch of the standby range has been asked for and not yet finished.
    pub fetch_requested: AtomicBool,
    lock: Mutex<()>,
}

pub enum Take {
    /// First ID of the block; `preload` says the standby range should be fetched now.
    Got { first: u64, preload: bool },
    /// The current slot has too few IDs left; `slot` is the slot index that was tried.
    Empty { slot: usize },
}

pub enum Switch {
    Switched { wasted: u64 },
    NotReady,
}

impl Buffers {
    #[inline]
    pub fn take(&self, n: u64) -> Take {
        let i = self.cur.load(Acquire);
        let s = &self.slots[i];
        let mut next = s.next.load(Acquire);
        loop {
            let end = s.end.load(Acquire);
            let Some(after) = next.checked_add(n) else {
                return Take::Empty { slot: i };
            };
            if after > end {
                return Take::Empty { slot: i };
            }
            match s.next.compare_exchange_weak(next, after, AcqRel, Acquire) {
                Ok(_) => {
                    let preload = after >= s.preload_mark.load(Relaxed)
                        && !self.standby_ready.load(Relaxed)
                        && !self.fetch_requested.load(Relaxed);
                    return Take::Got {
                        first: next,
                        preload,
                    };
                }
                Err(actual) => next = actual,
            }
        }
    }

    /// Makes the standby range current if it is ready and slot `tried` is still current.
    pub fn switch(&self, tried: usize) -> Switch {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let i = self.cur.load(Acquire);
        if i != tried {
            return Switch::Switched { wasted: 0 };
        }
        if !self.standby_ready.load(Acquire) {
            return Switch::NotReady;
        }
        let s = &self.slots[i];
        let wasted = s.end.load(Acquire).saturating_sub(s.next.load(Acquire));
        self.cur.store(1 - i, Release);
        self.standby_ready.store(false, Release);
        Switch::Switched { wasted }
    }

    /// Stores a freshly reserved range into the standby slot (made current by `switch`).
    pub fn install(&self, r: Range, preload_at: f64) {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mark = r.first + (((r.end - r.first) as f64 * preload_at) as u64).max(1);
        let i = self.cur.load(Acquire);
        let j = 1 - i;
        let s = &self.slots[j];
        s.first.store(r.first, Release);
        s.next.store(r.first, Release);
        s.end.store(r.end, Release);
        s.preload_mark.store(mark, Release);
        self.standby_ready.store(true, Release);
    }

    /// The id the next take starts at (the current range's next; past its end when used up).
    pub fn peek_next(&self) -> u64 {
        let i = self.cur.load(Acquire);
        self.slots[i].next.load(Acquire)
    }

    pub fn standby_ready(&self) -> bool {
        self.standby_ready.load(Acquire)
    }

    /// Both slots, the current one first (read under the lock, so no refill is half seen).
    pub fn view(&self) -> [SlotView; 2] {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let i = self.cur.load(Acquire);
        let one = |j: usize| {
            let s = &self.slots[j];
            SlotView {
                first: s.first.load(Acquire),
                end: s.end.load(Acquire),
                next: s.next.load(Acquire),
                preload_mark: s.preload_mark.load(Acquire),
                current: j == i,
                ready: j == i || self.standby_ready.load(Acquire),
            }
        };
        [one(i), one(1 - i)]
    }

    /// IDs left in the current range and in the standby range (`None` when none is ready).
    pub fn left(&self) -> (u64, Option<u64>) {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let left = |s: &Slot| s.end.load(Acquire).saturating_sub(s.next.load(Acquire));
        let i = self.cur.load(Acquire);
        let standby = self.standby_ready().then(|| left(&self.slots[1 - i]));
        (left(&self.slots[i]), standby)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_follows_install_take_and_switch() {
        let b = Buffers::default();
        b.install(Range { first: 1, end: 101 }, 0.9);
        assert!(matches!(b.switch(0), Switch::Switched { .. }));
        assert!(matches!(b.take(30), Take::Got { first: 1, .. }));
        let [cur, standby] = b.view();
        assert_eq!((cur.first, cur.end, cur.next), (1, 101, 31));
        assert_eq!(cur.preload_mark, 91);
        assert!(cur.current && cur.ready);
        assert!(!standby.current && !standby.ready);
        b.install(
            Range {
                first: 201,
                end: 301,
            },
            0.9,
        );
        let [cur, standby] = b.view();
        assert_eq!(cur.next, 31);
        assert_eq!((standby.first, standby.next, standby.end), (201, 201, 301));
        assert!(standby.ready);
        // The standby becomes current: the view's first slot is always the current one.
        let [cur, _] = b.view();
        assert!(matches!(
            b.switch(b.cur.load(Acquire)),
            Switch::Switched { wasted: 70 }
        ));
        let [now, before] = b.view();
        assert_eq!(now.first, 201);
        assert_eq!(before.first, cur.first);
        assert!(!before.ready);
    }
}
