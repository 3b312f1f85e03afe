//! A MariaDB replication group the tests start themselves: one primary and its replicas, GTID
//! replication from `slave_pos`, every replica `read_only`. Promotions are the tests' own, done
//! with the statements an operator or a failover manager would run.

use std::time::{Duration, Instant};

use idgate::testbed::mariadb::{stable_port, PASSWORD, USER};
use idgate::testbed::MariaDb;
use mysql::prelude::Queryable;

pub struct Group {
    /// Node 0 starts as the primary.
    pub nodes: Vec<MariaDb>,
}

fn node() -> MariaDb {
    let mut tries = 0;
    loop {
        let port = stable_port().expect("port");
        let args = [
            "--log-bin=binlog".to_string(),
            "--binlog-format=ROW".to_string(),
            "--log-slave-updates".to_string(),
            format!("--server-id={port}"),
        ];
        match MariaDb::start_with_args(port, &args) {
            Err(e) if tries < 4 && e.contains("Address already in use") => tries += 1,
            r => return r.unwrap_or_else(|e| panic!("{e}")),
        }
    }
}

impl Group {
    pub fn start(replicas: usize) -> Group {
        let nodes: Vec<MariaDb> = (0..=replicas).map(|_| node()).collect();
        let g = Group { nodes };
        for i in 1..=replicas {
            g.replicate(i, 0);
        }
        g
    }

    /// As [`Group::start`], with semi-synchronous replication: the primary commits once a
    /// replica has the transaction (`AFTER_SYNC`), and every node acknowledges as a replica.
    /// Turned on once the servers run (their own setup would otherwise wait for replicas not
    /// there yet); a promotion turns the new primary's side on ([`Group::semi_sync_primary`]).
    pub fn start_semi_sync(replicas: usize) -> Group {
        let nodes: Vec<MariaDb> = (0..=replicas).map(|_| node()).collect();
        let g = Group { nodes };
        for i in 0..=replicas {
            g.sql(
                i,
                "SET GLOBAL rpl_semi_sync_master_wait_point = AFTER_SYNC; \
                 SET GLOBAL rpl_semi_sync_master_timeout = 30000; \
                 SET GLOBAL rpl_semi_sync_slave_enabled = ON",
            );
        }
        g.semi_sync_primary(0);
        for i in 1..=replicas {
            g.replicate(i, 0);
        }
        g
    }

    /// Node `i` waits for a replica's acknowledgement of each commit (a replica must not: its
    /// own commits of what it applies would wait for replicas it does not have).
    pub fn semi_sync_primary(&self, i: usize) {
        self.sql(
            i,
            "SET GLOBAL rpl_semi_sync_slave_enabled = OFF; \
             SET GLOBAL rpl_semi_sync_master_enabled = ON",
        );
    }

    pub fn addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.nodes[i].port)
    }

    pub fn sql(&self, i: usize, sql: &str) {
        super::direct(&self.nodes[i])
            .query_drop(sql)
            .unwrap_or_else(|e| panic!("node {i}: {sql}: {e}"));
    }

    /// Node `i` replicates from node `source` and is read-only.
    pub fn replicate(&self, i: usize, source: usize) {
        self.sql(
            i,
            &format!(
                "STOP SLAVE; SET GLOBAL read_only = 1; CHANGE MASTER TO \
                 MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, MASTER_USER = '{USER}', \
                 MASTER_PASSWORD = '{PASSWORD}', MASTER_USE_GTID = slave_pos, \
                 MASTER_CONNECT_RETRY = 1; START SLAVE",
                self.nodes[source].port
            ),
        );
    }

    /// Node `i` stops replicating and takes writes: what a promotion does last.
    pub fn promote(&self, i: usize) {
        self.sql(i, "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0");
    }

    /// Waits until node `i` has applied everything node `source` wrote.
    pub fn caught_up(&self, i: usize, source: usize) {
        let pos: String = super::direct(&self.nodes[source])
            .query_first("SELECT @@gtid_binlog_pos")
            .unwrap()
            .unwrap_or_default();
        let waited: Option<i64> = super::direct(&self.nodes[i])
            .query_first(format!("SELECT MASTER_GTID_WAIT('{pos}', 20)"))
            .unwrap();
        if waited != Some(0) {
            let status: Option<mysql::Row> = super::direct(&self.nodes[i])
                .query_first("SHOW SLAVE STATUS")
                .unwrap();
            let why = status.map(|r| {
                let get = |c: &str| r.get::<Option<String>, _>(c).flatten().unwrap_or_default();
                format!(
                    "IO {} ({}), SQL {} ({}), at {}",
                    get("Slave_IO_Running"),
                    get("Last_IO_Error"),
                    get("Slave_SQL_Running"),
                    get("Last_SQL_Error"),
                    get("Gtid_IO_Pos")
                )
            });
            panic!("node {i} did not reach {pos}: {why:?}");
        }
    }
}

/// Retries `check` every 50 ms until it holds, for at most `within`; the last failure's text
/// otherwise.
pub fn eventually(within: Duration, mut check: impl FnMut() -> Result<(), String>) {
    let t0 = Instant::now();
    loop {
        match check() {
            Ok(()) => return,
            Err(e) if t0.elapsed() > within => panic!("not within {within:?}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
