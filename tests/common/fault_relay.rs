//! A TCP relay between idgate and a backend whose behaviour a test switches at run time: pass
//! bytes on, delay every chunk, reset every connection, or keep connections open while
//! forwarding nothing (a half-open path: a dead switch port or a frozen firewall state).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

const PASS: u8 = 0;
const DELAY: u8 = 1;
const BLACKHOLE: u8 = 2;

struct Shared {
    mode: AtomicU8,
    delay_ms: AtomicU64,
    streams: Mutex<Vec<TcpStream>>,
}

pub struct FaultRelay {
    pub port: u16,
    shared: Arc<Shared>,
}

impl FaultRelay {
    /// Relays connections on a free local port to `127.0.0.1:target`.
    pub fn start(target: u16) -> FaultRelay {
        let l = TcpListener::bind("127.0.0.1:0").expect("relay bind");
        let port = l.local_addr().expect("relay addr").port();
        let shared = Arc::new(Shared {
            mode: AtomicU8::new(PASS),
            delay_ms: AtomicU64::new(0),
            streams: Mutex::new(Vec::new()),
        });
        let sh = shared.clone();
        thread::spawn(move || {
            for inbound in l.incoming() {
                let Ok(inbound) = inbound else { continue };
                let Ok(out) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let _ = inbound.set_nodelay(true);
                let _ = out.set_nodelay(true);
                if let Ok(mut s) = sh.streams.lock() {
                    for x in [&inbound, &out] {
                        if let Ok(c) = x.try_clone() {
                            s.push(c);
                        }
                    }
                }
                let (Ok(a), Ok(b)) = (inbound.try_clone(), out.try_clone()) else {
                    continue;
                };
                let (s1, s2) = (sh.clone(), sh.clone());
                thread::spawn(move || pump(a, out, s1));
                thread::spawn(move || pump(b, inbound, s2));
            }
        });
        FaultRelay { port, shared }
    }

    /// Bytes flow again, at once.
    pub fn pass(&self) {
        self.shared.mode.store(PASS, Ordering::SeqCst);
    }

    /// Every chunk waits `ms` before it is passed on.
    pub fn delay(&self, ms: u64) {
        self.shared.delay_ms.store(ms, Ordering::SeqCst);
        self.shared.mode.store(DELAY, Ordering::SeqCst);
    }

    /// Connections stay open but nothing is passed on, in either direction.
    pub fn blackhole(&self) {
        self.shared.mode.store(BLACKHOLE, Ordering::SeqCst);
    }

    /// Resets every open connection (RST, as a crashed peer or a firewall would).
    pub fn reset_all(&self) {
        if let Ok(mut s) = self.shared.streams.lock() {
            for x in s.drain(..) {
                // SO_LINGER 0 makes close send RST instead of FIN.
                let l = libc::linger {
                    l_onoff: 1,
                    l_linger: 0,
                };
                // SAFETY: setsockopt on a socket we own, with a correctly sized struct.
                unsafe {
                    libc::setsockopt(
                        std::os::fd::AsRawFd::as_raw_fd(&x),
                        libc::SOL_SOCKET,
                        libc::SO_LINGER,
                        &l as *const libc::linger as *const libc::c_void,
                        std::mem::size_of::<libc::linger>() as libc::socklen_t,
                    );
                }
                let _ = x.shutdown(Shutdown::Both);
            }
        }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, sh: Arc<Shared>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        loop {
            match sh.mode.load(Ordering::SeqCst) {
                BLACKHOLE => thread::sleep(Duration::from_millis(20)),
                DELAY => {
                    thread::sleep(Duration::from_millis(sh.delay_ms.load(Ordering::SeqCst)));
                    break;
                }
                _ => break,
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
