//! A minimal plain-TCP login (mysql_native_password) that returns the server's answer packet
//! exactly as sent, to compare idgate's refusals with MariaDB's byte for byte.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn read_packet(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).expect("packet header");
    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    let mut p = vec![0u8; len];
    s.read_exact(&mut p).expect("packet payload");
    (h[3], p)
}

/// Capabilities of the greeting and its 20-byte scramble.
pub fn greeting(s: &mut TcpStream) -> (u32, Vec<u8>) {
    let (_, g) = read_packet(s);
    let mut i = 1 + g[1..].iter().position(|&b| b == 0).expect("version") + 1;
    i += 4; // connection id
    let mut scramble = g[i..i + 8].to_vec();
    i += 9;
    let low = u16::from_le_bytes([g[i], g[i + 1]]) as u32;
    let high = u16::from_le_bytes([g[i + 5], g[i + 6]]) as u32;
    i += 7 + 1 + 10;
    scramble.extend_from_slice(&g[i..i + 12]);
    (low | high << 16, scramble)
}

/// Connects, logs in as `user`, and returns (sequence id, payload) of the server's answer.
pub fn login(port: u16, user: &str, password: &str) -> (u8, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (_, scramble) = greeting(&mut s);
    let answer = if password.is_empty() {
        Vec::new()
    } else {
        mysql_common::scramble::scramble_native(&scramble, password.as_bytes())
            .expect("scramble")
            .to_vec()
    };
    // PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | LONG_PASSWORD | LONG_FLAG | TRANSACTIONS
    let caps: u32 = 0x200 | 0x8000 | 0x80000 | 0x1 | 0x4 | 0x2000;
    let mut p = Vec::new();
    p.extend_from_slice(&caps.to_le_bytes());
    p.extend_from_slice(&(1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    p.push(answer.len() as u8);
    p.extend_from_slice(&answer);
    p.extend_from_slice(b"mysql_native_password\0");
    send(&mut s, 1, &p);
    read_packet(&mut s)
}

pub fn send(s: &mut TcpStream, seq: u8, payload: &[u8]) {
    let mut out = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    out.push(seq);
    out.extend_from_slice(payload);
    s.write_all(&out).expect("send");
}
