//! Checks an idgate user's clear password (HTTP Basic, Redis `AUTH`) against the configured
//! mysql_native_password or caching_sha2_password hash, in constant time.

use axum::http::HeaderValue;
use base64::Engine;

use crate::config::User;
use crate::proxy::Proxy;
use crate::wire::auth::{hash_password, hash_password_sha2, parse_native_hash, parse_sha2_hash};

/// The configured user `name` (as configured now) if `password` is theirs.
pub fn check(proxy: &Proxy, name: &str, password: &str) -> Option<User> {
    let user = proxy.user(name.as_bytes());
    // Hash even for unknown users, so the answer takes as long either way.
    let native = hash_password(password);
    let sha2 = hash_password_sha2(password);
    let user = user?;
    let same = match (&user.password, &user.password_hash, &user.caching_sha2_hash) {
        (Some(p), _, _) => ct_eq(p.as_bytes(), password.as_bytes()),
        (None, Some(h), _) => parse_native_hash(h).is_some_and(|stored| opt_eq(stored, native)),
        (None, None, Some(h)) => parse_sha2_hash(h).is_some_and(|stored| opt_eq(stored, sha2)),
        (None, None, None) => false,
    };
    same.then_some(user)
}

/// The user name and password of an `Authorization: Basic …` header, or what is wrong with it.
pub fn basic(value: &HeaderValue) -> Result<(String, String), &'static str> {
    let text = value
        .to_str()
        .map_err(|_| "malformed Authorization header")?;
    let Some(encoded) = text
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .map(|(_, rest)| rest.trim())
    else {
        return Err("only HTTP Basic authentication is accepted");
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or("malformed Basic credentials")?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or("malformed Basic credentials (user:password)")?;
    Ok((user.to_string(), password.to_string()))
}

/// Two hashes, where `None` is the empty password's.
fn opt_eq<const N: usize>(stored: Option<[u8; N]>, given: Option<[u8; N]>) -> bool {
    match (stored, given) {
        (Some(a), Some(b)) => ct_eq(&a, &b),
        (None, None) => true,
        _ => false,
    }
}

fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_every_byte() {
        let a = [7u8; 20];
        let mut b = a;
        assert!(ct_eq(&a, &b));
        b[19] = 8;
        assert!(!ct_eq(&a, &b));
        b = a;
        b[0] = 0;
        assert!(!ct_eq(&a, &b));
        assert!(!ct_eq(&a, &a[..19]));
    }

    #[test]
    fn reads_basic_credentials() {
        let h = |s: &str| HeaderValue::from_str(s).unwrap();
        // "u:p:q": the password may hold colons.
        assert_eq!(basic(&h("Basic dTpwOnE=")), Ok(("u".into(), "p:q".into())));
        assert_eq!(
            basic(&h("basic  dTpwOnE= ")),
            Ok(("u".into(), "p:q".into()))
        );
        assert!(basic(&h("Bearer abc")).is_err());
        assert!(basic(&h("Basic !!!")).is_err());
        // "nocolon"
        assert!(basic(&h("Basic bm9jb2xvbg==")).is_err());
    }

    #[test]
    fn checks_either_hash_kind() {
        let native = hash_password("pw");
        let sha2 = hash_password_sha2("pw");
        assert!(opt_eq(native, hash_password("pw")));
        assert!(!opt_eq(native, hash_password("px")));
        assert!(opt_eq(sha2, hash_password_sha2("pw")));
        assert!(!opt_eq(sha2, hash_password_sha2("")));
        assert!(opt_eq::<32>(None, hash_password_sha2("")));
    }
}
