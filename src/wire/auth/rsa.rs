//! RSA for sending a password without TLS, as MySQL 8 does for caching_sha2_password and
//! sha256_password: the password plus its NUL, XORed with the scramble, encrypted with
//! RSA-OAEP (SHA-1) under the server's public key. Both directions live here: idgate's own key
//! pair for its clients, and encryption under a backend's public key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey, LineEnding};
use rsa::rand_core::OsRng;
use rsa::traits::PublicKeyParts;
use rsa::{Oaep, RsaPrivateKey, RsaPublicKey};
use sha1::Sha1;

/// Size of the key idgate generates when none is configured (MySQL's default too).
pub const GENERATED_BITS: usize = 2048;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read RSA key {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} is not a PEM RSA private key (PKCS#8 `BEGIN PRIVATE KEY` or PKCS#1 `BEGIN RSA PRIVATE KEY`)")]
    NotPrivateKey(String),
    #[error("RSA key {0} is smaller than 1024 bits")]
    TooSmall(String),
    #[error("cannot generate an RSA key: {0}")]
    Generate(String),
    #[error("the server's public key is not a PEM RSA public key")]
    NotPublicKey,
    #[error("the password is too long for the server's RSA key")]
    TooLong,
}

/// idgate's RSA key pair and the public half as clients receive it.
pub struct ServerKey {
    private: RsaPrivateKey,
    public_pem: Vec<u8>,
}

impl ServerKey {
    pub fn generate() -> Result<ServerKey, KeyError> {
        let private = RsaPrivateKey::new(&mut OsRng, GENERATED_BITS)
            .map_err(|e| KeyError::Generate(e.to_string()))?;
        Self::from_private(private)
    }

    pub fn load(path: &Path) -> Result<ServerKey, KeyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Read {
            path: shown.clone(),
            source,
        })?;
        let private = RsaPrivateKey::from_pkcs8_pem(&text)
            .or_else(|_| RsaPrivateKey::from_pkcs1_pem(&text))
            .map_err(|_| KeyError::NotPrivateKey(shown.clone()))?;
        if private.size() < 128 {
            return Err(KeyError::TooSmall(shown));
        }
        Self::from_private(private)
    }

    fn from_private(private: RsaPrivateKey) -> Result<ServerKey, KeyError> {
        let public_pem = RsaPublicKey::from(&private)
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| KeyError::Generate(e.to_string()))?
            .into_bytes();
        Ok(ServerKey {
            private,
            public_pem,
        })
    }

    /// The public key as MySQL sends it (`BEGIN PUBLIC KEY`, SubjectPublicKeyInfo).
    pub fn public_pem(&self) -> &[u8] {
        &self.public_pem
    }

    /// Bytes of a ciphertext under this key.
    pub fn cipher_len(&self) -> usize {
        self.private.size()
    }

    /// The password a client encrypted, without its NUL; `None` if it does not decrypt or is
    /// not NUL-terminated (a wrong key, a clear-text password, or garbage).
    pub fn decrypt_password(&self, cipher: &[u8], scramble: &[u8]) -> Option<Vec<u8>> {
        if cipher.len() != self.cipher_len() {
            return None;
        }
        let mut plain = self.private.decrypt(Oaep::new::<Sha1>(), cipher).ok()?;
        xor_with(&mut plain, scramble);
        match plain.pop() {
            Some(0) => Some(plain),
            _ => None,
        }
    }
}

/// `data[i] ^= pattern[i % len]`, as MySQL's `xor_string`.
fn xor_with(data: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    for (i, b) in data.iter_mut().enumerate() {
        *b ^= pattern[i % pattern.len()];
    }
}

/// What a client sends: (password + NUL) XOR nonce, RSA-OAEP encrypted under `pem` (a public
/// key in either PEM form MySQL servers use).
pub fn encrypt_password(pem: &[u8], password: &[u8], nonce: &[u8]) -> Result<Vec<u8>, KeyError> {
    let text = std::str::from_utf8(pem).map_err(|_| KeyError::NotPublicKey)?;
    let text = text.trim_end_matches('\0');
    let key = RsaPublicKey::from_public_key_pem(text)
        .or_else(|_| RsaPublicKey::from_pkcs1_pem(text))
        .map_err(|_| KeyError::NotPublicKey)?;
    let mut plain = password.to_vec();
    plain.push(0);
    xor_with(&mut plain, nonce);
    key.encrypt(&mut OsRng, Oaep::new::<Sha1>(), &plain)
        .map_err(|_| KeyError::TooLong)
}

/// The server key, loaded from `rsa_key` or generated, prepared in the background at start so
/// the first client that needs it rarely waits.
pub struct KeySource {
    path: Option<PathBuf>,
    key: tokio::sync::OnceCell<Option<Arc<ServerKey>>>,
}

impl KeySource {
    pub fn new(path: Option<PathBuf>) -> Arc<KeySource> {
        Arc::new(KeySource {
            path,
            key: tokio::sync::OnceCell::new(),
        })
    }

    /// Starts loading or generating the key if a runtime is there to do it.
    pub fn prepare(self: &Arc<Self>) {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let me = self.clone();
            rt.spawn(async move {
                me.get().await;
            });
        }
    }

    /// The key; `None` (logged) if it could be neither loaded nor generated.
    pub async fn get(&self) -> Option<Arc<ServerKey>> {
        self.key
            .get_or_init(|| async {
                let path = self.path.clone();
                let made = tokio::task::spawn_blocking(move || match &path {
                    Some(p) => ServerKey::load(p),
                    None => ServerKey::generate(),
                })
                .await;
                match made {
                    Ok(Ok(k)) => Some(Arc::new(k)),
                    Ok(Err(e)) => {
                        tracing::error!("{e}; clients cannot send passwords RSA-encrypted");
                        None
                    }
                    Err(e) => {
                        tracing::error!("RSA key preparation failed: {e}");
                        None
                    }
                }
            })
            .await
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_encrypted_for_the_key_decrypts_with_it() {
        let key = ServerKey::generate().unwrap();
        let scramble = super::super::new_scramble();
        let cipher = encrypt_password(key.public_pem(), b"s3cret", &scramble).unwrap();
        assert_eq!(cipher.len(), key.cipher_len());
        assert_eq!(
            key.decrypt_password(&cipher, &scramble).as_deref(),
            Some(&b"s3cret"[..])
        );
        // Another scramble leaves garbage without the NUL where it belongs.
        let other = super::super::new_scramble();
        assert_ne!(
            key.decrypt_password(&cipher, &other).as_deref(),
            Some(&b"s3cret"[..])
        );
        assert_eq!(key.decrypt_password(b"s3cret\0", &scramble), None);
        assert!(matches!(
            encrypt_password(b"not a key", b"x", &scramble),
            Err(KeyError::NotPublicKey)
        ));
        assert!(matches!(
            encrypt_password(key.public_pem(), &[b'x'; 300], &scramble),
            Err(KeyError::TooLong)
        ));
    }
}
