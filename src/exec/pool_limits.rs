//! The part of a backend's pool settings a reload may change (`pool.max_connections`,
//! `pool.acquire_timeout_ms`), shared by the backend's pool and the pools of users' own accounts
//! on it, so one cap bounds the backend whatever the accounts.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

pub struct PoolLimits {
    /// One permit per connection that may be open; `max` of them in circulation.
    permits: Arc<Semaphore>,
    max: AtomicUsize,
    acquire_timeout_ms: AtomicU64,
    /// Permits a shrink could not take back at once (they were in use): taken out of circulation
    /// as sessions give them back.
    owed: Arc<AtomicUsize>,
}

impl PoolLimits {
    pub fn new(max: usize, acquire_timeout_ms: u64) -> Arc<PoolLimits> {
        Arc::new(PoolLimits {
            permits: Arc::new(Semaphore::new(max)),
            max: AtomicUsize::new(max),
            acquire_timeout_ms: AtomicU64::new(acquire_timeout_ms),
            owed: Arc::new(AtomicUsize::new(0)),
        })
    }

    pub fn permits(&self) -> Arc<Semaphore> {
        self.permits.clone()
    }

    pub fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    pub fn acquire_timeout(&self) -> Duration {
        Duration::from_millis(self.acquire_timeout_ms.load(Ordering::Relaxed))
    }

    /// Connections leased now (over every account sharing the cap).
    pub fn in_use(&self) -> usize {
        (self.max() + self.owed.load(Ordering::Relaxed))
            .saturating_sub(self.permits.available_permits())
    }

    /// Applies reloaded settings. Growing adds permits at once; shrinking takes idle permits back
    /// at once and the rest as connections in use are given back (nothing is closed under a
    /// session).
    pub fn set(&self, max: usize, acquire_timeout_ms: u64) {
        self.acquire_timeout_ms
            .store(acquire_timeout_ms, Ordering::Relaxed);
        let old = self.max.swap(max, Ordering::Relaxed);
        if max > old {
            self.permits.add_permits(max - old);
            return;
        }
        let shrink = old - max;
        let taken = self.permits.forget_permits(shrink);
        let rest = shrink - taken;
        if rest == 0 {
            return;
        }
        self.owed.fetch_add(rest, Ordering::Relaxed);
        let (permits, owed) = (self.permits.clone(), self.owed.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                for _ in 0..rest {
                    // Closed only if the pool is gone, and then nothing is owed any more.
                    let Ok(p) = permits.acquire().await else {
                        return;
                    };
                    p.forget();
                    owed.fetch_sub(1, Ordering::Relaxed);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shrinking_waits_for_leases_and_growing_is_immediate() {
        let l = PoolLimits::new(3, 100);
        let a = l.permits().acquire_owned().await.expect("a");
        let b = l.permits().acquire_owned().await.expect("b");
        assert_eq!(l.in_use(), 2);
        l.set(1, 50);
        assert_eq!(l.acquire_timeout(), Duration::from_millis(50));
        assert_eq!((l.max(), l.in_use()), (1, 2));
        drop(a);
        tokio::task::yield_now().await;
        assert_eq!(l.in_use(), 1);
        assert_eq!(l.permits.available_permits(), 0);
        drop(b);
        tokio::task::yield_now().await;
        assert_eq!((l.in_use(), l.permits.available_permits()), (0, 1));
        l.set(4, 50);
        assert_eq!((l.in_use(), l.permits.available_permits()), (0, 4));
    }
}
