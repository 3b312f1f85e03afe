//! Reading a backend's whole answer to one statement into memory, for answers idgate has to
//! combine before the client sees them (an INSERT split over shards). Only small answers go
//! through here: OKs, errors, and RETURNING rows of the statement's own rows.

use super::backend::{BackendConn, BackendError};
use crate::wire::packets;

#[derive(Debug, Clone)]
pub enum Collected {
    Ok(Vec<u8>),
    Err(Vec<u8>),
    /// A result set (RETURNING): column definitions, rows and the EOF after them.
    Rows {
        columns: Vec<Vec<u8>>,
        rows: Vec<Vec<u8>>,
        eof: Vec<u8>,
    },
}

impl Collected {
    pub fn is_err(&self) -> bool {
        matches!(self, Collected::Err(_))
    }
}

/// Reads the answer to the command just sent on `be` (one statement, one result).
pub async fn collect(be: &mut BackendConn) -> Result<Collected, BackendError> {
    be.read().await?;
    let first = be.packet.first().copied();
    match first {
        Some(packets::OK_HEADER) => return Ok(Collected::Ok(be.packet.clone())),
        Some(packets::ERR_HEADER) => return Ok(Collected::Err(be.packet.clone())),
        _ => {}
    }
    let mut p = &be.packet[..];
    let n = packets::get_lenenc_int(&mut p)
        .ok_or_else(|| BackendError::Protocol("column count".into()))?;
    let mut columns = Vec::with_capacity((n as usize).min(4096)); // n comes from the backend
    for _ in 0..n {
        be.read().await?;
        columns.push(be.packet.clone());
    }
    be.read().await?; // EOF after the column definitions
    let mut rows = Vec::new();
    loop {
        be.read().await?;
        if packets::is_eof(&be.packet) {
            return Ok(Collected::Rows {
                columns,
                rows,
                eof: be.packet.clone(),
            });
        }
        if packets::is_err(&be.packet) {
            return Ok(Collected::Err(be.packet.clone()));
        }
        rows.push(be.packet.clone());
    }
}

/// Sums info texts of several OK packets, field by field: `Records: N  Duplicates: D  Warnings: W`
/// (INSERT) or `Rows matched: N  Changed: C  Warnings: W` (UPDATE). Fields are separated by two
/// spaces; text that is not of that shape is taken from the first packet as it is.
pub fn merge_info(infos: &[&[u8]]) -> Vec<u8> {
    let mut sums: Vec<(String, u64)> = Vec::new();
    for info in infos {
        let text = String::from_utf8_lossy(info);
        for field in text.split("  ").filter(|f| !f.is_empty()) {
            let parsed = field
                .rsplit_once(' ')
                .and_then(|(k, v)| Some((k.to_string(), v.parse::<u64>().ok()?)));
            let Some((k, v)) = parsed else {
                return infos.first().map(|i| i.to_vec()).unwrap_or_default();
            };
            match sums.iter_mut().find(|(name, _)| *name == k) {
                Some((_, total)) => *total += v,
                None => sums.push((k, v)),
            }
        }
    }
    sums.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join("  ")
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_texts_add_up() {
        let a = b"Records: 3  Duplicates: 1  Warnings: 0".as_slice();
        let b = b"Records: 2  Duplicates: 0  Warnings: 2".as_slice();
        assert_eq!(
            merge_info(&[a, b]),
            b"Records: 5  Duplicates: 1  Warnings: 2".to_vec()
        );
        assert_eq!(merge_info(&[b"".as_slice(), b""]), b"".to_vec());
        let u = b"Rows matched: 2  Changed: 1  Warnings: 0".as_slice();
        assert_eq!(
            merge_info(&[u, u]),
            b"Rows matched: 4  Changed: 2  Warnings: 0".to_vec()
        );
    }
}
