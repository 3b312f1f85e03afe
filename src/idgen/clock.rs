//! Time sources: the wall clock (Unix milliseconds, may jump) and a monotonic clock (never goes
//! back), plus sleeping. `TestClock` lets tests move both and makes sleeps advance virtual time.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

pub trait Clock: Send + Sync + 'static {
    /// Wall-clock time in milliseconds since the Unix epoch. May go backwards.
    fn wall_ms(&self) -> u64;
    /// Monotonic nanoseconds since an arbitrary origin. Never goes backwards.
    fn mono_ns(&self) -> u64;
    /// Waits for `d` (of this clock's time).
    fn sleep(&self, d: Duration) -> Sleep;
}

/// The host's clocks.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

fn origin() -> Instant {
    static O: OnceLock<Instant> = OnceLock::new();
    *O.get_or_init(Instant::now)
}

impl Clock for SystemClock {
    fn wall_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
    fn mono_ns(&self) -> u64 {
        origin().elapsed().as_nanos() as u64
    }
    fn sleep(&self, d: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(d))
    }
}

/// A clock that only moves when told to. `sleep` advances it by the slept duration at once.
#[derive(Debug)]
pub struct TestClock {
    wall: AtomicU64,
    mono: AtomicU64,
}

impl TestClock {
    pub fn new(wall_ms: u64) -> TestClock {
        TestClock {
            wall: AtomicU64::new(wall_ms),
            mono: AtomicU64::new(1_000_000_000),
        }
    }
    /// Moves both clocks forward.
    pub fn advance(&self, d: Duration) {
        self.wall.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
        self.mono.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }
    /// Steps the wall clock back (as NTP or an operator might); the monotonic clock stays.
    pub fn step_back(&self, d: Duration) {
        self.wall.fetch_sub(d.as_millis() as u64, Ordering::SeqCst);
    }
    /// Sets the wall clock; the monotonic clock stays.
    pub fn set_wall_ms(&self, ms: u64) {
        self.wall.store(ms, Ordering::SeqCst);
    }
    /// Moves only the monotonic clock (time passes, but the wall clock is stuck).
    pub fn advance_mono(&self, d: Duration) {
        self.mono.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn wall_ms(&self) -> u64 {
        self.wall.load(Ordering::SeqCst)
    }
    fn mono_ns(&self) -> u64 {
        self.mono.load(Ordering::SeqCst)
    }
    fn sleep(&self, d: Duration) -> Sleep {
        // Round up to whole milliseconds so a sleep always makes the wall clock move.
        let ms = d.as_nanos().div_ceil(1_000_000).max(1) as u64;
        self.advance(Duration::from_millis(ms));
        Box::pin(tokio::task::yield_now())
    }
}
