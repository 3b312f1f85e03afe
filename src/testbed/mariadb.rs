//! Throwaway MariaDB servers for the demo and the tests: a temp datadir, `mariadb-install-db` +
//! `mariadbd` on a free port. A server lives until its owner drops it or the process exits. The
//! datadir is initialised once per machine into a template and copied, so a start takes about a
//! second.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::reaper;

/// A user every throwaway server has, with all privileges, reachable over TCP.
pub const USER: &str = "idgate";
pub const PASSWORD: &str = "idgate-test-pw";
/// A database every throwaway server has.
pub const DATABASE: &str = "idgate_test";

pub struct MariaDb {
    pub port: u16,
    pub dir: PathBuf,
    child: Mutex<Option<Child>>,
    /// More server options (`--ssl-cert=…`, `--require-secure-transport=ON`).
    extra_args: Vec<String>,
}

pub(super) fn find(names: &[&str]) -> Result<PathBuf, String> {
    for name in names {
        for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
            let p = Path::new(dir).join(name);
            if p.exists() {
                return Ok(p);
            }
        }
    }
    Err(format!(
        "none of {names:?} is installed: install MariaDB (scripts/test and scripts/demo do: apt-get install mariadb-server mariadb-client)"
    ))
}

/// A port nothing listens on now, never the same twice in one process: the kernel may hand a
/// port just let go back to the next caller, and two servers of one test (idgate's MySQL and
/// admin listeners) would then race for it.
pub fn free_port() -> Result<u16, String> {
    static GIVEN: OnceLock<std::sync::Mutex<std::collections::HashSet<u16>>> = OnceLock::new();
    let mut given = GIVEN
        .get_or_init(Default::default)
        .lock()
        .map_err(|_| "port registry poisoned".to_string())?;
    for _ in 0..1000 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free TCP port on 127.0.0.1: {e}"))?;
        if given.insert(port) {
            return Ok(port);
        }
    }
    Err("no free TCP port on 127.0.0.1 that this process has not handed out already".into())
}

/// A free port below the kernel's range for outgoing connections, for a server that is
/// restarted on the same port (a Galera node's SQL, group and state-transfer ports): a port
/// from [`free_port`] lies in that range, so a client connection may hold it by the restart.
/// Never the same port twice in one process.
pub fn stable_port() -> Result<u16, String> {
    static GIVEN: OnceLock<std::sync::Mutex<std::collections::HashSet<u16>>> = OnceLock::new();
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768)
        .clamp(11000, 60000);
    let span = u32::from(low - 10000);
    let seed = std::process::id()
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
    let given = GIVEN.get_or_init(Default::default);
    let mut given = given
        .lock()
        .map_err(|_| "port registry poisoned".to_string())?;
    for k in 0..span {
        let port = 10000 + ((seed.wrapping_add(k.wrapping_mul(7919))) % span) as u16;
        if given.contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.insert(port);
            return Ok(port);
        }
    }
    Err(format!("no free TCP port on 127.0.0.1 below {low}"))
}

pub(super) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Initialises (once per machine and MariaDB version) a datadir to copy servers from.
pub(super) fn template() -> Result<PathBuf, String> {
    static T: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    T.get_or_init(make_template).clone()
}

fn make_template() -> Result<PathBuf, String> {
    let version = Command::new(find(&["mariadbd", "mysqld"])?)
        .arg("--version")
        .output()
        .map_err(|e| format!("run mariadbd --version: {e}"))?;
    let v = String::from_utf8_lossy(&version.stdout);
    let tag: String = v
        .split_whitespace()
        .nth(2)
        .unwrap_or("unknown")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    let dir = std::env::temp_dir().join(format!("idgate-mariadb-template-{tag}"));
    if dir.join("ready").exists() {
        return Ok(dir);
    }
    let tmp = std::env::temp_dir().join(format!(
        "idgate-mariadb-template-{tag}.{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("create {}: {e}", tmp.display()))?;
    let mut cmd = Command::new(find(&["mariadb-install-db", "mysql_install_db"])?);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", tmp.display()))
        .arg("--auth-root-authentication-method=normal")
        .arg("--skip-test-db")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if is_root() {
        cmd.arg("--user=root");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("run mariadb-install-db: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mariadb-install-db failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::File::create(tmp.join("ready")).map_err(|e| format!("mark template ready: {e}"))?;
    // Another process may have won the race; either copy is complete.
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(dir)
}

impl MariaDb {
    /// Starts a fresh server on a free port and waits until it accepts logins.
    pub fn start() -> Result<MariaDb, String> {
        // A free port can be taken by another process between the look and mariadbd's bind
        // (tests start many servers at once): then another port is tried. It lies below the
        // range of outgoing connections, so `restart` finds it free again.
        let mut tries = 0;
        loop {
            match Self::start_on(stable_port()?) {
                Err(e) if tries < 4 && e.contains("Address already in use") => tries += 1,
                r => return r,
            }
        }
    }

    /// Starts a fresh server with a row-based binlog of whole row images and a server id of
    /// its own, as a source of a table being moved needs.
    pub fn start_with_binlog() -> Result<MariaDb, String> {
        let mut tries = 0;
        loop {
            let port = stable_port()?;
            let args = [
                "--log-bin=binlog".to_string(),
                "--binlog-format=ROW".to_string(),
                "--binlog-row-image=FULL".to_string(),
                format!("--server-id={port}"),
            ];
            match Self::start_with_args(port, &args) {
                Err(e) if tries < 4 && e.contains("Address already in use") => tries += 1,
                r => return r,
            }
        }
    }

    /// Starts a fresh server on `port`.
    pub fn start_on(port: u16) -> Result<MariaDb, String> {
        Self::start_with_args(port, &[])
    }

    /// Starts a fresh server on `port` with more command-line options, e.g. for TLS.
    pub fn start_with_args(port: u16, extra_args: &[String]) -> Result<MariaDb, String> {
        let base =
            std::env::temp_dir().join(format!("idgate-mariadb-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).map_err(|e| format!("create {}: {e}", base.display()))?;
        reaper::remove_at_exit(base.clone());
        let st = Command::new("cp")
            .arg("-a")
            .arg(template()?)
            .arg(base.join("data"))
            .status()
            .map_err(|e| format!("cp: {e}"))?;
        if !st.success() {
            return Err("copying the template datadir failed".into());
        }
        let mut f =
            std::fs::File::create(base.join("init.sql")).map_err(|e| format!("init file: {e}"))?;
        writeln!(
            f,
            "CREATE USER IF NOT EXISTS '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';\n\
             GRANT ALL ON *.* TO '{USER}'@'%' WITH GRANT OPTION;\n\
             CREATE DATABASE IF NOT EXISTS {DATABASE};"
        )
        .map_err(|e| format!("init file: {e}"))?;
        let db = MariaDb {
            port,
            dir: base,
            child: Mutex::new(None),
            extra_args: extra_args.to_vec(),
        };
        db.spawn()?;
        Ok(db)
    }

    fn spawn(&self) -> Result<(), String> {
        let mut cmd = Command::new(find(&["mariadbd", "mysqld"])?);
        let path = |name: &str| self.dir.join(name).display().to_string();
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", path("data")))
            .arg(format!("--socket={}", path("sock")))
            .arg(format!("--pid-file={}", path("pid")))
            .arg(format!("--init-file={}", path("init.sql")))
            .arg(format!("--log-error={}", path("error.log")))
            // Its own temp dir: servers of parallel test binaries never share /tmp files.
            .arg(format!("--tmpdir={}", self.dir.display()))
            .arg(format!("--port={}", self.port))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=16M",
                "--innodb-flush-log-at-trx-commit=2",
                "--innodb-doublewrite=0",
                "--max-allowed-packet=64M",
                "--max-connections=500",
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_general_ci",
            ])
            .args(&self.extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if is_root() {
            cmd.arg("--user=root");
        }
        let child = reaper::spawn(cmd)?;
        if let Ok(mut c) = self.child.lock() {
            *c = Some(child);
        }
        self.wait_ready()
    }

    fn wait_ready(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.greets() {
                return Ok(());
            }
            if let Ok(mut guard) = self.child.lock() {
                if let Some(child) = guard.as_mut() {
                    if let Ok(Some(st)) = child.try_wait() {
                        return Err(format!(
                            "mariadbd exited with {st} during start; its log:\n{}",
                            self.error_log()
                        ));
                    }
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "mariadbd on port {} not ready after 60 s; its log:\n{}",
                    self.port,
                    self.error_log()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// True once the server sends a protocol-10 greeting (it runs the init file before that).
    fn greets(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let mut head = [0u8; 5];
        s.read_exact(&mut head).is_ok() && head[4] == 10
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// Kills the server hard (SIGKILL), as a crashed or unplugged backend would go.
    pub fn kill(&self) {
        if let Ok(mut guard) = self.child.lock() {
            if let Some(mut c) = guard.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// Starts the server again on the same port and datadir after `kill`.
    pub fn restart(&self) -> Result<(), String> {
        self.kill();
        self.spawn()
    }

    /// Stops the server in its tracks (SIGSTOP): its sockets stay open and nothing answers, as
    /// a hung host or a long stall looks to its clients.
    pub fn freeze(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Lets a frozen server go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, sig: libc::c_int) {
        if let Ok(guard) = self.child.lock() {
            if let Some(c) = guard.as_ref() {
                // SAFETY: kill(2) on our own child process.
                unsafe { libc::kill(c.id() as libc::pid_t, sig) };
            }
        }
    }

    pub fn url(&self) -> String {
        format!(
            "mysql://{USER}:{PASSWORD}@127.0.0.1:{}/{DATABASE}",
            self.port
        )
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
