//! What idgate logs in to a backend with: a password, or only SHA1(password) for an account read
//! from the backend (`users_from_backend`), which idgate learns from the client's
//! mysql_native_password answer and never sees in clear.

use sha1::{Digest, Sha1};

#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    Password(String),
    /// SHA1(password): enough to answer mysql_native_password, nothing else.
    NativeSha1([u8; 20]),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Secret::Password(_) => "Secret::Password(..)",
            Secret::NativeSha1(_) => "Secret::NativeSha1(..)",
        })
    }
}

impl Secret {
    /// mysql_native_password's answer to `nonce`: SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))),
    /// empty for the empty password.
    pub fn native_answer(&self, nonce: &[u8]) -> Vec<u8> {
        let stage1: [u8; 20] = match self {
            Secret::Password(p) if p.is_empty() => return Vec::new(),
            Secret::Password(p) => Sha1::digest(p.as_bytes()).into(),
            Secret::NativeSha1(s) => *s,
        };
        let stage2 = Sha1::digest(stage1);
        let mut h = Sha1::new();
        h.update(nonce);
        h.update(stage2);
        let mask = h.finalize();
        stage1.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect()
    }

    /// The password itself, which every plugin but mysql_native_password needs.
    pub fn password(&self) -> Option<&str> {
        match self {
            Secret::Password(p) => Some(p),
            Secret::NativeSha1(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sha1_of_a_password_answers_as_the_password_does() {
        let nonce = b"abcdefghij0123456789";
        let pw = Secret::Password("s3cret".into());
        let sha1 = Secret::NativeSha1(Sha1::digest(b"s3cret").into());
        let expected = mysql_common::scramble::scramble_native(nonce, b"s3cret").unwrap();
        assert_eq!(pw.native_answer(nonce), expected.to_vec());
        assert_eq!(sha1.native_answer(nonce), expected.to_vec());
        assert!(Secret::Password(String::new())
            .native_answer(nonce)
            .is_empty());
        assert_eq!(format!("{sha1:?}"), "Secret::NativeSha1(..)");
    }
}
