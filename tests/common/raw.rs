//! A raw-packet client for byte-for-byte comparisons: it sends a command and returns every packet
//! of the answer exactly as it arrived (classic EOF framing, no CLIENT_DEPRECATE_EOF).

use std::time::Duration;

use idgate::config::{Backend, PoolSettings};
use idgate::exec::backend::LoginFlags;
use idgate::exec::relay::{self, Client, Reply};
use idgate::exec::BackendConn;
use idgate::wire::framing::PacketWriter;
use mysql_common::packets::ComStmtExecuteRequestBuilder;
use mysql_common::proto::MySerialize;
use mysql_common::value::Value;

pub struct Raw {
    conn: BackendConn,
    rt: tokio::runtime::Runtime,
}

fn split_packets(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while bytes.len() >= 4 {
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0]) as usize;
        out.push(bytes[4..4 + len].to_vec());
        bytes = &bytes[4 + len..];
    }
    out
}

/// idgate's own backend client logged in to `port` with `db` selected (it announces
/// CLIENT_LOCAL_FILES, which tests of LOAD DATA LOCAL rely on).
pub fn connect_backend(
    rt: &tokio::runtime::Runtime,
    port: u16,
    user: &str,
    password: &str,
    db: &str,
) -> BackendConn {
    connect_backend_with(rt, port, (user, password), db, LoginFlags::default())
}

/// As [`connect_backend`], logging in with the capabilities `flags` ask for.
pub fn connect_backend_with(
    rt: &tokio::runtime::Runtime,
    port: u16,
    (user, password): (&str, &str),
    db: &str,
    flags: LoginFlags,
) -> BackendConn {
    let cfg = Backend::new("127.0.0.1", port, user, password);
    let mut conn = rt
        .block_on(BackendConn::connect(
            "raw",
            &cfg,
            flags,
            Duration::from_secs(10),
        ))
        .unwrap_or_else(|e| panic!("raw connect to {port}: {e}"));
    let mut init = vec![0x02];
    init.extend_from_slice(db.as_bytes());
    assert_eq!(
        rt.block_on(conn.simple_command(&init)).unwrap(),
        0,
        "USE {db}"
    );
    conn
}

/// Raw connections to MariaDB directly (as the test user) and through idgate (as the app user),
/// both to the test database, for byte-for-byte comparisons of answers.
pub fn direct_and_through(db: &super::MariaDb, g: &super::Idgate) -> (Raw, Raw) {
    direct_and_through_with(db, g, LoginFlags::default())
}

/// As [`direct_and_through`], both logged in with the capabilities `flags` ask for.
pub fn direct_and_through_with(
    db: &super::MariaDb,
    g: &super::Idgate,
    flags: LoginFlags,
) -> (Raw, Raw) {
    let app = (
        super::idgate_proc::APP_USER,
        super::idgate_proc::APP_PASSWORD,
    );
    (
        Raw::connect_with(
            db.port,
            (super::USER, super::PASSWORD),
            super::DATABASE,
            flags,
        ),
        Raw::connect_with(g.port, app, super::DATABASE, flags),
    )
}

/// Packets of an answer, each shown with its bytes when two answers differ.
pub fn show(packets: &[Vec<u8>]) -> String {
    packets
        .iter()
        .map(|p| format!("{:02x?}", p))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Raw {
    pub fn connect(port: u16, user: &str, password: &str, db: &str) -> Raw {
        Raw::connect_with(port, (user, password), db, LoginFlags::default())
    }

    pub fn connect_with(port: u16, account: (&str, &str), db: &str, flags: LoginFlags) -> Raw {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let conn = connect_backend_with(&rt, port, account, db, flags);
        Raw { conn, rt }
    }

    /// Sends one command and returns the packets of its answer.
    pub fn command(&mut self, payload: &[u8], reply: Reply) -> Vec<Vec<u8>> {
        let conn = &mut self.conn;
        self.rt.block_on(async {
            conn.write_command(payload);
            conn.flush().await.unwrap();
            let mut writer = PacketWriter::new(Vec::<u8>::new());
            let mut client = Client {
                writer: &mut writer,
                deprecate_eof: false,
            };
            let adj = relay::Adjust {
                cursor_requested: relay::Adjust::asks_for_cursor(payload),
                ..Default::default()
            };
            relay::relay(conn, &mut client, reply, adj).await.unwrap();
            writer.flush().await.unwrap();
            split_packets(writer.inner())
        })
    }

    /// Sends a command that has no answer (COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE).
    pub fn send_only(&mut self, payload: &[u8]) {
        let conn = &mut self.conn;
        self.rt.block_on(async {
            conn.write_command(payload);
            conn.flush().await.unwrap();
        });
    }

    pub fn query(&mut self, sql: &[u8]) -> Vec<Vec<u8>> {
        let mut p = vec![0x03];
        p.extend_from_slice(sql);
        self.command(&p, Reply::Results)
    }

    /// Prepares `sql`; returns the statement id and the answer with the id zeroed (ids are per
    /// connection and not part of what is compared).
    pub fn prepare(&mut self, sql: &[u8]) -> (u32, Vec<Vec<u8>>) {
        let mut p = vec![0x16];
        p.extend_from_slice(sql);
        let mut packets = self.command(&p, Reply::Prepare);
        let first = &mut packets[0];
        assert_eq!(
            first[0],
            0,
            "prepare failed: {:?}",
            String::from_utf8_lossy(first)
        );
        let id = u32::from_le_bytes([first[1], first[2], first[3], first[4]]);
        first[1..5].fill(0);
        (id, packets)
    }

    pub fn execute(&mut self, id: u32, params: &[Value]) -> Vec<Vec<u8>> {
        let (req, _) = ComStmtExecuteRequestBuilder::new(id).build(params);
        let mut p = Vec::new();
        req.serialize(&mut p);
        self.command(&p, Reply::Results)
    }

    /// Executes statement `id` (no parameters) asking for a read-only cursor.
    pub fn execute_with_cursor(&mut self, id: u32) -> Vec<Vec<u8>> {
        let mut p = vec![0x17];
        p.extend_from_slice(&id.to_le_bytes());
        p.push(0x01); // CURSOR_TYPE_READ_ONLY
        p.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        self.command(&p, Reply::Results)
    }

    /// COM_STMT_FETCH of `rows` rows from statement `id`'s cursor.
    pub fn fetch(&mut self, id: u32, rows: u32) -> Vec<Vec<u8>> {
        let mut p = vec![0x1c];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&rows.to_le_bytes());
        self.command(&p, Reply::Rows)
    }
}
