//! The client side of authentication to a backend: the answer to the server's scramble for each
//! plugin idgate speaks, and the answers to the server's follow-up messages (caching_sha2
//! fast/full authentication, the RSA public key for caching_sha2_password and sha256_password).

use crate::wire::auth::rsa::encrypt_password;
use crate::wire::auth::Secret;

/// Plugins idgate can log in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plugin {
    Native,
    CachingSha2,
    Sha256,
    Clear,
}

impl Plugin {
    fn from_name(name: &[u8]) -> Option<Plugin> {
        match name {
            b"mysql_native_password" => Some(Plugin::Native),
            b"caching_sha2_password" => Some(Plugin::CachingSha2),
            b"sha256_password" => Some(Plugin::Sha256),
            b"mysql_clear_password" => Some(Plugin::Clear),
            _ => None,
        }
    }
}

/// One login in progress: the plugin the server asked for and the scramble it gave.
pub struct ClientAuth {
    plugin: Plugin,
    plugin_name: Vec<u8>,
    nonce: Vec<u8>,
    secret: Secret,
    /// The connection runs over TLS, so the password may be sent in clear.
    secure: bool,
}

/// caching_sha2_password's messages after the 0x01 "more data" header.
const FAST_AUTH_SUCCESS: u8 = 3;
const PERFORM_FULL_AUTHENTICATION: u8 = 4;
/// Requests for the server's public key: caching_sha2_password's and sha256_password's.
const CACHING_SHA2_KEY_REQUEST: u8 = 2;
const SHA256_KEY_REQUEST: u8 = 1;

impl ClientAuth {
    /// Starts the plugin `name` on `nonce` (a NUL that ends it on the wire is dropped).
    pub fn new(
        name: &[u8],
        nonce: &[u8],
        password: &str,
        secure: bool,
    ) -> Result<ClientAuth, String> {
        Self::with_secret(name, nonce, &Secret::Password(password.to_string()), secure)
    }

    /// As [`ClientAuth::new`], with only SHA1(password) when idgate never saw the password.
    pub fn with_secret(
        name: &[u8],
        nonce: &[u8],
        secret: &Secret,
        secure: bool,
    ) -> Result<ClientAuth, String> {
        let plugin = Plugin::from_name(name).ok_or_else(|| {
            format!(
                "the backend asks for authentication plugin `{}`, which idgate does not speak; give idgate's \
                 backend user mysql_native_password, caching_sha2_password or sha256_password",
                String::from_utf8_lossy(name)
            )
        })?;
        let nonce = match nonce.split_last() {
            Some((0, n)) => n,
            _ => nonce,
        };
        Ok(ClientAuth {
            plugin,
            plugin_name: name.to_vec(),
            nonce: nonce.to_vec(),
            secret: secret.clone(),
            secure,
        })
    }

    pub fn plugin_name(&self) -> &[u8] {
        &self.plugin_name
    }

    /// The first answer, sent in the HandshakeResponse, COM_CHANGE_USER or after a switch.
    pub fn first_answer(&self) -> Result<Vec<u8>, String> {
        Ok(match self.plugin {
            Plugin::Native => self.secret.native_answer(&self.nonce),
            Plugin::CachingSha2 => {
                mysql_common::scramble::scramble_sha256(&self.nonce, self.password()?.as_bytes())
                    .map_or_else(Vec::new, |s| s.to_vec())
            }
            // sha256_password has no scramble: the empty password is a lone NUL, otherwise
            // the password in clear over TLS or a request for the key to encrypt it with.
            Plugin::Sha256 if self.password()?.is_empty() => vec![0],
            Plugin::Sha256 if self.secure => self.clear_password()?,
            Plugin::Sha256 => vec![SHA256_KEY_REQUEST],
            Plugin::Clear if self.secure => self.clear_password()?,
            Plugin::Clear => return Err(
                "the backend asks for the password in clear (mysql_clear_password), which idgate \
                     sends only over TLS"
                    .into(),
            ),
        })
    }

    /// The answer to a 0x01 packet's data; `None` when the server expects nothing (fast
    /// authentication succeeded and the OK follows).
    pub fn more_data(&self, data: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match (self.plugin, data) {
            (Plugin::CachingSha2, [FAST_AUTH_SUCCESS]) => Ok(None),
            (Plugin::CachingSha2, [PERFORM_FULL_AUTHENTICATION]) if self.secure => {
                Ok(Some(self.clear_password()?))
            }
            (Plugin::CachingSha2, [PERFORM_FULL_AUTHENTICATION]) => {
                Ok(Some(vec![CACHING_SHA2_KEY_REQUEST]))
            }
            (Plugin::CachingSha2 | Plugin::Sha256, pem) if pem.starts_with(b"-----BEGIN") => {
                encrypt_password(pem, self.password()?.as_bytes(), &self.nonce)
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
            _ => Err(format!(
                "unexpected {} message from the backend during login",
                String::from_utf8_lossy(&self.plugin_name)
            )),
        }
    }

    fn clear_password(&self) -> Result<Vec<u8>, String> {
        let mut v = self.password()?.as_bytes().to_vec();
        v.push(0);
        Ok(v)
    }

    /// The password in clear; an account read from the backend has none (idgate holds only what
    /// mysql_native_password needs).
    fn password(&self) -> Result<&str, String> {
        self.secret.password().ok_or_else(|| {
            format!(
                "the backend asks for authentication plugin `{}`, but an account read from the \
                 backend (users_from_backend) can log in with mysql_native_password only",
                String::from_utf8_lossy(&self.plugin_name)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::auth::rsa::ServerKey;

    #[test]
    fn answers_each_plugin_as_mysql_clients_do() {
        let nonce = [7u8; 20];
        let mut with_nul = nonce.to_vec();
        with_nul.push(0);
        let a = ClientAuth::new(b"caching_sha2_password", &with_nul, "pw", false).unwrap();
        assert_eq!(
            a.first_answer().unwrap(),
            mysql_common::scramble::scramble_sha256(&nonce, b"pw").unwrap()
        );
        assert_eq!(a.more_data(&[3]).unwrap(), None);
        assert_eq!(a.more_data(&[4]).unwrap(), Some(vec![2]));
        assert!(a.more_data(&[9]).is_err());
        let secure = ClientAuth::new(b"caching_sha2_password", &nonce, "pw", true).unwrap();
        assert_eq!(secure.more_data(&[4]).unwrap(), Some(b"pw\0".to_vec()));

        let key = ServerKey::generate().unwrap();
        let cipher = a.more_data(key.public_pem()).unwrap().unwrap();
        assert_eq!(
            key.decrypt_password(&cipher, &nonce).as_deref(),
            Some(&b"pw"[..])
        );

        let s = ClientAuth::new(b"sha256_password", &nonce, "pw", false).unwrap();
        assert_eq!(s.first_answer().unwrap(), vec![1]);
        let empty = ClientAuth::new(b"sha256_password", &nonce, "", false).unwrap();
        assert_eq!(empty.first_answer().unwrap(), vec![0]);
        assert!(
            ClientAuth::new(b"mysql_clear_password", &nonce, "pw", false)
                .unwrap()
                .first_answer()
                .is_err()
        );
        assert!(ClientAuth::new(b"client_ed25519", &nonce, "pw", false).is_err());
    }
}
