//! Segment generator (Leaf-segment style): ranges reserved in `idgate_segments`, served from a
//! double buffer, the standby range fetched in the background at `preload_at` of the current one.

mod buffer;
mod step;
mod store;

use crate::idgen::store_pool::StorePool;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use self::buffer::SlotView;
use self::buffer::{Buffers, Range, Switch, Take};
use self::store::SegmentStore;
use super::clock::Clock;
use super::config::SegmentConfig;
use super::error::{IdGenError, Result};
use super::metrics::Metrics;
use super::IdBlock;

pub use self::step::next_step;

/// Largest block one request may ask for.
pub const MAX_BLOCK: u64 = 1 << 32;

pub struct SegmentGen {
    inner: Arc<Inner>,
    task: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
    name: String,
    cfg: SegmentConfig,
    buf: Buffers,
    store: SegmentStore,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    /// Wakes the background fetcher.
    wake_fetcher: Notify,
    /// Wakes requests waiting for a range.
    range_ready: Notify,
    last_error: Mutex<String>,
    shut: AtomicBool,
}

impl SegmentGen {
    /// Prepares the tag's row, reserves the first range and starts the background fetcher.
    pub async fn build(
        name: &str,
        cfg: &SegmentConfig,
        pool: StorePool,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
    ) -> Result<SegmentGen> {
        cfg.validate(name)?;
        let store = SegmentStore::new(
            pool,
            name,
            cfg.tag.as_deref().unwrap_or(name),
            Duration::from_millis(cfg.store_timeout_ms),
        );
        store
            .prepare(cfg.start, cfg.step, cfg.description.as_deref())
            .await?;
        let inner = Arc::new(Inner {
            name: name.to_string(),
            cfg: cfg.clone(),
            buf: Buffers::default(),
            store,
            clock,
            metrics,
            wake_fetcher: Notify::new(),
            range_ready: Notify::new(),
            last_error: Mutex::new(String::new()),
            shut: AtomicBool::new(false),
        });
        let step = u64::from(cfg.step);
        inner.fetch_into_standby(step).await?;
        if let Switch::NotReady = inner.buf.switch(0) {
            return Err(IdGenError::StoreProtocol {
                name: name.to_string(),
                detail: "first range was not installed".into(),
            });
        }
        let task = tokio::spawn(fetcher(inner.clone(), inner.clock.mono_ns(), step));
        Ok(SegmentGen {
            inner,
            task: Mutex::new(Some(task)),
        })
    }

    /// The fast path: a block from the current range, or `None` when the caller must take the
    /// async path (range switch, wait, dedicated range).
    #[inline]
    pub fn try_next_block(&self, n: u64) -> Option<IdBlock> {
        let inner = &*self.inner;
        if n == 0 || n > inner.metrics.current_step.load(Relaxed) {
            return None;
        }
        match inner.buf.take(n) {
            Take::Got { first, preload } => {
                if preload {
                    inner.request_fetch();
                }
                Metrics::add(&inner.metrics.ids_issued, n);
                Some(IdBlock { first, count: n })
            }
            Take::Empty { .. } => None,
        }
    }

    /// `n` contiguous IDs. Waits at most `max_wait_ms` for a range when both buffers are empty.
    pub async fn next_block(&self, n: u64) -> Result<IdBlock> {
        if let Some(b) = self.try_next_block(n) {
            return Ok(b);
        }
        let inner = &*self.inner;
        if inner.shut.load(Acquire) {
            return Err(IdGenError::ShutDown {
                name: inner.name.clone(),
            });
        }
        if n == 0 {
            return Ok(IdBlock { first: 0, count: 0 });
        }
        if n > MAX_BLOCK {
            return Err(IdGenError::BlockTooLarge {
                name: inner.name.clone(),
                requested: n,
                max: MAX_BLOCK,
            });
        }
        if n > inner.metrics.current_step.load(Relaxed) {
            return inner.dedicated(n).await;
        }
        inner.slow(n).await
    }

    /// Hands out no id at or below `floor` from now on (a table this generator starts to fill
    /// holds ids up to it): the store's mark is raised above it, and ranges this process
    /// buffered below it are used up.
    pub async fn raise_above(&self, floor: u64) -> Result<()> {
        let inner = &*self.inner;
        inner
            .store
            .prepare(floor.saturating_add(1), inner.cfg.step, None)
            .await?;
        // Each pass uses up the rest of a buffered range; two ranges are buffered at most.
        for _ in 0..64 {
            if self.peek_next() > floor {
                return Ok(());
            }
            let (left, _) = self.buffered();
            let n = left.clamp(1, self.current_step().max(1));
            self.next_block(n).await?;
        }
        Err(IdGenError::StoreProtocol {
            name: inner.name.clone(),
            detail: format!("ranges stay at or below {floor} after raising the mark"),
        })
    }

    /// Step of the most recent buffered range.
    pub fn current_step(&self) -> u64 {
        self.inner.metrics.current_step.load(Relaxed)
    }

    /// IDs left in the current range and in the standby range (`None`: not fetched yet).
    pub fn buffered(&self) -> (u64, Option<u64>) {
        self.inner.buf.left()
    }

    /// Both buffers' ranges and fill, the current one first; and whether the fetch of the
    /// standby range is under way.
    pub fn slots(&self) -> ([SlotView; 2], bool) {
        let buf = &self.inner.buf;
        (buf.view(), buf.fetch_requested.load(Acquire))
    }

    /// The id the next request starts at, without taking it (a used-up current range gives
    /// its end, below what the next range holds).
    pub fn peek_next(&self) -> u64 {
        self.inner.buf.peek_next()
    }

    /// The tag's row in `idgate_segments`.
    pub fn tag(&self) -> &str {
        &self.inner.store.tag
    }

    /// The last error fetching a range, empty when the last fetch succeeded.
    pub fn last_error(&self) -> String {
        self.inner
            .last_error
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default()
    }

    pub fn shutdown(&self) {
        self.inner.shut.store(true, Release);
        self.inner.wake_fetcher.notify_one();
        if let Some(t) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            t.abort();
        }
    }
}

impl Drop for SegmentGen {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Inner {
    fn request_fetch(&self) {
        if !self.buf.fetch_requested.swap(true, AcqRel) {
            self.wake_fetcher.notify_one();
        }
    }

    async fn fetch_into_standby(&self, step: u64) -> Result<()> {
        let t0 = Instant::now();
        let max = self.store.reserve(step).await?;
        self.metrics.record_fetch(t0.elapsed().as_micros() as u64);
        self.metrics.current_step.store(step, Release);
        self.buf.install(
            Range {
                first: max - step + 1,
                end: max + 1,
            },
            self.cfg.preload_at,
        );
        Ok(())
    }

    async fn dedicated(&self, n: u64) -> Result<IdBlock> {
        let wait = Duration::from_millis(self.cfg.max_wait_ms);
        let t0 = Instant::now();
        let res = tokio::time::timeout(wait, self.store.reserve(n)).await;
        match res {
            Ok(Ok(max)) => {
                self.metrics.record_fetch(t0.elapsed().as_micros() as u64);
                Metrics::add(&self.metrics.ids_issued, n);
                Ok(IdBlock {
                    first: max - n + 1,
                    count: n,
                })
            }
            Ok(Err(e)) => {
                Metrics::add(&self.metrics.store_errors, 1);
                Err(IdGenError::Exhausted {
                    name: self.name.clone(),
                    waited: t0.elapsed(),
                    last_error: e.to_string(),
                })
            }
            Err(_) => Err(IdGenError::Exhausted {
                name: self.name.clone(),
                waited: wait,
                last_error: "the store did not answer in time".into(),
            }),
        }
    }

    async fn slow(&self, n: u64) -> Result<IdBlock> {
        let started = tokio::time::Instant::now();
        let deadline = started + Duration::from_millis(self.cfg.max_wait_ms);
        let mut counted = false;
        loop {
            let notified = self.range_ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.buf.take(n) {
                Take::Got { first, preload } => {
                    if preload {
                        self.request_fetch();
                    }
                    Metrics::add(&self.metrics.ids_issued, n);
                    return Ok(IdBlock { first, count: n });
                }
                Take::Empty { slot } => match self.buf.switch(slot) {
                    Switch::Switched { wasted } => {
                        Metrics::add(&self.metrics.wasted_ids, wasted);
                        continue;
                    }
                    Switch::NotReady => {
                        if !counted {
                            counted = true;
                            Metrics::add(&self.metrics.empty_buffer_waits, 1);
                        }
                        self.request_fetch();
                        // Wait in slices, re-asking for the fetch each time, until the deadline.
                        let slice =
                            (tokio::time::Instant::now() + Duration::from_millis(50)).min(deadline);
                        if tokio::time::timeout_at(slice, notified).await.is_err()
                            && tokio::time::Instant::now() >= deadline
                        {
                            let last_error = self
                                .last_error
                                .lock()
                                .map(|e| e.clone())
                                .unwrap_or_default();
                            return Err(IdGenError::Exhausted {
                                name: self.name.clone(),
                                waited: started.elapsed(),
                                last_error: if last_error.is_empty() {
                                    "none yet, the store is slow".into()
                                } else {
                                    last_error
                                },
                            });
                        }
                    }
                },
            }
        }
    }
}

/// Background task: fills the standby slot when asked, retrying with backoff while the store is down.
async fn fetcher(inner: Arc<Inner>, mut last_fetch_ns: u64, mut step: u64) {
    let min = u64::from(inner.cfg.step);
    let max = u64::from(inner.cfg.max_step);
    let mut backoff = Duration::from_millis(20);
    loop {
        if inner.shut.load(Acquire) {
            return;
        }
        if inner.buf.standby_ready() {
            inner.buf.fetch_requested.store(false, Release);
            inner.wake_fetcher.notified().await;
            continue;
        }
        if !inner.buf.fetch_requested.load(Acquire) {
            inner.wake_fetcher.notified().await;
            continue;
        }
        let now = inner.clock.mono_ns();
        let next = if inner.cfg.dynamic_step {
            next_step(
                step,
                min,
                max,
                Duration::from_nanos(now.saturating_sub(last_fetch_ns)),
            )
        } else {
            min
        };
        match inner.fetch_into_standby(next).await {
            Ok(()) => {
                step = next;
                last_fetch_ns = now;
                backoff = Duration::from_millis(20);
                inner.buf.fetch_requested.store(false, Release);
                inner.range_ready.notify_waiters();
                if let Ok(mut e) = inner.last_error.lock() {
                    e.clear();
                }
            }
            Err(e) => {
                Metrics::add(&inner.metrics.store_errors, 1);
                tracing::warn!(generator = %inner.name, error = %e, "segment range fetch failed; retrying");
                if let Ok(mut le) = inner.last_error.lock() {
                    *le = e.to_string();
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
        }
    }
}
