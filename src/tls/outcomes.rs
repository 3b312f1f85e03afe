//! TLS handshakes with clients by outcome. Process-wide atomics: the handshake runs inside the
//! connection phase (`wire::tls_login`), below anything that knows the proxy's registry; the
//! metrics collector reads them at scrape time.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

pub struct Handshakes {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    pub timed_out: AtomicU64,
}

pub static CLIENT_HANDSHAKES: Handshakes = Handshakes {
    ok: AtomicU64::new(0),
    failed: AtomicU64::new(0),
    timed_out: AtomicU64::new(0),
};

impl Handshakes {
    /// (outcome label, count) for every outcome.
    pub fn snapshot(&self) -> [(&'static str, u64); 3] {
        [
            ("ok", self.ok.load(Relaxed)),
            ("failed", self.failed.load(Relaxed)),
            ("timeout", self.timed_out.load(Relaxed)),
        ]
    }
}
