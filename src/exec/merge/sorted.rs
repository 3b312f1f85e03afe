//! The streaming merge: each shard answers sorted (and limited to OFFSET + LIMIT rows); the
//! merge holds one row per shard, writes the smallest, skips the first OFFSET and stops writing
//! after LIMIT. Ties go to the shard listed first. Without sort keys shards follow each other.

use tokio::io::AsyncWrite;

use super::rows::{self, Ends, Values};
use super::{compare, Key, Output};
use crate::exec::backend::{BackendConn, BackendError};
use crate::exec::relay::{Client, Relayed};
use crate::sql::ER_NOT_SUPPORTED_YET;
use crate::wire::packets;

struct Head {
    packet: Vec<u8>,
    values: Option<Values>,
    key: Vec<super::KeyPart>,
}

async fn next_head(
    be: &mut BackendConn,
    keys: &[Key],
    parse: bool,
    ends: &mut Ends,
) -> Result<Result<Option<Head>, String>, BackendError> {
    let Some(packet) = rows::next_row(be, ends).await? else {
        return Ok(Ok(None));
    };
    if keys.is_empty() && !parse {
        return Ok(Ok(Some(Head {
            packet,
            values: None,
            key: Vec::new(),
        })));
    }
    let Some(values) = rows::parse_text_row(&packet) else {
        return Ok(Err("a shard sent a malformed row".into()));
    };
    Ok(Key::parts(keys, &values).map(|key| {
        Some(Head {
            packet,
            values: Some(values),
            key,
        })
    }))
}

pub(super) async fn relay<W: AsyncWrite + Unpin>(
    shards: &mut [&mut BackendConn],
    client: &mut Client<'_, W>,
    keys: &[Key],
    out: &Output<'_>,
    mut ends: Ends,
) -> Result<Result<Relayed, String>, BackendError> {
    let parse = out.rewrites();
    let mut heads: Vec<Option<Head>> = Vec::with_capacity(shards.len());
    let mut problem = None;
    for be in shards.iter_mut() {
        match next_head(be, keys, parse, &mut ends).await? {
            Ok(h) => heads.push(h),
            Err(m) => {
                problem.get_or_insert(m);
                heads.push(None);
                rows::drain(be, &mut ends).await?;
            }
        }
    }
    if problem.is_some() || ends.failed.is_some() {
        for (i, be) in shards.iter_mut().enumerate() {
            if heads[i].is_some() {
                rows::drain(be, &mut ends).await?;
            }
        }
        if let Some(e) = ends.failed {
            client.writer.write(&e);
            return Ok(Ok(Relayed {
                error: true,
                ..Relayed::default()
            }));
        }
        return Ok(Err(problem.unwrap_or_default()));
    }
    rows::write_header(client, out.defs, out.eof, out.visible);
    let mut seen = 0u64;
    let mut sent = 0u64;
    let mut failure: Option<String> = None;
    loop {
        let mut best: Option<usize> = None;
        for (i, h) in heads.iter().enumerate() {
            let Some(h) = h else { continue };
            best = match best.and_then(|b| heads[b].as_ref().map(|x| (b, x))) {
                Some((b, cur)) if compare(&h.key, &cur.key, keys) != std::cmp::Ordering::Less => {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        let Some(b) = best else { break };
        if let Some(h) = heads[b].take() {
            let wanted = seen >= out.offset && out.limit.is_none_or(|l| sent < l);
            seen += 1;
            if wanted && failure.is_none() {
                match out.row(h.packet, h.values.as_ref()) {
                    Ok(p) => {
                        client.writer.write(&p);
                        sent += 1;
                        client
                            .writer
                            .maybe_flush()
                            .await
                            .map_err(BackendError::ClientGone)?;
                    }
                    Err(m) => failure = Some(m),
                }
            }
        }
        heads[b] = match next_head(shards[b], keys, parse, &mut ends).await? {
            Ok(h) => h,
            Err(m) => {
                failure.get_or_insert(m);
                rows::drain(shards[b], &mut ends).await?;
                None
            }
        };
    }
    if let Some(e) = ends.failed {
        client.writer.write(&e);
        return Ok(Ok(Relayed {
            error: true,
            ..Relayed::default()
        }));
    }
    if let Some(m) = failure {
        let start = client.writer.begin();
        packets::err(
            client.writer.payload(),
            ER_NOT_SUPPORTED_YET,
            b"42000",
            m.as_bytes(),
        );
        client.writer.end(start);
        return Ok(Ok(Relayed {
            error: true,
            ..Relayed::default()
        }));
    }
    rows::write_end(client, ends.warnings, ends.status(out.status));
    Ok(Ok(Relayed {
        status: out.status,
        rows: ends.rows,
        ..Relayed::default()
    }))
}
