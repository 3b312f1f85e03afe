//! The mysql CLI as the TLS tests run it: TCP to 127.0.0.1, no option files, one statement.

use std::process::Command;
use std::time::Duration;

use crate::common::clients::{require_tool, run, Run};

pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

pub fn mysql_cli(port: u16, user: &str, password: &str, args: &[&str], sql: &str) -> Run {
    let mysql = require_tool("mysql", "mariadb-client");
    let mut cmd = Command::new(mysql);
    cmd.arg("--no-defaults")
        .arg("--protocol=TCP")
        .arg("-h127.0.0.1")
        .arg(format!("-P{port}"))
        .arg(format!("-u{user}"))
        .arg(format!("-p{password}"))
        .args(args)
        .arg("-e")
        .arg(sql);
    run(cmd, "mysql", CLIENT_TIMEOUT)
}
