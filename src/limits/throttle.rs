//! Failed logins per client host. After `max_auth_failures` failures in a row a host must wait
//! before its next connection is served: `auth_backoff_ms`, doubling with each further failure up
//! to `MAX_BACKOFF`. Unlike MariaDB's max_connect_errors the block ends by itself; a successful
//! login clears the host's count, and a host quiet for `FORGET_AFTER` is forgotten.
//! One instance serves every listener (MySQL port, ID service over HTTP and the Redis protocol),
//! so a guesser cannot multiply its attempts by switching protocols.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::wire::errors::{self, SqlError};

/// The longest wait one host can be given.
pub const MAX_BACKOFF: Duration = Duration::from_secs(600);
/// A host with no failure for this long starts from zero again.
const FORGET_AFTER: Duration = Duration::from_secs(3600);
/// Hosts tracked at once; past it the quietest are dropped, so memory stays bounded whatever
/// the number of addresses an attacker uses.
pub const MAX_HOSTS: usize = 10_000;

struct Host {
    failures: u32,
    blocked_until: Option<Instant>,
    last_failure: Instant,
}

pub struct AuthThrottle {
    /// Both follow a reload.
    max_failures: AtomicU32,
    base_ms: AtomicU64,
    hosts: Mutex<HashMap<String, Host>>,
}

impl AuthThrottle {
    pub fn new(max_failures: u32, base: Duration) -> AuthThrottle {
        AuthThrottle {
            max_failures: AtomicU32::new(max_failures),
            base_ms: AtomicU64::new(base.as_millis() as u64),
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// A reload changed `max_auth_failures` / `auth_backoff_ms`.
    pub fn set(&self, max_failures: u32, base: Duration) {
        self.max_failures.store(max_failures, Ordering::Relaxed);
        self.base_ms
            .store(base.as_millis() as u64, Ordering::Relaxed);
    }

    fn hosts(&self) -> std::sync::MutexGuard<'_, HashMap<String, Host>> {
        self.hosts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `Err` (ER_HOST_IS_BLOCKED) while `host` must wait; sent instead of the greeting.
    pub fn check(&self, host: &str) -> Result<(), SqlError> {
        self.check_at(host, Instant::now())
    }

    fn check_at(&self, host: &str, now: Instant) -> Result<(), SqlError> {
        match self.wait_at(host, now) {
            Some(wait) => Err(host_blocked(host, wait)),
            None => Ok(()),
        }
    }

    /// How long `host` must still wait before a login is tried, if it must.
    pub fn wait(&self, host: &str) -> Option<Duration> {
        self.wait_at(host, Instant::now())
    }

    fn wait_at(&self, host: &str, now: Instant) -> Option<Duration> {
        match self.hosts().get(host).and_then(|h| h.blocked_until) {
            Some(until) if until > now => Some(until - now),
            _ => None,
        }
    }

    pub fn failed(&self, host: &str) {
        self.failed_at(host, Instant::now());
    }

    fn failed_at(&self, host: &str, now: Instant) {
        let mut hosts = self.hosts();
        if !hosts.contains_key(host) && hosts.len() >= MAX_HOSTS {
            make_room(&mut hosts, now);
        }
        let h = hosts.entry(host.to_string()).or_insert(Host {
            failures: 0,
            blocked_until: None,
            last_failure: now,
        });
        if now.duration_since(h.last_failure) > FORGET_AFTER {
            h.failures = 0;
        }
        h.failures = h.failures.saturating_add(1);
        h.last_failure = now;
        let max_failures = self.max_failures.load(Ordering::Relaxed);
        if h.failures >= max_failures {
            let doublings = (h.failures - max_failures).min(30);
            let wait = Duration::from_millis(self.base_ms.load(Ordering::Relaxed))
                .checked_mul(1 << doublings)
                .unwrap_or(MAX_BACKOFF)
                .min(MAX_BACKOFF);
            h.blocked_until = Some(now + wait);
        }
    }

    pub fn succeeded(&self, host: &str) {
        self.hosts().remove(host);
    }

    pub fn tracked(&self) -> usize {
        self.hosts().len()
    }
}

/// Drops forgotten hosts; if none, the one whose last failure is oldest.
fn make_room(hosts: &mut HashMap<String, Host>, now: Instant) {
    hosts.retain(|_, h| {
        now.duration_since(h.last_failure) <= FORGET_AFTER
            || h.blocked_until.is_some_and(|u| u > now)
    });
    if hosts.len() >= MAX_HOSTS {
        let oldest = hosts
            .iter()
            .min_by_key(|(_, h)| h.last_failure)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            hosts.remove(&k);
        }
    }
}

/// ER_HOST_IS_BLOCKED with MariaDB's wording, and when to try again instead of flush-hosts.
pub fn host_blocked(host: &str, wait: Duration) -> SqlError {
    SqlError::new(
        errors::ER_HOST_IS_BLOCKED,
        b"HY000",
        format!(
            "Host '{host}' is blocked because of many connection errors; idgate accepts it again in {} ms (max_auth_failures)",
            wait.as_millis().max(1)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_expires_and_resets() {
        let t = AuthThrottle::new(3, Duration::from_millis(100));
        let t0 = Instant::now();
        for _ in 0..2 {
            t.failed_at("h", t0);
        }
        assert!(t.check_at("h", t0).is_ok());
        t.failed_at("h", t0);
        let e = t.check_at("h", t0).expect_err("blocked after 3");
        assert_eq!(e.code, 1129);
        assert!(t.check_at("other", t0).is_ok());
        assert!(t.check_at("h", t0 + Duration::from_millis(101)).is_ok());
        t.failed_at("h", t0 + Duration::from_millis(101));
        assert!(t
            .check_at("h", t0 + Duration::from_millis(101 + 150))
            .is_err());
        assert!(t
            .check_at("h", t0 + Duration::from_millis(101 + 201))
            .is_ok());
        t.succeeded("h");
        t.failed_at("h", t0);
        assert!(t.check_at("h", t0).is_ok());
    }

    #[test]
    fn table_is_bounded() {
        let t = AuthThrottle::new(1, Duration::from_millis(10));
        let t0 = Instant::now();
        for i in 0..(MAX_HOSTS + 500) {
            t.failed_at(&format!("10.0.{}.{}", i / 256, i % 256), t0);
        }
        assert_eq!(t.tracked(), MAX_HOSTS);
    }

    #[test]
    fn backoff_is_capped() {
        let t = AuthThrottle::new(1, Duration::from_secs(1));
        let t0 = Instant::now();
        for _ in 0..100 {
            t.failed_at("h", t0);
        }
        assert!(t.check_at("h", t0 + MAX_BACKOFF).is_ok());
    }
}
