//! caching_sha2_password: real clients log in to idgate with users that have only a
//! caching_sha2 hash, only a native hash, or both; the full-authentication cache; the RSA
//! exchange without TLS; idgate's own backend logins with caching_sha2_password and
//! sha256_password (idgate behind idgate, and a small test server); `idgate hash-password`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::clients::{compile_java, require_python_modules, require_tool, run, source_dir};
use common::fake_auth::{self, Mode};
use common::idgate_proc::{config_for, config_for_ports};
use common::{shared_db, Idgate};
use idgate::config::Backend;
use idgate::exec::{BackendConn, BackendError};
use mysql::prelude::Queryable;
use sha1::Sha1;
use sha2::{Digest, Sha256};

const SHA_USER: &str = "sha";
const SHA_PW: &str = "sha-secret";
const NAT_USER: &str = "nat";
const NAT_PW: &str = "nat-secret";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// Computed here, independently of idgate's code.
fn sha2_hash(pw: &str) -> String {
    hex(&Sha256::digest(Sha256::digest(pw.as_bytes())))
}

fn native_hash(pw: &str) -> String {
    format!("*{}", hex(&Sha1::digest(Sha1::digest(pw.as_bytes()))))
}

/// The shared-DB config plus `sha` (caching_sha2 hash only) and `nat` (native hash only);
/// `app` has a clear-text password and so both hashes.
fn with_users(config: String, extra: &str) -> String {
    let users = format!(
        "users:\n  - name: {SHA_USER}\n    caching_sha2_hash: \"{}\"\n  - name: {NAT_USER}\n    password_hash: \"{}\"\n",
        sha2_hash(SHA_PW),
        native_hash(NAT_PW)
    );
    format!("{}{extra}", config.replacen("users:\n", &users, 1))
}

fn start(default_plugin: &str) -> Idgate {
    let db = shared_db();
    Idgate::start_with(|port| {
        with_users(
            config_for(port, &[("shard0", db)], ""),
            &format!("default_auth_plugin: {default_plugin}\n"),
        )
    })
}

fn mysql_cli(g: &Idgate, user: &str, pw: &str, extra: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new(require_tool("mysql", "mariadb-client"));
    cmd.args(["-h", "127.0.0.1", "-P", &g.port.to_string(), "-u", user])
        .arg(format!("-p{pw}"))
        .args(["--ssl=0", "--default-auth=caching_sha2_password"])
        .args(extra)
        .args(["-N", "-e", "SELECT 41 + 1"]);
    let r = run(cmd, "mysql cli auth", Duration::from_secs(30));
    (r.code, format!("{}{}", r.stdout, r.stderr))
}

fn py(g: &Idgate, driver: &str, user: &str, pw: &str) -> String {
    require_python_modules(
        "pymysql, mysql.connector, cryptography",
        "pymysql mysql-connector-python cryptography",
    );
    let mut cmd = Command::new(require_tool("python3", "python3"));
    cmd.arg(source_dir().join("py_auth.py")).args([
        driver,
        "127.0.0.1",
        &g.port.to_string(),
        user,
        pw,
    ]);
    let r = run(cmd, &format!("py_auth {driver}"), Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    r.stdout.trim().to_string()
}

fn denied(user: &str) -> String {
    format!("Access denied for user '{user}'@'127.0.0.1' (using password: YES)")
}

#[test]
fn hash_password_prints_both_hashes() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_idgate"))
        .arg("hash-password")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"pa ss:word\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        format!(
            "    password_hash: \"{}\"\n    caching_sha2_hash: \"{}\"\n",
            native_hash("pa ss:word"),
            sha2_hash("pa ss:word")
        )
    );
}

#[test]
fn config_checks_hashes_plugin_and_key() {
    let check = |yaml: &str| {
        let dir = std::env::temp_dir().join(format!("idgate-auth-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.yaml");
        std::fs::write(&path, yaml).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_idgate"))
            .args(["check-config", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let good = format!(
        "users:\n  - name: a\n    caching_sha2_hash: \"{}\"\n  - name: b\n    password_hash: \"{}\"\n    caching_sha2_hash: \"{}\"\nbackends:\n  main:\n    user: idgate\ndefault_backend: main\ndefault_auth_plugin: caching_sha2_password\n",
        sha2_hash("x"),
        native_hash("y"),
        sha2_hash("y")
    );
    let (ok, err) = check(&good);
    assert!(ok, "{err}");
    let (ok, err) = check(&good.replacen(&sha2_hash("x"), "abc", 1));
    assert!(
        !ok && err.contains("line 2") && err.contains("caching_sha2_hash must be 64 hex digits"),
        "{err}"
    );
    let (ok, err) = check(&good.replace(
        "default_auth_plugin: caching_sha2_password",
        "default_auth_plugin: sha256_password",
    ));
    assert!(!ok && err.contains("caching_sha2_password"), "{err}");
    let (ok, err) = check(&format!("{good}rsa_key: /nonexistent/key.pem\n"));
    assert!(
        !ok && err.contains("line 12") && err.contains("cannot read RSA key"),
        "{err}"
    );
    let (ok, err) = check(&good.replacen(
        "    caching_sha2_hash",
        "    password: y\n    caching_sha2_hash",
        1,
    ));
    assert!(!ok && err.contains("not both"), "{err}");
}

/// Opens a login with `plugin`'s answer to the greeting's scramble; returns the plugin the
/// greeting named and the packet idgate answered with.
fn raw_login(port: u16, user: &str, pw: &str, plugin: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let read = |s: &mut TcpStream| {
        let mut h = [0u8; 4];
        s.read_exact(&mut h).unwrap();
        let mut p = vec![0; u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize];
        s.read_exact(&mut p).unwrap();
        p
    };
    let greeting = read(&mut s);
    let hs: mysql_common::packets::HandshakePacket =
        mysql_common::io::ParseBuf(&greeting).parse(()).unwrap();
    let nonce = hs.nonce();
    let named = String::from_utf8_lossy(hs.auth_plugin_name_ref().unwrap()).into_owned();
    let answer = match plugin {
        "mysql_native_password" => mysql_common::scramble::scramble_native(&nonce, pw.as_bytes())
            .unwrap()
            .to_vec(),
        _ => mysql_common::scramble::scramble_sha256(&nonce, pw.as_bytes())
            .unwrap()
            .to_vec(),
    };
    let caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0020_0000;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(1u32 << 24).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    p.push(answer.len() as u8);
    p.extend_from_slice(&answer);
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    let mut frame = (p.len() as u32).to_le_bytes();
    frame[3] = 1;
    s.write_all(&frame).unwrap();
    s.write_all(&p).unwrap();
    (named, read(&mut s))
}

#[test]
fn plugin_is_switched_only_when_the_users_hash_cannot_check_it() {
    let g = start("caching_sha2_password");
    let app = common::idgate_proc::APP_USER;
    let app_pw = common::idgate_proc::APP_PASSWORD;
    let (named, reply) = raw_login(g.port, app, app_pw, "mysql_native_password");
    assert_eq!(named, "caching_sha2_password");
    assert_eq!(
        reply[0], 0x00,
        "both hashes: native accepted without a switch"
    );
    let (_, reply) = raw_login(g.port, app, app_pw, "caching_sha2_password");
    assert_eq!(
        reply,
        [1, 4],
        "both hashes: caching_sha2 without a switch, full auth first"
    );
    let (_, reply) = raw_login(g.port, NAT_USER, NAT_PW, "caching_sha2_password");
    assert!(
        reply.starts_with(b"\xfemysql_native_password\0"),
        "{reply:?}"
    );
    let (_, reply) = raw_login(g.port, SHA_USER, SHA_PW, "mysql_native_password");
    assert!(
        reply.starts_with(b"\xfecaching_sha2_password\0"),
        "{reply:?}"
    );
    // A user that does not exist gets the same exchange as one that does.
    let (_, reply) = raw_login(g.port, "nobody", SHA_PW, "caching_sha2_password");
    assert_eq!(reply, [1, 4]);
    let (_, reply) = raw_login(g.port, "nobody", SHA_PW, "mysql_native_password");
    assert_eq!(reply[0], 0xff);
    let (_, reply) = raw_login(g.port, SHA_USER, "wrong", "caching_sha2_password");
    assert_eq!(
        reply,
        [1, 4],
        "a wrong scramble is asked for the password itself"
    );
}

#[test]
fn mysql_cli_full_auth_over_rsa_then_fast_path() {
    let g = start("caching_sha2_password");
    // MariaDB's caching_sha2_password client plugin asks for the key on its own.
    let (code, out) = mysql_cli(&g, SHA_USER, "wrong", &[]);
    assert_ne!(code, Some(0));
    assert!(
        out.contains("ERROR 1045 (28000)") && out.contains(&denied(SHA_USER)),
        "{out}"
    );
    let (code, out) = mysql_cli(&g, SHA_USER, SHA_PW, &[]);
    assert_eq!((code, out.trim()), (Some(0), "42"), "{out}\n{}", g.log());
    let (code, out) = mysql_cli(&g, SHA_USER, SHA_PW, &[]);
    assert_eq!((code, out.trim()), (Some(0), "42"), "{out}");
    // Native-only users are switched to mysql_native_password.
    let (code, out) = mysql_cli(&g, NAT_USER, NAT_PW, &[]);
    assert_eq!((code, out.trim()), (Some(0), "42"), "{out}");
    let (code, out) = mysql_cli(&g, NAT_USER, "wrong", &[]);
    assert!(code != Some(0) && out.contains(&denied(NAT_USER)), "{out}");
}

#[test]
fn python_drivers_fast_path_after_pymysql_full_auth() {
    let g = start("mysql_native_password");
    // mysql-connector-python cannot fetch the RSA key and sends the password in clear when
    // asked for full authentication: refused over plain TCP, as by MySQL 8.
    assert_eq!(
        py(&g, "connector", SHA_USER, SHA_PW),
        format!("error 1045 {}", denied(SHA_USER))
    );
    assert_eq!(
        py(&g, "pymysql", SHA_USER, "wrong"),
        format!("error 1045 {}", denied(SHA_USER))
    );
    assert_eq!(py(&g, "pymysql", SHA_USER, SHA_PW), "ok 42", "{}", g.log());
    assert_eq!(py(&g, "connector", SHA_USER, SHA_PW), "ok 42");
    assert_eq!(
        py(&g, "connector", SHA_USER, "wrong"),
        format!("error 1045 {}", denied(SHA_USER))
    );
    assert_eq!(py(&g, "connector", NAT_USER, NAT_PW), "ok 42");
    assert_eq!(py(&g, "pymysql", NAT_USER, NAT_PW), "ok 42");
}

#[test]
fn connector_j_full_auth_with_public_key_retrieval_and_switch() {
    let g = start("caching_sha2_password");
    let (java, cp) = compile_java("JdbcAuth.java");
    let jdbc = |user: &str, pw: &str, extra: &str| {
        let mut cmd = Command::new(&java);
        cmd.arg("-cp").arg(&cp).arg("JdbcAuth").args([
            "127.0.0.1",
            &g.port.to_string(),
            user,
            pw,
            extra,
        ]);
        let r = run(cmd, "JdbcAuth", Duration::from_secs(60));
        assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
        r.stdout.trim().to_string()
    };
    let refused = jdbc(SHA_USER, SHA_PW, "");
    assert!(
        refused.contains("RSA public key is not available"),
        "{refused}"
    );
    let wrong = jdbc(SHA_USER, "wrong", "allowPublicKeyRetrieval=true");
    assert!(wrong.contains(&denied(SHA_USER)), "{wrong}");
    assert_eq!(
        jdbc(SHA_USER, SHA_PW, "allowPublicKeyRetrieval=true"),
        "ok 42",
        "{}",
        g.log()
    );
    assert_eq!(jdbc(SHA_USER, SHA_PW, ""), "ok 42", "fast path");
    assert_eq!(jdbc(NAT_USER, NAT_PW, ""), "ok 42", "switched to native");
}

#[test]
fn idgate_behind_idgate_logs_in_with_caching_sha2() {
    let inner = start("caching_sha2_password");
    let outer = Idgate::start_with(|port| {
        config_for_ports(port, &[("inner", inner.port)], "")
            .replace(
                &format!("user: {}\n", idgate::testbed::mariadb::USER),
                &format!("user: {SHA_USER}\n"),
            )
            .replace(
                &format!("password: {}\n", idgate::testbed::mariadb::PASSWORD),
                &format!("password: {SHA_PW}\n"),
            )
    });
    // The outer idgate's first login (its startup) was a full authentication over RSA; the
    // pool's later logins and COM_CHANGE_USER use the fast path.
    let mut c = outer.conn_to("");
    let v: Option<u32> = c.query_first("SELECT 41 + 1").unwrap();
    assert_eq!(v, Some(42));
    let mut more: Vec<mysql::Conn> = (0..3).map(|_| outer.conn_to("")).collect();
    for m in &mut more {
        let v: Option<u32> = m.query_first("SELECT 41 + 1").unwrap();
        assert_eq!(v, Some(42));
    }
    c.reset()
        .unwrap_or_else(|e| panic!("{e}\nouter:\n{}\ninner:\n{}", outer.log(), inner.log()));
    c.change_user(Default::default()).unwrap();
    let v: Option<u32> = c.query_first("SELECT 41 + 1").unwrap();
    assert_eq!(v, Some(42));
    // The outer idgate's full authentication put the user in the inner one's cache: a client
    // that can only use the fast path now logs in to the inner idgate directly.
    assert_eq!(py(&inner, "connector", SHA_USER, SHA_PW), "ok 42");
}

fn backend(port: u16, user: &str, password: &str) -> Backend {
    Backend::new("127.0.0.1", port, user, password)
}

#[test]
fn backend_login_full_auth_and_sha256_password_over_rsa() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for mode in [Mode::CachingSha2Full, Mode::Sha256] {
        let port = fake_auth::start(mode, "u", "p4ss");
        let mut conn = rt
            .block_on(BackendConn::connect(
                "fake",
                &backend(port, "u", "p4ss"),
                Default::default(),
                Duration::from_secs(10),
            ))
            .unwrap_or_else(|e| panic!("login: {e}"));
        assert_eq!(rt.block_on(conn.simple_command(&[0x0e])).unwrap(), 0);
        rt.block_on(conn.change_user_no_db()).unwrap();
        assert_eq!(rt.block_on(conn.simple_command(&[0x0e])).unwrap(), 0);
        let wrong = rt.block_on(BackendConn::connect(
            "fake",
            &backend(port, "u", "nope"),
            Default::default(),
            Duration::from_secs(10),
        ));
        match wrong {
            Err(BackendError::Login { message, .. }) => {
                assert_eq!(
                    message,
                    "Access denied for user 'u'@'127.0.0.1' (using password: YES)"
                )
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a wrong password logged in"),
        }
    }
}

#[test]
fn change_user_runs_the_same_exchange() {
    let g = start("caching_sha2_password");
    let opts = |user: &str, pw: &str| {
        mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(g.port)
            .user(Some(user))
            .pass(Some(pw))
    };
    // The mysql crate fetches the RSA key: full authentication, then COM_CHANGE_USER to the
    // same user takes the fast path, to a native-only user a switch, and a wrong password 1045.
    let mut c =
        mysql::Conn::new(opts(SHA_USER, SHA_PW)).unwrap_or_else(|e| panic!("{e}\n{}", g.log()));
    let one = |c: &mut mysql::Conn| c.query_first::<u32, _>("SELECT 41 + 1").unwrap();
    assert_eq!(one(&mut c), Some(42));
    c.change_user(Default::default())
        .unwrap_or_else(|e| panic!("{e}\n{}", g.log()));
    assert_eq!(one(&mut c), Some(42));
    let to = |user: &str, pw: &str| {
        mysql::ChangeUserOpts::default()
            .with_user(Some(user.into()))
            .with_pass(Some(pw.into()))
    };
    c.change_user(to(NAT_USER, NAT_PW)).unwrap();
    assert_eq!(one(&mut c), Some(42));
    c.change_user(to(SHA_USER, SHA_PW)).unwrap();
    assert_eq!(one(&mut c), Some(42));
    let e = c.change_user(to(SHA_USER, "wrong")).unwrap_err();
    assert!(e.to_string().contains(&denied(SHA_USER)), "{e}");
}

/// Full authentication in clear once the connection is encrypted, on both sides: a TLS client
/// logs in to an idgate whose cache is empty, and an idgate reaches another over TLS.
#[test]
fn full_authentication_in_clear_inside_tls() {
    let db = shared_db();
    let inner = Idgate::start_with(|port| {
        with_users(
            config_for(port, &[("shard0", db)], ""),
            "default_auth_plugin: caching_sha2_password\ntls: auto\n",
        )
    });
    // mysql-connector-python cannot fetch the RSA key: over plain TCP it is refused while the
    // cache is empty, over TLS it sends the password in clear and gets in.
    assert_eq!(
        py(&inner, "connector", SHA_USER, SHA_PW),
        format!("error 1045 {}", denied(SHA_USER))
    );
    assert_eq!(
        py(&inner, "connector-tls", SHA_USER, "wrong"),
        format!("error 1045 {}", denied(SHA_USER))
    );
    assert_eq!(
        py(&inner, "connector-tls", SHA_USER, SHA_PW),
        "ok 42",
        "{}",
        inner.log()
    );
    // Now cached: the fast path works without TLS.
    assert_eq!(py(&inner, "connector", SHA_USER, SHA_PW), "ok 42");

    // idgate in front of it logs in over TLS as the caching_sha2 user.
    let inner2 = Idgate::start_with(|port| {
        with_users(
            config_for(port, &[("shard0", db)], ""),
            "default_auth_plugin: caching_sha2_password\ntls: auto\n",
        )
    });
    let outer = Idgate::start_with(|port| {
        config_for_ports(port, &[("inner", inner2.port)], "")
            .replace(
                &format!("user: {}\n", idgate::testbed::mariadb::USER),
                &format!("user: {SHA_USER}\n    tls:\n      mode: required\n"),
            )
            .replace(
                &format!("password: {}\n", idgate::testbed::mariadb::PASSWORD),
                &format!("password: {SHA_PW}\n"),
            )
    });
    // `tls.mode: required` fails the login unless the inner idgate took TLS.
    let mut c = outer.conn_to("");
    let v: Option<u32> = c.query_first("SELECT 41 + 1").unwrap();
    assert_eq!(v, Some(42), "{}", outer.log());
    assert_eq!(
        py(&inner2, "connector", SHA_USER, SHA_PW),
        "ok 42",
        "cached by the outer login"
    );
}
