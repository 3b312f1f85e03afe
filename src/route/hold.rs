//! Statements about a table being switched wait in idgate until the switch ends, then run on
//! the placement that holds the table then: the client sees a short pause, not an error. A
//! statement waits at most the hold's bound, and no more than a bounded number wait at once;
//! past either the client gets MariaDB's lock-wait error. Statements of an open transaction
//! are not held (the transaction may hold the table's metadata lock the switch waits for).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::wire::errors::SqlError;

/// Longest a statement waits for a switch.
pub const HOLD_TIMEOUT: Duration = Duration::from_secs(10);
/// Most statements waiting at once (across sessions).
pub const MAX_HELD: usize = 10_000;
/// MariaDB's ER_LOCK_WAIT_TIMEOUT.
const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;

struct Held {
    id: u64,
    schema: String,
    table: String,
    released: watch::Receiver<bool>,
}

#[derive(Default)]
pub struct Holds {
    active: AtomicBool,
    held: Mutex<Vec<Held>>,
    waiting: AtomicUsize,
    next_id: AtomicU64,
    /// Holds for switches another instance runs (`cluster_hold`), by `schema.table`.
    remote: Mutex<HashMap<String, (u64, watch::Sender<bool>)>>,
}

/// Holding one table; dropping it releases the statements waiting.
pub struct Hold<'a> {
    holds: &'a Holds,
    id: u64,
    release: watch::Sender<bool>,
    pub since: Instant,
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        self.holds.end(self.id, &self.release);
    }
}

impl Holds {
    /// Whether any table is held (the one check every statement pays).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Starts holding statements that name `schema`.`table`.
    pub fn hold(&self, schema: &str, table: &str) -> Hold<'_> {
        let (id, release) = self.begin(schema, table);
        Hold {
            holds: self,
            id,
            release,
            since: Instant::now(),
        }
    }

    fn begin(&self, schema: &str, table: &str) -> (u64, watch::Sender<bool>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (release, released) = watch::channel(false);
        if let Ok(mut h) = self.held.lock() {
            h.push(Held {
                id,
                schema: schema.into(),
                table: table.into(),
                released,
            });
            self.active.store(true, Ordering::Release);
        }
        (id, release)
    }

    fn end(&self, id: u64, release: &watch::Sender<bool>) {
        if let Ok(mut h) = self.held.lock() {
            h.retain(|x| x.id != id);
            self.active.store(!h.is_empty(), Ordering::Release);
        }
        let _ = release.send(true);
    }

    /// Starts holding `key` (`schema.table`) for a switch another instance runs, until
    /// [`Holds::release_remote`]; false when it is held so already.
    pub fn hold_remote(&self, key: &str) -> bool {
        let Ok(mut remote) = self.remote.lock() else {
            return false;
        };
        if remote.contains_key(key) {
            return false;
        }
        let (schema, table) = key.split_once('.').unwrap_or(("", key));
        remote.insert(key.to_string(), self.begin(schema, table));
        true
    }

    /// The tables held for other instances' switches.
    pub fn remote_keys(&self) -> Vec<String> {
        self.remote
            .lock()
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Ends the hold [`Holds::hold_remote`] began.
    pub fn release_remote(&self, key: &str) {
        let gone = self.remote.lock().ok().and_then(|mut r| r.remove(key));
        if let Some((id, release)) = gone {
            self.end(id, &release);
        }
    }

    /// Waits while `stmt` (run with current database `db`) names a held table.
    pub async fn wait(&self, stmt: &[u8], db: Option<&str>) -> Result<(), SqlError> {
        let waits: Vec<watch::Receiver<bool>> = match self.held.lock() {
            Ok(h) => h
                .iter()
                .filter(|x| names(stmt, db, &x.schema, &x.table))
                .map(|x| x.released.clone())
                .collect(),
            Err(_) => return Ok(()),
        };
        if waits.is_empty() {
            return Ok(());
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= MAX_HELD {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(timeout("too many statements wait for the switch"));
        }
        let r = tokio::time::timeout(HOLD_TIMEOUT, async {
            for mut w in waits {
                let _ = w.wait_for(|released| *released).await;
            }
        })
        .await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        r.map_err(|_| timeout("the table's switch to its new placement took too long"))
    }
}

fn timeout(why: &str) -> SqlError {
    SqlError::new(
        ER_LOCK_WAIT_TIMEOUT,
        b"HY000",
        format!("Lock wait timeout exceeded; try restarting transaction ({why})"),
    )
}

/// Whether `stmt` may name `schema`.`table`: the table's name as a word, in the current
/// database or qualified by the schema. A false positive only makes a statement wait.
fn names(stmt: &[u8], db: Option<&str>, schema: &str, table: &str) -> bool {
    let lower = stmt.to_ascii_lowercase();
    let t = table.to_ascii_lowercase();
    let word = |i: usize, len: usize| {
        let ok = |c: Option<&u8>| {
            c.is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$'))
        };
        ok(i.checked_sub(1).and_then(|j| lower.get(j))) && ok(lower.get(i + len))
    };
    let found = lower
        .windows(t.len().max(1))
        .enumerate()
        .any(|(i, w)| w == t.as_bytes() && word(i, t.len()));
    found
        && (db.is_some_and(|d| d.eq_ignore_ascii_case(schema))
            || lower
                .windows(schema.len().max(1))
                .any(|w| w == schema.to_ascii_lowercase().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_naming_the_table_is_held() {
        assert!(names(
            b"INSERT INTO accounts VALUES (1)",
            Some("app"),
            "app",
            "accounts"
        ));
        assert!(names(
            b"update `APP`.`Accounts` set x=1",
            None,
            "app",
            "accounts"
        ));
        assert!(!names(
            b"SELECT * FROM accounts_old",
            Some("app"),
            "app",
            "accounts"
        ));
        assert!(!names(
            b"SELECT * FROM accounts",
            Some("other"),
            "app",
            "accounts"
        ));
    }

    #[tokio::test]
    async fn held_statements_go_on_when_the_hold_ends() {
        let holds = Holds::default();
        assert!(!holds.active());
        let h = holds.hold("app", "t");
        assert!(holds.active());
        let waiting = holds.wait(b"SELECT * FROM t", Some("app"));
        let release = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(h);
        };
        let (r, ()) = tokio::join!(waiting, release);
        assert!(r.is_ok());
        assert!(!holds.active());
        assert!(holds.wait(b"SELECT * FROM t", Some("app")).await.is_ok());
    }

    #[tokio::test]
    async fn a_remote_hold_and_a_local_one_on_one_table_end_apart() {
        let holds = Holds::default();
        assert!(holds.hold_remote("app.t"));
        assert!(!holds.hold_remote("app.t"));
        let local = holds.hold("app", "t");
        drop(local);
        assert!(holds.active(), "the remote hold stays");
        let waiting = holds.wait(b"SELECT * FROM t", Some("app"));
        let release = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            holds.release_remote("app.t");
        };
        let (r, ()) = tokio::join!(waiting, release);
        assert!(r.is_ok());
        assert!(!holds.active());
        assert!(holds.remote_keys().is_empty());
    }
}
