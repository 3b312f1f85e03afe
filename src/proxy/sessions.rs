//! The live sessions, for `SHOW IDGATE SESSIONS`: each session registers at login and keeps its
//! entry current with a few atomic stores per command; the database and user (which change
//! rarely) sit behind a mutex taken only when they change or when the list is read.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use dashmap::DashMap;
use mysql_common::constants::{Command, StatusFlags};

use super::end_signal::{EndSignal, Poked};
use crate::exec::conns::Published;

pub struct Registry {
    sessions: DashMap<u32, Arc<Info>>,
    /// How far a reading of the coarse clock may trail real time, in whole ms: an idle time
    /// measured with it must pass a session's limit by this much before the session ends.
    coarse_slack_ms: u64,
    /// idgate is shutting down: idle sessions end (`stop_all`).
    stopping: AtomicBool,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            sessions: DashMap::new(),
            coarse_slack_ms: coarse_resolution_ms(),
            stopping: AtomicBool::new(false),
        }
    }
}

/// What one session shows.
pub struct Info {
    pub id: u32,
    pub host: String,
    user: Mutex<String>,
    db: Mutex<Option<String>>,
    /// The command byte being run, or `IDLE`.
    command: AtomicU8,
    /// `coarse_ms` when the session entered its current state.
    since_ms: AtomicU64,
    in_txn: AtomicBool,
    /// Why the session keeps its backend connections (`pool.mode: transaction`): 1 + the
    /// reason's index in `sql::PIN_REASONS`, 0 for none.
    pinned: AtomicU8,
    /// How long the session may sit idle (its wait_timeout), in ms.
    idle_limit_ms: AtomicU64,
    /// `end_idle` found the session idle past `idle_limit_ms` and woke it to end.
    idle_expired: AtomicBool,
    /// The backend threads of the session's connections, for `KILL`.
    conns: Arc<Published>,
    /// `KILL CONNECTION` from another session, shutdown, or the idle limit: end this one
    /// (`killed` for a session that is never idle long enough to be woken, e.g. a client that
    /// pipelines its commands).
    end: Arc<EndSignal>,
    killed: AtomicBool,
}

impl Info {
    pub fn user(&self) -> String {
        self.user.lock().map(|u| u.clone()).unwrap_or_default()
    }

    pub fn conns(&self) -> &Published {
        &self.conns
    }

    /// KILL CONNECTION is under way: the session's backend threads are about to be killed, so
    /// a connection that fails under its statement now ends it without an answer, as MariaDB
    /// closes a killed connection. [`end`](Self::end) wakes it once they are.
    pub fn mark_killed(&self) {
        self.killed.store(true, Ordering::Relaxed);
    }

    /// Asks the session to end (it does at once when idle, else when its command ends).
    pub fn end(&self) {
        self.killed.store(true, Ordering::Relaxed);
        self.end.poke();
    }
}

/// No command running (MySQL's COM_SLEEP, shown as `Sleep`).
const IDLE: u8 = Command::COM_SLEEP as u8;

/// One row of `SHOW IDGATE SESSIONS`.
pub struct Row {
    pub id: u32,
    pub user: String,
    pub host: String,
    pub db: Option<String>,
    pub command: &'static str,
    pub time_s: u64,
    pub in_transaction: bool,
    /// Why it keeps its backend connections, when sessions share them.
    pub pinned: Option<&'static str>,
}

/// A session's registration; removes the entry when dropped.
pub struct Entry {
    info: Arc<Info>,
    /// The registry's owner, which outlives every session.
    proxy: Arc<crate::proxy::Proxy>,
    /// The database last written to `info`, so an unchanged one costs no lock.
    shown_db: Option<Vec<u8>>,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        coarse_ms()
    }

    /// Whether `since_ms` lies more than `limit_ms` before `now` (never early, despite the
    /// coarse clock: see `coarse_slack_ms`).
    fn past(&self, now: u64, since_ms: u64, limit_ms: u64) -> bool {
        now.saturating_sub(since_ms) > limit_ms.saturating_add(self.coarse_slack_ms)
    }

    /// Shutdown: every session ends once idle, through the waiter it already has for KILL (one
    /// waiter per session instead of each idle wait also polling a watch all sessions share). A
    /// session registered after this sees `stopping` before its first command.
    pub fn stop_all(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for s in self.sessions.iter() {
            s.end.poke();
        }
    }

    /// Whether `stop_all` ran.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Wakes every session that has sat idle past its wait_timeout, to end (it checks again
    /// itself: it may have started a command since). One pass over the sessions bounds every
    /// idle wait, instead of each wait reading the clock and polling a timer of its own.
    pub fn end_idle(&self) {
        let now = self.now_ms();
        for s in self.sessions.iter() {
            let since_ms = s.since_ms.load(Ordering::Relaxed);
            if s.command.load(Ordering::Relaxed) == IDLE
                && self.past(now, since_ms, s.idle_limit_ms.load(Ordering::Relaxed))
                && !s.idle_expired.swap(true, Ordering::Relaxed)
            {
                s.end.poke();
            }
        }
    }

    /// Every session, by id.
    pub fn rows(&self) -> Vec<Row> {
        let now = self.now_ms();
        let mut rows: Vec<Row> = self
            .sessions
            .iter()
            .map(|e| {
                let i = e.value();
                Row {
                    id: i.id,
                    user: i.user.lock().map(|u| u.clone()).unwrap_or_default(),
                    host: i.host.clone(),
                    db: i.db.lock().ok().and_then(|d| d.clone()),
                    command: command_name(i.command.load(Ordering::Relaxed)),
                    time_s: now.saturating_sub(i.since_ms.load(Ordering::Relaxed)) / 1000,
                    in_transaction: i.in_txn.load(Ordering::Relaxed),
                    pinned: (i.pinned.load(Ordering::Relaxed) as usize)
                        .checked_sub(1)
                        .and_then(|r| crate::sql::PIN_REASONS.get(r).copied()),
                }
            })
            .collect();
        rows.sort_by_key(|r| r.id);
        rows
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// The session with id `id`.
    pub fn find(&self, id: u32) -> Option<Arc<Info>> {
        self.sessions.get(&id).map(|e| e.value().clone())
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

impl Entry {
    /// Registers a logged-in session.
    pub fn register(
        proxy: &Arc<crate::proxy::Proxy>,
        id: u32,
        user: &[u8],
        host: &str,
        db: Option<&[u8]>,
    ) -> Entry {
        let r = &proxy.sessions;
        let info = Arc::new(Info {
            id,
            host: host.to_string(),
            user: Mutex::new(String::from_utf8_lossy(user).into_owned()),
            db: Mutex::new(db.map(|d| String::from_utf8_lossy(d).into_owned())),
            command: AtomicU8::new(IDLE),
            since_ms: AtomicU64::new(r.now_ms()),
            in_txn: AtomicBool::new(false),
            pinned: AtomicU8::new(0),
            idle_limit_ms: AtomicU64::new(u64::MAX),
            idle_expired: AtomicBool::new(false),
            conns: Arc::default(),
            end: Arc::default(),
            killed: AtomicBool::new(false),
        });
        r.sessions.insert(id, info.clone());
        Entry {
            info,
            proxy: proxy.clone(),
            shown_db: db.map(<[u8]>::to_vec),
        }
    }

    pub fn id(&self) -> u32 {
        self.info.id
    }

    /// Where the session shows its backend connections to `KILL`.
    pub fn published(&self) -> Arc<Published> {
        self.info.conns.clone()
    }

    /// Resolves when another session killed this one's connection. Awaited across commands
    /// (one waiter registered for the session's life, not one per command).
    pub fn ended(&self) -> Poked {
        Poked::new(self.info.end.clone())
    }

    /// Whether another session killed this one's connection.
    pub fn killed(&self) -> bool {
        self.info.killed.load(Ordering::Relaxed)
    }

    /// The session starts waiting for its next command, for at most `limit` (its wait_timeout).
    pub fn waiting(&self, limit: std::time::Duration) {
        let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        self.info.idle_limit_ms.store(limit_ms, Ordering::Relaxed);
        self.info
            .since_ms
            .store(self.proxy.sessions.now_ms(), Ordering::Relaxed);
    }

    /// Woken by `Registry::end_idle`: whether the session, idle now, still is past its limit
    /// (it may have run a command since it was found so).
    pub fn idle_expired(&self) -> bool {
        if !self.info.idle_expired.swap(false, Ordering::Relaxed) {
            return false;
        }
        let r = &self.proxy.sessions;
        // MariaDB never ends a session early.
        r.past(
            r.now_ms(),
            self.info.since_ms.load(Ordering::Relaxed),
            self.info.idle_limit_ms.load(Ordering::Relaxed),
        )
    }

    /// A command starts.
    pub fn busy(&self, command: u8) {
        self.info.command.store(command, Ordering::Relaxed);
        self.info
            .since_ms
            .store(self.proxy.sessions.now_ms(), Ordering::Relaxed);
    }

    /// The command ended: idle, with the session's status flags and, if the command changed
    /// it, its database (idle since `waiting`, once its answer is sent).
    pub fn idle(&mut self, status: u16, db: Option<&Option<Vec<u8>>>) {
        self.info.command.store(IDLE, Ordering::Relaxed);
        let in_txn =
            StatusFlags::from_bits_retain(status).contains(StatusFlags::SERVER_STATUS_IN_TRANS);
        self.info.in_txn.store(in_txn, Ordering::Relaxed);
        if let Some(db) = db.filter(|db| **db != self.shown_db) {
            self.shown_db = db.clone();
            if let Ok(mut d) = self.info.db.lock() {
                *d = db
                    .as_deref()
                    .map(|d| String::from_utf8_lossy(d).into_owned());
            }
        }
    }

    /// Why the session keeps its backend connections now (`None`: it lends them out).
    pub fn pinned(&self, reason: Option<&str>) {
        let i = reason
            .and_then(|r| crate::sql::PIN_REASONS.iter().position(|p| *p == r))
            .map_or(0, |i| i as u8 + 1);
        self.info.pinned.store(i, Ordering::Relaxed);
    }

    /// COM_CHANGE_USER succeeded.
    pub fn set_user(&self, user: &[u8]) {
        if let Ok(mut u) = self.info.user.lock() {
            *u = String::from_utf8_lossy(user).into_owned();
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.proxy.sessions.sessions.remove(&self.info.id);
    }
}

/// The name MySQL's PROCESSLIST gives a command.
fn command_name(c: u8) -> &'static str {
    use Command::*;
    const fn b(c: Command) -> u8 {
        c as u8
    }
    match c {
        x if x == b(COM_SLEEP) => "Sleep",
        x if x == b(COM_QUERY) => "Query",
        x if x == b(COM_INIT_DB) => "Init DB",
        x if x == b(COM_FIELD_LIST) => "Field List",
        x if x == b(COM_STATISTICS) => "Statistics",
        x if x == b(COM_PING) => "Ping",
        x if x == b(COM_CHANGE_USER) => "Change user",
        x if x == b(COM_STMT_PREPARE) => "Prepare",
        x if x == b(COM_STMT_EXECUTE) => "Execute",
        x if x == b(COM_STMT_SEND_LONG_DATA) => "Long Data",
        x if x == b(COM_STMT_CLOSE) => "Close stmt",
        x if x == b(COM_STMT_RESET) => "Reset stmt",
        x if x == b(COM_SET_OPTION) => "Set option",
        x if x == b(COM_STMT_FETCH) => "Fetch",
        x if x == b(COM_RESET_CONNECTION) => "Reset connection",
        x if x == b(COM_QUIT) => "Quit",
        _ => "Unknown",
    }
}

/// How often idle sessions are looked at: a session ends at the first look past its wait_timeout
/// (later when the main thread's event loop, which runs the looks, is held up).
const IDLE_SWEEP: std::time::Duration = std::time::Duration::from_millis(250);

/// Ends sessions idle past their wait_timeout, for as long as idgate runs (`Registry::end_idle`).
pub fn sweep_idle(proxy: &Arc<crate::proxy::Proxy>) {
    let proxy = Arc::downgrade(proxy);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(IDLE_SWEEP);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(proxy) = proxy.upgrade() else {
                return;
            };
            // Shutdown ends idle sessions itself (`stop_all`).
            if proxy.sessions.stopping() {
                return;
            }
            proxy.sessions.end_idle();
        }
    });
}

/// ms on `CLOCK_MONOTONIC_COARSE`: read without the cycle counter, exact to the kernel's
/// tick, which is all the list (whole seconds) and the idle check (every 250 ms) need. Two
/// readings per command instead of two precise readings and three subtractions.
fn coarse_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill; the clock exists on every Linux
    // idgate runs on (since 2.6.32), and on failure `ts` stays zero (no session ends early).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1000)
        .saturating_add(ts.tv_nsec as u64 / 1_000_000)
}

/// How coarse `coarse_ms` is, rounded up to whole ms (1 ms more for the rounding of each
/// reading is already covered by "strictly past").
fn coarse_resolution_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as in `coarse_ms`; on failure a conservative 10 ms (the tick at HZ=100).
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if rc != 0 {
        return 10;
    }
    let ns = (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64);
    ns.div_ceil(1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_commands_as_processlist_does() {
        assert_eq!(command_name(IDLE), "Sleep");
        assert_eq!(command_name(Command::COM_QUERY as u8), "Query");
        assert_eq!(command_name(Command::COM_STMT_EXECUTE as u8), "Execute");
        assert_eq!(command_name(0xee), "Unknown");
    }
}
