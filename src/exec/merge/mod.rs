//! Merging a SELECT's answers from several shards into the answer one server holding every row
//! would give (see `route::MergePlan`): a streaming k-way merge for ORDER BY/LIMIT, or groups
//! combined in memory (one row per group) for GROUP BY, aggregates, HAVING and DISTINCT.
//! Every shard's answer is read to its end whatever happens, so connections stay in step.

mod binary;
mod combine;
#[cfg(test)]
mod decode_tests;
mod group;
mod having;
mod number;
mod rows;
mod sorted;
mod value;

use std::cmp::Ordering;

use tokio::io::AsyncWrite;

use super::backend::{BackendConn, BackendError};
use super::relay::{Client, Relayed};
use crate::route::{ColRef, KeyTypes, MergeMode, MergePlan, SortKey};

/// What a merge planned without collation weights gives when a compared key is a string after
/// all: nothing was written to the client and every shard was read to its end, so the caller
/// runs the plan with weights instead.
pub const NEEDS_WEIGHTS: &str = "a string key without its collation weights";
/// Encoding rows in the binary protocol, for answers idgate relays batch by batch.
pub use binary::binary_row;
/// The parser of text-protocol rows, for idgate's own reads of an answer too.
pub use rows::parse_text_row;
use rows::{Ends, Start, Values};
pub use value::column_info;
pub use value::ColumnInfo;
use value::{KeyPart, Kind};

/// A sort key resolved against the shards' columns.
#[derive(Debug, Clone)]
struct Key {
    value: usize,
    weight: Option<(usize, usize)>,
    kind: Kind,
    desc: bool,
}

impl Key {
    fn part(&self, row: &Values) -> Result<KeyPart, String> {
        let get = |i: usize| row.get(i).and_then(|v| v.as_deref());
        let weight = self.weight.map(|(w, s)| (get(w), get(s)));
        value::key_part(self.kind, get(self.value), weight)
    }

    fn parts(keys: &[Key], row: &Values) -> Result<Vec<KeyPart>, String> {
        keys.iter().map(|k| k.part(row)).collect()
    }
}

fn compare(a: &[KeyPart], b: &[KeyPart], keys: &[Key]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(keys) {
        let o = x.cmp(y);
        let o = if k.desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The shards' columns: their definitions and how many the client sees.
struct Layout {
    infos: Vec<ColumnInfo>,
    hidden: usize,
    visible: usize,
}

impl Layout {
    fn index(&self, c: ColRef) -> Result<usize, String> {
        c.index(self.infos.len(), self.hidden)
            .ok_or_else(|| "a shard answered with fewer columns than idgate asked for".to_string())
    }

    fn kind(&self, i: usize) -> Result<Kind, String> {
        value::kind_of(&self.infos[i]).map_err(|what| {
            format!("sorting or grouping across shards by {what}; pin the query to one shard")
        })
    }

    fn key(&self, k: &SortKey) -> Result<Key, String> {
        let value = self.index(k.value)?;
        let kind = self.kind(value)?;
        let weight = match (kind, k.weight) {
            (Kind::Collated { .. }, Some(w)) => Some((self.index(w.bytes)?, self.index(w.space)?)),
            (Kind::Collated { .. }, None) => return Err(NEEDS_WEIGHTS.into()),
            _ => None,
        };
        Ok(Key {
            value,
            weight,
            kind,
            desc: k.desc,
        })
    }

    fn keys(&self, ks: &[SortKey]) -> Result<Vec<Key>, String> {
        ks.iter().map(|k| self.key(k)).collect()
    }
}

/// The merged answer, ending with `status`; `page`: this execution's OFFSET and LIMIT (the
/// plan may serve other pages); `binary`: rows in the binary protocol (a prepared
/// statement's), else text. `Ok(Err(message))`: the merge is not possible; every
/// shard was read to its end and nothing was written, so the caller can send an error (or,
/// for [`NEEDS_WEIGHTS`], run the plan with weights). `key_types`: where a plan kept by shape
/// learns from the shards' columns whether any key it asks weights for is a string.
#[allow(clippy::too_many_arguments)]
pub async fn relay_merged<W: AsyncWrite + Unpin>(
    shards: &mut [&mut BackendConn],
    client: &mut Client<'_, W>,
    plan: &MergePlan,
    page: (u64, Option<u64>),
    status: u16,
    binary: bool,
    memory_limit: u64,
    key_types: Option<&KeyTypes>,
) -> Result<Result<Relayed, String>, BackendError> {
    let answer = Answer {
        page,
        status,
        binary,
        key_types,
    };
    if plan.mode != MergeMode::Stream {
        return group::relay(shards, client, plan, &answer, memory_limit).await;
    }
    let mut ends = Ends::default();
    let mut header = None;
    let mut live = vec![true; shards.len()];
    // Headers come in as the shards answer: a slow shard does not hold up reading the others.
    let starts =
        futures_util::future::join_all(shards.iter_mut().map(|be| rows::read_header(be))).await;
    for (i, start) in starts.into_iter().enumerate() {
        match start? {
            Start::Columns(defs, eof) => {
                header.get_or_insert((defs, eof));
            }
            Start::Failed(e) => {
                ends.failed.get_or_insert(e);
                live[i] = false;
            }
        }
    }
    let prepared = match (&header, &ends.failed) {
        (Some((defs, _)), None) => prepare(plan, defs, key_types),
        _ => Err(String::new()),
    };
    let (layout, order, _) = match prepared {
        Ok(p) => p,
        Err(m) => {
            for (i, be) in shards.iter_mut().enumerate() {
                if live[i] {
                    rows::drain(be, &mut ends).await?;
                }
            }
            return Ok(failed_or(client, ends, m));
        }
    };
    let Some((defs, eof)) = header else {
        return Ok(Err("no shard answered".into()));
    };
    let out = answer.output(&layout, &defs, &eof);
    sorted::relay(shards, client, &order, &out, ends).await
}

/// The shards' error if one failed (written to the client), else the merge's problem `m`.
fn failed_or<W: AsyncWrite + Unpin>(
    client: &mut Client<'_, W>,
    ends: Ends,
    m: String,
) -> Result<Relayed, String> {
    match ends.failed {
        Some(e) => {
            client.writer.write(&e);
            Ok(Relayed {
                error: true,
                ..Relayed::default()
            })
        }
        None => Err(m),
    }
}

/// The shards' columns resolved for the plan: their layout, the ORDER BY keys, and for a
/// grouped or DISTINCT merge how rows fold into groups.
fn prepare(
    plan: &MergePlan,
    defs: &[Vec<u8>],
    key_types: Option<&KeyTypes>,
) -> Result<(Layout, Vec<Key>, Option<group::Grouping>), String> {
    let infos = defs
        .iter()
        .map(|d| value::column_info(d))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| "a shard sent a malformed column definition".to_string())?;
    let visible = infos
        .len()
        .checked_sub(plan.hidden)
        .ok_or("a shard answered with fewer columns than idgate asked for")?;
    let l = Layout {
        infos,
        hidden: plan.hidden,
        visible,
    };
    if let Some(t) = key_types {
        t.saw(weighted_strings(plan, &l));
    }
    let order = l.keys(&plan.order)?;
    let grouping = match &plan.mode {
        MergeMode::Stream => None,
        MergeMode::Group { keys, aggs, having } => Some(group::Grouping::new(
            &l,
            l.keys(keys)?,
            aggs,
            having.clone(),
        )?),
        MergeMode::Distinct { keys } => Some(group::Grouping::new(&l, l.keys(keys)?, &[], None)?),
    };
    Ok((l, order, grouping))
}

/// Whether any key the plan compares by collation weight is a string in these columns.
fn weighted_strings(plan: &MergePlan, l: &Layout) -> bool {
    plan.compared_keys().iter().any(|k| {
        k.weight.is_some()
            && l.index(k.value)
                .and_then(|i| l.kind(i))
                .map_or(true, |kind| matches!(kind, Kind::Collated { .. }))
    })
}

/// What one execution asks of the merged answer.
struct Answer<'a> {
    page: (u64, Option<u64>),
    status: u16,
    binary: bool,
    key_types: Option<&'a KeyTypes>,
}

impl Answer<'_> {
    fn output<'a>(&self, layout: &'a Layout, defs: &'a [Vec<u8>], eof: &'a [u8]) -> Output<'a> {
        Output {
            infos: &layout.infos,
            binary: self.binary,
            defs,
            eof,
            visible: layout.visible,
            offset: self.page.0,
            limit: self.page.1,
            status: self.status,
        }
    }
}

/// A GROUP BY / DISTINCT merge needed more than `merge_memory_limit`.
fn memory_limit_error(limit: u64) -> crate::wire::errors::SqlError {
    crate::wire::errors::SqlError::new(
        crate::wire::errors::ER_OUTOFMEMORY,
        b"HY001",
        format!(
            "Out of memory: merging the shards' groups needs more than idgate's merge_memory_limit ({limit} bytes); narrow the query (WHERE, fewer groups, LIMIT on one shard) or raise merge_memory_limit"
        ),
    )
}

/// What the merged answer looks like to the client.
struct Output<'a> {
    infos: &'a [ColumnInfo],
    binary: bool,
    defs: &'a [Vec<u8>],
    eof: &'a [u8],
    visible: usize,
    offset: u64,
    limit: Option<u64>,
    status: u16,
}

impl Output<'_> {
    /// Whether rows must be decoded to be written (hidden columns, or the binary protocol).
    fn rewrites(&self) -> bool {
        self.binary || self.visible != self.defs.len()
    }

    /// The packet the client gets for a merged row (`values`: the packet decoded, if it was).
    fn row(&self, packet: Vec<u8>, values: Option<&Values>) -> Result<Vec<u8>, String> {
        if !self.rewrites() {
            return Ok(packet);
        }
        let parsed;
        let values = match values {
            Some(v) => v,
            None => {
                parsed = rows::parse_text_row(&packet).ok_or("a shard sent a malformed row")?;
                &parsed
            }
        };
        self.encode(values)
    }

    /// The client's columns of a row.
    fn encode(&self, values: &Values) -> Result<Vec<u8>, String> {
        let mine = values
            .get(..self.visible)
            .ok_or("a shard sent a row shorter than its columns")?;
        if self.binary {
            binary::binary_row(mine, &self.infos[..self.visible])
        } else {
            Ok(rows::encode_row(mine))
        }
    }
}
