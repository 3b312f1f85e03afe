//! Client certificates on the MySQL port (`tls.ca`; users' `require_x509`, `require_subject`,
//! `require_issuer`) side by side with MariaDB's REQUIRE X509 / SUBJECT / ISSUER: the same
//! accounts on a MariaDB with the same CA, and the same clients (mysql CLI, Connector/J) with
//! the same certificates, get the same answers.

#[path = "tls/certs.rs"]
mod certs;
#[path = "tls/cli.rs"]
mod cli;
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cli::{mysql_cli, CLIENT_TIMEOUT};
use common::clients::{compile_java, require_tool, run, Run};
use common::idgate_proc::{config_for, APP_PASSWORD, APP_USER};
use common::{Idgate, MariaDb};
use mysql::prelude::Queryable;

fn pki() -> &'static certs::Pki {
    static P: OnceLock<certs::Pki> = OnceLock::new();
    P.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("client-certs-{}", std::process::id()));
        certs::make(&dir)
    })
}

/// A certificate's subject or issuer (`which`: `-subject`, `-issuer`) as OpenSSL writes it in
/// its one-line form, the form MariaDB compares REQUIRE SUBJECT / ISSUER with.
fn openssl_name(which: &str, cert: &Path) -> String {
    let openssl = require_tool("openssl", "openssl");
    let out = Command::new(openssl)
        .args(["x509", "-noout", which, "-nameopt", "compat", "-in"])
        .arg(cert)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("openssl prints ASCII");
    let (_, name) = text.trim().split_once('=').expect("subject=…");
    name.to_string()
}

/// The accounts, the same on MariaDB and idgate: (name, password, MariaDB's REQUIRE clause,
/// idgate's user keys).
fn accounts() -> Vec<(&'static str, &'static str, String, String)> {
    let p = pki();
    let subject = openssl_name("-subject", &p.named);
    let issuer = openssl_name("-issuer", &p.named);
    let other_ca = openssl_name("-subject", &p.other_ca);
    let sql = |s: &str| s.replace('\\', "\\\\").replace('\'', "''");
    vec![
        (
            "x509",
            "x509-pw",
            "X509".into(),
            "require_x509: true".into(),
        ),
        (
            "subj",
            "subj-pw",
            format!("SUBJECT '{}' AND ISSUER '{}'", sql(&subject), sql(&issuer)),
            format!("require_subject: '{subject}'\n    require_issuer: '{issuer}'"),
        ),
        (
            "issued",
            "issued-pw",
            format!("ISSUER '{}'", sql(&issuer)),
            format!("require_issuer: '{issuer}'"),
        ),
        (
            "foreign",
            "foreign-pw",
            format!("ISSUER '{}'", sql(&other_ca)),
            format!("require_issuer: '{other_ca}'"),
        ),
    ]
}

/// MariaDB with the localhost certificate and the test CA for client certificates.
fn mariadb() -> &'static MariaDb {
    static DB: OnceLock<MariaDb> = OnceLock::new();
    DB.get_or_init(|| {
        let p = pki();
        let args = vec![
            format!("--ssl-cert={}", p.server.display()),
            format!("--ssl-key={}", p.server_key.display()),
            format!("--ssl-ca={}", p.ca.display()),
        ];
        let db = MariaDb::start_with_args(common::free_port().unwrap(), &args)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut c = common::direct(&db);
        for (name, password, require, _) in accounts() {
            c.query_drop(format!(
                "CREATE USER '{name}'@'%' IDENTIFIED BY '{password}' REQUIRE {require}"
            ))
            .unwrap();
            c.query_drop(format!("GRANT USAGE ON *.* TO '{name}'@'%'"))
                .unwrap();
        }
        db
    })
}

/// idgate in front of the shared server, asking for client certificates of the CA in `ca`,
/// with its admin listener on `admin` (for the refusal counts).
fn idgate(ca: &Path, admin: u16) -> Idgate {
    let p = pki();
    let mut users = String::new();
    for (name, password, _, keys) in accounts() {
        users.push_str(&format!(
            "  - name: {name}\n    password: {password}\n    {keys}\n"
        ));
    }
    let tls = format!(
        "tls:\n  cert: {}\n  key: {}\n  ca: {}\nadmin:\n  listen: 127.0.0.1:{admin}\n",
        p.server.display(),
        p.server_key.display(),
        ca.display()
    );
    Idgate::start_with(|port| {
        config_for(port, &[("shard0", common::shared_db())], &tls).replacen(
            "backends:\n",
            &format!("{users}backends:\n"),
            1,
        )
    })
}

/// A certificate file and its key.
type Cert<'a> = Option<(&'a Path, &'a Path)>;

/// The certificate options of the mysql CLI for `cert`.
fn cert_args(cert: Cert) -> Vec<String> {
    let mut args = vec!["--ssl".to_string()];
    if let Some((c, k)) = cert {
        args.push(format!("--ssl-cert={}", c.display()));
        args.push(format!("--ssl-key={}", k.display()));
    }
    args
}

/// What the mysql CLI saw logging in as `user` with `args` and running one SELECT.
fn login(port: u16, user: &str, password: &str, args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    outcome(&mysql_cli(port, user, password, &args, "SELECT 'in'"))
}

/// The class of answer that marks a certificate refused in the TLS handshake.
const TLS_REFUSED: &str = "refused in TLS";

/// What a client saw: a login that worked, the server's access-denied line, or a certificate
/// refused in TLS. That last one shows as 2026 when the refusal comes within the client's
/// handshake, or as 2013 when it comes just after (TLS 1.3 checks the client's certificate
/// once the client is done): which one is timing, not the server.
fn outcome(r: &Run) -> String {
    if r.code == Some(0) {
        return format!("ok {}", r.stdout.trim().lines().last().unwrap_or(""));
    }
    let line = r
        .stderr
        .lines()
        .find(|l| l.starts_with("ERROR"))
        .unwrap_or(r.stderr.trim());
    let lost_after_tls =
        line.starts_with("ERROR 2013") && line.contains("'sending authentication information'");
    if line.starts_with("ERROR 2026") || lost_after_tls {
        TLS_REFUSED.into()
    } else {
        line.to_string()
    }
}

#[test]
fn names_are_read_as_openssl_writes_them() {
    let p = pki();
    for cert in [&p.named, &p.client, &p.stranger] {
        let der = idgate::tls::files::certificates(cert).unwrap().remove(0);
        let names = idgate::tls::peer_name::PeerCert::from_der(&der).unwrap();
        assert_eq!(names.subject, openssl_name("-subject", cert));
        assert_eq!(names.issuer, openssl_name("-issuer", cert));
    }
    // The non-ASCII common name is written as OpenSSL escapes it.
    assert!(
        openssl_name("-subject", &p.named).ends_with("/CN=app-k\\xC3\\xA4ytt\\xC3\\xA4j\\xC3\\xA4")
    );
}

#[test]
fn mysql_cli_logins_match_mariadb_require_x509_subject_and_issuer() {
    let p = pki();
    let admin = common::free_port().unwrap();
    let g = idgate(&p.ca, admin);
    let db = mariadb();
    let client = Some((p.client.as_path(), p.client_key.as_path()));
    let named = Some((p.named.as_path(), p.named_key.as_path()));
    let stranger = Some((p.stranger.as_path(), p.stranger_key.as_path()));
    let cases: Vec<(&str, &str, Vec<String>)> = vec![
        ("x509", "x509-pw", cert_args(None)),
        ("x509", "x509-pw", cert_args(client)),
        ("x509", "x509-pw", cert_args(named)),
        ("x509", "x509-pw", cert_args(stranger)),
        ("x509", "x509-pw", vec!["--skip-ssl".into()]),
        ("x509", "wrong", cert_args(client)),
        ("subj", "subj-pw", cert_args(named)),
        ("subj", "subj-pw", cert_args(client)),
        ("subj", "subj-pw", cert_args(None)),
        ("issued", "issued-pw", cert_args(client)),
        ("issued", "issued-pw", cert_args(None)),
        ("foreign", "foreign-pw", cert_args(client)),
    ];
    let mut seen = Vec::new();
    for (user, password, args) in &cases {
        let mariadb = login(db.port, user, password, args);
        let through = login(g.port, user, password, args);
        assert_eq!(through, mariadb, "{user} {args:?}\n{}", g.log());
        seen.push(mariadb);
    }
    // The cases cover each answer: logged in, refused as a wrong password, TLS refused.
    assert!(seen.iter().any(|s| s.starts_with("ok")), "{seen:?}");
    assert!(
        seen.iter().any(|s| s.contains("ERROR 1045 (28000)")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|s| s == TLS_REFUSED), "{seen:?}");

    // A user without a requirement logs in over TLS with a certificate or without one.
    for cert in [None, client] {
        let r = login(g.port, APP_USER, APP_PASSWORD, &cert_args(cert));
        assert_eq!(r, "ok in", "{}", g.log());
    }
    // Right passwords refused for the certificate: no certificate (x509, subj, issued), the
    // wrong subject, the wrong issuer. Plain TCP counts as TLS required.
    let metrics = common::prometheus::scrape(admin);
    let count = |reason: &str| {
        common::prometheus::must_sample(
            &metrics,
            &format!("idgate_client_connections_refused_total{{reason=\"{reason}\"}}"),
        )
    };
    assert_eq!(count("certificate_required"), 5.0, "{metrics}");
    assert_eq!(count("tls_required"), 1.0, "{metrics}");
}

/// The client certificate as a PKCS#12 key store for Java, made by OpenSSL.
fn key_store(cert: &Path, key: &Path, name: &str) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("client-certs-{}", std::process::id()))
        .join(format!("{name}.p12"));
    let openssl = require_tool("openssl", "openssl");
    let r = Command::new(openssl)
        .args(["pkcs12", "-export", "-passout", "pass:keystore-pw", "-in"])
        .arg(cert)
        .arg("-inkey")
        .arg(key)
        .arg("-out")
        .arg(&out)
        .output()
        .expect("run openssl pkcs12");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    out
}

#[test]
fn connector_j_presents_a_key_store_as_mariadb_requires_it() {
    let p = pki();
    let g = idgate(&p.ca, common::free_port().unwrap());
    let db = mariadb();
    let (java, cp) = compile_java("JdbcTls.java");
    let jdbc = |port: u16, user: &str, password: &str, options: &str| {
        let mut cmd = Command::new(&java);
        cmd.arg("-cp").arg(&cp).arg("JdbcTls").args([
            "127.0.0.1",
            &port.to_string(),
            user,
            password,
            "",
            options,
        ]);
        let r = run(cmd, "JdbcTls", CLIENT_TIMEOUT);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        // The port and the connection id are in Connector/J's message for a refused login.
        let text = r.stdout.trim().replace(&port.to_string(), "PORT");
        match (text.find("(conn="), text.find(") Access")) {
            (Some(a), Some(b)) if a < b => format!("{}(conn=N{}", &text[..a], &text[b..]),
            _ => text,
        }
    };
    let trust = format!("useSsl=true&serverSslCert={}", p.ca.display());
    let store = |cert: &Path, key: &Path, name: &str| {
        format!(
            "{trust}&keyStore={}&keyStorePassword=keystore-pw&keyStoreType=PKCS12",
            key_store(cert, key, name).display()
        )
    };
    let client = store(&p.client, &p.client_key, "client");
    let named = store(&p.named, &p.named_key, "named");
    for (user, password, options, expect_ok) in [
        ("x509", "x509-pw", client.as_str(), true),
        ("x509", "x509-pw", trust.as_str(), false),
        ("subj", "subj-pw", named.as_str(), true),
        ("subj", "subj-pw", client.as_str(), false),
    ] {
        let mariadb = jdbc(db.port, user, password, options);
        let through = jdbc(g.port, user, password, options);
        assert_eq!(mariadb.starts_with("ok"), expect_ok, "MariaDB: {mariadb}");
        assert_eq!(through, mariadb, "{user} {options}\n{}", g.log());
    }
}

#[test]
fn a_reload_reads_the_client_ca_file_again() {
    let p = pki();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("client-ca-rotation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::copy(&p.ca, &ca).unwrap();
    let g = idgate(&ca, common::free_port().unwrap());
    let client = Some((p.client.as_path(), p.client_key.as_path()));
    let stranger = Some((p.stranger.as_path(), p.stranger_key.as_path()));
    let login = |cert: Cert| login(g.port, "x509", "x509-pw", &cert_args(cert));
    assert_eq!(login(client), "ok in");
    assert_eq!(login(stranger), TLS_REFUSED);

    // The other CA in the file: after the reload its certificates are the ones accepted.
    std::fs::copy(&p.other_ca, &ca).unwrap();
    g.sighup_and_wait("configuration reloaded");
    assert_eq!(login(stranger), "ok in", "{}", g.log());
    assert_eq!(login(client), TLS_REFUSED);

    // A broken file is refused by name; the CA in use stays.
    std::fs::write(&ca, "not a certificate").unwrap();
    g.sighup_and_wait("configuration reload refused");
    assert!(g.log().contains(&ca.display().to_string()), "{}", g.log());
    assert_eq!(login(stranger), "ok in");
}

#[test]
fn configuration_refuses_requirements_it_cannot_check() {
    let p = pki();
    let check = |tls: String, user: &str| {
        let yaml = config_for(1, &[("shard0", common::shared_db())], &tls).replacen(
            "backends:\n",
            &format!("  - name: u\n    password: pw\n    {user}\nbackends:\n"),
            1,
        );
        idgate::config::Config::from_yaml(&yaml)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let cert_only = format!(
        "tls:\n  cert: {}\n  key: {}\n",
        p.server.display(),
        p.server_key.display()
    );
    let e = check(cert_only, "require_x509: true").unwrap_err();
    assert!(
        e.contains("user `u`: require_x509 needs `tls: {cert, key, ca}`"),
        "{e}"
    );
    let e = check("tls: auto\n".into(), "require_subject: '/CN=app'").unwrap_err();
    assert!(e.contains("require_subject needs"), "{e}");
    let with_ca = format!(
        "tls:\n  cert: {}\n  key: {}\n  ca: {}\n",
        p.server.display(),
        p.server_key.display(),
        p.ca.display()
    );
    let e = check(with_ca.clone(), "require_subject: 'CN=app'").unwrap_err();
    assert!(e.contains("starting with `/`"), "{e}");
    check(with_ca, "require_subject: '/CN=app'").unwrap();
    let broken = format!(
        "tls:\n  cert: {}\n  key: {}\n  ca: {}\n",
        p.server.display(),
        p.server_key.display(),
        p.server_key.display()
    );
    let e = check(broken, "require_x509: true").unwrap_err();
    assert!(e.contains(&p.server_key.display().to_string()), "{e}");
}
