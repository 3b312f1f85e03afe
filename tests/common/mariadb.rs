//! Throwaway MariaDB servers for tests: a temp datadir, `mariadb-install-db` + `mariadbd` on a free
//! port. A server lives until the test binary exits (or until a test kills it). The datadir is
//! initialised once per machine into a template and copied, which keeps a start near one second.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::reaper;

/// A user every test server has, with all privileges, reachable over TCP.
pub const USER: &str = "idgate";
pub const PASSWORD: &str = "idgate-test-pw";

pub struct MariaDb {
    pub port: u16,
    pub dir: PathBuf,
    child: Mutex<Option<Child>>,
}

fn find(names: &[&str]) -> PathBuf {
    for name in names {
        for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
            let p = Path::new(dir).join(name);
            if p.exists() {
                return p;
            }
        }
    }
    panic!(
        "none of {names:?} is installed: run scripts/test, which installs MariaDB (apt-get install mariadb-server mariadb-client)"
    );
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free TCP port on 127.0.0.1")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Initialises (once per machine and MariaDB version) a datadir with our test user.
fn template() -> &'static Path {
    static T: OnceLock<PathBuf> = OnceLock::new();
    T.get_or_init(|| {
        let version = Command::new(find(&["mariadbd", "mysqld"]))
            .arg("--version")
            .output()
            .expect("run mariadbd --version");
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
            return dir;
        }
        let tmp = std::env::temp_dir().join(format!(
            "idgate-mariadb-template-{tag}.{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).expect("create template dir");
        let mut cmd = Command::new(find(&["mariadb-install-db", "mysql_install_db"]));
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", tmp.display()))
            .arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if is_root() {
            cmd.arg("--user=root");
        }
        let out = cmd.output().expect("run mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::File::create(tmp.join("ready")).expect("mark template ready");
        // Another test binary may have won the race; either copy is complete.
        if std::fs::rename(&tmp, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        dir
    })
}

fn copy_dir(from: &Path, to: &Path) {
    let st = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(st.success(), "copy {} to {}", from.display(), to.display());
}

impl MariaDb {
    /// Starts a fresh server and waits until it accepts our test user.
    pub fn start() -> MariaDb {
        let base = std::env::temp_dir().join(format!(
            "idgate-test-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&base).expect("create server dir");
        reaper::remove_at_exit(base.clone());
        let data = base.join("data");
        copy_dir(template(), &data);
        let init = base.join("init.sql");
        let mut f = std::fs::File::create(&init).expect("init file");
        writeln!(
            f,
            "CREATE USER IF NOT EXISTS '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';\n\
             GRANT ALL ON *.* TO '{USER}'@'%' WITH GRANT OPTION;\n\
             CREATE DATABASE IF NOT EXISTS idgate_test;"
        )
        .expect("write init file");
        let db = MariaDb {
            port: free_port(),
            dir: base,
            child: Mutex::new(None),
        };
        db.spawn();
        db
    }

    fn spawn(&self) {
        let data = self.dir.join("data");
        let mut cmd = Command::new(find(&["mariadbd", "mysqld"]));
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", self.dir.join("sock").display()))
            .arg(format!("--pid-file={}", self.dir.join("pid").display()))
            .arg(format!("--init-file={}", self.dir.join("init.sql").display()))
            .arg(format!("--port={}", self.port))
            .arg(format!(
                "--log-error={}",
                self.dir.join("error.log").display()
            ))
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
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if is_root() {
            cmd.arg("--user=root");
        }
        let child = reaper::spawn(cmd);
        *self.child.lock().unwrap() = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.try_ping() {
                return;
            }
            if let Some(child) = self.child.lock().unwrap().as_mut() {
                if let Ok(Some(st)) = child.try_wait() {
                    panic!(
                        "mariadbd exited with {st} during start; its log:\n{}",
                        self.error_log()
                    );
                }
            }
            assert!(
                Instant::now() < deadline,
                "mariadbd on port {} not ready after 60 s; its log:\n{}",
                self.port,
                self.error_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn try_ping(&self) -> bool {
        let opts = mysql::OptsBuilder::default()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(self.port)
            .user(Some(USER))
            .pass(Some(PASSWORD));
        mysql::Conn::new(opts).is_ok()
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// Kills the server hard (SIGKILL), as a crashed or unplugged backend would go.
    pub fn kill(&self) {
        if let Some(mut c) = self.child.lock().unwrap().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port and datadir after `kill`.
    pub fn restart(&self) {
        self.kill();
        self.spawn();
    }

    pub fn url(&self) -> String {
        format!("mysql://{USER}:{PASSWORD}@127.0.0.1:{}/idgate_test", self.port)
    }

    /// A direct (no idgate) blocking connection to the server's `idgate_test` database.
    pub fn conn(&self) -> mysql::Conn {
        mysql::Conn::new(mysql::Opts::from_url(&self.url()).unwrap()).expect("direct connection")
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
