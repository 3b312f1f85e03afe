//! Property tests over what decodes bytes a client or a backend chose: packet fields, the
//! handshake, COM_STMT_EXECUTE parameters and the SQL scanners (merge rows and values have theirs
//! in src/exec/merge/decode_tests.rs). On any
//! input they return a value or an error, never panic; where an encoder exists, decoding what it
//! wrote gives back what it was given.

use std::time::Duration;

use idgate::tls::stream::{NetRead, NetWrite};
use idgate::wire::framing::{PacketReader, PacketWriter};
use idgate::wire::handshake::{self, ServerGreeting, UserDb};
use idgate::wire::packets;
use idgate::wire::stmt_execute::{decode_params, BoundState};
use mysql_common::packets::ComStmtExecuteRequestBuilder;
use mysql_common::proto::MySerialize;
use mysql_common::value::Value;
use proptest::prelude::*;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// SQL-ish text: keywords, quotes, comments and separators mixed with random bytes, which
/// reaches the scanners' corners far more often than uniform bytes.
fn sqlish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"INSERT INTO t ".to_vec()),
        Just(b"(id, note) ".to_vec()),
        Just(b"VALUES (1, 'a'), (?, \"b\") ".to_vec()),
        Just(b"SELECT * FROM t WHERE id IN (1, 2) ".to_vec()),
        Just(b"ON DUPLICATE KEY UPDATE note = VALUES(note) ".to_vec()),
        Just(b"; ".to_vec()),
        Just(b"'".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"`".to_vec()),
        Just(b"\\".to_vec()),
        Just(b"/*".to_vec()),
        Just(b"*/".to_vec()),
        Just(b"/*!40101 ".to_vec()),
        Just(b"-- ".to_vec()),
        Just(b"#".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"_binary'".to_vec()),
        Just(b"x'ff' ".to_vec()),
        Just(b"NEXTVAL(seq) ".to_vec()),
        Just(b"EXPLAIN ROUTE ".to_vec()),
        bytes(6),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn lenenc_round_trips(v in any::<u64>(), tail in bytes(8)) {
        let mut b = Vec::new();
        packets::put_lenenc_int(&mut b, v);
        b.extend_from_slice(&tail);
        let mut rest = &b[..];
        prop_assert_eq!(packets::get_lenenc_int(&mut rest), Some(v));
        prop_assert_eq!(rest, &tail[..]);
    }

    #[test]
    fn packet_fields_never_panic(p in bytes(64)) {
        let mut rest = &p[..];
        let _ = packets::get_lenenc_int(&mut rest);
        let mut rest = &p[..];
        let _ = packets::get_lenenc_str(&mut rest);
        let _ = packets::parse_ok(&p);
        let _ = packets::parse_err(&p);
        let _ = packets::parse_eof(&p);
        let _ = packets::is_eof(&p);
    }

    /// Arbitrary bytes as a COM_STMT_EXECUTE for a statement of `count` parameters.
    #[test]
    fn execute_parameters_never_panic(p in bytes(200), count in 0usize..40, bound in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..40)) {
        let mut state = BoundState { types: bound, ..BoundState::default() };
        let mut packet = vec![0x17];
        packet.extend_from_slice(&p);
        let _ = decode_params(&packet, count, &mut state);
    }

    /// What a client library encodes is decoded to the same values.
    #[test]
    fn execute_parameters_round_trip(values in proptest::collection::vec(prop_oneof![
        Just(Value::NULL),
        any::<i64>().prop_map(Value::Int),
        any::<u64>().prop_map(Value::UInt),
        any::<f64>().prop_filter("NaN is not equal to itself", |f| !f.is_nan()).prop_map(Value::Double),
        bytes(100).prop_map(Value::Bytes),
    ], 1..20)) {
        let (req, _) = ComStmtExecuteRequestBuilder::new(1).build(&values);
        let mut packet = Vec::new();
        req.serialize(&mut packet);
        let mut state = BoundState::default();
        let params = decode_params(&packet, values.len(), &mut state).expect("a valid packet");
        // Drivers send an unsigned value that fits in i64 as a signed one.
        let same = |v: &Value| match v {
            Value::UInt(u) if *u <= i64::MAX as u64 => Value::Int(*u as i64),
            v => v.clone(),
        };
        let decoded: Vec<Value> = params.into_iter().map(|p| same(&p.value)).collect();
        let sent: Vec<Value> = values.iter().map(same).collect();
        prop_assert_eq!(decoded, sent);
    }

    #[test]
    fn sql_scanners_never_panic(sql in sqlish()) {
        let ranges = idgate::sql::split_statements(&sql);
        let mut last = 0;
        for r in &ranges {
            prop_assert!(r.start >= last && r.end <= sql.len() && r.start <= r.end);
            last = r.end;
        }
        for r in ranges.iter().cloned().chain(std::iter::once(0..sql.len())) {
            let stmt = &sql[r];
            let _ = idgate::sql::classify(stmt);
            let _ = idgate::sql::session_query(stmt);
            let _ = idgate::sql::analyze_insert(stmt);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The connection phase on arbitrary bytes from the client ends with an error or a refusal,
    /// never a panic; and it never waits for more than the client sent beyond one packet.
    #[test]
    fn handshake_never_panics(first in bytes(120), second in bytes(60), valid_header in any::<bool>()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
                .await
                .unwrap();
            let (server, _) = listener.accept().await.unwrap();
            let (sr, sw) = server.into_split();
            let mut input = Vec::new();
            for (i, p) in [&first, &second].into_iter().enumerate() {
                if valid_header {
                    input.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
                    input.push(i as u8 + 1);
                }
                input.extend_from_slice(p);
            }
            tokio::io::AsyncWriteExt::write_all(&mut client, &input).await.unwrap();
            tokio::io::AsyncWriteExt::shutdown(&mut client).await.unwrap();
            let mut users = UserDb::default();
            users.insert(
                "app",
                idgate::wire::auth::UserAuth {
                    native: Some(idgate::wire::auth::hash_password("pw")),
                    caching_sha2: Some(idgate::wire::auth::hash_password_sha2("pw")),
                },
            );
            let mut r = PacketReader::new(NetRead::Plain(sr), 64 * 1024);
            let mut w = PacketWriter::new(NetWrite::Plain(sw));
            let greeting = ServerGreeting {
                version: b"10.11-idgate",
                connection_id: 1,
                collation: 45,
                tls: false,
                session_track: true,
                extended_metadata: true,
            };
            let run = handshake::accept(&mut r, &mut w, &greeting, &users, "127.0.0.1", None);
            let out = tokio::time::timeout(Duration::from_secs(5), run).await;
            assert!(out.is_ok(), "the handshake waited although the client had hung up");
        });
    }
}
