//! Holding a replication group's writes while its primary changes (`IDGATE SWITCHOVER`, or a
//! primary that stopped answering until another node is promoted): statements of sessions on
//! that backend, and new connections to it, wait in idgate until the hold ends, then go on to
//! the new primary. A wait is bounded in time, and no more than `MAX_HELD` wait at once; past
//! either the client gets MariaDB's lock-wait error.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::wire::errors::SqlError;

/// Most statements waiting at once on one backend.
pub const MAX_HELD: usize = 10_000;
/// MariaDB's ER_LOCK_WAIT_TIMEOUT.
const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;

pub struct WriteGate {
    /// How many holds are on (a switchover's, a failover's).
    held: watch::Sender<u32>,
    /// A switchover is under way.
    switching: std::sync::atomic::AtomicBool,
    waiting: AtomicUsize,
    /// Statements (and connection requests) that waited, for the metrics.
    pub waited: AtomicU64,
}

impl Default for WriteGate {
    fn default() -> WriteGate {
        WriteGate {
            held: watch::channel(0).0,
            switching: Default::default(),
            waiting: AtomicUsize::new(0),
            waited: AtomicU64::new(0),
        }
    }
}

/// The hold; dropping it lets the waiting statements go on.
pub struct GateHold<'a> {
    gate: &'a WriteGate,
}

impl Drop for GateHold<'_> {
    fn drop(&mut self) {
        self.gate.end();
        self.gate.switching.store(false, Ordering::Release);
    }
}

impl WriteGate {
    #[inline]
    pub fn holding(&self) -> bool {
        *self.held.borrow() > 0
    }

    /// Starts a switchover's hold; `None` when one is under way already (one at a time).
    pub fn hold(&self) -> Option<GateHold<'_>> {
        if self.switching.swap(true, Ordering::AcqRel) {
            return None;
        }
        self.begin();
        Some(GateHold { gate: self })
    }

    /// Whether a switchover holds now (it makes the group briefly have no writable node).
    pub fn switching(&self) -> bool {
        self.switching.load(Ordering::Acquire)
    }

    /// Starts a hold that [`WriteGate::end`] ends (the poller's, while no node is writable).
    pub fn begin(&self) {
        self.held.send_modify(|n| *n += 1);
    }

    pub fn end(&self) {
        self.held.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// How many wait now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Waits while held, at most `bound`; `backend` names it in the error.
    pub async fn wait(&self, bound: Duration, backend: &str) -> Result<(), SqlError> {
        if !self.holding() {
            return Ok(());
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= MAX_HELD {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(timeout(backend, "too many statements wait for it"));
        }
        self.waited.fetch_add(1, Ordering::Relaxed);
        let mut rx = self.held.subscribe();
        let r = tokio::time::timeout(bound, rx.wait_for(|held| *held == 0)).await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        match r {
            Ok(_) => Ok(()),
            Err(_) => Err(timeout(backend, "it took longer than the hold's bound")),
        }
    }
}

fn timeout(backend: &str, why: &str) -> SqlError {
    SqlError::new(
        ER_LOCK_WAIT_TIMEOUT,
        b"HY000",
        format!(
            "Lock wait timeout exceeded; try restarting transaction (backend `{backend}` is \
             changing its primary and {why})"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_end_with_the_hold_or_at_the_bound() {
        let gate = WriteGate::default();
        assert!(gate.wait(Duration::ZERO, "b").await.is_ok(), "not held");
        let hold = gate.hold().expect("first hold");
        assert!(gate.hold().is_none(), "one at a time");
        let e = gate.wait(Duration::from_millis(20), "b").await.unwrap_err();
        assert_eq!(e.code, 1205);
        let waiting = gate.wait(Duration::from_secs(5), "b");
        let release = async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            drop(hold);
        };
        let (r, ()) = tokio::join!(waiting, release);
        assert!(r.is_ok());
        assert!(!gate.holding());
        assert_eq!(gate.waited.load(Ordering::Relaxed), 2);
        assert!(gate.hold().is_some(), "held again after the first ended");
        gate.begin();
        let switch = gate
            .hold()
            .expect("a failover's hold does not stop a switchover");
        drop(switch);
        assert!(gate.holding(), "the failover's hold stays");
        gate.end();
        assert!(!gate.holding());
    }
}
