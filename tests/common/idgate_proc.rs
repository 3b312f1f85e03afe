//! idgate processes for tests: the real binary, on a config written to a temp file, on a free port.

use std::io::Read;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use idgate::testbed::mariadb::{free_port, PASSWORD, USER};
use idgate::testbed::{reaper, MariaDb};

/// The user tests log in to idgate as.
pub const APP_USER: &str = "app";
pub const APP_PASSWORD: &str = "app-secret";

pub struct Idgate {
    pub port: u16,
    pub config_path: PathBuf,
    child: Mutex<Option<Child>>,
    log: PathBuf,
    /// Extra environment for the process (e.g. libfaketime's).
    env: Vec<(String, String)>,
}

/// A config with one backend (`db`) and the test user; `extra` is appended as more top-level YAML.
pub fn config_for(port: u16, backends: &[(&str, &MariaDb)], extra: &str) -> String {
    let ports: Vec<(&str, u16)> = backends.iter().map(|(n, db)| (*n, db.port)).collect();
    config_for_ports(port, &ports, extra)
}

/// As [`config_for`], with each backend reached on the given port (a relay in front of it).
pub fn config_for_ports(port: u16, backends: &[(&str, u16)], extra: &str) -> String {
    let mut y = format!(
        "listen: 127.0.0.1:{port}\nallow_plaintext_passwords: true\nshutdown_grace_ms: 3000\n\
         users:\n  - name: {APP_USER}\n    password: {APP_PASSWORD}\n  - name: nopw\n    password: \"\"\n\
         backends:\n"
    );
    for (name, backend_port) in backends {
        y.push_str(&format!(
            "  {name}:\n    host: 127.0.0.1\n    port: {backend_port}\n    user: {USER}\n    password: {PASSWORD}\n    pool:\n      max_connections: 64\n      acquire_timeout_ms: 10000\n",
        ));
    }
    y.push_str(&format!("default_backend: {}\n", backends[0].0));
    y.push_str(extra);
    y
}

impl Idgate {
    /// idgate in front of one backend.
    pub fn start(db: &MariaDb) -> Idgate {
        Self::start_with(|port| config_for(port, &[("shard0", db)], ""))
    }

    /// idgate on a config built for the port it will listen on.
    pub fn start_with(config: impl FnOnce(u16) -> String) -> Idgate {
        Self::start_with_env(config, &[])
    }

    /// As [`Idgate::start_with`], with extra environment variables for the process.
    pub fn start_with_env(config: impl FnOnce(u16) -> String, env: &[(&str, &str)]) -> Idgate {
        let port = free_port().expect("free port");
        let dir = std::env::temp_dir().join(format!("idgate-proc-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("idgate temp dir");
        reaper::remove_at_exit(dir.clone());
        let config_path = dir.join("idgate.yaml");
        std::fs::write(&config_path, config(port)).expect("write config");
        let log = dir.join("idgate.log");
        let g = Idgate {
            port,
            config_path,
            child: Mutex::new(None),
            log,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        g.spawn();
        g
    }

    fn spawn(&self) {
        let log = std::fs::File::create(&self.log).expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_idgate"));
        cmd.arg("run")
            .arg("--config")
            .arg(&self.config_path)
            .env("IDGATE_LOG", "info")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = reaper::spawn(cmd).expect("start idgate");
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let mut b = [0u8; 5];
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                if s.read_exact(&mut b).is_ok() && b[4] == 10 {
                    return;
                }
            }
            if let Some(Ok(Some(st))) = self
                .child
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
                .map(|c| c.try_wait())
            {
                panic!("idgate exited with {st}; its log:\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "idgate not ready; its log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|c| c.id())
            .expect("idgate is running")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGHUP and waits until the log shows the reload's `outcome` once more than before.
    pub fn sighup_and_wait(&self, outcome: &str) {
        let before = self.log().matches(outcome).count();
        // SAFETY: kill(2) on the child's pid with a valid signal number has no other effect.
        unsafe { libc::kill(self.pid() as i32, libc::SIGHUP) };
        let t0 = std::time::Instant::now();
        while self.log().matches(outcome).count() <= before {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(20),
                "no `{outcome}` after SIGHUP:\n{}",
                self.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub fn url(&self, db: &str) -> String {
        format!(
            "mysql://{APP_USER}:{APP_PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// A connection through idgate to the test database.
    pub fn conn(&self) -> mysql::Conn {
        self.conn_to(idgate::testbed::mariadb::DATABASE)
    }

    pub fn conn_to(&self, db: &str) -> mysql::Conn {
        mysql::Conn::new(mysql::Opts::from_url(&self.url(db)).unwrap())
            .unwrap_or_else(|e| panic!("connect through idgate: {e}; its log:\n{}", self.log()))
    }

    /// Kills the process hard (SIGKILL), as a crash would, and waits for it to go.
    pub fn kill(&self) {
        if let Some(mut c) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the process again on the same config and port (after `kill` or `terminate`).
    pub fn restart(&self) {
        self.kill();
        self.spawn();
    }

    /// Sends SIGTERM and waits for the process to exit; returns its exit status.
    pub fn terminate(&self) -> Option<std::process::ExitStatus> {
        let mut guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let child = guard.as_mut()?;
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let st = child.wait().ok();
        *guard = None;
        st
    }
}

impl Drop for Idgate {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs idgate on `config` and expects it to refuse to start; returns what it said.
pub fn refused_start(dbs: &[(&str, &MariaDb)], tables: &str) -> String {
    let port = free_port().unwrap();
    let dir = std::env::temp_dir().join(format!("idgate-refused-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("idgate.yaml");
    std::fs::write(&path, config_for(port, dbs, tables)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_idgate"))
        .args(["run", "--config"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("idgate started although it should have refused");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!status.success(), "idgate exited 0:\n{said}");
    let _ = std::fs::remove_dir_all(&dir);
    said
}
