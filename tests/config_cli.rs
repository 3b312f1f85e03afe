//! `idgate check-config`: the example configs pass; mistakes are reported with line and column.

use std::process::Command;

fn check(yaml: &str) -> (bool, String, String) {
    let dir = std::env::temp_dir().join(format!("idgate-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("c{}.yaml", rand_suffix()));
    std::fs::write(&path, yaml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_idgate"))
        .args(["check-config", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

const GOOD: &str = "listen: 127.0.0.1:3307
users:
  - name: app
    password_hash: \"*14E65567ABDB5135D0CFD9A70B3032C179A49EE7\"
backends:
  main:
    user: idgate
    password: pw
default_backend: main
";

#[test]
fn shipped_configs_are_valid() {
    for f in [
        "conf/idgate.yaml",
        "conf/demo.yaml",
        "conf/two-shards-mod.yaml",
        "conf/biased-orders.yaml",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_idgate"))
            .args(["check-config", "--config", f])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            shown.contains("acquire_timeout_ms"),
            "defaults are printed: {shown}"
        );
        assert!(
            !shown.contains("change-me") && !shown.contains("idgate-test-pw"),
            "secrets are masked"
        );
    }
}

#[test]
fn a_minimal_config_gets_defaults() {
    let (ok, out, err) = check(GOOD);
    assert!(ok, "{err}");
    assert!(out.contains("max_packet_size: 67108864"), "{out}");
    assert!(out.contains("port: 3306"), "{out}");
}

#[test]
fn mistakes_are_reported_with_line_and_column() {
    let cases = [
        (
            GOOD.replace("  main:\n    user", "  main:\n    usr: x\n    user"),
            "usr",
            "line 7",
        ),
        (
            GOOD.replace(
                "listen: 127.0.0.1:3307\n",
                "listen: 127.0.0.1:3307\nlisten: 127.0.0.1:3308\n",
            ),
            "listen",
            "line 2",
        ),
        (
            GOOD.replace("default_backend: main", "default_backend: mian"),
            "mian",
            "line 9",
        ),
        (
            GOOD.replace("\"*14E65567ABDB5135D0CFD9A70B3032C179A49EE7\"", "secret"),
            "password_hash",
            "line 3",
        ),
        (
            GOOD.replace(
                "password_hash: \"*14E65567ABDB5135D0CFD9A70B3032C179A49EE7\"",
                "password: secret",
            ),
            "allow_plaintext_passwords",
            "line 3",
        ),
        (
            GOOD.replace(
                "    password: pw\n",
                "    password: pw\n    pool:\n      max_connections: 0\n",
            ),
            "max_connections",
            "line 7",
        ),
        (
            GOOD.replace("listen: 127.0.0.1:3307", "listen: nowhere"),
            "listen",
            "",
        ),
        (
            format!("{GOOD}transactions:\n  commit: maybe\n"),
            "best_effort",
            "line 11",
        ),
        (
            format!("{GOOD}transactions:\n  node_id: \"a b\"\n"),
            "node_id",
            "line 11",
        ),
    ];
    for (yaml, word, line) in cases {
        let (ok, _, err) = check(&yaml);
        assert!(!ok, "accepted:\n{yaml}");
        assert!(err.contains(word), "message should name `{word}`: {err}");
        assert!(err.contains(line), "message should say `{line}`: {err}");
    }
}

#[test]
fn version_names_the_release_and_the_commit() {
    let out = Command::new(env!("CARGO_BIN_EXE_idgate"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = String::from_utf8_lossy(&out.stdout);
    let v = v.trim();
    let rest = v
        .strip_prefix(&format!("idgate {} (commit ", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{v}"));
    assert!(
        rest == "unknown" || (rest.len() == 12 && rest.chars().all(|c| c.is_ascii_hexdigit())),
        "{v}"
    );
}
