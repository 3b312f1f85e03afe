//! XA transaction ids idgate creates: unique across idgate instances and restarts, and
//! recognisable in `XA RECOVER` output.
//!
//! gtrid = `ig:<node>:<incarnation hex>:<counter hex>` (at most 64 bytes), bqual = the backend's
//! name (at most 64 bytes), formatID = [`FORMAT_ID`]. `node` names the idgate instance (config
//! `transactions.node_id`, or derived from the host name and listen address); `incarnation` is
//! the process start time in milliseconds, so a restarted instance can tell its own earlier
//! branches (safe to decide) from those it has in flight.

use std::sync::atomic::{AtomicU64, Ordering};

/// The formatID of every XID idgate creates ("IG" in ASCII).
pub const FORMAT_ID: i64 = 0x4947;

/// This process's part of the XIDs it creates.
pub struct XidSource {
    pub node: String,
    pub incarnation: u64,
    counter: AtomicU64,
}

impl XidSource {
    pub fn new(node: String, incarnation: u64) -> XidSource {
        XidSource {
            node,
            incarnation,
            counter: AtomicU64::new(1),
        }
    }

    /// A fresh gtrid for one distributed transaction.
    pub fn next_gtrid(&self) -> Vec<u8> {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("ig:{}:{:x}:{n:x}", self.node, self.incarnation).into_bytes()
    }
}

/// The default node name: a short hash of the host name and the listen address, which differs
/// between instances that run at the same time and stays the same across restarts of one.
pub fn default_node(listen: &str) -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let host = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in host.bytes().chain([b'|']).chain(listen.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The parts of an idgate gtrid; `None` for XIDs idgate did not create.
#[derive(Debug, PartialEq, Eq)]
pub struct GtridParts<'a> {
    pub node: &'a str,
    pub incarnation: u64,
}

pub fn parse_gtrid(gtrid: &[u8]) -> Option<GtridParts<'_>> {
    let s = std::str::from_utf8(gtrid).ok()?;
    let mut it = s.strip_prefix("ig:")?.split(':');
    let node = it.next()?;
    let incarnation = u64::from_str_radix(it.next()?, 16).ok()?;
    u64::from_str_radix(it.next()?, 16).ok()?;
    if it.next().is_some() || node.is_empty() {
        return None;
    }
    Some(GtridParts { node, incarnation })
}

fn hex(out: &mut String, b: &[u8]) {
    out.push_str("X'");
    for x in b {
        out.push_str(&format!("{x:02x}"));
    }
    out.push('\'');
}

/// The XID as SQL: `X'…',X'…',formatID` (hex literals: any bytes are safe).
pub fn xid_sql(gtrid: &[u8], bqual: &[u8]) -> String {
    let mut s = String::with_capacity(2 * (gtrid.len() + bqual.len()) + 16);
    hex(&mut s, gtrid);
    s.push(',');
    hex(&mut s, &bqual[..bqual.len().min(64)]);
    s.push_str(&format!(",{FORMAT_ID}"));
    s
}

/// One row of `XA RECOVER`: formatID, gtrid_length, bqual_length, data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    pub gtrid: Vec<u8>,
    pub bqual: Vec<u8>,
}

/// idgate's branches among `XA RECOVER` rows (text values).
pub fn idgate_branches(rows: &[Vec<Option<Vec<u8>>>]) -> Vec<Branch> {
    let num = |v: &Option<Vec<u8>>| -> Option<i64> {
        std::str::from_utf8(v.as_ref()?).ok()?.parse().ok()
    };
    rows.iter()
        .filter_map(|r| {
            let format = num(r.first()?)?;
            let glen = usize::try_from(num(r.get(1)?)?).ok()?;
            let blen = usize::try_from(num(r.get(2)?)?).ok()?;
            let data = r.get(3)?.as_ref()?;
            if format != FORMAT_ID || data.len() != glen + blen {
                return None;
            }
            let gtrid = data[..glen].to_vec();
            parse_gtrid(&gtrid)?;
            Some(Branch {
                gtrid,
                bqual: data[glen..].to_vec(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtrids_are_unique_short_and_parse_back() {
        let s = XidSource::new("a".repeat(32), u64::MAX >> 20);
        let a = s.next_gtrid();
        let b = s.next_gtrid();
        assert_ne!(a, b);
        assert!(a.len() <= 64, "{}", a.len());
        let p = parse_gtrid(&a).unwrap();
        assert_eq!(p.incarnation, u64::MAX >> 20);
        assert_eq!(p.node.len(), 32);
        assert!(parse_gtrid(b"foo").is_none());
        assert!(parse_gtrid(b"ig:n:zz:1").is_none());
    }

    #[test]
    fn xid_sql_is_hex() {
        assert_eq!(xid_sql(b"ab", b"s'0"), "X'6162',X'732730',18759");
    }

    #[test]
    fn recover_rows_keep_only_idgate_branches() {
        let g = b"ig:n1:10:2".to_vec();
        let mut data = g.clone();
        data.extend_from_slice(b"shard0");
        let row = |f: &str, gl: usize, bl: usize, d: &[u8]| {
            vec![
                Some(f.as_bytes().to_vec()),
                Some(gl.to_string().into_bytes()),
                Some(bl.to_string().into_bytes()),
                Some(d.to_vec()),
            ]
        };
        let rows = vec![
            row("18759", g.len(), 6, &data),
            row("1", g.len(), 6, &data),
            row("18759", 3, 2, b"foobr"),
        ];
        assert_eq!(
            idgate_branches(&rows),
            vec![Branch {
                gtrid: g,
                bqual: b"shard0".to_vec()
            }]
        );
    }
}
