//! Accounts read from a backend (`users_from_backend`): who may log in from which hosts, with
//! which mysql_native_password hash. Every login reads the rows of the name it logs in with, as
//! they are at that moment, so a new account, a changed password or a dropped one counts from the
//! next login; the backend then judges the rest of the account's state (lock, expiry, limits) when
//! idgate logs in there as the account.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;

use super::native::NativeHash;
use super::secret::Secret;
use super::users::{CertRule, TransportRefusal};
use crate::tls::peer_name::PeerCert;

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
    /// What the account's `REQUIRE` asks of the client's connection.
    pub tls: TlsRequirement,
}

/// An account's `REQUIRE` (mysql.user's `ssl_type`, `x509_issuer`, `x509_subject`,
/// `ssl_cipher`), which MariaDB checks against the client's own connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TlsRequirement {
    #[default]
    None,
    /// REQUIRE SSL.
    Tls,
    /// REQUIRE X509, SUBJECT, ISSUER: a client certificate, with these names when given.
    Cert(CertRule),
    /// REQUIRE CIPHER: a cipher named as OpenSSL names it, which idgate cannot compare with the
    /// one its TLS library agreed, so the login is refused.
    Cipher(String),
}

impl TlsRequirement {
    /// The requirement the columns of one row say (`ssl_type` '' / ANY / X509 / SPECIFIED).
    pub fn of_row(ssl_type: &str, issuer: &str, subject: &str, cipher: &str) -> TlsRequirement {
        let named = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
        match ssl_type.to_ascii_uppercase().as_str() {
            "" => TlsRequirement::None,
            "ANY" => TlsRequirement::Tls,
            "SPECIFIED" if !cipher.is_empty() => TlsRequirement::Cipher(cipher.to_string()),
            // X509, SPECIFIED, or a type this version does not know: the strictest idgate checks.
            _ => TlsRequirement::Cert(CertRule {
                subject: named(subject),
                issuer: named(issuer),
            }),
        }
    }

    /// Why a client whose password was right may not log in over a connection that is `secure`
    /// with the certificate `peer`; `None` when it may.
    pub fn refusal(&self, secure: bool, peer: Option<&PeerCert>) -> Option<TransportRefusal> {
        match self {
            TlsRequirement::None => None,
            _ if !secure => Some(TransportRefusal::NoTls),
            TlsRequirement::Tls => None,
            TlsRequirement::Cert(rule) if rule.accepts(peer) => None,
            TlsRequirement::Cert(_) | TlsRequirement::Cipher(_) => {
                Some(TransportRefusal::Certificate)
            }
        }
    }
}

/// What a client's login to an account read from the backend proved: idgate logs in to every
/// backend as that account with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendLogin {
    pub user: String,
    pub secret: Secret,
    /// The account's `REQUIRE`, checked against the client's connection.
    pub tls: TlsRequirement,
}

pub type Loading<'a> = Pin<Box<dyn Future<Output = Result<Vec<Account>, String>> + Send + 'a>>;

/// Where the accounts come from (the backend's `mysql.user`, read by `exec`).
pub trait AccountSource: Send + Sync {
    /// The rows of every account named `user`, whatever their host.
    fn load<'a>(&'a self, user: &'a [u8]) -> Loading<'a>;
}

pub struct BackendUsers {
    source: Box<dyn AccountSource>,
}

impl BackendUsers {
    pub fn new(source: Box<dyn AccountSource>) -> BackendUsers {
        BackendUsers { source }
    }

    /// The account `user` logs in as from `peer` (an IP address), as MariaDB picks it: the
    /// matching host pattern that is most specific. `None` too when the accounts cannot be read:
    /// a login idgate cannot check is refused.
    pub async fn find(&self, user: &[u8], peer: &str) -> Option<Account> {
        let accounts = match self.source.load(user).await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("users_from_backend: reading the accounts failed: {e}");
                return None;
            }
        };
        best_match(&accounts, user, peer).cloned()
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
            tls: TlsRequirement::None,
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

    #[test]
    fn an_account_s_require_is_checked_against_the_client_s_connection() {
        let none = TlsRequirement::of_row("", "", "", "");
        let ssl = TlsRequirement::of_row("ANY", "", "", "");
        let x509 = TlsRequirement::of_row("X509", "", "", "");
        let subject = TlsRequirement::of_row("SPECIFIED", "", "/CN=app", "");
        let cipher = TlsRequirement::of_row("SPECIFIED", "", "", "AES256-SHA");
        let app = PeerCert {
            subject: "/CN=app".into(),
            issuer: "/CN=ca".into(),
        };
        let other = PeerCert {
            subject: "/CN=other".into(),
            issuer: "/CN=ca".into(),
        };
        assert_eq!(none.refusal(false, None), None);
        assert_eq!(ssl.refusal(false, None), Some(TransportRefusal::NoTls));
        assert_eq!(ssl.refusal(true, None), None);
        assert_eq!(
            x509.refusal(true, None),
            Some(TransportRefusal::Certificate)
        );
        assert_eq!(x509.refusal(true, Some(&other)), None);
        assert_eq!(subject.refusal(true, Some(&app)), None);
        assert_eq!(
            subject.refusal(true, Some(&other)),
            Some(TransportRefusal::Certificate)
        );
        assert_eq!(
            subject.refusal(false, Some(&app)),
            Some(TransportRefusal::NoTls)
        );
        assert_eq!(
            cipher.refusal(true, Some(&app)),
            Some(TransportRefusal::Certificate),
            "a cipher idgate cannot compare is refused"
        );
    }

    /// Hands out the accounts it holds now, or fails while `away`.
    struct Table {
        rows: std::sync::Mutex<Vec<Account>>,
        away: std::sync::atomic::AtomicBool,
    }

    impl AccountSource for std::sync::Arc<Table> {
        fn load<'a>(&'a self, user: &'a [u8]) -> Loading<'a> {
            let away = self.away.load(std::sync::atomic::Ordering::SeqCst);
            let rows: Vec<Account> = self
                .rows
                .lock()
                .map(|r| r.iter().filter(|a| a.user == user).cloned().collect())
                .unwrap_or_default();
            Box::pin(async move {
                if away {
                    return Err("backend away".into());
                }
                Ok(rows)
            })
        }
    }

    #[tokio::test]
    async fn every_login_reads_the_accounts_as_they_are_now() {
        let table = std::sync::Arc::new(Table {
            rows: std::sync::Mutex::new(vec![account("u0", "%")]),
            away: Default::default(),
        });
        let users = BackendUsers::new(Box::new(table.clone()));
        assert!(users.find(b"u0", "1.2.3.4").await.is_some());
        assert!(users.find(b"u1", "1.2.3.4").await.is_none());
        *table.rows.lock().unwrap() = vec![account("u1", "%")];
        assert!(
            users.find(b"u0", "1.2.3.4").await.is_none(),
            "dropped at once"
        );
        assert!(users.find(b"u1", "1.2.3.4").await.is_some(), "new at once");
        table.away.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(
            users.find(b"u1", "1.2.3.4").await.is_none(),
            "a login idgate cannot check is refused"
        );
    }
}
