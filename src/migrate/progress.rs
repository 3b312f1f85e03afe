//! How far one source backend's copy and catch-up are, shared between the task doing the work,
//! the job's supervisor and `IDGATE MIGRATE STATUS`.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32};
use std::sync::Mutex;

use super::binlog::gtid::Position;
use super::binlog::hold::Hold;

#[derive(Debug, Default)]
pub struct StreamProgress {
    pub rows_copied: AtomicI64,
    pub rows_estimated: AtomicI64,
    pub copy_done: AtomicBool,
    /// Row changes applied by the catch-up (this run and the ones before).
    pub events_applied: AtomicI64,
    /// Event groups the source has written that are not applied yet (-1: not measured yet).
    pub lag_events: AtomicI64,
    /// Seconds between now and the source's time of the oldest group not applied.
    pub lag_seconds: AtomicI64,
    /// The last error the task met (it retries), cleared by progress.
    pub last_error: Mutex<Option<String>>,
    /// The binlog position applied through.
    applied: Mutex<Position>,
    /// The source's time (Unix seconds) of the last group applied.
    pub last_group_time: AtomicU32,
    /// The source's position at the last measure of the lag.
    pub measured: Mutex<Option<Position>>,
    /// VERIFY's hold of the catch-up at a point of the source's binlog.
    pub hold: Hold,
}

impl StreamProgress {
    pub fn new() -> StreamProgress {
        StreamProgress {
            lag_events: AtomicI64::new(-1),
            ..Default::default()
        }
    }

    pub fn set_error(&self, e: Option<String>) {
        if let Ok(mut g) = self.last_error.lock() {
            *g = e;
        }
    }

    pub fn set_applied(&self, p: &Position) {
        if let Ok(mut g) = self.applied.lock() {
            *g = p.clone();
        }
    }

    pub fn applied(&self) -> Position {
        self.applied.lock().map(|g| g.clone()).unwrap_or_default()
    }

    pub fn error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|g| g.clone())
    }
}
