//! mysql_native_password on the server side: the per-connection scramble and the check of a
//! client's answer against the stored double-SHA1 hash (never the password itself).

use rand::Rng;
use sha1::{Digest, Sha1};

use super::ct_eq;

/// SHA1(SHA1(password)), the value MySQL keeps in `mysql.user`.
pub type NativeHash = [u8; 20];

/// 20 random bytes for the handshake. Like MySQL, avoid NUL (it ends the string on the wire) and
/// stay in 7-bit ASCII so clients that treat the scramble as a C string agree on it.
pub fn new_scramble() -> [u8; 20] {
    let mut rng = rand::rng();
    let mut s = [0u8; 20];
    for b in s.iter_mut() {
        *b = rng.random_range(1..=127u8);
    }
    s
}

/// Parses `*` + 40 hex digits (the output of `SELECT PASSWORD('…')`). An empty string is the hash
/// of the empty password.
pub fn parse_native_hash(text: &str) -> Option<Option<NativeHash>> {
    if text.is_empty() {
        return Some(None);
    }
    let hex = text.strip_prefix('*')?;
    if hex.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(Some(out))
}

pub fn hash_password(password: &str) -> Option<NativeHash> {
    if password.is_empty() {
        return None;
    }
    let stage1 = Sha1::digest(password.as_bytes());
    Some(Sha1::digest(stage1).into())
}

/// The client sends SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))). Undo the XOR with the stored
/// hash and check that the recovered SHA1(pw) hashes to it.
pub fn verify_native(scramble: &[u8; 20], stored: Option<&NativeHash>, answer: &[u8]) -> bool {
    let Some(stored) = stored else {
        return answer.is_empty();
    };
    recover_stage1(scramble, stored, answer).is_some()
}

/// SHA1(password) out of a right answer (what logging in elsewhere with mysql_native_password
/// takes); `None` for a wrong one.
pub fn recover_stage1(scramble: &[u8; 20], stored: &NativeHash, answer: &[u8]) -> Option<[u8; 20]> {
    if answer.len() != 20 {
        return None;
    }
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(stored);
    let mask = h.finalize();
    let mut stage1 = [0u8; 20];
    for i in 0..20 {
        stage1[i] = answer[i] ^ mask[i];
    }
    let candidate: [u8; 20] = Sha1::digest(stage1).into();
    ct_eq(&candidate, stored).then_some(stage1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_right_password_and_rejects_others() {
        let scramble = new_scramble();
        let stored = hash_password("s3cret");
        let answer = mysql_common::scramble::scramble_native(&scramble, b"s3cret").unwrap();
        assert!(verify_native(&scramble, stored.as_ref(), &answer));
        let wrong = mysql_common::scramble::scramble_native(&scramble, b"s3creT").unwrap();
        assert!(!verify_native(&scramble, stored.as_ref(), &wrong));
        assert!(!verify_native(&scramble, stored.as_ref(), b""));
        assert!(verify_native(&scramble, None, b""));
        assert!(!verify_native(&scramble, None, &answer));
    }

    #[test]
    fn parses_the_hash_mariadb_prints() {
        // SELECT PASSWORD('idgate') on MariaDB.
        let h = parse_native_hash("*DCB2D5A1D1FC2D8A3A9D5D0E4D2E07BF3B8B34A2");
        assert!(matches!(h, Some(Some(_))));
        assert_eq!(parse_native_hash(""), Some(None));
        assert_eq!(parse_native_hash("DCB2"), None);
        assert_eq!(
            parse_native_hash("*ZZB2D5A1D1FC2D8A3A9D5D0E4D2E07BF3B8B34A2"),
            None
        );
        let own = hash_password("idgate").unwrap();
        let hex: String = own.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(parse_native_hash(&format!("*{hex}")), Some(Some(own)));
    }
}
