//! wait_timeout: how long a session may sit idle between commands before idgate closes it, as
//! MariaDB does (nothing is sent; the connection just ends). Starts at `wait_timeout`, or
//! `interactive_timeout` for CLIENT_INTERACTIVE clients, and follows the client's own
//! `SET [SESSION] wait_timeout = …` as the default backend evaluated it. The session hands the
//! value to its entry in the session list, where `Registry::end_idle` looks for sessions past it.

use std::time::Duration;

use tracing::debug;

use crate::exec::Lease;

pub struct IdleTimeout {
    /// The value a session starts with (and returns to after a reset).
    initial: Duration,
    current: Duration,
    /// A SET naming wait_timeout ran: read the session's value back before waiting again.
    recheck: bool,
}

impl IdleTimeout {
    pub fn new(config: &crate::config::Config, interactive: bool) -> IdleTimeout {
        let s = if interactive {
            config.interactive_timeout
        } else {
            config.wait_timeout
        };
        let initial = Duration::from_secs(s);
        IdleTimeout {
            initial,
            current: initial,
            recheck: false,
        }
    }

    /// How long the session may sit idle now.
    pub fn current(&self) -> Duration {
        self.current
    }

    /// A successful SET ran on the default backend.
    pub fn note_set(&mut self, stmt: &[u8]) {
        // False positives only cost a read-back.
        if crate::sql::mentions(stmt, b"wait_timeout") {
            self.recheck = true;
        }
    }

    /// COM_RESET_CONNECTION / COM_CHANGE_USER: back to the value the session started with.
    pub fn reset(&mut self) {
        self.current = self.initial;
        self.recheck = false;
    }

    /// A SET naming wait_timeout ran since the value was last read.
    pub fn needs_refresh(&self) -> bool {
        self.recheck
    }

    /// After a SET naming wait_timeout: the session's value as the default backend (`lease`)
    /// now holds it (it evaluated the expression, scope and clamping exactly as MariaDB does).
    pub async fn refresh(&mut self, lease: Option<&mut Lease>) {
        if !std::mem::take(&mut self.recheck) {
            return;
        }
        let Some(lease) = lease else {
            return;
        };
        match lease.query_rows("SELECT @@session.wait_timeout").await {
            Ok(rows) => {
                let v = rows
                    .first()
                    .and_then(|r| r.first())
                    .and_then(|v| v.as_deref())
                    .and_then(|v| std::str::from_utf8(v).ok())
                    .and_then(|v| v.parse::<u64>().ok());
                if let Some(s) = v {
                    debug!(wait_timeout = s, "session wait_timeout changed");
                    self.current = Duration::from_secs(s.max(1));
                }
            }
            Err(e) => {
                debug!(error = %e, "could not read the session's wait_timeout back");
                lease.broken = true;
            }
        }
    }
}
