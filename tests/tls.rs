//! TLS on both sides of idgate, against real MariaDB servers with their own certificates and
//! with real clients (mysql CLI, Connector/J, PyMySQL, mysql-connector-python).

#[path = "tls/certs.rs"]
mod certs;
#[path = "tls/cli.rs"]
mod cli;
mod common;
#[path = "tls/raw_login.rs"]
mod raw_login;

use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use cli::{mysql_cli, CLIENT_TIMEOUT};
use common::clients::{compile_java, require_python_modules, require_tool, run, source_dir, Run};
use common::idgate_proc::{config_for, APP_PASSWORD, APP_USER};
use common::{Idgate, MariaDb, DATABASE, PASSWORD, USER};
use idgate::config::{Backend, BackendTls, BackendTlsMode, Config};
use idgate::exec::{BackendConn, BackendError};
use mysql::prelude::Queryable;

/// A user who must connect with TLS, on idgate and on the MariaDB used for comparison.
const SECURE_USER: &str = "secure";
const SECURE_PASSWORD: &str = "secure-pw";

fn pki() -> &'static certs::Pki {
    static P: OnceLock<certs::Pki> = OnceLock::new();
    P.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("tls-certs-{}", std::process::id()));
        certs::make(&dir)
    })
}

fn ssl_args(cert: &std::path::Path, key: &std::path::Path) -> Vec<String> {
    let p = pki();
    vec![
        format!("--ssl-cert={}", cert.display()),
        format!("--ssl-key={}", key.display()),
        format!("--ssl-ca={}", p.ca.display()),
    ]
}

/// MariaDB with the localhost certificate that refuses every connection without TLS, so any
/// backend connection that works there is encrypted. It has a REQUIRE SSL account and a
/// REQUIRE X509 account for comparisons.
fn tls_db() -> &'static MariaDb {
    static DB: OnceLock<MariaDb> = OnceLock::new();
    DB.get_or_init(|| {
        let p = pki();
        let mut args = ssl_args(&p.server, &p.server_key);
        args.push("--require-secure-transport=ON".into());
        let db = MariaDb::start_with_args(common::free_port().unwrap(), &args)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut c = socket_conn(&db);
        for sql in [
            format!(
                "CREATE USER '{SECURE_USER}'@'%' IDENTIFIED BY '{SECURE_PASSWORD}' REQUIRE SSL"
            ),
            format!("GRANT ALL ON *.* TO '{SECURE_USER}'@'%'"),
            "CREATE USER 'x509'@'%' IDENTIFIED BY 'x509-pw' REQUIRE X509".into(),
            "GRANT ALL ON *.* TO 'x509'@'%'".into(),
        ] {
            c.query_drop(sql).unwrap();
        }
        db
    })
}

/// MariaDB whose certificate (signed by the same CA) names only `db.example.invalid`.
fn misnamed_db() -> &'static MariaDb {
    static DB: OnceLock<MariaDb> = OnceLock::new();
    DB.get_or_init(|| {
        let p = pki();
        MariaDb::start_with_args(
            common::free_port().unwrap(),
            &ssl_args(&p.misnamed, &p.misnamed_key),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    })
}

/// A connection over the server's Unix socket, which require_secure_transport accepts.
fn socket_conn(db: &MariaDb) -> mysql::Conn {
    let opts = mysql::OptsBuilder::new()
        .socket(Some(db.dir.join("sock").display().to_string()))
        .user(Some("root"))
        .pass(None::<String>);
    mysql::Conn::new(opts).unwrap_or_else(|e| panic!("socket login: {e}\n{}", db.error_log()))
}

fn backend_cfg(port: u16, user: &str, password: &str, tls: BackendTls) -> Backend {
    Backend {
        tls,
        ..Backend::new("127.0.0.1", port, user, password)
    }
}

fn mode(mode: BackendTlsMode) -> BackendTls {
    BackendTls {
        mode,
        ca: mode.verifies().then(|| pki().ca.clone()),
        ..Default::default()
    }
}

/// One runtime for the in-process backend connections of every test (a connection stays with
/// the runtime that opened it).
fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    })
}

/// idgate's own backend client, logged in (or not) with these settings.
fn backend_connect(cfg: &Backend) -> Result<BackendConn, BackendError> {
    rt().block_on(BackendConn::connect(
        "b",
        cfg,
        Default::default(),
        Duration::from_secs(10),
    ))
}

/// The `Ssl_cipher` status of the connection (empty when it is not encrypted).
fn backend_cipher(conn: BackendConn) -> String {
    let mut conn = conn;
    let rows = rt()
        .block_on(conn.query_rows("SHOW STATUS LIKE 'Ssl_cipher'"))
        .expect("SHOW STATUS");
    String::from_utf8(rows[0][1].clone().unwrap_or_default()).unwrap()
}

fn expect_tls_error(r: Result<BackendConn, BackendError>, needle: &str) -> String {
    match r {
        Ok(_) => panic!("connected; expected an error containing `{needle}`"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                matches!(e, BackendError::Tls { .. }) && msg.contains(needle),
                "expected a TLS error containing `{needle}`, got: {msg}"
            );
            msg
        }
    }
}

#[test]
fn backend_every_mode_encrypts_against_a_tls_server() {
    let db = tls_db();
    for m in [
        BackendTlsMode::Preferred,
        BackendTlsMode::Required,
        BackendTlsMode::VerifyCa,
        BackendTlsMode::VerifyIdentity,
    ] {
        let conn = backend_connect(&backend_cfg(db.port, USER, PASSWORD, mode(m)))
            .unwrap_or_else(|e| panic!("{m:?}: {e}"));
        let cipher = backend_cipher(conn);
        assert!(!cipher.is_empty(), "{m:?}: Ssl_cipher is empty");
    }
    // The server refuses plain TCP, so the connections above were encrypted.
    let plain = backend_connect(&backend_cfg(
        db.port,
        USER,
        PASSWORD,
        mode(BackendTlsMode::Disabled),
    ));
    assert!(
        matches!(&plain, Err(BackendError::Login { message, .. }) if message.contains("Access denied")),
        "tls disabled against require_secure_transport: {:?}",
        plain.err()
    );
}

#[test]
fn backend_client_certificate_is_presented() {
    let db = tls_db();
    let p = pki();
    let with = BackendTls {
        mode: BackendTlsMode::VerifyIdentity,
        ca: Some(p.ca.clone()),
        cert: Some(p.client.clone()),
        key: Some(p.client_key.clone()),
    };
    let conn = backend_connect(&backend_cfg(db.port, "x509", "x509-pw", with))
        .unwrap_or_else(|e| panic!("REQUIRE X509 user with a client certificate: {e}"));
    assert!(!backend_cipher(conn).is_empty());
    let without = backend_connect(&backend_cfg(
        db.port,
        "x509",
        "x509-pw",
        mode(BackendTlsMode::VerifyIdentity),
    ));
    assert!(
        matches!(&without, Err(BackendError::Login { .. })),
        "REQUIRE X509 user without a certificate logged in"
    );
}

#[test]
fn a_reload_reads_backend_client_certificates_again() {
    let db = tls_db();
    let p = pki();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tls-backend-rotation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("client.pem"), dir.join("client-key.pem"));
    let put = |c: &std::path::Path, k: &std::path::Path| {
        std::fs::copy(c, &cert).unwrap();
        std::fs::copy(k, &key).unwrap();
    };
    put(&p.client, &p.client_key);
    let tls = BackendTls {
        mode: BackendTlsMode::Required,
        ca: None,
        cert: Some(cert.clone()),
        key: Some(key.clone()),
    };
    let cfg = backend_cfg(db.port, "x509", "x509-pw", tls);
    backend_connect(&cfg).unwrap_or_else(|e| panic!("the CA's client certificate: {e}"));
    // The other CA's certificate in the files: new connections get it after a reload only.
    put(&p.stranger, &p.stranger_key);
    backend_connect(&cfg).unwrap_or_else(|e| panic!("the certificate read before: {e}"));
    idgate::tls::backend::install(idgate::tls::backend::reread().unwrap());
    assert!(
        backend_connect(&cfg).is_err(),
        "MariaDB took a certificate of a CA it does not know: the files were not read again"
    );
    // A broken file refuses the reread by name; the configuration in use stays.
    std::fs::write(&cert, "not a certificate").unwrap();
    let e = match idgate::tls::backend::reread() {
        Ok(_) => panic!("a broken certificate file was read"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains(&cert.display().to_string()), "{e}");
    assert!(backend_connect(&cfg).is_err());
    put(&p.client, &p.client_key);
    idgate::tls::backend::install(idgate::tls::backend::reread().unwrap());
    backend_connect(&cfg).unwrap_or_else(|e| panic!("the CA's certificate again: {e}"));
}

#[test]
fn backend_verification_failures_are_clear() {
    let p = pki();
    let wrong_ca = BackendTls {
        mode: BackendTlsMode::VerifyCa,
        ca: Some(p.other_ca.clone()),
        ..Default::default()
    };
    let msg = expect_tls_error(
        backend_connect(&backend_cfg(tls_db().port, USER, PASSWORD, wrong_ca)),
        "TLS handshake failed",
    );
    assert!(
        msg.contains("UnknownIssuer") && msg.contains("tls.ca"),
        "{msg}"
    );

    // A certificate from the right CA for another name: verify_ca accepts, verify_identity not.
    let db = misnamed_db();
    let conn = backend_connect(&backend_cfg(
        db.port,
        USER,
        PASSWORD,
        mode(BackendTlsMode::VerifyCa),
    ))
    .unwrap_or_else(|e| panic!("verify_ca with a certificate for another host: {e}"));
    assert!(!backend_cipher(conn).is_empty());
    let msg = expect_tls_error(
        backend_connect(&backend_cfg(
            db.port,
            USER,
            PASSWORD,
            mode(BackendTlsMode::VerifyIdentity),
        )),
        "not valid for name",
    );
    assert!(msg.contains("127.0.0.1"), "{msg}");
}

#[test]
fn backend_without_tls_fails_required_and_serves_preferred() {
    let plain = common::shared_db();
    for m in [
        BackendTlsMode::Required,
        BackendTlsMode::VerifyCa,
        BackendTlsMode::VerifyIdentity,
    ] {
        let msg = expect_tls_error(
            backend_connect(&backend_cfg(plain.port, USER, PASSWORD, mode(m))),
            "does not offer TLS",
        );
        assert!(msg.contains(m.name()), "{msg}");
    }
    let conn = backend_connect(&backend_cfg(
        plain.port,
        USER,
        PASSWORD,
        mode(BackendTlsMode::Preferred),
    ))
    .expect("preferred falls back to plain TCP");
    assert_eq!(backend_cipher(conn), "");
}

/// idgate's config with `backend_tls` under the backend and more users.
fn with_backend_tls(yaml: String, backend_tls: &str) -> String {
    yaml.replacen(
        "    pool:\n",
        &format!("    tls: {backend_tls}\n    pool:\n"),
        1,
    )
}

fn with_users(yaml: String, users: &str) -> String {
    yaml.replacen("backends:\n", &format!("{users}backends:\n"), 1)
}

const SECURE_USER_YAML: &str = "  - name: secure\n    password: secure-pw\n    require_tls: true\n";

#[test]
fn idgate_to_backend_and_sequence_store_over_tls() {
    let db = tls_db();
    let ca = pki().ca.display().to_string();
    {
        let mut c = socket_conn(db);
        c.query_drop(format!(
            "CREATE TABLE IF NOT EXISTS {DATABASE}.tls_items (id BIGINT PRIMARY KEY, v INT)"
        ))
        .unwrap();
    }
    // Every connection to this server must be TLS: the session's and the sequence store's.
    let g = Idgate::start_with(|port| {
        with_backend_tls(
            config_for(
                port,
                &[("shard0", db)],
                "generators:\n  seq:\n    kind: segment\n    step: 10\ntables:\n  tls_items:\n    generator: seq\n",
            ),
            &format!("{{mode: verify_identity, ca: {ca}}}"),
        )
    });
    let mut c = g.conn();
    c.query_drop("INSERT INTO tls_items (v) VALUES (1)")
        .unwrap();
    assert!(c.last_insert_id() > 0, "a generated id");
    let cipher: Option<(String, String)> = c.query_first("SHOW STATUS LIKE 'Ssl_cipher'").unwrap();
    let cipher = cipher.expect("Ssl_cipher row").1;
    assert!(
        !cipher.is_empty(),
        "idgate's backend connection is not encrypted"
    );
}

/// The cipher the mysql CLI reports in `\s`, or `None` without TLS.
fn cli_cipher(r: &Run) -> Option<String> {
    r.stdout
        .lines()
        .find_map(|l| l.strip_prefix("SSL:"))
        .map(|s| s.trim().to_string())
        .and_then(|s| s.strip_prefix("Cipher in use is ").map(str::to_string))
}

/// idgate with the CA-signed certificate, a require_tls user, in front of the plain server.
fn idgate_with_cert(extra: &str) -> Idgate {
    let p = pki();
    let tls = format!(
        "tls:\n  cert: {}\n  key: {}\n{extra}",
        p.server.display(),
        p.server_key.display()
    );
    Idgate::start_with(|port| {
        with_users(
            config_for(port, &[("shard0", common::shared_db())], &tls),
            SECURE_USER_YAML,
        )
    })
}

#[test]
fn mysql_cli_over_tls_verifies_idgate_certificate_with_both_versions() {
    let g = idgate_with_cert("");
    let ca = format!("--ssl-ca={}", pki().ca.display());
    let other = format!("--ssl-ca={}", pki().other_ca.display());
    let verified = mysql_cli(
        g.port,
        SECURE_USER,
        SECURE_PASSWORD,
        &["--ssl", "--ssl-verify-server-cert", &ca],
        "\\s",
    );
    assert_eq!(verified.code, Some(0), "{}\n{}", verified.stderr, g.log());
    assert!(cli_cipher(&verified).is_some(), "{}", verified.stdout);

    let wrong = mysql_cli(
        g.port,
        SECURE_USER,
        SECURE_PASSWORD,
        &["--ssl", "--ssl-verify-server-cert", &other],
        "SELECT 1",
    );
    assert_ne!(wrong.code, Some(0), "verified against the wrong CA");
    assert!(wrong.stderr.contains("2026"), "{}", wrong.stderr);

    for (version, tls13) in [("TLSv1.2", false), ("TLSv1.3", true)] {
        let r = mysql_cli(
            g.port,
            APP_USER,
            APP_PASSWORD,
            &["--ssl", &format!("--tls-version={version}")],
            "\\s",
        );
        assert_eq!(r.code, Some(0), "{version}: {}", r.stderr);
        let cipher = cli_cipher(&r).unwrap_or_else(|| panic!("{version}: no TLS\n{}", r.stdout));
        // TLS 1.3 suites are named TLS_…; TLS 1.2 ones (ECDHE-ECDSA-…) are not.
        assert_eq!(cipher.starts_with("TLS_"), tls13, "{version}: {cipher}");
    }
}

#[test]
fn require_tls_user_refused_in_plain_as_mariadb_refuses_require_ssl() {
    let g = idgate_with_cert("");
    let plain = mysql_cli(
        g.port,
        SECURE_USER,
        SECURE_PASSWORD,
        &["--skip-ssl"],
        "SELECT 1",
    );
    assert_eq!(plain.code, Some(1));
    assert!(
        plain.stderr.contains(&format!(
            "ERROR 1045 (28000): Access denied for user '{SECURE_USER}'@'127.0.0.1' (using password: YES)"
        )),
        "{}",
        plain.stderr
    );
    // Byte for byte what MariaDB sends for its REQUIRE SSL account (same name and password).
    let mariadb = raw_login::login(tls_db().port, SECURE_USER, SECURE_PASSWORD);
    let idgate = raw_login::login(g.port, SECURE_USER, SECURE_PASSWORD);
    assert_eq!(idgate, mariadb);
    let empty_pw = raw_login::login(g.port, SECURE_USER, "");
    assert_eq!(empty_pw, raw_login::login(tls_db().port, SECURE_USER, ""));

    // Side by side: a plain client of an ordinary user and a TLS client of the TLS-only user.
    let mut plain_conn = g.conn();
    let tls = mysql_cli(
        g.port,
        SECURE_USER,
        SECURE_PASSWORD,
        &["--ssl"],
        "SELECT CONCAT('tls-', 1 + 1) AS v; \\s",
    );
    assert_eq!(tls.code, Some(0), "{}", tls.stderr);
    assert!(tls.stdout.contains("tls-2") && cli_cipher(&tls).is_some());
    let v: Option<String> = plain_conn.query_first("SELECT 'plain-ok'").unwrap();
    assert_eq!(v.as_deref(), Some("plain-ok"));
}

#[test]
fn require_secure_transport_refuses_plain_clients_as_mariadb_does() {
    let g = idgate_with_cert("require_secure_transport: true\n");
    // tls_db runs MariaDB 10.11 with require_secure_transport=ON: it authenticates, then answers
    // 1045 (28000) "Access denied …" to a plain TCP login, right or wrong password.
    for (user, password) in [(USER, PASSWORD), (USER, "wrong"), (USER, "")] {
        let mariadb = raw_login::login(tls_db().port, user, password);
        let idgate_user = if password == PASSWORD { APP_USER } else { user };
        let idgate_pw = if password == PASSWORD {
            APP_PASSWORD
        } else {
            password
        };
        let idgate = raw_login::login(g.port, idgate_user, idgate_pw);
        let expected = String::from_utf8_lossy(&mariadb.1).replace(user, idgate_user);
        assert_eq!(idgate.0, mariadb.0, "sequence id");
        assert_eq!(String::from_utf8_lossy(&idgate.1), expected);
    }
    let tls = mysql_cli(g.port, APP_USER, APP_PASSWORD, &["--ssl"], "SELECT 'in'");
    assert_eq!(tls.code, Some(0), "{}", tls.stderr);
}

#[test]
fn ssl_request_followed_by_garbage_closes_without_hanging() {
    use std::io::Read;
    let g = idgate_with_cert("");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", g.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let (caps, _) = raw_login::greeting(&mut s);
    assert!(caps & 0x800 != 0, "CLIENT_SSL offered");
    let mut req = (0x200u32 | 0x8000 | 0x800).to_le_bytes().to_vec();
    req.extend_from_slice(&(1u32 << 24).to_le_bytes());
    req.push(45);
    req.extend_from_slice(&[0; 23]);
    raw_login::send(&mut s, 1, &req);
    std::io::Write::write_all(&mut s, b"this is not a TLS ClientHello\r\n").unwrap();
    let mut rest = Vec::new();
    let r = s.read_to_end(&mut rest);
    assert!(r.is_ok(), "idgate did not close the connection: {r:?}");
    // idgate still serves others.
    let mut c = g.conn();
    let one: Option<u8> = c.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));
}

#[test]
fn no_tls_configured_means_no_ssl_capability() {
    let g = Idgate::start(common::shared_db());
    let mut s = std::net::TcpStream::connect(("127.0.0.1", g.port)).unwrap();
    let (caps, _) = raw_login::greeting(&mut s);
    assert_eq!(caps & 0x800, 0, "CLIENT_SSL offered without tls:");
    // The 10.11 CLI's --ssl falls back to plain TCP when the server offers no TLS.
    let r = mysql_cli(g.port, APP_USER, APP_PASSWORD, &["--ssl"], "\\s");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(cli_cipher(&r), None, "{}", r.stdout);
}

#[test]
fn tls_auto_generates_a_certificate_and_logs_its_fingerprint() {
    let g = Idgate::start_with(|port| {
        config_for(port, &[("shard0", common::shared_db())], "tls: auto\n")
    });
    let r = mysql_cli(g.port, APP_USER, APP_PASSWORD, &["--ssl"], "\\s");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(cli_cipher(&r).is_some(), "{}", r.stdout);
    let log = g.log();
    let fp = log
        .lines()
        .find(|l| l.contains("self-signed"))
        .unwrap_or_else(|| panic!("no fingerprint logged:\n{log}"));
    assert!(
        fp.contains("sha256") && fp.matches(':').count() >= 31,
        "{fp}"
    );
}

#[test]
fn connector_j_over_tls() {
    let g = idgate_with_cert("");
    let (java, cp) = compile_java("JdbcTls.java");
    let p = pki();
    let jdbc = |options: String| {
        let mut cmd = Command::new(&java);
        cmd.arg("-cp").arg(&cp).arg("JdbcTls").args([
            "127.0.0.1",
            &g.port.to_string(),
            SECURE_USER,
            SECURE_PASSWORD,
            DATABASE,
            &options,
        ]);
        let r = run(cmd, "JdbcTls", CLIENT_TIMEOUT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        r.stdout.trim().to_string()
    };
    let ca = p.ca.display();
    for options in [
        format!("useSsl=true&serverSslCert={ca}"),
        format!("useSsl=true&serverSslCert={ca}&enabledSslProtocolSuites=TLSv1.2"),
        format!("useSsl=true&serverSslCert={ca}&enabledSslProtocolSuites=TLSv1.3"),
        "useSsl=true&trustServerCertificate=true".to_string(),
    ] {
        assert_eq!(jdbc(options.clone()), "ok tls-2", "{options}\n{}", g.log());
    }
    let wrong = jdbc(format!(
        "useSsl=true&serverSslCert={}",
        p.other_ca.display()
    ));
    assert!(wrong.starts_with("error"), "wrong CA accepted: {wrong}");
    let plain = jdbc("useSsl=false".into());
    assert!(
        plain.starts_with("error 28000") && plain.contains("Access denied"),
        "{plain}"
    );
}

fn python_tls(driver: &str, port: u16, ca: &std::path::Path, version: Option<&str>) -> String {
    let python = require_tool("python3", "python3");
    let mut cmd = Command::new(python);
    cmd.arg(source_dir().join("py_tls.py")).args([
        driver,
        "127.0.0.1",
        &port.to_string(),
        SECURE_USER,
        SECURE_PASSWORD,
        DATABASE,
        &ca.display().to_string(),
    ]);
    if let Some(v) = version {
        cmd.arg(v);
    }
    let r = run(cmd, driver, CLIENT_TIMEOUT);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    r.stdout.trim().to_string()
}

#[test]
fn python_drivers_over_tls() {
    require_python_modules("pymysql, mysql.connector", "pymysql mysql-connector-python");
    let g = idgate_with_cert("");
    let p = pki();
    for driver in ["pymysql", "connector"] {
        assert_eq!(
            python_tls(driver, g.port, &p.ca, None),
            "ok TLSv1.3 tls-2",
            "{driver}\n{}",
            g.log()
        );
        assert_eq!(
            python_tls(driver, g.port, &p.ca, Some("TLSv1.2")),
            "ok TLSv1.2 tls-2",
            "{driver}"
        );
        let wrong = python_tls(driver, g.port, &p.other_ca, None);
        assert!(
            wrong.starts_with("error"),
            "{driver}: wrong CA accepted: {wrong}"
        );
    }
}

#[test]
fn config_checks_tls_files_and_settings() {
    let p = pki();
    let base = |extra: &str| {
        format!(
            "users:\n  - name: a\n    password_hash: \"*0000000000000000000000000000000000000000\"\n{extra}\
             backends:\n  b:\n    user: u\n"
        )
    };
    let err = |yaml: String| match Config::from_yaml(&yaml) {
        Ok(_) => panic!("accepted:\n{yaml}"),
        Err(e) => e.to_string(),
    };
    let ok = |yaml: String| {
        Config::from_yaml(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    };
    let tail = "default_backend: b\n";
    // Missing file, key that is not a key, a certificate with a key of another certificate.
    let e = err(format!(
        "{}tls: {{cert: /nonexistent/cert.pem, key: {}}}\n{tail}",
        base(""),
        p.server_key.display()
    ));
    assert!(
        e.contains("/nonexistent/cert.pem") && e.contains("line"),
        "{e}"
    );
    let e = err(format!(
        "{}tls: {{cert: {}, key: {}}}\n{tail}",
        base(""),
        p.server.display(),
        p.server.display()
    ));
    assert!(
        e.contains(&p.server.display().to_string()) && e.contains("no private key"),
        "{e}"
    );
    let e = err(format!(
        "{}tls: {{cert: {}, key: {}}}\n{tail}",
        base(""),
        p.server.display(),
        p.client_key.display()
    ));
    assert!(e.contains("not a usable certificate and key"), "{e}");
    ok(format!(
        "{}tls: {{cert: {}, key: {}}}\n{tail}",
        base(""),
        p.server.display(),
        p.server_key.display()
    ));
    ok(format!("{}tls: auto\n{tail}", base("")));
    let e = err(format!("{}tls: on\n{tail}", base("")));
    assert!(e.contains("`auto`"), "{e}");
    let e = err(format!(
        "{}require_secure_transport: true\n{tail}",
        base("")
    ));
    assert!(e.contains("needs `tls:`"), "{e}");
    let e = err(format!("{}{tail}", base("    require_tls: true\n")));
    assert!(e.contains("require_tls needs `tls:`"), "{e}");
    // Backend settings.
    let backend = |tls: &str| {
        format!(
            "{}default_backend: b\n",
            base("").replace("    user: u\n", &format!("    user: u\n    tls: {tls}\n"))
        )
    };
    let e = err(backend("{mode: verify_ca}"));
    assert!(e.contains("needs tls.ca"), "{e}");
    let e = err(backend("{mode: verify_identity, ca: /nonexistent/ca.pem}"));
    assert!(e.contains("/nonexistent/ca.pem"), "{e}");
    let e = err(backend(&format!("{{ca: {}}}", p.ca.display())));
    assert!(e.contains("mode is disabled"), "{e}");
    let e = err(backend(&format!(
        "{{mode: required, cert: {}}}",
        p.client.display()
    )));
    assert!(e.contains("both"), "{e}");
    let e = err(backend("{mode: sometimes}"));
    assert!(e.contains("sometimes"), "{e}");
    ok(backend(&format!(
        "{{mode: verify_identity, ca: {}, cert: {}, key: {}}}",
        p.ca.display(),
        p.client.display(),
        p.client_key.display()
    )));
}

#[test]
fn check_config_reports_a_bad_certificate_file() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tls-check-config");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("garbage.pem");
    std::fs::write(&bad, "not a certificate\n").unwrap();
    let cfg = dir.join("idgate.yaml");
    std::fs::write(
        &cfg,
        format!(
            "{}tls:\n  cert: {}\n  key: {}\n",
            config_for(3307, &[("shard0", common::shared_db())], ""),
            bad.display(),
            pki().server_key.display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_idgate"))
        .args(["check-config", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&bad.display().to_string()) && stderr.contains("holds no certificate"),
        "{stderr}"
    );
}

#[test]
fn sequence_store_pool_verifies_the_backend_certificate() {
    let db = tls_db();
    let p = pki();
    let pool = |tls: &str| {
        let cfg = Config::from_yaml(&with_backend_tls(
            config_for(3307, &[("shard0", db)], ""),
            tls,
        ))
        .unwrap();
        rt().block_on(async {
            let r = idgate::proxy::sequence_store_pool(&cfg).await;
            r.map(|_| ()).map_err(|e| e.to_string())
        })
    };
    pool(&format!("{{mode: verify_ca, ca: {}}}", p.ca.display()))
        .expect("verify_ca with the right CA");
    pool("{mode: required}").expect("required");
    let wrong = pool(&format!(
        "{{mode: verify_ca, ca: {}}}",
        p.other_ca.display()
    ));
    assert!(
        wrong.as_ref().is_err_and(|e| e.contains("UnknownIssuer")),
        "wrong CA: {wrong:?}"
    );
}

/// Runs the mysql CLI verifying idgate's certificate against the test CA; true if it connected.
fn verified_login(port: u16) -> Run {
    let ca = format!("--ssl-ca={}", pki().ca.display());
    mysql_cli(
        port,
        APP_USER,
        APP_PASSWORD,
        &["--ssl", "--ssl-verify-server-cert", &ca],
        "SELECT 1",
    )
}

#[test]
fn a_reload_serves_rotated_certificate_files_to_new_connections() {
    let p = pki();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tls-rotation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("server.pem"), dir.join("server-key.pem"));
    std::fs::copy(&p.server, &cert).unwrap();
    std::fs::copy(&p.server_key, &key).unwrap();
    let tls = format!(
        "tls:\n  cert: {}\n  key: {}\n",
        cert.display(),
        key.display()
    );
    let g = Idgate::start_with(|port| config_for(port, &[("shard0", common::shared_db())], &tls));
    let r = verified_login(g.port);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, g.log());
    let mut old = g.conn();

    // The files are replaced by a certificate for another name; new connections get it only
    // after a reload.
    std::fs::copy(&p.misnamed, &cert).unwrap();
    std::fs::copy(&p.misnamed_key, &key).unwrap();
    assert_eq!(
        verified_login(g.port).code,
        Some(0),
        "rotated before the reload"
    );
    g.sighup_and_wait("configuration reloaded");
    let r = verified_login(g.port);
    assert_ne!(
        r.code,
        Some(0),
        "still the old certificate after the reload"
    );
    assert!(r.stderr.contains("2026"), "{}", r.stderr);
    // TLS itself still works, and a session from before goes on.
    let r = mysql_cli(g.port, APP_USER, APP_PASSWORD, &["--ssl"], "SELECT 1");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let one: Option<i64> = old.query_first("SELECT 1").unwrap();
    assert_eq!(one, Some(1));

    // A broken file is refused by name; the certificate in use keeps serving.
    std::fs::write(&cert, "not a certificate").unwrap();
    g.sighup_and_wait("configuration reload refused");
    assert!(g.log().contains(&cert.display().to_string()), "{}", g.log());
    let r = mysql_cli(g.port, APP_USER, APP_PASSWORD, &["--ssl"], "SELECT 1");
    assert_eq!(r.code, Some(0), "{}", r.stderr);

    // The good certificate back: verified logins work again.
    std::fs::copy(&p.server, &cert).unwrap();
    std::fs::copy(&p.server_key, &key).unwrap();
    g.sighup_and_wait("configuration reloaded");
    let r = verified_login(g.port);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}
