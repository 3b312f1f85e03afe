//! Connections lent out between transactions (`pool.mode: transaction`). A session done with a
//! statement parks its connection here instead of giving it back: if nobody needs it, the
//! session takes it back for its next statement as it left it (no reset, no SET replayed, no
//! round trip). A session that finds the pool full takes the connection parked longest ago;
//! its owner then learns, on its next statement, that the connection is gone and what of its
//! answers went with it, and takes another.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, OwnedMutexGuard};

/// What the owner of a parked connection learns when another session took it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Taken {
    /// The connection's LAST_INSERT_ID() as the owner left it (read before it was reset).
    pub last_insert_id: u64,
}

enum State<T> {
    Parked(T),
    Taken(Taken),
    /// Back with its owner, or dropped with its ticket.
    Gone,
}

struct Spot<T> {
    seq: u64,
    /// A tokio mutex: the taker holds it while it reads the owner's answers off the connection,
    /// so an owner coming back waits for what it must learn rather than missing it.
    state: Arc<tokio::sync::Mutex<State<T>>>,
}

/// The parked connections of one connection cap (a backend's pool and its users' pools).
pub struct ParkingLot<T> {
    /// Oldest first.
    spots: Mutex<BTreeMap<u64, Arc<tokio::sync::Mutex<State<T>>>>>,
    next: std::sync::atomic::AtomicU64,
    /// Woken when a connection is parked, for a session waiting on a full pool.
    parked: Notify,
}

impl<T> Default for ParkingLot<T> {
    fn default() -> Self {
        ParkingLot {
            spots: Mutex::new(BTreeMap::new()),
            next: Default::default(),
            parked: Notify::new(),
        }
    }
}

/// A session's claim on the connection it parked.
pub struct Ticket<T> {
    spot: Spot<T>,
    lot: Arc<ParkingLot<T>>,
}

/// A parked connection another session took, with the means to tell its owner what it read.
pub struct TakenOver<T> {
    pub conn: T,
    guard: OwnedMutexGuard<State<T>>,
}

impl<T> TakenOver<T> {
    /// Tells the owner what of its answers it can carry on with, and lets the owner go on.
    pub fn tell_owner(mut self, taken: Taken) -> T {
        *self.guard = State::Taken(taken);
        self.conn
    }
}

impl<T> ParkingLot<T> {
    /// Parks `conn`; its owner keeps the ticket.
    pub fn park(self: &Arc<Self>, conn: T) -> Ticket<T> {
        let seq = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = Arc::new(tokio::sync::Mutex::new(State::Parked(conn)));
        if let Ok(mut spots) = self.spots.lock() {
            spots.insert(seq, state.clone());
        }
        self.parked.notify_one();
        Ticket {
            spot: Spot { seq, state },
            lot: self.clone(),
        }
    }

    /// The connection parked longest ago, if any; its owner waits until the taker has told it
    /// what it read (`TakenOver::tell_owner`).
    pub fn take_oldest(&self) -> Option<TakenOver<T>> {
        loop {
            let (_, state) = self.spots.lock().ok()?.pop_first()?;
            // Its owner is taking it back this moment: it is the owner's.
            let Ok(mut guard) = state.try_lock_owned() else {
                continue;
            };
            match std::mem::replace(&mut *guard, State::Gone) {
                State::Parked(conn) => return Some(TakenOver { conn, guard }),
                other => *guard = other,
            }
        }
    }

    /// Connections parked now.
    pub fn len(&self) -> usize {
        self.spots.lock().map_or(0, |s| s.len())
    }

    /// Whether no connection is parked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves when a connection is parked (or was, since the last wait).
    pub async fn wait_parked(&self) {
        self.parked.notified().await
    }

    fn unlist(&self, seq: u64) {
        if let Ok(mut spots) = self.spots.lock() {
            spots.remove(&seq);
        }
    }
}

impl<T> Ticket<T> {
    /// The connection back as the owner left it, or what the session that took it read.
    pub async fn reclaim(self) -> Result<T, Taken> {
        let mut state = self.spot.state.lock().await;
        match std::mem::replace(&mut *state, State::Gone) {
            State::Parked(conn) => {
                self.lot.unlist(self.spot.seq);
                Ok(conn)
            }
            State::Taken(t) => Err(t),
            State::Gone => Err(Taken::default()),
        }
    }
}

impl<T> Drop for Ticket<T> {
    /// The owner ends without its connection: it goes where a connection given up goes (the
    /// item's own drop); one being taken this moment is the taker's.
    fn drop(&mut self) {
        let conn = match self.spot.state.try_lock() {
            Ok(mut state) => match std::mem::replace(&mut *state, State::Gone) {
                State::Parked(conn) => Some(conn),
                _ => None,
            },
            Err(_) => None,
        };
        if conn.is_some() {
            self.lot.unlist(self.spot.seq);
        }
        drop(conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_owner_gets_its_connection_back_unless_another_took_it() {
        let lot: Arc<ParkingLot<u32>> = Arc::default();
        let a = lot.park(1);
        let b = lot.park(2);
        assert_eq!(lot.len(), 2);
        assert_eq!(a.reclaim().await, Ok(1));
        assert_eq!(lot.len(), 1);
        // The oldest still parked is b's.
        let took = lot.take_oldest().expect("b's connection");
        assert_eq!(took.conn, 2);
        let owner = tokio::spawn(b.reclaim());
        tokio::task::yield_now().await;
        // b waits until the taker says what it read.
        assert!(!owner.is_finished());
        let conn = took.tell_owner(Taken { last_insert_id: 7 });
        assert_eq!(conn, 2);
        assert_eq!(
            owner.await.expect("joined"),
            Err(Taken { last_insert_id: 7 })
        );
        assert!(lot.take_oldest().is_none());
        assert!(lot.is_empty());
    }

    #[tokio::test]
    async fn a_dropped_ticket_lets_its_connection_go() {
        let lot: Arc<ParkingLot<Arc<()>>> = Arc::default();
        let conn = Arc::new(());
        let t = lot.park(conn.clone());
        assert_eq!(Arc::strong_count(&conn), 2);
        drop(t);
        assert_eq!(Arc::strong_count(&conn), 1);
        assert!(lot.is_empty() && lot.take_oldest().is_none());
    }
}
