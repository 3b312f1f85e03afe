//! MariaDB GTID positions (`domain-server-sequence`, comma-separated, one per domain): whether a
//! node's position covers a transaction, so a read after a session's write goes only to a
//! replica that has applied it.

/// `(domain, sequence)` of one `domain-server-sequence`.
fn parse_one(g: &str) -> Option<(u32, u64)> {
    let mut parts = g.trim().split('-');
    let domain = parts.next()?.parse().ok()?;
    let _server: u32 = parts.next()?.parse().ok()?;
    let seq = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((domain, seq))
}

/// Whether position `pos` includes transaction `gtid`: the same domain at a sequence at least
/// as high. An empty `gtid` (the session wrote nothing replicated) is covered everywhere; one
/// that does not parse is covered nowhere.
pub fn covers(pos: &str, gtid: &str) -> bool {
    if gtid.trim().is_empty() {
        return true;
    }
    let Some((domain, seq)) = parse_one(gtid) else {
        return false;
    };
    pos.split(',')
        .filter_map(parse_one)
        .any(|(d, s)| d == domain && s >= seq)
}

/// How far position `pos` has come in `gtid`'s domain (0: not at all): which of several
/// replicas is likeliest to reach `gtid` first.
pub fn progress(pos: &str, gtid: &str) -> u64 {
    let Some((domain, _)) = parse_one(gtid) else {
        return 0;
    };
    pos.split(',')
        .filter_map(parse_one)
        .find(|(d, _)| *d == domain)
        .map_or(0, |(_, s)| s)
}

/// Whether `gtid` is one well-formed GTID, safe to write into a statement as a string.
pub fn is_gtid(gtid: &str) -> bool {
    parse_one(gtid).is_some() && gtid.bytes().all(|b| b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_covers_what_its_domain_has_reached() {
        assert!(covers("0-1-100", "0-1-100"));
        assert!(covers("0-1-100", "0-1-99"));
        assert!(covers("0-2-100", "0-1-99"), "the server id is not compared");
        assert!(!covers("0-1-99", "0-1-100"));
        assert!(covers("0-1-5,1-1-200", "1-1-200"));
        assert!(!covers("0-1-500", "1-1-2"), "another domain");
        assert!(!covers("", "0-1-1"));
        assert!(covers("", ""));
        assert!(!covers("0-1-9", "junk"));
        assert_eq!(progress("0-1-5,1-1-200", "1-1-300"), 200);
        assert_eq!(progress("0-1-5", "1-1-300"), 0);
        assert!(is_gtid("0-1-42"));
        assert!(!is_gtid("0-1-42'); DROP"));
        assert!(!is_gtid(""));
    }
}
