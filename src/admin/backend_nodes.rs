//! The nodes of a backend as `SHOW IDGATE BACKENDS` and `/ready` show them: a backend of one
//! server is its one node, the primary; a replication group is every node with the role its last
//! poll gave it.

use crate::exec::topology::roles::{Role, Seen};
use crate::exec::topology::Topology;

/// One node's row.
pub struct NodeRow {
    pub address: String,
    pub role: &'static str,
    /// `None` where idgate does not poll (a backend of one server) or the node did not answer.
    pub read_only: Option<bool>,
    pub lag_s: Option<u64>,
    pub gtid_position: String,
    pub why: String,
    /// The node that new connections go to.
    pub writer: bool,
    /// Reads of `reads: replica` sessions it served (`None` for the primary and a backend of
    /// one server, whose reads are not counted apart).
    pub reads: Option<u64>,
}

/// The rows of `topology`'s nodes (`None`: the backend at `address` alone).
pub fn node_rows(topology: Option<&Topology>, address: &str) -> Vec<NodeRow> {
    let Some(t) = topology else {
        return vec![NodeRow {
            address: address.to_string(),
            role: Role::Primary.name(),
            read_only: None,
            lag_s: None,
            gtid_position: String::new(),
            why: String::new(),
            writer: true,
            reads: None,
        }];
    };
    let now = t.snapshot();
    let writer = t.writer().ok();
    let reads = t.reads_served();
    t.nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let seen = now.seen.as_ref().and_then(|s| s.get(i));
            let answer = match seen {
                Some(Seen::Answered(a)) => Some(a),
                _ => None,
            };
            let replication = answer.and_then(|a| a.replication.as_ref().ok().cloned().flatten());
            let role = now
                .roles
                .get(i)
                .cloned()
                .unwrap_or(Role::Down("unknown".into()));
            NodeRow {
                address: node.clone(),
                role: role.name(),
                read_only: answer.map(|a| a.read_only),
                lag_s: replication.as_ref().and_then(|r| r.lag_s),
                // A primary's position is what it wrote; a replica's what it applied.
                gtid_position: answer.map_or_else(String::new, |a| {
                    if a.read_only {
                        a.gtid_slave_pos.clone()
                    } else {
                        a.gtid_binlog_pos.clone()
                    }
                }),
                why: role.why().to_string(),
                writer: writer.as_deref() == Some(node.as_str()),
                reads: (role != Role::Primary).then(|| reads.get(i).copied().unwrap_or(0)),
            }
        })
        .collect()
}
