//! The connections of one listener, counted in all and per client host. A new connection that
//! would pass either cap makes room by closing the oldest *idle* connection (one that has not
//! logged in and is waiting for a request) — of its own host when its host is full, else of
//! the host holding the most; with no idle one to close it is refused. So sockets one host
//! opens and leaves silent can never keep another caller out, nor a working connection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use prometheus_client::metrics::counter::Counter;
use tokio::sync::Notify;

pub struct ConnTable {
    max: usize,
    per_host: usize,
    inner: Mutex<Inner>,
    counts: TableCounts,
}

/// How often the table had to close or refuse a connection (the listener's metrics).
#[derive(Clone, Default)]
pub struct TableCounts {
    /// An idle connection closed to admit a new one.
    pub made_room: Counter,
    /// A new connection refused: the caps were reached by working connections.
    pub full: Counter,
}

#[derive(Default)]
struct Inner {
    /// Ids grow with time, so the smallest is the oldest.
    next: u64,
    conns: HashMap<u64, (IpAddr, Arc<Handle>)>,
    hosts: HashMap<IpAddr, usize>,
}

/// What a connection and its table share: whether it may be closed to make room, and the
/// signal that it was.
#[derive(Default)]
pub struct Handle {
    idle: AtomicBool,
    evicted: AtomicBool,
    notify: Notify,
    waker: Mutex<Option<Waker>>,
}

impl Handle {
    /// Idle: not logged in and waiting for a request, so closing it loses no work.
    pub fn set_idle(&self, idle: bool) {
        self.idle.store(idle, Ordering::Relaxed);
    }

    pub fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// Resolves once the connection was chosen to make room (for one waiting task).
    pub async fn evicted(&self) {
        while !self.is_evicted() {
            self.notify.notified().await;
        }
    }

    /// As [`Handle::evicted`], for poll-based I/O wrappers.
    pub fn poll_evicted(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_evicted() {
            return Poll::Ready(());
        }
        *self.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
        // Evicted between the check and the registration: do not sleep through it.
        if self.is_evicted() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        self.notify.notify_one();
        if let Some(w) = self.waker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            w.wake();
        }
    }
}

/// A connection's place in the table, given back on drop.
pub struct Slot {
    table: Arc<ConnTable>,
    id: u64,
    pub handle: Arc<Handle>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.inner().remove(self.id);
    }
}

impl Inner {
    fn remove(&mut self, id: u64) {
        let Some((host, _)) = self.conns.remove(&id) else {
            return;
        };
        if let Some(n) = self.hosts.get_mut(&host) {
            *n -= 1;
            if *n == 0 {
                self.hosts.remove(&host);
            }
        }
    }

    /// The oldest idle connection of `host`.
    fn oldest_idle(&self, host: IpAddr) -> Option<u64> {
        self.conns
            .iter()
            .filter(|(_, (h, c))| *h == host && c.idle.load(Ordering::Relaxed))
            .map(|(id, _)| *id)
            .min()
    }

    /// The oldest idle connection of the host holding the most connections among hosts with an
    /// idle one; one pass, so a full listener stays cheap to admit into.
    fn idle_of_busiest(&self) -> Option<u64> {
        let mut oldest: HashMap<IpAddr, u64> = HashMap::new();
        for (id, (h, c)) in &self.conns {
            if c.idle.load(Ordering::Relaxed) {
                let e = oldest.entry(*h).or_insert(*id);
                *e = (*e).min(*id);
            }
        }
        oldest
            .into_iter()
            .max_by_key(|(h, id)| {
                (
                    self.hosts.get(h).copied().unwrap_or(0),
                    std::cmp::Reverse(*id),
                )
            })
            .map(|(_, id)| id)
    }

    fn evict(&mut self, id: u64) {
        if let Some((_, c)) = self.conns.get(&id) {
            c.evict();
        }
        self.remove(id);
    }
}

impl ConnTable {
    pub fn new(max: usize, per_host: usize, counts: TableCounts) -> Arc<ConnTable> {
        Arc::new(ConnTable {
            max: max.max(1),
            per_host: per_host.max(1),
            inner: Mutex::new(Inner::default()),
            counts,
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a new connection from `host` (starting idle), making room if need be; `None`
    /// when both caps are reached by connections that are all working.
    pub fn admit(self: &Arc<ConnTable>, host: IpAddr) -> Option<Slot> {
        let mut t = self.inner();
        let victim = if t.hosts.get(&host).copied().unwrap_or(0) >= self.per_host {
            Some(t.oldest_idle(host))
        } else if t.conns.len() >= self.max {
            Some(t.idle_of_busiest())
        } else {
            None
        };
        match victim {
            Some(Some(v)) => {
                t.evict(v);
                self.counts.made_room.inc();
            }
            Some(None) => {
                self.counts.full.inc();
                return None;
            }
            None => {}
        }
        let id = t.next;
        t.next += 1;
        let handle = Arc::new(Handle::default());
        handle.set_idle(true);
        t.conns.insert(id, (host, handle.clone()));
        *t.hosts.entry(host).or_insert(0) += 1;
        Some(Slot {
            table: self.clone(),
            id,
            handle,
        })
    }

    pub fn open(&self) -> usize {
        self.inner().conns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn a_full_host_gives_up_its_oldest_idle_connection() {
        let counts = TableCounts::default();
        let t = ConnTable::new(10, 2, counts.clone());
        let a = t.admit(ip(1)).unwrap();
        let b = t.admit(ip(1)).unwrap();
        a.handle.set_idle(false);
        let c = t.admit(ip(1)).expect("b is idle and makes room");
        assert!(b.handle.is_evicted() && !a.handle.is_evicted());
        c.handle.set_idle(false);
        assert!(t.admit(ip(1)).is_none(), "a and c are working");
        assert!(t.admit(ip(2)).is_some(), "another host has its own cap");
        drop(b);
        assert_eq!(t.open(), 2, "the evicted slot was already given back");
        drop(a);
        assert!(t.admit(ip(1)).is_some());
        assert_eq!((counts.made_room.get(), counts.full.get()), (1, 1));
    }

    #[test]
    fn a_full_listener_closes_an_idle_connection_of_the_busiest_host() {
        let t = ConnTable::new(3, 3, TableCounts::default());
        let quiet = t.admit(ip(1)).unwrap();
        let x = t.admit(ip(2)).unwrap();
        let y = t.admit(ip(2)).unwrap();
        let new = t.admit(ip(3)).expect("room made");
        assert!(x.handle.is_evicted());
        assert!(!quiet.handle.is_evicted() && !y.handle.is_evicted());
        y.handle.set_idle(false);
        quiet.handle.set_idle(false);
        new.handle.set_idle(false);
        assert!(t.admit(ip(4)).is_none(), "every connection is working");
        assert_eq!(t.open(), 3);
    }

    #[tokio::test]
    async fn eviction_wakes_the_connection() {
        let t = ConnTable::new(1, 1, TableCounts::default());
        let a = t.admit(ip(1)).unwrap();
        let h = a.handle.clone();
        let waiter = tokio::spawn(async move { h.evicted().await });
        tokio::task::yield_now().await;
        let _b = t.admit(ip(1)).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("joined");
    }
}
