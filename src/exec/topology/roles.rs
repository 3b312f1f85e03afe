//! What each node of a replication group is, from what its last poll saw: the one writable node
//! is the primary; a replica serves only while it replicates within the lag limit. Pure, so the
//! rules are tested without servers.

/// What one poll of a node saw: its answer, or why there was none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Answered(Answer),
    Failed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub read_only: bool,
    pub gtid_binlog_pos: String,
    pub gtid_slave_pos: String,
    /// Its replication from a primary, when it has one (`SHOW ALL SLAVES STATUS`), or why that
    /// could not be read.
    pub replication: Result<Option<Replication>, String>,
}

impl Default for Answer {
    fn default() -> Answer {
        Answer {
            read_only: false,
            gtid_binlog_pos: String::new(),
            gtid_slave_pos: String::new(),
            replication: Ok(None),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replication {
    pub io_running: bool,
    pub sql_running: bool,
    /// `Seconds_Behind_Master`; `None` when the server shows NULL.
    pub lag_s: Option<u64>,
    /// `Master_Host:Master_Port`.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    Primary,
    Replica,
    /// A replica not to read from now, and why.
    Excluded(String),
    /// Did not answer, or is writable beside another writable node, and why.
    Down(String),
}

impl Role {
    pub fn name(&self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Replica => "replica",
            Role::Excluded(_) => "excluded",
            Role::Down(_) => "down",
        }
    }

    pub fn why(&self) -> &str {
        match self {
            Role::Excluded(w) | Role::Down(w) => w,
            Role::Primary | Role::Replica => "",
        }
    }
}

/// Where the group's writes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    /// The one writable node (its index).
    Node(usize),
    /// More than one node is writable: writes are refused rather than sent to either.
    SplitBrain(Vec<usize>),
    /// No node is writable, or none answered.
    None,
}

/// The writer and each node's role, under the lag limit `max_lag_ms`.
pub fn roles(seen: &[Seen], max_lag_ms: u64) -> (Writer, Vec<Role>) {
    let writable: Vec<usize> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Seen::Answered(a) if !a.read_only))
        .map(|(i, _)| i)
        .collect();
    let writer = match writable.as_slice() {
        [one] => Writer::Node(*one),
        [] => Writer::None,
        many => Writer::SplitBrain(many.to_vec()),
    };
    let roles = seen
        .iter()
        .map(|s| match s {
            Seen::Failed(why) => Role::Down(why.clone()),
            Seen::Answered(a) if !a.read_only => match writer {
                Writer::Node(_) => Role::Primary,
                _ => Role::Down("writable beside another writable node (split brain)".into()),
            },
            Seen::Answered(a) => match &a.replication {
                Ok(r) => replica_role(r.as_ref(), max_lag_ms),
                Err(e) => Role::Excluded(format!("replication state unreadable: {e}")),
            },
        })
        .collect();
    (writer, roles)
}

fn replica_role(r: Option<&Replication>, max_lag_ms: u64) -> Role {
    let Some(r) = r else {
        return Role::Excluded("read-only and not replicating".into());
    };
    if !r.io_running {
        return Role::Excluded(format!(
            "replication IO thread stopped (source {})",
            r.source
        ));
    }
    if !r.sql_running {
        return Role::Excluded(format!(
            "replication SQL thread stopped (source {})",
            r.source
        ));
    }
    match r.lag_s {
        None => Role::Excluded("lag unknown (Seconds_Behind_Master is NULL)".into()),
        Some(s) if s.saturating_mul(1000) > max_lag_ms => Role::Excluded(format!(
            "{s} s behind its source, over max_replica_lag_ms ({max_lag_ms})"
        )),
        Some(_) => Role::Replica,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(read_only: bool, repl: Option<(bool, bool, Option<u64>)>) -> Seen {
        Seen::Answered(Answer {
            read_only,
            replication: Ok(repl.map(|(io, sql, lag)| Replication {
                io_running: io,
                sql_running: sql,
                lag_s: lag,
                source: "p:1".into(),
            })),
            ..Default::default()
        })
    }

    fn down() -> Seen {
        Seen::Failed("refused".into())
    }

    #[test]
    fn the_one_writable_node_is_the_primary() {
        let (w, r) = roles(
            &[node(false, None), node(true, Some((true, true, Some(0))))],
            1000,
        );
        assert_eq!(w, Writer::Node(0));
        assert_eq!(r, vec![Role::Primary, Role::Replica]);
        // Promoted: the old primary read-only, the replica writable.
        let (w, _) = roles(&[node(true, None), node(false, None)], 1000);
        assert_eq!(w, Writer::Node(1));
    }

    #[test]
    fn two_writable_nodes_are_a_split_brain_and_none_is_no_writer() {
        let (w, r) = roles(&[node(false, None), node(false, None), down()], 1000);
        assert_eq!(w, Writer::SplitBrain(vec![0, 1]));
        assert!(r.iter().all(|r| r.name() == "down"), "{r:?}");
        let (w, r) = roles(&[down(), node(true, Some((true, true, Some(0))))], 1000);
        assert_eq!(w, Writer::None);
        assert_eq!(r[1], Role::Replica, "a replica's state is its own");
    }

    #[test]
    fn a_replica_that_lags_or_stopped_is_excluded() {
        let seen = [
            node(false, None),
            node(true, Some((true, true, Some(2)))),
            node(true, Some((true, false, Some(0)))),
            node(true, Some((false, true, None))),
            node(true, Some((true, true, None))),
            node(true, None),
        ];
        let (w, r) = roles(&seen, 1000);
        assert_eq!(
            w,
            Writer::Node(0),
            "a replica's state never marks the primary unusable"
        );
        let names: Vec<_> = r.iter().map(Role::name).collect();
        assert_eq!(
            names,
            ["primary", "excluded", "excluded", "excluded", "excluded", "excluded"]
        );
        assert!(r[2].why().contains("SQL thread"), "{:?}", r[2]);
        assert_eq!(roles(&seen, 2000).1[1], Role::Replica, "within the limit");
    }
}
