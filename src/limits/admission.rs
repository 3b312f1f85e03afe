//! Session slots: a logged-in session holds one until it ends (RAII), counted in all and per user,
//! as MariaDB counts max_connections and an account's MAX_USER_CONNECTIONS.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::wire::errors::{self, SqlError};

pub struct Admission {
    max: AtomicUsize,
    /// Per-user caps from the configuration (users without one are not listed).
    user_caps: ArcSwap<HashMap<Vec<u8>, u32>>,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    total: usize,
    /// Every user is counted, so a cap a reload adds sees the sessions already in.
    per_user: HashMap<Vec<u8>, u32>,
}

/// A logged-in session's place; given back when dropped.
pub struct Slot {
    admission: Arc<Admission>,
    user: Vec<u8>,
}

impl Admission {
    pub fn new(max: usize, user_caps: HashMap<Vec<u8>, u32>) -> Arc<Admission> {
        Arc::new(Admission {
            max: AtomicUsize::new(max),
            user_caps: ArcSwap::from_pointee(user_caps),
            counts: Mutex::new(Counts::default()),
        })
    }

    /// A reload changed `max_connections` or users' caps: they bind new logins; sessions already
    /// in keep their slots.
    pub fn set_limits(&self, max: usize, user_caps: HashMap<Vec<u8>, u32>) {
        self.max.store(max, Ordering::Relaxed);
        self.user_caps.store(Arc::new(user_caps));
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // The counters stay consistent even if a holder panicked: every update is one statement.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a slot for `user`, or the error MariaDB gives past its limits.
    pub fn admit(self: &Arc<Self>, user: &[u8]) -> Result<Slot, SqlError> {
        let mut c = self.counts();
        let max = self.max.load(Ordering::Relaxed);
        if c.total >= max {
            return Err(too_many_connections(max));
        }
        let n = c.per_user.entry(user.to_vec()).or_default();
        if let Some(&cap) = self.user_caps.load().get(user) {
            if *n >= cap {
                return Err(user_limit_reached(user, cap));
            }
        }
        *n += 1;
        c.total += 1;
        Ok(Slot {
            admission: self.clone(),
            user: user.to_vec(),
        })
    }

    /// Logged-in sessions right now.
    pub fn live(&self) -> usize {
        self.counts().total
    }

    fn release_user(&self, c: &mut Counts, user: &[u8]) {
        if let Some(n) = c.per_user.get_mut(user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.per_user.remove(user);
            }
        }
    }
}

impl Slot {
    /// COM_CHANGE_USER: the session now counts against `user`'s cap instead.
    pub fn switch_user(&mut self, user: &[u8]) -> Result<(), SqlError> {
        if user == self.user.as_slice() {
            return Ok(());
        }
        let a = self.admission.clone();
        let mut c = a.counts();
        let n = c.per_user.entry(user.to_vec()).or_default();
        if let Some(&cap) = a.user_caps.load().get(user) {
            if *n >= cap {
                return Err(user_limit_reached(user, cap));
            }
        }
        *n += 1;
        let old = std::mem::replace(&mut self.user, user.to_vec());
        a.release_user(&mut c, &old);
        Ok(())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.admission.counts();
        c.total = c.total.saturating_sub(1);
        self.admission.release_user(&mut c, &self.user);
    }
}

/// ER_CON_COUNT_ERROR as MariaDB words it, plus what to change.
pub fn too_many_connections(max: usize) -> SqlError {
    SqlError::new(
        errors::ER_CON_COUNT_ERROR,
        b"08004",
        format!(
            "Too many connections (idgate's max_connections is {max}); retry later or raise max_connections in idgate's config"
        ),
    )
}

/// ER_USER_LIMIT_REACHED: what MariaDB answers past an account's MAX_USER_CONNECTIONS.
pub fn user_limit_reached(user: &[u8], cap: u32) -> SqlError {
    SqlError::new(
        errors::ER_USER_LIMIT_REACHED,
        b"42000",
        format!(
            "User '{}' has exceeded the 'max_user_connections' resource (current value: {cap}); close idle sessions or raise users[].max_connections in idgate's config",
            String::from_utf8_lossy(user)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_free_on_drop_and_caps_hold() {
        let caps = HashMap::from([(b"u".to_vec(), 1)]);
        let a = Admission::new(2, caps);
        let s1 = a.admit(b"u").expect("first u");
        assert_eq!(a.admit(b"u").err().map(|e| e.code), Some(1226));
        let s2 = a.admit(b"v").expect("v");
        assert_eq!(a.admit(b"w").err().map(|e| e.code), Some(1040));
        drop(s1);
        let mut s3 = a.admit(b"u").expect("u after a slot freed");
        drop(s2);
        assert_eq!(a.live(), 1);
        s3.switch_user(b"v").expect("switch");
        let s4 = a.admit(b"u").expect("u's slot moved away");
        assert_eq!(a.live(), 2);
        drop((s3, s4));
        assert_eq!(a.live(), 0);
    }
}
