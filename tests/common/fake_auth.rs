//! A tiny MySQL server for idgate's backend logins with the plugins MariaDB lacks: either
//! caching_sha2_password that always asks for full authentication, or sha256_password (reached
//! by an AuthSwitchRequest, as MySQL does for such users). Without TLS both need the RSA
//! exchange. It answers COM_PING and COM_CHANGE_USER (same exchange) and nothing else.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use mysql_common::io::ParseBuf;
use mysql_common::packets::HandshakeResponse;
use rsa::pkcs8::{EncodePublicKey, LineEnding};
use rsa::rand_core::OsRng;
use rsa::{Oaep, RsaPrivateKey};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    CachingSha2Full,
    Sha256,
}

/// Starts the server on a free port; it serves until the test process ends.
pub fn start(mode: Mode, user: &'static str, password: &'static str) -> u16 {
    let key = RsaPrivateKey::new(&mut OsRng, 2048).expect("RSA key");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let key = key.clone();
            std::thread::spawn(move || {
                let _ = serve(s, mode, &key, user, password);
            });
        }
    });
    port
}

struct Conn {
    s: TcpStream,
    seq: u8,
}

impl Conn {
    fn read(&mut self) -> std::io::Result<Vec<u8>> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h)?;
        let mut p = vec![0; u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize];
        self.s.read_exact(&mut p)?;
        self.seq = h[3].wrapping_add(1);
        Ok(p)
    }

    fn write(&mut self, p: &[u8]) -> std::io::Result<()> {
        let mut b = (p.len() as u32).to_le_bytes();
        b[3] = self.seq;
        self.seq = self.seq.wrapping_add(1);
        self.s.write_all(&b)?;
        self.s.write_all(p)
    }
}

fn serve(
    s: TcpStream,
    mode: Mode,
    key: &RsaPrivateKey,
    user: &str,
    password: &str,
) -> std::io::Result<()> {
    let mut c = Conn { s, seq: 0 };
    let nonce = *b"0123456789abcdefghij";
    let plugin: &[u8] = match mode {
        Mode::CachingSha2Full => b"caching_sha2_password",
        Mode::Sha256 => b"mysql_native_password",
    };
    let caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0020_0000 | 0x0000_2000; // 4.1, secure conn., plugin auth, lenenc data, transactions
    let mut g = vec![10];
    g.extend_from_slice(b"8.0.36-fake\0");
    g.extend_from_slice(&7u32.to_le_bytes());
    g.extend_from_slice(&nonce[..8]);
    g.push(0);
    g.extend_from_slice(&(caps as u16).to_le_bytes());
    g.push(45);
    g.extend_from_slice(&2u16.to_le_bytes());
    g.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    g.push(21);
    g.extend_from_slice(&[0; 10]);
    g.extend_from_slice(&nonce[8..]);
    g.push(0);
    g.extend_from_slice(plugin);
    g.push(0);
    c.write(&g)?;
    let p = c.read()?;
    let resp: HandshakeResponse = ParseBuf(&p)
        .parse(())
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let (who, first) = (resp.user().to_vec(), resp.scramble_buf().to_vec());
    let mut first = Some(first);
    if mode == Mode::Sha256 {
        let mut sw = b"\xfesha256_password\0".to_vec();
        sw.extend_from_slice(&nonce);
        sw.push(0);
        c.write(&sw)?;
        first = None;
    }
    let ok = authenticate(&mut c, mode, key, &nonce, first, password)? && who == user.as_bytes();
    finish(&mut c, ok, &who)?;
    if !ok {
        return Ok(());
    }
    loop {
        let p = c.read()?;
        match p.first() {
            Some(0x0e) => c.write(&[0, 0, 0, 2, 0, 0, 0])?,
            Some(0x11) => {
                // COM_CHANGE_USER: user NUL, length-prefixed auth data, database NUL, …
                let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
                let who = p[1..end].to_vec();
                let n = p[end + 1] as usize;
                let data = p[end + 2..end + 2 + n].to_vec();
                let ok = authenticate(&mut c, mode, key, &nonce, Some(data), password)?
                    && who == user.as_bytes();
                finish(&mut c, ok, &who)?;
                if !ok {
                    return Ok(());
                }
            }
            _ => return Ok(()),
        }
    }
}

/// The RSA exchange: returns whether the client sent `password` encrypted under `key`.
fn authenticate(
    c: &mut Conn,
    mode: Mode,
    key: &RsaPrivateKey,
    nonce: &[u8; 20],
    first: Option<Vec<u8>>,
    password: &str,
) -> std::io::Result<bool> {
    let request = match mode {
        Mode::CachingSha2Full => {
            // Whatever the scramble, ask for the password itself.
            c.write(&[1, 4])?;
            c.read()?
        }
        Mode::Sha256 => match first {
            Some(f) => f,
            None => c.read()?,
        },
    };
    let want = if mode == Mode::Sha256 { 1 } else { 2 };
    if request != [want] {
        return Ok(false);
    }
    let pem = key
        .to_public_key()
        .to_public_key_pem(LineEnding::LF)
        .expect("pem");
    let mut p = vec![1];
    p.extend_from_slice(pem.as_bytes());
    c.write(&p)?;
    let cipher = c.read()?;
    let Ok(mut plain) = key.decrypt(Oaep::new::<sha1::Sha1>(), &cipher) else {
        return Ok(false);
    };
    for (i, b) in plain.iter_mut().enumerate() {
        *b ^= nonce[i % 20];
    }
    Ok(plain.strip_suffix(b"\0") == Some(password.as_bytes()))
}

fn finish(c: &mut Conn, ok: bool, who: &[u8]) -> std::io::Result<()> {
    if ok {
        return c.write(&[0, 0, 0, 2, 0, 0, 0]);
    }
    let mut e = vec![0xff];
    e.extend_from_slice(&1045u16.to_le_bytes());
    e.extend_from_slice(b"#28000");
    e.extend_from_slice(
        format!(
            "Access denied for user '{}'@'127.0.0.1' (using password: YES)",
            String::from_utf8_lossy(who)
        )
        .as_bytes(),
    );
    c.write(&e)
}
