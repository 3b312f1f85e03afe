//! Fault scenario: a black-box fuzzer drives a running idgate with random and mutated packets,
//! before login (handshake responses) and after it (every command, text and binary protocol,
//! framing broken on purpose), from several connections at once, while a canary session keeps
//! inserting and reading. idgate must not panic or exit, must answer the canary promptly
//! throughout, and must keep its memory bounded.
//!
//! `CHAOS_FUZZ_SECONDS` (default 12) sets the length; `scripts/chaos --long` runs longer.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::idgate_proc::{config_for, Idgate, APP_PASSWORD, APP_USER};
use common::scenario;
use common::{start_db, DATABASE};
use mysql::prelude::Queryable;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TABLES: &str = "generators:
  seg:
    kind: segment
tables:
  orders:
    generator: seg
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
  canary:
    generator: seg
    sharding:
      columns: [id]
      algorithm: mod
      shards: [shard0, shard1]
";

/// Valid commands the mutations start from.
fn seeds() -> Vec<Vec<u8>> {
    let q = |s: &str| [&[0x03][..], s.as_bytes()].concat();
    let mut v = vec![
        q("SELECT 1"),
        q("INSERT INTO orders (user_id, note) VALUES (1, 'a'), (2, 'b')"),
        q("INSERT INTO orders SET user_id = 3, note = 'c'"),
        q("SELECT id, note FROM orders WHERE id IN (1, 2, 3) ORDER BY id DESC LIMIT 2"),
        q("SELECT COUNT(*), MAX(id), AVG(user_id) FROM orders GROUP BY user_id HAVING COUNT(*) > 0"),
        q("UPDATE orders SET note = 'x' WHERE id = 4"),
        q("SELECT NEXT 3 VALUES FROM seg"),
        q("EXPLAIN ROUTE SELECT * FROM orders WHERE id = 5"),
        q("BEGIN; INSERT INTO orders (user_id, note) VALUES (5, 'd'); COMMIT"),
        q("SELECT _binary'\u{1}\u{2}', 'it''s', \"q\\\"\", `id` FROM orders LIMIT 1"),
        vec![0x16, b'S', b'E', b'L', b'E', b'C', b'T', b' ', b'?'],
        [&[0x16][..], b"INSERT INTO orders (user_id, note) VALUES (?, ?)"].concat(),
        // COM_STMT_EXECUTE of statement 1 with two parameters (LONGLONG, VAR_STRING).
        vec![
            0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0, 253, 0, 7, 0, 0, 0, 0, 0, 0, 0, 3, b'a',
            b'b', b'c',
        ],
        vec![0x18, 1, 0, 0, 0, 0, 0, b'l', b'o', b'n', b'g'],
        vec![0x1a, 1, 0, 0, 0],
        vec![0x19, 1, 0, 0, 0],
        [&[0x04][..], b"orders\0"].concat(),
        [&[0x02][..], DATABASE.as_bytes()].concat(),
        vec![0x1b, 1, 0],
        vec![0x1b, 0, 0],
        vec![0x0e],
        vec![0x09],
        vec![0x1f],
        [&[0x11][..], b"app\0\x14", &[7u8; 20], DATABASE.as_bytes(), b"\0"].concat(),
    ];
    v.push(vec![0x03]);
    v
}

fn mutate(rng: &mut StdRng, seed: &[u8]) -> Vec<u8> {
    let mut p = seed.to_vec();
    for _ in 0..rng.random_range(1..4) {
        match rng.random_range(0..7) {
            0 if !p.is_empty() => {
                let i = rng.random_range(0..p.len());
                p[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !p.is_empty() => {
                let i = rng.random_range(0..p.len());
                p[i] = rng.random();
            }
            2 => p.truncate(rng.random_range(0..=p.len())),
            3 => {
                let i = rng.random_range(0..=p.len());
                let n = rng.random_range(1..64);
                let junk: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                p.splice(i..i, junk);
            }
            4 => {
                // Lengths and counts that claim a lot.
                let i = rng.random_range(0..=p.len());
                let big: &[u8] = match rng.random_range(0..3) {
                    0 => &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
                    1 => &[0xfc, 0xff, 0xff],
                    _ => &[0xff, 0xff, 0xff, 0xff],
                };
                p.splice(i..i, big.iter().copied());
            }
            5 => {
                let more = p.clone();
                p.extend_from_slice(&more);
            }
            _ => {
                let n = rng.random_range(0..32);
                p = (0..n).map(|_| rng.random()).collect();
            }
        }
    }
    p
}

/// Writes one packet with a valid header (or, sometimes, a broken sequence id).
fn send(s: &mut TcpStream, rng: &mut StdRng, payload: &[u8]) -> std::io::Result<()> {
    let len = payload.len().min(0xff_fffe);
    let seq = if rng.random_ratio(1, 20) {
        rng.random()
    } else {
        0
    };
    let mut b = (len as u32).to_le_bytes()[..3].to_vec();
    b.push(seq);
    b.extend_from_slice(&payload[..len]);
    s.write_all(&b)
}

/// Reads whatever comes back until the server goes quiet; false when the connection is over.
fn drain(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 65536];
    let _ = s.set_read_timeout(Some(Duration::from_millis(15)));
    loop {
        match s.read(&mut buf) {
            Ok(0) => return false,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return true
            }
            Err(_) => return false,
        }
    }
}

/// Logs in properly (mysql_native_password) on a raw socket.
fn login(port: u16) -> Option<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut head = [0u8; 4];
    s.read_exact(&mut head).ok()?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
    let mut greeting = vec![0u8; len];
    s.read_exact(&mut greeting).ok()?;
    let version_end = 1 + greeting[1..].iter().position(|&b| b == 0)?;
    let part1 = greeting.get(version_end + 5..version_end + 13)?;
    let part2 = greeting.get(version_end + 32..version_end + 44)?;
    let nonce = [part1, part2].concat();
    let answer = mysql_common::scramble::scramble_native(&nonce, APP_PASSWORD.as_bytes())?;
    // PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | CONNECT_WITH_DB | MULTI_STATEMENTS |
    // MULTI_RESULTS | LONG_PASSWORD | TRANSACTIONS
    let caps: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x0008 | 0x0001_0000 | 0x0002_0000 | 1 | 0x2000;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(APP_USER.as_bytes());
    p.push(0);
    p.push(20);
    p.extend_from_slice(&answer);
    p.extend_from_slice(DATABASE.as_bytes());
    p.push(0);
    p.extend_from_slice(b"mysql_native_password\0");
    let mut b = (p.len() as u32).to_le_bytes()[..3].to_vec();
    b.push(1);
    b.extend_from_slice(&p);
    s.write_all(&b).ok()?;
    s.read_exact(&mut head).ok()?;
    let mut ok = vec![0u8; u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize];
    s.read_exact(&mut ok).ok()?;
    (ok.first() == Some(&0)).then_some(s)
}

#[test]
fn random_and_mutated_packets_before_and_after_login() {
    let seconds: u64 = std::env::var("CHAOS_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let dbs = [start_db(), start_db()];
    for db in &dbs {
        for t in ["orders", "canary"] {
            common::direct(db)
                .query_drop(format!(
                    "CREATE TABLE {t} (id BIGINT PRIMARY KEY, user_id BIGINT, note VARCHAR(40))"
                ))
                .unwrap();
        }
    }
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", &dbs[0]), ("shard1", &dbs[1])], TABLES)
    });
    let pid = g.pid();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);

    let mut fuzzers = Vec::new();
    for t in 0..4u64 {
        let (stop, sent, port) = (stop.clone(), sent.clone(), g.port);
        fuzzers.push(std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(0x1d6a7e + t);
            let seeds = seeds();
            while !stop.load(Ordering::Relaxed) {
                if rng.random_ratio(1, 4) {
                    // Before login: junk or a mangled handshake response.
                    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                        continue;
                    };
                    drain(&mut s);
                    let junk: Vec<u8> = (0..rng.random_range(0..200))
                        .map(|_| rng.random())
                        .collect();
                    let _ = if rng.random() {
                        s.write_all(&junk)
                    } else {
                        let mut p = vec![0x0d, 0xa2, 0x0a, 0x00, 0, 0, 0, 1, 45];
                        p.extend_from_slice(&[0; 23]);
                        p.extend_from_slice(b"app\0");
                        let p = mutate(&mut rng, &p);
                        send(&mut s, &mut rng, &p)
                    };
                    sent.fetch_add(1, Ordering::Relaxed);
                    drain(&mut s);
                    continue;
                }
                let Some(mut s) = login(port) else { continue };
                for _ in 0..rng.random_range(1..40) {
                    let seed = &seeds[rng.random_range(0..seeds.len())];
                    let p = if rng.random_ratio(1, 3) {
                        seed.clone()
                    } else {
                        mutate(&mut rng, seed)
                    };
                    let wrote = if rng.random_ratio(1, 50) {
                        // A header promising more than will ever come, then hang up.
                        s.write_all(&[0xff, 0xff, 0xff, 0, 0x03]).map(|_| ())
                    } else {
                        send(&mut s, &mut rng, &p)
                    };
                    sent.fetch_add(1, Ordering::Relaxed);
                    if wrote.is_err() || !drain(&mut s) {
                        break;
                    }
                }
            }
        }));
    }

    // The canary: an ordinary session that must keep working, promptly.
    let mut canary = g.conn();
    let mut worst = Duration::ZERO;
    let mut max_rss = 0;
    let mut rounds = 0;
    while Instant::now() < deadline {
        let t = Instant::now();
        canary
            .query_drop("INSERT INTO canary (user_id, note) VALUES (42, 'canary')")
            .unwrap_or_else(|e| {
                panic!("the canary's INSERT failed: {e}\nidgate log:\n{}", g.log())
            });
        let n: Option<u64> = canary
            .query_first("SELECT COUNT(*) FROM canary")
            .unwrap_or_else(|e| {
                panic!("the canary's SELECT failed: {e}\nidgate log:\n{}", g.log())
            });
        assert_eq!(n, Some(rounds + 1), "the canary's rows are there");
        rounds += 1;
        worst = worst.max(t.elapsed());
        max_rss = max_rss.max(scenario::rss_kib(pid));
        std::thread::sleep(Duration::from_millis(40));
    }
    stop.store(true, Ordering::Relaxed);
    for f in fuzzers {
        f.join().expect("a fuzzer thread panicked");
    }
    let log = g.log();
    assert!(!log.contains("panicked"), "idgate panicked:\n{log}");
    assert_eq!(g.pid(), pid);
    canary.query_drop("SELECT 1").expect("idgate still serves");
    println!(
        "fuzz: {} packets from 4 connections in {seconds} s, canary {rounds} rounds, slowest {:?}, \
         idgate RSS at most {} MiB",
        sent.load(Ordering::Relaxed),
        worst,
        max_rss / 1024
    );
    assert!(
        worst < Duration::from_secs(1),
        "the canary waited {worst:?}"
    );
    assert!(
        max_rss < 256 * 1024,
        "idgate's RSS reached {} MiB",
        max_rss / 1024
    );
}

/// A packet header costs idgate memory only as the announced bytes arrive: 20 sessions that
/// each announce a 16 MiB packet and send one byte must not make idgate hold 320 MiB.
#[test]
fn announced_packet_sizes_are_not_allocated_up_front() {
    let db = common::shared_db();
    let g = Idgate::start(db);
    let pid = g.pid();
    let before = scenario::rss_kib(pid);
    let mut held = Vec::new();
    for _ in 0..20 {
        let mut s = login(g.port).expect("login");
        s.write_all(&[0xff, 0xff, 0xff, 0x00, 0x03]).unwrap();
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    let grown = scenario::rss_kib(pid).saturating_sub(before);
    // A canary still works meanwhile.
    let mut c = g.conn();
    c.query_drop("SELECT 1").unwrap();
    assert!(
        grown < 64 * 1024,
        "20 announced 16 MiB packets grew idgate's RSS by {} MiB",
        grown / 1024
    );
    drop(held);
}
