//! Accounts read from a backend (`users_from_backend`): who may log in from which hosts, with
//! which mysql_native_password hash. A login that finds them older than `max_age` reads them
//! again first (one read at a time; the others wait for it), so a changed password or a dropped
//! account counts within that time.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::native::NativeHash;
use super::secret::Secret;

/// One row of the backend's account table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub user: Vec<u8>,
    /// MariaDB's host pattern: `%` and `_` wildcards, `ip/netmask`, or `localhost`.
    pub host: String,
    /// The authentication plugin the account uses.
    pub plugin: String,
    /// `Some(None)`: no password; `None`: a plugin idgate cannot check the client against.
    pub native: Option<Option<NativeHash>>,
}

/// What a client's login to an account read from the backend proved: idgate logs in to every
/// backend as that account with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendLogin {
    pub user: String,
    pub secret: Secret,
}

pub type Loading<'a> = Pin<Box<dyn Future<Output = Result<Vec<Account>, String>> + Send + 'a>>;

/// Where the accounts come from (the backend's `mysql.user`, read by `exec`).
pub trait AccountSource: Send + Sync {
    fn load(&self) -> Loading<'_>;
}

pub struct BackendUsers {
    source: Box<dyn AccountSource>,
    max_age: Duration,
    state: tokio::sync::Mutex<Loaded>,
}

#[derive(Default)]
struct Loaded {
    accounts: Arc<Vec<Account>>,
    at: Option<Instant>,
}

impl BackendUsers {
    pub fn new(source: Box<dyn AccountSource>, max_age: Duration) -> BackendUsers {
        BackendUsers {
            source,
            max_age,
            state: Default::default(),
        }
    }

    /// The account `user` logs in as from `peer` (an IP address), as MariaDB picks it: the
    /// matching host pattern that is most specific.
    pub async fn find(&self, user: &[u8], peer: &str) -> Option<Account> {
        let accounts = self.current().await;
        best_match(&accounts, user, peer).cloned()
    }

    async fn current(&self) -> Arc<Vec<Account>> {
        let mut st = self.state.lock().await;
        if st.at.is_none_or(|t| t.elapsed() >= self.max_age) {
            match self.source.load().await {
                Ok(a) => st.accounts = Arc::new(a),
                // The accounts read last stay; the next login after max_age tries again.
                Err(e) => tracing::warn!("users_from_backend: reading the accounts failed: {e}"),
            }
            st.at = Some(Instant::now());
        }
        st.accounts.clone()
    }
}

fn best_match<'a>(accounts: &'a [Account], user: &[u8], peer: &str) -> Option<&'a Account> {
    accounts
        .iter()
        .filter(|a| a.user == user && host_matches(&a.host, peer))
        .min_by_key(|a| specificity(&a.host))
}

/// MariaDB's order of host patterns: exact ones first, then by how much comes before the first
/// wildcard (`10.0.%` before `%`). Lower is more specific.
fn specificity(host: &str) -> (bool, std::cmp::Reverse<usize>) {
    match host.find(['%', '_']) {
        None => (false, std::cmp::Reverse(usize::MAX)),
        Some(i) => (true, std::cmp::Reverse(i)),
    }
}

/// Whether a client at `peer` matches the account host `pattern`. Host names other than
/// `localhost` would need name resolution and never match.
pub fn host_matches(pattern: &str, peer: &str) -> bool {
    let ip = peer.parse::<IpAddr>().ok().map(|ip| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    });
    let text = ip.map_or_else(|| peer.to_string(), |ip| ip.to_string());
    if pattern.eq_ignore_ascii_case("localhost") {
        return ip.is_some_and(|ip| ip.is_loopback());
    }
    if let Some((net, mask)) = pattern.split_once('/') {
        let (Ok(net), Ok(mask), Some(IpAddr::V4(ip))) =
            (net.parse::<Ipv4Addr>(), mask.parse::<Ipv4Addr>(), ip)
        else {
            return false;
        };
        return u32::from(ip) & u32::from(mask) == u32::from(net);
    }
    wildcard(pattern.as_bytes(), text.as_bytes())
}

/// SQL LIKE without escapes, case-insensitive: `%` any run, `_` one character.
fn wildcard(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'%') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == b'_' || c.eq_ignore_ascii_case(&s[si]) => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'%')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(user: &str, host: &str) -> Account {
        Account {
            user: user.as_bytes().to_vec(),
            host: host.into(),
            plugin: "mysql_native_password".into(),
            native: Some(None),
        }
    }

    #[test]
    fn host_patterns_match_as_mariadb_matches_them() {
        assert!(host_matches("%", "10.1.2.3"));
        assert!(host_matches("10.1.%", "10.1.2.3"));
        assert!(!host_matches("10.1.%", "10.2.2.3"));
        assert!(host_matches("10.1.2._", "10.1.2.3"));
        assert!(!host_matches("10.1.2._", "10.1.2.33"));
        assert!(host_matches("10.1.2.3", "10.1.2.3"));
        assert!(host_matches("10.1.0.0/255.255.0.0", "10.1.200.3"));
        assert!(!host_matches("10.1.0.0/255.255.0.0", "10.2.0.3"));
        assert!(host_matches("localhost", "127.0.0.1"));
        assert!(host_matches("localhost", "::1"));
        assert!(host_matches("localhost", "::ffff:127.0.0.1"));
        assert!(host_matches("127.0.0.1", "::ffff:127.0.0.1"));
        assert!(!host_matches("localhost", "10.1.2.3"));
        assert!(!host_matches("app.example.com", "10.1.2.3"));
        assert!(!host_matches("", "10.1.2.3"), "roles have an empty host");
        assert!(host_matches("%%", "1.2.3.4"));
        assert!(host_matches("1%4", "1.2.3.4"));
        assert!(!host_matches("1%5", "1.2.3.4"));
    }

    #[test]
    fn the_most_specific_matching_host_wins() {
        let all = vec![
            account("app", "%"),
            account("app", "10.1.%"),
            account("app", "10.1.2.3"),
            account("other", "10.1.2.3"),
        ];
        assert_eq!(
            best_match(&all, b"app", "10.1.2.3").unwrap().host,
            "10.1.2.3"
        );
        assert_eq!(best_match(&all, b"app", "10.1.9.9").unwrap().host, "10.1.%");
        assert_eq!(best_match(&all, b"app", "192.168.0.1").unwrap().host, "%");
        assert!(best_match(&all, b"nobody", "10.1.2.3").is_none());
    }

    struct Counting(std::sync::atomic::AtomicUsize);

    impl AccountSource for Counting {
        fn load(&self) -> Loading<'_> {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async move {
                if n == 1 {
                    return Err("backend away".into());
                }
                Ok(vec![account(&format!("u{n}"), "%")])
            })
        }
    }

    #[tokio::test]
    async fn accounts_are_read_again_once_older_than_max_age_and_kept_when_that_fails() {
        let users = BackendUsers::new(
            Box::new(Counting(Default::default())),
            Duration::from_millis(50),
        );
        assert!(users.find(b"u0", "1.2.3.4").await.is_some());
        assert!(users.find(b"u0", "1.2.3.4").await.is_some(), "still fresh");
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(
            users.find(b"u0", "1.2.3.4").await.is_some(),
            "a failed read keeps the accounts read before"
        );
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(users.find(b"u0", "1.2.3.4").await.is_none());
        assert!(users.find(b"u2", "1.2.3.4").await.is_some());
    }
}
