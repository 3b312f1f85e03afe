//! Checks an idgate user's clear password (HTTP Basic, Redis `AUTH`) against the configured
//! mysql_native_password hash, in constant time.

use crate::config::User;
use crate::proxy::Proxy;
use crate::wire::auth::{hash_password, parse_native_hash, NativeHash};

/// The configured user `name` if `password` is theirs.
pub fn check<'a>(proxy: &'a Proxy, name: &str, password: &str) -> Option<&'a User> {
    let user = proxy.user(name.as_bytes());
    // Hash even for unknown users, so the answer takes as long either way.
    let given = hash_password(password);
    let user = user?;
    let stored: Option<NativeHash> = match (&user.password_hash, &user.password) {
        (Some(h), _) => parse_native_hash(h)?,
        (None, Some(p)) => hash_password(p),
        (None, None) => return None,
    };
    let same = match (stored, given) {
        (Some(a), Some(b)) => ct_eq(&a, &b),
        (None, None) => true,
        _ => false,
    };
    same.then_some(user)
}

fn ct_eq(a: &NativeHash, b: &NativeHash) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
    }
}
