//! Insert load for the fault scenarios: Python (PyMySQL) and Connector/J client threads writing
//! through idgate until told to stop, each attempt logged as a history line (see history.rs).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::clients::{compile_java, require_python_modules, source_dir};
use super::history::{self, Attempt};
use super::idgate_proc::{APP_PASSWORD, APP_USER};
use super::DATABASE;

/// Clients numbered from here are Connector/J threads; below, Python threads.
pub const FIRST_JDBC_CLIENT: u64 = 1000;

pub struct Writers {
    dir: PathBuf,
    stop: PathBuf,
    children: Vec<Child>,
    pub python_threads: u64,
    pub jdbc_threads: u64,
}

/// The clock the writers stamp their lines with (CLOCK_MONOTONIC, seconds), to place a line
/// before or after a fault.
pub fn monotonic_now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// Creates the tables the writers insert into (directly on `db`).
pub fn create_tables(db: &super::MariaDb, tables: &[&str]) {
    use mysql::prelude::Queryable;
    let mut c = super::direct(db);
    for t in tables {
        c.query_drop(format!(
            "CREATE TABLE {t} (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, \
             note VARCHAR(40) NOT NULL, UNIQUE KEY (note))"
        ))
        .unwrap_or_else(|e| panic!("create {t}: {e}"));
    }
}

impl Writers {
    /// Starts `python_threads` PyMySQL and `jdbc_threads` Connector/J clients inserting into
    /// `tables` (columns user_id, note) through idgate on `port`.
    pub fn start(
        name: &str,
        port: u16,
        tables: &[&str],
        python_threads: u64,
        jdbc_threads: u64,
    ) -> Writers {
        require_python_modules("pymysql", "pymysql");
        let dir = std::env::temp_dir().join(format!("idgate-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("writers dir");
        let stop = dir.join("stop");
        let _ = std::fs::remove_file(&stop);
        let port = port.to_string();
        let mut children = Vec::new();
        let python = Command::new("python3")
            .arg(source_dir().join("py_chaos_writer.py"))
            .args(["127.0.0.1", &port, APP_USER, APP_PASSWORD, DATABASE])
            .arg(python_threads.to_string())
            .arg(&stop)
            .args(tables)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("python.jsonl")).expect("history file"))
            .stderr(std::fs::File::create(dir.join("python.err")).expect("stderr file"))
            .spawn()
            .expect("start the Python writers");
        children.push(python);
        if jdbc_threads > 0 {
            let (java, classpath) = compile_java("JdbcChaosWriter.java");
            let jdbc = Command::new(java)
                .arg("-cp")
                .arg(&classpath)
                .arg("JdbcChaosWriter")
                .args(["127.0.0.1", &port, APP_USER, APP_PASSWORD, DATABASE])
                .arg(jdbc_threads.to_string())
                .arg(FIRST_JDBC_CLIENT.to_string())
                .arg(&stop)
                .args(tables)
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(dir.join("jdbc.jsonl")).expect("history file"))
                .stderr(std::fs::File::create(dir.join("jdbc.err")).expect("stderr file"))
                .spawn()
                .expect("start the JDBC writers");
            children.push(jdbc);
        }
        Writers {
            dir,
            stop,
            children,
            python_threads,
            jdbc_threads,
        }
    }

    /// Tells the clients to stop, waits for them, and returns every attempt they logged.
    pub fn stop(mut self) -> Vec<Attempt> {
        std::fs::write(&self.stop, b"").expect("stop file");
        let deadline = Instant::now() + Duration::from_secs(60);
        for c in &mut self.children {
            while c.try_wait().expect("wait for a writer").is_none() {
                assert!(
                    Instant::now() < deadline,
                    "the writers did not stop; see {}",
                    self.dir.display()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let mut text = String::new();
        for f in ["python.jsonl", "jdbc.jsonl"] {
            text += &std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        }
        let attempts = history::parse(&text);
        assert!(
            attempts.iter().any(|a| a.ok && a.c < FIRST_JDBC_CLIENT),
            "no Python client wrote; see {}",
            self.dir.display()
        );
        if self.jdbc_threads > 0 {
            assert!(
                attempts.iter().any(|a| a.ok && a.c >= FIRST_JDBC_CLIENT),
                "no JDBC client wrote; see {}",
                self.dir.display()
            );
        }
        attempts
    }

    pub fn dir(&self) -> &PathBuf {
        &self.dir
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.stop, b"");
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A client that runs one statement over and over through idgate, timing each answer: the
/// scenarios use it to show that what a fault does not touch keeps working promptly.
pub struct Canary {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<CanaryAnswer>>,
}

/// When an answer came (the writers' clock), how long it took, and its error if any.
pub type CanaryAnswer = (f64, Duration, Result<(), String>);

impl Canary {
    pub fn start(port: u16, sql: &'static str) -> Canary {
        use mysql::prelude::Queryable;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let url = format!("mysql://{APP_USER}:{APP_PASSWORD}@127.0.0.1:{port}/{DATABASE}");
        let thread = std::thread::spawn(move || {
            let mut c = mysql::Conn::new(mysql::Opts::from_url(&url).expect("url"))
                .expect("the canary connects");
            let mut seen = Vec::new();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                let r = c.query_drop(sql).map_err(|e| e.to_string());
                seen.push((monotonic_now(), t.elapsed(), r));
                std::thread::sleep(Duration::from_millis(50));
            }
            seen
        });
        Canary { stop, thread }
    }

    /// Stops it; returns every answer.
    pub fn stop(self) -> Vec<CanaryAnswer> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().expect("the canary thread")
    }
}

/// Fails unless every canary answer was a success within `limit`.
pub fn assert_undisturbed(answers: &[CanaryAnswer], limit: Duration, what: &str) {
    let worst = answers
        .iter()
        .map(|(_, took, _)| *took)
        .max()
        .unwrap_or_default();
    let failed: Vec<_> = answers
        .iter()
        .filter(|(_, _, r)| r.is_err())
        .take(3)
        .collect();
    assert!(
        failed.is_empty() && worst < limit,
        "{what} was disturbed (slowest {worst:?}): {failed:?}"
    );
}
