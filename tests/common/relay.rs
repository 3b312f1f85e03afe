//! A TCP relay between idgate and one backend that can stop traffic at a chosen moment: when
//! armed with a byte pattern, the first client-to-server chunk containing it is held back (not
//! delivered) until the test cuts every connection, so a test can crash idgate or the backend
//! exactly between two steps of a protocol.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    armed: Option<Vec<u8>>,
    /// Cut the connection at the pattern instead of holding it.
    cut_on_match: bool,
    tripped: bool,
    /// Connections live now (both ends), closed by `cut`.
    streams: Vec<TcpStream>,
    /// Bumped by `cut`: a held chunk is dropped.
    cuts: u64,
}

pub struct Relay {
    pub port: u16,
    state: Arc<(Mutex<State>, Condvar)>,
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

impl Relay {
    /// Relays connections on a free local port to `127.0.0.1:target`.
    pub fn start(target: u16) -> Relay {
        let l = TcpListener::bind("127.0.0.1:0").expect("relay bind");
        let port = l.local_addr().expect("relay addr").port();
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let st = state.clone();
        thread::spawn(move || {
            for inbound in l.incoming() {
                let Ok(inbound) = inbound else { continue };
                let Ok(out) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let _ = inbound.set_nodelay(true);
                let _ = out.set_nodelay(true);
                {
                    let mut s = st.0.lock().unwrap();
                    for x in [&inbound, &out] {
                        if let Ok(c) = x.try_clone() {
                            s.streams.push(c);
                        }
                    }
                }
                let (a, b) = (inbound.try_clone().unwrap(), out.try_clone().unwrap());
                let st2 = st.clone();
                thread::spawn(move || pump(a, out, Some(st2)));
                thread::spawn(move || pump(b, inbound, None));
            }
        });
        Relay { port, state }
    }

    /// The next chunk idgate sends that contains `pattern` is held until [`Relay::cut`].
    pub fn hold_at(&self, pattern: &[u8]) {
        let mut s = self.state.0.lock().unwrap();
        s.armed = Some(pattern.to_vec());
        s.cut_on_match = false;
        s.tripped = false;
    }

    /// The connection that sends `pattern` is closed at once, the chunk undelivered.
    pub fn cut_at(&self, pattern: &[u8]) {
        self.hold_at(pattern);
        self.state.0.lock().unwrap().cut_on_match = true;
    }

    /// Waits (up to a minute, as a guard against a hung test) until the pattern was seen.
    pub fn wait_tripped(&self) {
        let (m, cv) = &*self.state;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut s = m.lock().unwrap();
        while !s.tripped {
            assert!(Instant::now() < deadline, "the relay never saw its pattern");
            s = cv.wait_timeout(s, Duration::from_millis(100)).unwrap().0;
        }
    }

    pub fn tripped(&self) -> bool {
        self.state.0.lock().unwrap().tripped
    }

    /// Closes every relayed connection (held chunks are dropped) and disarms; new connections
    /// are relayed normally.
    pub fn cut(&self) {
        let (m, cv) = &*self.state;
        let mut s = m.lock().unwrap();
        for x in s.streams.drain(..) {
            let _ = x.shutdown(Shutdown::Both);
        }
        s.armed = None;
        s.cuts += 1;
        cv.notify_all();
    }
}

/// Copies `from` to `to`; the client-to-server direction (`state` given) watches for the pattern.
fn pump(mut from: TcpStream, mut to: TcpStream, state: Option<Arc<(Mutex<State>, Condvar)>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(st) = &state {
            let (m, cv) = &**st;
            let mut s = m.lock().unwrap();
            if s.armed.as_deref().is_some_and(|p| contains(&buf[..n], p)) {
                s.armed = None;
                s.tripped = true;
                cv.notify_all();
                if s.cut_on_match {
                    break;
                }
                let seen = s.cuts;
                while s.cuts == seen {
                    s = cv.wait(s).unwrap();
                }
                break;
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
