//! TLS on the ID service and admin listeners: `curl --cacert` gets ids over HTTPS and `/health`,
//! `redis-cli --tls` and the redis Python package (`ssl=True`) get ids over the Redis protocol,
//! plain TCP to those ports gets nothing,
//! and a listener off loopback without TLS refuses to start, naming the key that allows it.

#[path = "tls/certs.rs"]
mod certs;
mod common;

use std::process::Command;
use std::time::Duration;

use common::clients::{require_python_modules, require_tool, run};
use common::idgate_proc::{APP_PASSWORD, APP_USER};
use common::{free_port, shared_db, Idgate, PASSWORD, USER};

fn pki() -> certs::Pki {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("listener-tls-{}", std::process::id()));
    certs::make(&dir)
}

/// (status, body) of `curl --cacert ca URL`, as app if `auth`.
fn curl(ca: &std::path::Path, url: &str, auth: bool) -> (u16, String) {
    let mut cmd = Command::new(require_tool("curl", "curl"));
    cmd.args([
        "-sS",
        "--max-time",
        "20",
        "-w",
        "\n%{http_code}",
        "--cacert",
    ])
    .arg(ca);
    if auth {
        cmd.args(["-u", &format!("{APP_USER}:{APP_PASSWORD}")]);
    }
    let out = cmd.arg(url).output().expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// idgate with the ID service over TLS (the `tls:` certificate, with `id_service_extra` under
/// `id_service:`) and the admin listener on its own files: (idgate, HTTP, RESP, admin ports).
fn start(p: &certs::Pki, id_service_extra: &str) -> (Idgate, u16, u16, u16) {
    let db = shared_db();
    let (http, resp, admin) = (
        free_port().unwrap(),
        free_port().unwrap(),
        free_port().unwrap(),
    );
    let tag = format!("tls_{http}");
    let g = Idgate::start_with(|port| {
        format!(
            "listen: 127.0.0.1:{port}
allow_plaintext_passwords: true
tls: {{cert: {cert}, key: {key}}}
users:
  - name: {APP_USER}
    password: {APP_PASSWORD}
backends:
  shard0:
    port: {db}
    user: {USER}
    password: {PASSWORD}
default_backend: shard0
generators:
  seq:
    kind: segment
    tag: {tag}
    step: 100
id_service:
  http: 127.0.0.1:{http}
  resp: 127.0.0.1:{resp}
  tls: true
{id_service_extra}admin:
  listen: 127.0.0.1:{admin}
  tls: {{cert: {cert}, key: {key}}}
",
            cert = p.server.display(),
            key = p.server_key.display(),
            db = db.port,
        )
    });
    (g, http, resp, admin)
}

#[test]
fn https_and_redis_over_tls_serve_ids_with_the_configured_certificates() {
    let p = pki();
    let (g, http, resp, admin) = start(&p, "");
    // HTTPS with the certificate of `tls:`, checked against its CA.
    let (code, body) = curl(
        &p.ca,
        &format!("https://127.0.0.1:{http}/ids/seq?count=3"),
        true,
    );
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"count\":3"), "{body}");
    let (code, body) = curl(&p.ca, &format!("https://127.0.0.1:{admin}/health"), false);
    assert_eq!((code, body.as_str()), (200, "ok\n"));
    // A CA that did not sign it is refused by curl: the certificate is the configured one.
    let (code, _) = curl(
        &p.other_ca,
        &format!("https://127.0.0.1:{admin}/health"),
        false,
    );
    assert_eq!(code, 0);
    // Plain HTTP to a TLS port gets no answer.
    let (code, body) = curl(&p.ca, &format!("http://127.0.0.1:{http}/ids/seq"), true);
    assert_ne!(code, 200, "{body}");

    // redis-cli over TLS.
    let cli = require_tool("redis-cli", "redis-tools");
    let mut cmd = Command::new(&cli);
    cmd.args(["--tls", "--cacert"])
        .arg(&p.ca)
        .args(["-h", "127.0.0.1", "-p", &resp.to_string()])
        .args([
            "--user",
            APP_USER,
            "--pass",
            APP_PASSWORD,
            "--no-auth-warning",
        ])
        .args(["INCRBY", "seq", "5"]);
    let r = run(cmd, "redis-cli --tls", Duration::from_secs(30));
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.trim().parse::<u64>().is_ok(),
        "{}{}",
        r.stdout,
        r.stderr
    );
    // The redis package with ssl=True and the CA, RESP2 and RESP3.
    require_python_modules("redis", "redis");
    let script = format!(
        "import redis\n\
         for proto in (2, 3):\n\
         \x20   r = redis.Redis(host='127.0.0.1', port={resp}, username='{APP_USER}', \
         password='{APP_PASSWORD}', protocol=proto, ssl=True, ssl_ca_certs='{ca}', socket_timeout=20)\n\
         \x20   print('resp', proto, r.ping(), r.incr('seq') > 0)\n",
        ca = p.ca.display()
    );
    let mut cmd = Command::new(require_tool("python3", "python3"));
    cmd.arg("-c").arg(script);
    let r = run(cmd, "python redis over TLS", Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout, "resp 2 True True\nresp 3 True True\n",
        "{}",
        r.stderr
    );
    // Plain RESP to the TLS port: no reply.
    let mut cmd = Command::new(&cli);
    cmd.args(["-h", "127.0.0.1", "-p", &resp.to_string(), "PING"]);
    let r = run(cmd, "redis-cli plain", Duration::from_secs(30));
    assert!(
        !r.stdout.contains("PONG") && !r.stdout.contains("NOAUTH"),
        "{}",
        r.stdout
    );
    drop(g);
}

#[test]
fn passwords_in_clear_off_loopback_refuse_to_start() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("listener-plain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let yaml = dir.join("idgate.yaml");
    let config = |extra: &str| {
        format!(
            "listen: 127.0.0.1:{}
users: [{{name: a, password_hash: ''}}]
backends: {{b: {{port: 1, user: u}}}}
default_backend: b
id_service:
  http: 0.0.0.0:{}
{extra}",
            free_port().unwrap(),
            free_port().unwrap()
        )
    };
    std::fs::write(&yaml, config("")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_idgate"));
    cmd.arg("run").arg("--config").arg(&yaml);
    let r = run(cmd, "idgate run", Duration::from_secs(30));
    assert_ne!(r.code, Some(0));
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(
        said.contains("id_service.http: 0.0.0.0:")
            && said.contains("id_service.allow_plaintext_auth"),
        "{said}"
    );
    // Said explicitly, the same file passes the checks.
    std::fs::write(&yaml, config("  allow_plaintext_auth: true\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_idgate"))
        .args(["check-config", "--config"])
        .arg(&yaml)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Redis-protocol connection over TLS, trusting the test CA, logged in as app.
fn resp_tls_login(p: &certs::Pki, port: u16) -> impl std::io::Read + std::io::Write {
    use std::io::{Read, Write};
    let mut roots = rustls::RootCertStore::empty();
    for cert in idgate::tls::files::certificates(&p.ca).unwrap() {
        roots.add(cert).unwrap();
    }
    let cfg = rustls::ClientConfig::builder_with_provider(idgate::tls::provider())
        .with_protocol_versions(idgate::tls::VERSIONS)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(cfg), name).unwrap();
    let sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(format!("AUTH {APP_USER} {APP_PASSWORD}\r\n").as_bytes())
        .unwrap();
    let mut buf = [0u8; 16];
    let n = tls.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+OK\r\n");
    tls
}

#[test]
fn a_full_tls_listener_closes_new_connections_without_plain_text() {
    use std::io::{Read, Write};
    let p = pki();
    let (_g, _, resp, _) = start(&p, "  max_connections: 1\n");
    // One working connection fills the listener; it is never closed for room.
    let mut held = resp_tls_login(&p, resp);
    let mut c = std::net::TcpStream::connect(("127.0.0.1", resp)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let t0 = std::time::Instant::now();
    let mut got = Vec::new();
    let read = c.read_to_end(&mut got);
    assert!(read.is_ok(), "not closed at once: {read:?}");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(
        String::from_utf8_lossy(&got),
        "",
        "a TLS listener answered in plain text"
    );
    held.write_all(b"PING\r\n").unwrap();
    let mut buf = [0u8; 16];
    let n = held.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+PONG\r\n", "the working connection was closed");
}
