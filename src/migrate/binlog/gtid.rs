//! MariaDB's GTIDs: the GTID event that opens each event group (not decoded by mysql_common, so
//! read here from the event bytes) and a binlog position as MariaDB writes it,
//! `domain-server-seq` per replication domain, comma-separated.

use std::collections::BTreeMap;

/// MariaDB's GTID_EVENT.
pub const GTID_EVENT: u8 = 0xa2;
/// The event group is a single statement without BEGIN/COMMIT (DDL and the like).
const FL_STANDALONE: u8 = 1;
/// The GTID event carries a commit id (8 bytes) after its flags.
const FL_GROUP_COMMIT_ID: u8 = 2;
/// The group is an `XA PREPARE` (or an `XA COMMIT`/`ROLLBACK` of one): the event carries the XID.
const FL_PREPARED_XA: u8 = 64;
const FL_COMPLETED_XA: u8 = 128;

/// One GTID event: the group it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gtid {
    pub domain: u32,
    pub server: u32,
    pub seq: u64,
    /// The group is one statement with no COMMIT of its own.
    pub standalone: bool,
}

impl Gtid {
    /// Reads the GTID event body (after the common header, checksum removed).
    pub fn read(server: u32, body: &[u8]) -> Option<Gtid> {
        let seq = u64::from_le_bytes(body.get(0..8)?.try_into().ok()?);
        let domain = u32::from_le_bytes(body.get(8..12)?.try_into().ok()?);
        let flags = *body.get(12)?;
        Some(Gtid {
            domain,
            server,
            seq,
            standalone: flags & FL_STANDALONE != 0,
        })
    }
}

/// The XID of an XA group, from its GTID event body, written as MariaDB writes it in
/// `XA COMMIT` / `XA ROLLBACK` statements (`X'gtrid',X'bqual',formatID`, hex in capitals).
/// MariaDB keeps a prepared group's `XA START` in its GTID event, not in a statement.
pub fn xa_xid(body: &[u8]) -> Option<String> {
    let flags = *body.get(12)?;
    if flags & (FL_PREPARED_XA | FL_COMPLETED_XA) == 0 {
        return None;
    }
    let at = if flags & FL_GROUP_COMMIT_ID != 0 {
        21
    } else {
        13
    };
    let format_id = i32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?);
    let gtrid = usize::from(*body.get(at + 4)?);
    let bqual = usize::from(*body.get(at + 5)?);
    let data = body.get(at + 6..at + 6 + gtrid + bqual)?;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02X}")).collect::<String>();
    Some(format!(
        "X'{}',X'{}',{format_id}",
        hex(&data[..gtrid]),
        hex(&data[gtrid..])
    ))
}

/// A binlog position: the last group seen in each domain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Position {
    domains: BTreeMap<u32, (u32, u64)>,
}

impl Position {
    /// Reads `0-1-42,1-2-7` (empty: the start of the binlog).
    pub fn parse(s: &str) -> Result<Position, String> {
        let mut domains = BTreeMap::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let mut it = part.split('-');
            let (Some(d), Some(srv), Some(seq), None) =
                (it.next(), it.next(), it.next(), it.next())
            else {
                return Err(format!("`{part}` is not a GTID (domain-server-sequence)"));
            };
            let bad = || format!("`{part}` is not a GTID (domain-server-sequence)");
            domains.insert(
                d.parse().map_err(|_| bad())?,
                (
                    srv.parse().map_err(|_| bad())?,
                    seq.parse().map_err(|_| bad())?,
                ),
            );
        }
        Ok(Position { domains })
    }

    /// The position after the group `g`.
    pub fn advance(&mut self, g: &Gtid) {
        self.domains.insert(g.domain, (g.server, g.seq));
    }

    /// Groups `other` has that this position has not, counted by sequence number per domain.
    pub fn behind(&self, other: &Position) -> u64 {
        other
            .domains
            .iter()
            .map(|(d, (_, seq))| {
                let mine = self.domains.get(d).map_or(0, |(_, s)| *s);
                seq.saturating_sub(mine)
            })
            .sum()
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .domains
            .iter()
            .map(|(d, (s, q))| format!("{d}-{s}-{q}"))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_gtid_event_body() {
        let mut body = 42u64.to_le_bytes().to_vec();
        body.extend_from_slice(&3u32.to_le_bytes());
        body.push(FL_STANDALONE);
        let g = Gtid::read(7, &body).unwrap();
        assert_eq!(
            g,
            Gtid {
                domain: 3,
                server: 7,
                seq: 42,
                standalone: true
            }
        );
        assert!(Gtid::read(7, &body[..10]).is_none());
    }

    #[test]
    fn reads_the_xid_of_an_xa_group() {
        let mut body = 42u64.to_le_bytes().to_vec();
        body.extend_from_slice(&3u32.to_le_bytes());
        body.push(FL_PREPARED_XA | FL_GROUP_COMMIT_ID);
        body.extend_from_slice(&9u64.to_le_bytes());
        body.extend_from_slice(&1i32.to_le_bytes());
        body.extend_from_slice(&[2, 1]);
        body.extend_from_slice(b"az\x0b");
        assert_eq!(xa_xid(&body).as_deref(), Some("X'617A',X'0B',1"));
        assert!(xa_xid(&body[..body.len() - 1]).is_none(), "cut short");
        body[12] = FL_GROUP_COMMIT_ID;
        assert!(xa_xid(&body).is_none(), "not an XA group");
    }

    #[test]
    fn positions_round_trip_advance_and_compare() {
        let mut p = Position::parse("0-1-10, 2-5-3").unwrap();
        assert_eq!(p.to_string(), "0-1-10,2-5-3");
        let src = Position::parse("0-1-15,2-5-3,4-1-2").unwrap();
        assert_eq!(p.behind(&src), 7);
        p.advance(&Gtid {
            domain: 0,
            server: 2,
            seq: 15,
            standalone: false,
        });
        assert_eq!(p.to_string(), "0-2-15,2-5-3");
        assert_eq!(Position::parse("").unwrap().to_string(), "");
        assert!(Position::parse("0-1").is_err());
        assert!(Position::parse("a-b-c").is_err());
    }
}
