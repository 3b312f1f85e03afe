//! The server side of the MySQL protocol: framing, handshake and authentication, and the packets
//! idgate writes itself. It knows nothing about SQL, shards or IDs. Backend column definitions,
//! rows, OK and ERR packets are relayed byte-for-byte by `exec`, not re-encoded here.

pub mod answers;
pub mod auth;
pub mod command;
pub mod compressed;
pub mod errors;
pub mod framing;
pub mod handshake;
pub mod packets;
pub mod stmt_execute;
pub mod tls_login;

#[cfg(test)]
mod framing_tests;
