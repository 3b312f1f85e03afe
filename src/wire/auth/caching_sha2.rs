//! caching_sha2_password on the server side: the stored SHA256(SHA256(password)), the check of a
//! scrambled answer against it (the fast path), the check of a password received in full, and
//! the record of which users proved their password in full since idgate started.

use std::collections::HashSet;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::ct_eq;

/// SHA256(SHA256(password)): what idgate keeps for a caching_sha2_password user.
pub type Sha2Hash = [u8; 32];

/// Parses 64 hex digits (the output of `idgate hash-password`). An empty string is the hash of
/// the empty password.
pub fn parse_sha2_hash(text: &str) -> Option<Option<Sha2Hash>> {
    if text.is_empty() {
        return Some(None);
    }
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(Some(out))
}

pub fn hash_password_sha2(password: &str) -> Option<Sha2Hash> {
    if password.is_empty() {
        return None;
    }
    Some(Sha256::digest(Sha256::digest(password.as_bytes())).into())
}

/// The client sends SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + scramble). Undo the XOR with the
/// stored hash and check that the recovered SHA256(pw) hashes to it.
pub fn verify_fast(scramble: &[u8; 20], stored: &Sha2Hash, answer: &[u8]) -> bool {
    if answer.len() != 32 {
        return false;
    }
    let mut h = Sha256::new();
    h.update(stored);
    h.update(scramble);
    let mask = h.finalize();
    let mut stage1 = [0u8; 32];
    for i in 0..32 {
        stage1[i] = answer[i] ^ mask[i];
    }
    let candidate: [u8; 32] = Sha256::digest(stage1).into();
    ct_eq(&candidate, stored)
}

/// Full authentication: the password itself (without its NUL) against the stored hash.
pub fn verify_password(stored: &Sha2Hash, password: &[u8]) -> bool {
    let candidate: [u8; 32] = Sha256::digest(Sha256::digest(password)).into();
    ct_eq(&candidate, stored)
}

/// Users (with the hash they proved) that passed full authentication since idgate started. As
/// in MySQL 8, only they may use the fast path; everyone else is asked for the password once.
/// Entries are added only for configured users after a successful full authentication, so the
/// set never holds more than one entry per configured user.
#[derive(Default)]
pub struct FullAuthCache {
    proven: Mutex<HashSet<(Vec<u8>, Sha2Hash)>>,
}

impl FullAuthCache {
    pub fn contains(&self, user: &[u8], hash: &Sha2Hash) -> bool {
        let proven = self.proven.lock().unwrap_or_else(|e| e.into_inner());
        proven.contains(&(user.to_vec(), *hash))
    }

    pub fn insert(&self, user: &[u8], hash: &Sha2Hash) {
        let mut proven = self.proven.lock().unwrap_or_else(|e| e.into_inner());
        proven.insert((user.to_vec(), *hash));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_accepts_the_right_password_only() {
        let scramble = super::super::new_scramble();
        let stored = hash_password_sha2("s3cret").unwrap();
        let answer = mysql_common::scramble::scramble_sha256(&scramble, b"s3cret").unwrap();
        assert!(verify_fast(&scramble, &stored, &answer));
        let wrong = mysql_common::scramble::scramble_sha256(&scramble, b"s3creT").unwrap();
        assert!(!verify_fast(&scramble, &stored, &wrong));
        assert!(!verify_fast(&scramble, &stored, &answer[..31]));
        assert!(verify_password(&stored, b"s3cret"));
        assert!(!verify_password(&stored, b"s3cret\0"));
    }

    #[test]
    fn parses_64_hex_digits() {
        let own = hash_password_sha2("idgate").unwrap();
        let hex = super::super::to_hex(&own);
        assert_eq!(parse_sha2_hash(&hex), Some(Some(own)));
        assert_eq!(parse_sha2_hash(&hex.to_lowercase()), Some(Some(own)));
        assert_eq!(parse_sha2_hash(""), Some(None));
        assert_eq!(parse_sha2_hash(&hex[..62]), None);
        assert_eq!(parse_sha2_hash(&format!("*{}", &hex[1..])), None);
        assert_eq!(parse_sha2_hash(&"é".repeat(32)), None);
    }

    #[test]
    fn cache_is_per_user_and_hash() {
        let c = FullAuthCache::default();
        let a = hash_password_sha2("a").unwrap();
        let b = hash_password_sha2("b").unwrap();
        c.insert(b"u", &a);
        assert!(c.contains(b"u", &a));
        assert!(!c.contains(b"u", &b));
        assert!(!c.contains(b"v", &a));
    }
}
