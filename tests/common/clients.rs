//! Running real client programs (tests/clients/) against a server and through idgate, with
//! captured output, a time limit, and a readable diff of two transcripts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::idgate_proc::{APP_PASSWORD, APP_USER};
use super::{Idgate, MariaDb, DATABASE, PASSWORD, USER};

pub const CONNECTOR_J: &str = "/usr/share/java/mariadb-java-client.jar";

/// Where a client connects, and as whom.
pub struct Target {
    pub name: &'static str,
    pub port: u16,
    pub user: &'static str,
    pub password: &'static str,
}

pub fn direct_target(db: &MariaDb) -> Target {
    Target {
        name: "direct",
        port: db.port,
        user: USER,
        password: PASSWORD,
    }
}

pub fn idgate_target(g: &Idgate) -> Target {
    Target {
        name: "idgate",
        port: g.port,
        user: APP_USER,
        password: APP_PASSWORD,
    }
}

/// What one client run printed and how it ended.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

pub fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// A directory for one test binary's (`area`) client files.
pub fn scratch_dir(area: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(area).join(name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The tool on PATH, or a failure telling the reader how to get it.
pub fn require_tool(tool: &str, package: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join(tool);
        if p.is_file() {
            return p;
        }
    }
    panic!("`{tool}` is not installed (Debian package `{package}`): run scripts/test, which installs every client this test drives");
}

pub fn require_python_modules(modules: &str, pip_names: &str) {
    let python = require_tool("python3", "python3");
    let out = Command::new(python)
        .arg("-c")
        .arg(format!("import {modules}"))
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "python3 cannot import {modules} (pip packages {pip_names}): run scripts/test, which installs them\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `cmd` to completion (or kills it after `timeout`) with output captured in files.
pub fn run(cmd: Command, what: &str, timeout: Duration) -> Run {
    run_diagnosed(cmd, what, timeout, |_| String::new())
}

/// `run`, and if the client hangs, what `diagnose(pid)` finds out before it is killed.
pub fn run_diagnosed(
    mut cmd: Command,
    what: &str,
    timeout: Duration,
    diagnose: impl Fn(u32) -> String,
) -> Run {
    let dir = scratch_dir("client_runs", "runs");
    // Tests of one binary run in parallel threads: each run gets files of its own.
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let stamp = format!(
        "{}-{}-{}",
        what.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let out_path = dir.join(format!("{stamp}.out"));
    let err_path = dir.join(format!("{stamp}.err"));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"));
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("start {what}: {e}"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for client") {
            break Some(st);
        }
        if Instant::now() > deadline {
            let found = diagnose(child.id());
            if !found.is_empty() {
                std::fs::write(
                    &err_path,
                    format!("{}\n[hang diagnosis]\n{found}", read_err(&err_path)),
                )
                .expect("stderr file");
            }
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = read_err;
    let (stdout, stderr) = (read(&out_path), read(&err_path));
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    match status {
        Some(st) => Run {
            stdout,
            stderr,
            code: st.code(),
        },
        None => Run {
            stdout,
            stderr: format!("{stderr}\n[killed after {timeout:?}]"),
            code: None,
        },
    }
}

fn read_err(p: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(p).expect("read")).into_owned()
}

/// The first differing lines of two transcripts, with line numbers.
pub fn diff(direct: &str, through: &str) -> String {
    let a: Vec<&str> = direct.lines().collect();
    let b: Vec<&str> = through.lines().collect();
    let mut s = String::new();
    let mut shown = 0;
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            let _ = writeln!(s, "line {}:", i + 1);
            let _ = writeln!(s, "  direct: {}", x.copied().unwrap_or("<missing>"));
            let _ = writeln!(s, "  idgate: {}", y.copied().unwrap_or("<missing>"));
            shown += 1;
            if shown == 30 {
                let _ = writeln!(s, "  ...");
                break;
            }
        }
    }
    s
}

pub fn client_args(cmd: &mut Command, t: &Target) {
    cmd.arg("127.0.0.1")
        .arg(t.port.to_string())
        .arg(t.user)
        .arg(t.password)
        .arg(DATABASE);
}

pub fn assert_has(transcript: &str, line: &str) {
    assert!(
        transcript.lines().any(|l| l == line),
        "expected the line `{line}` in the transcript:\n{transcript}"
    );
}

/// Compiles `tests/clients/{source}` against Connector/J; returns `java` and the class path to
/// run it with.
pub fn compile_java(source: &str) -> (PathBuf, String) {
    let java = require_tool("java", "default-jdk-headless");
    let javac = require_tool("javac", "default-jdk-headless");
    assert!(
        Path::new(CONNECTOR_J).is_file(),
        "{CONNECTOR_J} is missing (Debian package libmariadb-java): run scripts/test"
    );
    let classes = scratch_dir("java", &format!("{source}-{}", std::process::id()));
    let out = Command::new(javac)
        .arg("-encoding")
        .arg("UTF-8")
        .arg("-cp")
        .arg(CONNECTOR_J)
        .arg("-d")
        .arg(&classes)
        .arg(source_dir().join(source))
        .output()
        .expect("run javac");
    assert!(
        out.status.success(),
        "javac {source} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (java, format!("{CONNECTOR_J}:{}", classes.display()))
}

/// Runs a client program directly and through idgate and asserts both runs saw the same thing;
/// returns the (common) transcript for absolute assertions.
pub fn differential(
    area: &str,
    name: &str,
    direct_db: &MariaDb,
    g: &Idgate,
    timeout: Duration,
    make: impl Fn(&Target) -> Command,
) -> String {
    let target = direct_target(direct_db);
    let direct = run(make(&target), &format!("{name} {}", target.name), timeout);
    assert_eq!(
        direct.code,
        Some(0),
        "{name} failed against MariaDB directly (a broken client program or machine, not idgate):\nstdout:\n{}\nstderr:\n{}",
        direct.stdout,
        direct.stderr
    );
    let target = idgate_target(g);
    let through = run(make(&target), &format!("{name} {}", target.name), timeout);
    let dir = scratch_dir(area, "transcripts");
    std::fs::write(dir.join(format!("{name}.direct.txt")), &direct.stdout).expect("save");
    std::fs::write(dir.join(format!("{name}.idgate.txt")), &through.stdout).expect("save");
    if through.code != Some(0) || through.stdout != direct.stdout {
        panic!(
            "{name} behaves differently through idgate (exit {:?}, directly 0).\n\
             first differences:\n{}\nclient stderr through idgate:\n{}\n\
             full transcripts: {}/{name}.{{direct,idgate}}.txt\nidgate log:\n{}",
            through.code,
            diff(&direct.stdout, &through.stdout),
            through.stderr,
            dir.display(),
            g.log()
        );
    }
    direct.stdout
}
