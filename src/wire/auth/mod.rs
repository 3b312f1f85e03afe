//! Authentication on the server side: mysql_native_password and caching_sha2_password, the RSA
//! key pair for password exchange without TLS, the configured users, and the conversation that
//! picks a plugin for each login.

pub mod backend_users;
pub mod caching_sha2;
pub mod conversation;
pub mod native;
pub mod rsa;
pub mod secret;
pub mod users;

pub use caching_sha2::{hash_password_sha2, parse_sha2_hash, Sha2Hash};
pub use native::{hash_password, new_scramble, parse_native_hash, verify_native, NativeHash};
pub use secret::Secret;
pub use users::{Plugin, UserAuth, UserDb};

/// Constant-time comparison: no early exit on the first differing byte.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Upper-case hex, as MySQL prints hashes.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}
