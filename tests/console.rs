//! The operator's console on the admin listener, in a real browser: headless Chromium driven
//! by selenium (tests/console/check_console.py) against idgate over two MariaDB shards while an
//! `IDGATE MIGRATE` is copying. Every section shows the right figures, the migration's bar
//! moves, a stopped backend turns red within one refresh, the HTML parses without an error and
//! the browser logs no script error. Off loopback the console asks for an admin's credentials.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::clients::{require_python_modules, require_tool};
use common::idgate_proc::APP_PASSWORD;
use common::migration::{admin_idgate, binlog_db};
use common::{direct, free_port, start_db, DATABASE};
use mysql::prelude::Queryable;

/// `drawn` is drawn from by this test only: its ids issued are exactly what it drew.
const GENERATORS: &str = "generators:
  drawn:
    kind: segment
    step: 50
  acc_seq:
    kind: segment
    step: 1000
  snow:
    kind: snowflake
";

/// The page refreshes each section this often (console::page::REFRESH_MS).
const REFRESH: Duration = Duration::from_secs(2);
/// admin.check_timeout_ms below: a stopped backend's ping fails within it.
const CHECK_TIMEOUT_MS: u64 = 500;

fn path_of(tool: &str, package: &str) -> String {
    assert!(
        std::path::Path::new(tool).exists(),
        "`{tool}` is not installed (Debian package `{package}`): run scripts/test, which installs it"
    );
    tool.to_string()
}

#[test]
fn the_console_shows_every_section_live_in_a_browser() {
    let python = require_tool("python3", "python3");
    path_of("/usr/bin/chromium", "chromium");
    path_of("/usr/bin/chromedriver", "chromium-driver");
    require_python_modules("selenium, html5lib", "selenium html5lib");

    let dbs = [binlog_db(), start_db()];
    // Enough rows, copied slowly (the copy rests 10 times each chunk's time), that the copy
    // is still going through the whole check.
    let mut src = direct(&dbs[0]);
    src.query_drop("CREATE TABLE items (id BIGINT PRIMARY KEY, v VARCHAR(40))")
        .unwrap();
    src.query_drop("INSERT INTO items SELECT seq, CONCAT('v', seq) FROM seq_1_to_600000")
        .unwrap();
    let admin_port = free_port().unwrap();
    let g = admin_idgate(
        &[("shard0", &dbs[0]), ("shard1", &dbs[1])],
        &format!(
            "{GENERATORS}slow_statement_ms: 100\nmigrations:\n  copy_rest_percent: 1000\n\
             admin:\n  listen: 127.0.0.1:{admin_port}\n  check_timeout_ms: {CHECK_TIMEOUT_MS}\n"
        ),
    );
    let mut c = g.conn();
    let drawn = 37;
    for _ in 0..drawn {
        let _: Option<u64> = c.query_first("SELECT NEXTVAL(drawn)").unwrap();
    }
    for i in 0..200 {
        let _: Option<u64> = c.query_first(format!("SELECT {i}")).unwrap();
    }
    let _: Option<u64> = c.query_first("SELECT SLEEP(0.2)").unwrap();
    // Sessions of a second user, idle.
    let url = format!("mysql://nopw:@127.0.0.1:{}/{DATABASE}", g.port);
    let idle: Vec<mysql::Conn> = (0..3)
        .map(|_| mysql::Conn::new(mysql::Opts::from_url(&url).unwrap()).unwrap())
        .collect();
    c.query_drop(
        "IDGATE MIGRATE START items TO '{generator: acc_seq, sharding: {columns: [id], \
         algorithm: mod, shards: [shard1]}}'",
    )
    .unwrap();
    // MIGRATE STATUS has the share copied and the ETA (once this run has a pace).
    let t0 = Instant::now();
    let (percent, eta) = loop {
        let row: mysql::Row = c
            .query_first("IDGATE MIGRATE STATUS items")
            .unwrap()
            .expect("the job is listed");
        let phase: String = row.get("phase").unwrap();
        assert_eq!(phase, "copying", "the copy must still run for the browser");
        let percent: Option<u64> = row.get("percent").unwrap();
        let eta: Option<u64> = row.get("eta_seconds").unwrap();
        if let (Some(p), Some(e)) = (percent, eta) {
            break (p, e);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no percent/ETA: {row:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(percent < 100 && eta > 0, "{percent}% eta {eta} s");

    let screenshot = target_dir().join("console-screenshot.png");
    let _ = std::fs::remove_file(&screenshot);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/console/check_console.py"
    );
    // One refresh, the ping's timeout and the time to render and draw.
    let red_within = REFRESH + Duration::from_millis(CHECK_TIMEOUT_MS) + Duration::from_secs(3);
    let mut child = Command::new(python)
        .arg(script)
        .args(["--url", &format!("http://127.0.0.1:{admin_port}")])
        .args(["--drawn", &drawn.to_string()])
        .args(["--version", env!("CARGO_PKG_VERSION")])
        .args(["--table", &format!("{DATABASE}.items")])
        .args(["--idle-user", "nopw", "--idle-sessions", "3"])
        .args(["--stop", "shard1"])
        .args(["--red-within", &red_within.as_secs_f64().to_string()])
        .arg("--screenshot")
        .arg(&screenshot)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run check_console.py");
    let mut to_script = child.stdin.take().unwrap();
    let from_script = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    // The whole check is bounded: a hung browser fails the test instead of stalling it.
    let pid = child.id();
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(120));
        // SAFETY: kill(2) on the child this test started (gone already: ESRCH, harmless).
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let mut result = None;
    for line in from_script.lines() {
        let line = line.unwrap();
        if line == "STOP shard1" {
            dbs[1].kill();
            writeln!(to_script, "stopped").unwrap();
            to_script.flush().unwrap();
        } else if let Some(r) = line.strip_prefix("RESULT ") {
            result = Some(r.to_string());
        }
    }
    let status = child.wait().unwrap();
    drop(watchdog);
    let errors = errors.join().unwrap();
    assert!(
        status.success(),
        "the browser check failed ({status}):\n{errors}\nidgate's log:\n{}",
        g.log()
    );
    let result: serde_json::Value = serde_json::from_str(&result.expect("a RESULT line")).unwrap();
    println!("console check: {result}");
    let png = std::fs::read(&screenshot).expect("the screenshot was saved");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    drop(idle);
}

/// Off loopback the console is for admins only, by HTTP Basic under the login throttle;
/// `/metrics` stays open as before.
#[test]
fn off_loopback_the_console_asks_an_admin_for_credentials() {
    let curl = require_tool("curl", "curl");
    let db = start_db();
    let admin_port = free_port().unwrap();
    let g = admin_idgate(
        &[("shard0", &db)],
        &format!("max_auth_failures: 3\nadmin:\n  listen: 0.0.0.0:{admin_port}\n"),
    );
    let get = |path: &str, user: Option<&str>| -> (u16, String, String) {
        let mut cmd = Command::new(&curl);
        cmd.args(["-sS", "--max-time", "20", "-D", "-", "-o", "-"]);
        if let Some(u) = user {
            cmd.args(["-u", u]);
        }
        let out = cmd
            .arg(format!("http://127.0.0.1:{admin_port}{path}"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let code = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("{text}"));
        (code, head.to_lowercase(), body.to_string())
    };
    let (code, head, _) = get("/", None);
    assert_eq!(code, 401, "{head}");
    assert!(head.contains("www-authenticate: basic"), "{head}");
    assert_eq!(get("/console/section/about", None).0, 401);
    assert_eq!(
        get("/metrics", None).0,
        200,
        "/metrics is not the console's"
    );
    let (code, _, body) = get("/", Some("nopw:"));
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("not an idgate admin"), "{body}");
    let admin = format!("app:{APP_PASSWORD}");
    let (code, head, body) = get("/", Some(&admin));
    assert_eq!(code, 200, "{body}");
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(body.contains("<title>idgate console</title>"));
    assert!(!body.contains(APP_PASSWORD), "a password on the page");
    assert!(
        !body.contains(common::PASSWORD),
        "the backend account's password on the page"
    );
    // Wrong passwords count as failed logins: past max_auth_failures the host waits, even
    // with the right password.
    for _ in 0..3 {
        assert_eq!(get("/", Some("app:wrong")).0, 401);
    }
    let (code, head, _) = get("/", Some(&admin));
    assert_eq!(code, 429, "{head}");
    assert!(head.contains("retry-after:"), "{head}");
    drop(g);
}

fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/target").into())
}
