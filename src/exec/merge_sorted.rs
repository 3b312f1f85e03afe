//! A SELECT … ORDER BY … [LIMIT n] sent to several shards, each answering sorted (and limited):
//! a k-way merge that streams the rows in global order, holding one row per shard, and stops
//! writing after n rows. Sort columns must be numeric or temporal (their order does not depend
//! on a collation); others are refused before any row is sent.

use std::cmp::Ordering;

use mysql_common::constants::{ColumnType, StatusFlags};
use tokio::io::AsyncWrite;

use super::aggregate::{
    column_name, column_type, is_exact, is_float, is_integer, is_temporal, parse_text_row, scaled,
};
use super::backend::{BackendConn, BackendError};
use super::relay::{Client, Relayed};
use crate::wire::packets;

/// How to compare one sort column.
struct Key {
    index: usize,
    ty: ColumnType,
    scale: u32,
    desc: bool,
}

fn compare_values(a: &Option<Vec<u8>>, b: &Option<Vec<u8>>, k: &Key) -> Ordering {
    let ord = match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less, // NULL sorts first in ascending order
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => {
            let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
            if is_exact(k.ty) {
                scaled(&a, k.scale).cmp(&scaled(&b, k.scale))
            } else if is_float(k.ty) {
                let (x, y) = (
                    a.parse::<f64>().unwrap_or(f64::NAN),
                    b.parse::<f64>().unwrap_or(f64::NAN),
                );
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            } else {
                // Temporal text of one column has one width; a leading '-' (negative TIME)
                // was refused up front.
                a.len().cmp(&b.len()).then_with(|| a.cmp(&b))
            }
        }
    };
    if k.desc {
        ord.reverse()
    } else {
        ord
    }
}

struct Head {
    packet: Vec<u8>,
    values: Vec<Option<Vec<u8>>>,
}

/// Result of reading one shard's header.
enum Start {
    Columns(Vec<Vec<u8>>),
    Failed(Vec<u8>),
}

async fn read_header(be: &mut BackendConn) -> Result<Start, BackendError> {
    be.read().await?;
    if packets::is_err(&be.packet) {
        return Ok(Start::Failed(be.packet.clone()));
    }
    if be.packet.first() == Some(&packets::OK_HEADER) {
        return Ok(Start::Failed(super::scatter::no_rows_over_shards()));
    }
    let mut p = &be.packet[..];
    let n = packets::get_lenenc_int(&mut p)
        .ok_or_else(|| BackendError::Protocol("column count".into()))?;
    let mut defs = vec![be.packet.clone()];
    for _ in 0..n {
        be.read().await?;
        defs.push(be.packet.clone());
    }
    be.read().await?; // EOF after the definitions
    defs.push(be.packet.clone());
    Ok(Start::Columns(defs))
}

/// The next row of a shard, or `None` at its end (`failed` records an ERR instead of EOF).
async fn next_row(
    be: &mut BackendConn,
    warnings: &mut u16,
    failed: &mut Option<Vec<u8>>,
) -> Result<Option<Head>, BackendError> {
    be.read().await?;
    if packets::is_eof(&be.packet) {
        *warnings = warnings.saturating_add(packets::parse_eof(&be.packet).0);
        return Ok(None);
    }
    if packets::is_err(&be.packet) {
        failed.get_or_insert_with(|| be.packet.clone());
        return Ok(None);
    }
    let values =
        parse_text_row(&be.packet).ok_or_else(|| BackendError::Protocol("text row".into()))?;
    Ok(Some(Head {
        packet: be.packet.clone(),
        values,
    }))
}

/// Sort keys for `order` over the columns of `defs` (count packet, definitions, EOF).
fn keys(defs: &[Vec<u8>], order: &[(String, bool)]) -> Result<Vec<Key>, String> {
    let columns = &defs[1..defs.len() - 1];
    order
        .iter()
        .map(|(name, desc)| {
            let index = columns
                .iter()
                .position(|d| column_name(d).is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes())))
                .ok_or_else(|| format!("ORDER BY `{name}` over shards needs `{name}` among the selected columns"))?;
            let (ty, decimals) = column_type(&columns[index]).ok_or("malformed column definition")?;
            if !(is_exact(ty) || is_float(ty) || is_temporal(ty) && ty != ColumnType::MYSQL_TYPE_TIME) {
                return Err(format!(
                    "ORDER BY `{name}` ({ty:?}) over shards needs the column's collation, which idgate does not apply yet; \
                     order by a numeric or date column"
                ));
            }
            let scale = if is_integer(ty) { 0 } else { decimals as u32 };
            Ok(Key {
                index,
                ty,
                scale,
                desc: *desc,
            })
        })
        .collect()
}

/// Relays the merged answer, ending it with `status`. `Err(message)` inside `Ok`: the merge is not possible; every
/// shard was drained and nothing was written, so the caller can send an error.
pub async fn relay_sorted<W: AsyncWrite + Unpin>(
    shards: &mut [&mut BackendConn],
    client: &mut Client<'_, W>,
    order: &[(String, bool)],
    limit: Option<u64>,
    status: u16,
) -> Result<Result<Relayed, String>, BackendError> {
    let mut failed = None;
    let mut header: Option<Vec<Vec<u8>>> = None;
    let mut live = vec![true; shards.len()];
    for (i, be) in shards.iter_mut().enumerate() {
        match read_header(be).await? {
            Start::Columns(defs) => {
                header.get_or_insert(defs);
            }
            Start::Failed(e) => {
                failed.get_or_insert(e);
                live[i] = false;
            }
        }
    }
    let mut warnings = 0u16;
    let keys = match (&header, &failed) {
        (Some(defs), None) => keys(defs, order),
        _ => Err(String::new()),
    };
    let mut heads: Vec<Option<Head>> = Vec::with_capacity(shards.len());
    for (i, be) in shards.iter_mut().enumerate() {
        heads.push(if live[i] {
            next_row(be, &mut warnings, &mut failed).await?
        } else {
            None
        });
    }
    let keys = match keys {
        Ok(k) if failed.is_none() => k,
        other => {
            // Drain so every connection stays in step, then report.
            for (i, be) in shards.iter_mut().enumerate() {
                let mut more = heads[i].is_some();
                while more {
                    more = next_row(be, &mut warnings, &mut failed).await?.is_some();
                }
            }
            if let Some(e) = failed {
                client.writer.write(&e);
                return Ok(Ok(Relayed {
                    error: true,
                    ..Relayed::default()
                }));
            }
            return Ok(Err(other.err().unwrap_or_default()));
        }
    };
    let Some(defs) = header else {
        return Ok(Err("no shard answered".into()));
    };
    for d in &defs[..defs.len() - 1] {
        client.writer.write(d);
    }
    if !client.deprecate_eof {
        client.writer.write(&defs[defs.len() - 1]);
    }
    let mut sent = 0u64;
    loop {
        let mut best: Option<usize> = None;
        for (i, h) in heads.iter().enumerate() {
            let Some(h) = h else { continue };
            best = match best {
                None => Some(i),
                Some(b) => {
                    let cur = heads[b].as_ref().map(|x| &x.values);
                    let ord = keys.iter().fold(Ordering::Equal, |acc, k| {
                        acc.then_with(|| {
                            let empty = None;
                            let a = h.values.get(k.index).unwrap_or(&empty);
                            let c = cur.and_then(|v| v.get(k.index)).unwrap_or(&empty);
                            compare_values(a, c, k)
                        })
                    });
                    if ord == Ordering::Less {
                        Some(i)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        let Some(b) = best else { break };
        if let Some(h) = heads[b].take() {
            if limit.is_none_or(|l| sent < l) {
                client.writer.write(&h.packet);
                sent += 1;
                client
                    .writer
                    .maybe_flush()
                    .await
                    .map_err(BackendError::ClientGone)?;
            }
        }
        heads[b] = next_row(shards[b], &mut warnings, &mut failed).await?;
    }
    if let Some(e) = failed {
        client.writer.write(&e);
        return Ok(Ok(Relayed {
            error: true,
            ..Relayed::default()
        }));
    }
    let status = StatusFlags::from_bits_retain(status);
    let start = client.writer.begin();
    packets::terminator(
        client.writer.payload(),
        client.deprecate_eof,
        warnings,
        status,
    );
    client.writer.end(start);
    Ok(Ok(Relayed {
        status: status.bits(),
        ..Relayed::default()
    }))
}
