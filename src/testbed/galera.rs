//! A throwaway Galera cluster of local MariaDB nodes (Debian's `galera-4`), for tests of the
//! sequence store's high-availability setup: nodes on free ports, the first bootstrapping the
//! cluster, the others joining by rsync state transfer. Nodes can be killed and restarted.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::mariadb::{find, is_root, stable_port, template, DATABASE, PASSWORD, USER};
use super::reaper;

const PROVIDER: &str = "/usr/lib/galera/libgalera_smm.so";

pub struct GaleraNode {
    pub port: u16,
    dir: PathBuf,
    /// Group communication, incremental and full state transfer ports.
    gcomm: u16,
    ist: u16,
    sst: u16,
    child: Mutex<Option<Child>>,
}

pub struct Galera {
    pub nodes: Vec<GaleraNode>,
    base: PathBuf,
}

impl Galera {
    /// Starts a cluster of `n` nodes and waits until every node serves.
    pub fn start(n: usize) -> Result<Galera, String> {
        if !Path::new(PROVIDER).exists() {
            return Err(format!(
                "{PROVIDER} is missing: install galera-4 (scripts/test does: apt-get install galera-4)"
            ));
        }
        // Each node restarts on its ports: none may be one an outgoing connection can take.
        let first = stable_port()?;
        let base =
            std::env::temp_dir().join(format!("idgate-galera-{}-{first}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).map_err(|e| format!("create {}: {e}", base.display()))?;
        reaper::remove_at_exit(base.clone());
        let mut nodes = Vec::new();
        for i in 0..n {
            let dir = base.join(format!("node{i}"));
            std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
            let st = Command::new("cp")
                .arg("-a")
                .arg(template()?)
                .arg(dir.join("data"))
                .status()
                .map_err(|e| format!("cp: {e}"))?;
            if !st.success() {
                return Err("copying the template datadir failed".into());
            }
            nodes.push(GaleraNode {
                port: if i == 0 { first } else { stable_port()? },
                dir,
                gcomm: stable_port()?,
                ist: stable_port()?,
                sst: stable_port()?,
                child: Mutex::new(None),
            });
        }
        let mut init =
            std::fs::File::create(base.join("init.sql")).map_err(|e| format!("init file: {e}"))?;
        writeln!(
            init,
            "CREATE USER IF NOT EXISTS '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';\n\
             GRANT ALL ON *.* TO '{USER}'@'%' WITH GRANT OPTION;\n\
             CREATE DATABASE IF NOT EXISTS {DATABASE};"
        )
        .map_err(|e| format!("init file: {e}"))?;
        if is_root() {
            // The rsync state transfer runs as the server's user: give it the files.
            let st = Command::new("chown")
                .args(["-R", "mysql:mysql"])
                .arg(&base)
                .status()
                .map_err(|e| format!("chown: {e}"))?;
            if !st.success() {
                return Err("chown of the Galera datadirs to mysql failed".into());
            }
        }
        let g = Galera { nodes, base };
        for i in 0..n {
            g.spawn(i, i == 0)?;
        }
        Ok(g)
    }

    fn cluster_address(&self) -> String {
        let peers: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.gcomm))
            .collect();
        format!("gcomm://{}", peers.join(","))
    }

    fn spawn(&self, i: usize, bootstrap: bool) -> Result<(), String> {
        let node = &self.nodes[i];
        let path = |name: &str| node.dir.join(name).display().to_string();
        let mut cmd = Command::new(find(&["mariadbd", "mysqld"])?);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", path("data")))
            .arg(format!("--socket={}", path("sock")))
            .arg(format!("--pid-file={}", path("pid")))
            .arg(format!("--log-error={}", path("error.log")))
            .arg(format!("--tmpdir={}", node.dir.display()))
            .arg(format!("--port={}", node.port))
            .arg(format!("--init-file={}", self.base.join("init.sql").display()))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=16M",
                "--binlog-format=ROW",
                "--innodb-autoinc-lock-mode=2",
                "--wsrep-on=ON",
                "--wsrep-sst-method=rsync",
                "--wsrep-node-address=127.0.0.1",
            ])
            .arg(format!("--wsrep-provider={PROVIDER}"))
            .arg(format!("--wsrep-cluster-address={}", self.cluster_address()))
            .arg(format!(
                // A killed node is evicted after 3 s instead of Galera's default 5 s; the
                // cluster holds every write until then.
                "--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:{};ist.recv_addr=127.0.0.1:{};\
                 evs.suspect_timeout=PT3S",
                node.gcomm, node.ist
            ))
            .arg(format!("--wsrep-sst-receive-address=127.0.0.1:{}", node.sst))
            .arg(format!("--wsrep-node-name=node{i}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if bootstrap {
            cmd.arg("--wsrep-new-cluster");
        }
        if is_root() {
            cmd.arg("--user=mysql");
        }
        let child = reaper::spawn(cmd)?;
        if let Ok(mut c) = node.child.lock() {
            *c = Some(child);
        }
        self.wait_ready(i)
    }

    fn wait_ready(&self, i: usize) -> Result<(), String> {
        let node = &self.nodes[i];
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if greets(node.port) {
                return Ok(());
            }
            if let Ok(mut guard) = node.child.lock() {
                if let Some(Ok(Some(st))) = guard.as_mut().map(|c| c.try_wait()) {
                    return Err(format!(
                        "Galera node {i} exited with {st} during start; its log:\n{}",
                        node.error_log()
                    ));
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "Galera node {i} not ready after 90 s; its log:\n{}",
                    node.error_log()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills node `i` hard (SIGKILL).
    pub fn kill(&self, i: usize) {
        self.nodes[i].kill();
    }

    /// Starts a killed node again; it rejoins the cluster.
    pub fn restart(&self, i: usize) -> Result<(), String> {
        self.kill(i);
        self.spawn(i, false)
    }
}

impl GaleraNode {
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    fn kill(&self) {
        if let Ok(mut guard) = self.child.lock() {
            if let Some(mut c) = guard.take() {
                let _ = c.kill();
                let _ = c.wait();
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

impl Drop for Galera {
    fn drop(&mut self) {
        for n in &self.nodes {
            n.kill();
        }
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// True once a server sends a protocol-10 greeting (a joining node does after its state transfer).
fn greets(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut head = [0u8; 5];
    s.read_exact(&mut head).is_ok() && head[4] == 10
}
