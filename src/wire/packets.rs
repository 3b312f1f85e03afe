//! Encoding of the server packets idgate writes itself (OK, ERR, EOF and the deprecate-EOF
//! terminator), plus the small readers needed to look inside a backend's packets while relaying.

use mysql_common::constants::StatusFlags;

pub const OK_HEADER: u8 = 0x00;
pub const EOF_HEADER: u8 = 0xfe;
pub const ERR_HEADER: u8 = 0xff;
/// First byte of a server's request for a LOCAL INFILE file (followed by the file name).
pub const LOCAL_INFILE_HEADER: u8 = 0xfb;

pub fn put_lenenc_int(buf: &mut Vec<u8>, v: u64) {
    if v < 251 {
        buf.push(v as u8);
    } else if v < 1 << 16 {
        buf.push(0xfc);
        buf.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v < 1 << 24 {
        buf.push(0xfd);
        buf.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        buf.push(0xfe);
        buf.extend_from_slice(&v.to_le_bytes());
    }
}

pub fn put_lenenc_str(buf: &mut Vec<u8>, s: &[u8]) {
    put_lenenc_int(buf, s.len() as u64);
    buf.extend_from_slice(s);
}

/// Reads a length-encoded integer at the front of `buf`, advancing it.
pub fn get_lenenc_int(buf: &mut &[u8]) -> Option<u64> {
    let (&first, rest) = buf.split_first()?;
    let (v, used) = match first {
        0..=250 => (first as u64, 0),
        0xfc => (
            u16::from_le_bytes(rest.get(..2)?.try_into().ok()?) as u64,
            2,
        ),
        0xfd => {
            let b = rest.get(..3)?;
            (u32::from_le_bytes([b[0], b[1], b[2], 0]) as u64, 3)
        }
        0xfe => (u64::from_le_bytes(rest.get(..8)?.try_into().ok()?), 8),
        _ => return None,
    };
    *buf = &rest[used..];
    Some(v)
}

/// Reads a length-encoded string at the front of `buf`, advancing it; `None` for a NULL
/// (0xFB) or a short buffer.
pub fn get_lenenc_str<'a>(buf: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = usize::try_from(get_lenenc_int(buf)?).ok()?;
    let s = buf.get(..n)?;
    *buf = &buf[n..];
    Some(s)
}

/// The values of a text-protocol row (NULL as `None`); `None` for a malformed row.
pub fn text_row(mut p: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
    let mut row = Vec::new();
    while let Some(&first) = p.first() {
        if first == 0xfb {
            row.push(None);
            p = &p[1..];
            continue;
        }
        row.push(Some(get_lenenc_str(&mut p)?.to_vec()));
    }
    Some(row)
}

/// An OK packet idgate writes itself. A non-empty `info` text goes out length-encoded, as
/// MariaDB's net_send_ok writes it. It carries no session-state changes, so it never says
/// SERVER_SESSION_STATE_CHANGED (a backend's status may, for the state it sent along).
pub fn ok(
    buf: &mut Vec<u8>,
    header: u8,
    affected_rows: u64,
    last_insert_id: u64,
    status: StatusFlags,
    warnings: u16,
    info: &[u8],
) {
    buf.push(header);
    put_lenenc_int(buf, affected_rows);
    put_lenenc_int(buf, last_insert_id);
    buf.extend_from_slice(&without_state_change(status).bits().to_le_bytes());
    buf.extend_from_slice(&warnings.to_le_bytes());
    if !info.is_empty() {
        put_lenenc_str(buf, info);
    }
}

pub fn eof(buf: &mut Vec<u8>, warnings: u16, status: StatusFlags) {
    buf.push(EOF_HEADER);
    buf.extend_from_slice(&warnings.to_le_bytes());
    buf.extend_from_slice(&without_state_change(status).bits().to_le_bytes());
}

/// `status` without SERVER_SESSION_STATE_CHANGED, which only the packet that carries the
/// changes may say.
pub fn without_state_change(status: StatusFlags) -> StatusFlags {
    status - StatusFlags::SERVER_SESSION_STATE_CHANGED
}

/// The packet that ends a result set: an EOF, or for CLIENT_DEPRECATE_EOF clients an OK packet
/// with the EOF header.
pub fn terminator(buf: &mut Vec<u8>, deprecate_eof: bool, warnings: u16, status: StatusFlags) {
    if deprecate_eof {
        ok(buf, EOF_HEADER, 0, 0, status, warnings, b"");
    } else {
        eof(buf, warnings, status);
    }
}

/// A column definition for a result set idgate builds itself (no table, no schema).
pub fn column_def(
    buf: &mut Vec<u8>,
    name: &[u8],
    charset: u16,
    length: u32,
    column_type: mysql_common::constants::ColumnType,
    flags: mysql_common::constants::ColumnFlags,
    decimals: u8,
) {
    put_lenenc_str(buf, b"def");
    for part in [&b""[..], b"", b"", name, b""] {
        put_lenenc_str(buf, part);
    }
    buf.push(0x0c);
    buf.extend_from_slice(&charset.to_le_bytes());
    buf.extend_from_slice(&length.to_le_bytes());
    buf.push(column_type as u8);
    buf.extend_from_slice(&flags.bits().to_le_bytes());
    buf.push(decimals);
    buf.extend_from_slice(&[0, 0]);
}

/// The fixed-length fields of a result set's column definition: charset (2), length (4),
/// type (1), flags (2), decimals (1). They end the packet (after the 0x0c that counts them and
/// before two filler bytes) whether or not MariaDB's extended metadata precedes them.
pub fn column_fixed_fields(def: &[u8]) -> Option<&[u8]> {
    let at = def.len().checked_sub(13)?;
    (def[at] == 0x0c).then(|| &def[at + 1..at + 11])
}

/// Whether a result set's column definition carries MariaDB's extended metadata: more than the
/// six names and the fixed-length fields.
pub fn has_extended_metadata(def: &[u8]) -> bool {
    let mut rest = def;
    for _ in 0..6 {
        if get_lenenc_str(&mut rest).is_none() {
            return false;
        }
    }
    rest.len() > 13
}

/// `def` (without extended metadata) with an empty extended metadata field, for a client that
/// agreed on MARIADB_CLIENT_EXTENDED_METADATA.
pub fn add_extended_metadata(def: &[u8], out: &mut Vec<u8>) {
    let names = def.len().saturating_sub(13);
    out.extend_from_slice(&def[..names]);
    out.push(0);
    out.extend_from_slice(&def[names..]);
}

pub fn err(buf: &mut Vec<u8>, code: u16, sqlstate: &[u8; 5], message: &[u8]) {
    buf.push(ERR_HEADER);
    buf.extend_from_slice(&code.to_le_bytes());
    buf.push(b'#');
    buf.extend_from_slice(sqlstate);
    buf.extend_from_slice(message);
}

/// True for a classic EOF packet (a row can also start with 0xfe, but is then at least 9 bytes).
pub fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&EOF_HEADER) && p.len() < 9
}

pub fn is_err(p: &[u8]) -> bool {
    p.first() == Some(&ERR_HEADER)
}

/// (warnings, status) of a classic EOF packet.
pub fn parse_eof(p: &[u8]) -> (u16, StatusFlags) {
    let w = p.get(1..3).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let s = p.get(3..5).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    (w, StatusFlags::from_bits_retain(s))
}

/// Fields of an OK packet that idgate needs to look at.
#[derive(Debug, Clone, Copy, Default)]
pub struct OkInfo {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
}

pub fn parse_ok(p: &[u8]) -> Option<OkInfo> {
    let mut rest = p.get(1..)?;
    let affected_rows = get_lenenc_int(&mut rest)?;
    let last_insert_id = get_lenenc_int(&mut rest)?;
    let status = u16::from_le_bytes(rest.get(..2)?.try_into().ok()?);
    let warnings = u16::from_le_bytes(rest.get(2..4)?.try_into().ok()?);
    Some(OkInfo {
        affected_rows,
        last_insert_id,
        status,
        warnings,
    })
}

/// The info text of an OK packet (after the warnings), e.g. `Records: 3  Duplicates: 0  Warnings: 0`,
/// without the length MariaDB writes before it (a server that writes the bare text to the end
/// of the packet is read as such).
pub fn ok_info(p: &[u8]) -> &[u8] {
    let mut rest = p.get(1..).unwrap_or_default();
    if get_lenenc_int(&mut rest).is_none() || get_lenenc_int(&mut rest).is_none() {
        return b"";
    }
    let raw = rest.get(4..).unwrap_or_default();
    let mut text = raw;
    // Session-state changes (CLIENT_SESSION_TRACK) may follow the text.
    match get_lenenc_int(&mut text) {
        Some(n) if n <= text.len() as u64 => &text[..n as usize],
        _ => raw,
    }
}

/// Rewrites an OK packet with another insert id and/or extra status flags, keeping the rest
/// (info text and session-state changes) byte for byte.
pub fn patch_ok(p: &[u8], insert_id: Option<u64>, add_status: u16, out: &mut Vec<u8>) -> bool {
    let Some(o) = parse_ok(p) else {
        return false;
    };
    let mut rest = &p[1..];
    let (Some(_), Some(_)) = (get_lenenc_int(&mut rest), get_lenenc_int(&mut rest)) else {
        return false;
    };
    let Some(tail) = rest.get(4..) else {
        return false;
    };
    out.push(p[0]);
    put_lenenc_int(out, o.affected_rows);
    put_lenenc_int(out, insert_id.unwrap_or(o.last_insert_id));
    out.extend_from_slice(&(o.status | add_status).to_le_bytes());
    out.extend_from_slice(&o.warnings.to_le_bytes());
    out.extend_from_slice(tail);
    true
}

/// (code, sqlstate, message) of an ERR packet.
pub fn parse_err(p: &[u8]) -> (u16, [u8; 5], &[u8]) {
    let code = p.get(1..3).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let mut state = *b"HY000";
    let mut msg = p.get(3..).unwrap_or_default();
    if msg.first() == Some(&b'#') && msg.len() >= 6 {
        state.copy_from_slice(&msg[1..6]);
        msg = &msg[6..];
    }
    (code, state, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trips_at_every_width() {
        for v in [
            0u64,
            250,
            251,
            65535,
            65536,
            (1 << 24) - 1,
            1 << 24,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_lenenc_int(&mut b, v);
            let mut s = &b[..];
            assert_eq!(get_lenenc_int(&mut s), Some(v));
            assert!(s.is_empty());
        }
    }

    #[test]
    fn ok_packet_round_trips() {
        let mut b = Vec::new();
        ok(
            &mut b,
            OK_HEADER,
            3,
            1 << 40,
            StatusFlags::SERVER_STATUS_AUTOCOMMIT,
            2,
            b"x",
        );
        let o = parse_ok(&b).unwrap();
        assert_eq!(
            (o.affected_rows, o.last_insert_id, o.warnings),
            (3, 1 << 40, 2)
        );
        assert_eq!(o.status, StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits());
        assert_eq!(ok_info(&b), b"x");
    }

    #[test]
    fn info_text_is_read_and_written_length_encoded() {
        // As MariaDB sends it after a multi-row INSERT: the text behind its length.
        let text = b"Records: 3  Duplicates: 0  Warnings: 0";
        let mut from_server = vec![OK_HEADER, 3, 0, 2, 0, 0, 0];
        put_lenenc_str(&mut from_server, text);
        assert_eq!(ok_info(&from_server), text);
        // Patching the insert id keeps the packet's bytes but for the id.
        let mut patched = Vec::new();
        assert!(patch_ok(&from_server, Some(0), 0, &mut patched));
        assert_eq!(patched, from_server);
        // A text written to the end of the packet without a length is read as it is.
        let mut bare = vec![OK_HEADER, 1, 0, 2, 0, 0, 0];
        bare.extend_from_slice(b"Rows matched: 1");
        assert_eq!(ok_info(&bare), b"Rows matched: 1");
        // A summed text longer than its parts gets its own length.
        let mut out = Vec::new();
        ok(
            &mut out,
            OK_HEADER,
            10,
            0,
            StatusFlags::empty(),
            0,
            b"Records: 10",
        );
        assert_eq!(ok_info(&out), b"Records: 10");
        assert_eq!(out[out.len() - 12], 11);
        assert!(ok_info(&[OK_HEADER, 0, 0, 2, 0, 0, 0]).is_empty());
    }
}
