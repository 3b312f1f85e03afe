//! GROUP BY, aggregates, HAVING and DISTINCT across shards: every shard's rows are folded into
//! one row per group (keys compared as MariaDB compares them), aggregates combined exactly,
//! HAVING applied to the combined groups, then the groups sorted (by ORDER BY, else by key as
//! MariaDB's GROUP BY does), OFFSET/LIMIT applied and the client's columns written.

use std::collections::BTreeMap;

use tokio::io::AsyncWrite;

use super::combine::{self, ConcatCols, DistinctSet, Moments, Pieces};
use super::number::{self, format_double, format_scaled};
use super::rows::{self, Ends, Event, Values};
use super::value::{exact, heap_block, KeyPart, Kind};
use super::{compare, Answer, Key, Layout, Output};
use crate::exec::backend::{BackendConn, BackendError};
use crate::exec::relay::{Client, Relayed};
use crate::route::{AggCol, AggFn, Having, MergePlan};

/// How one aggregate column combines, resolved against the shards' columns.
struct Agg {
    col: usize,
    func: AggFn,
    kind: Kind,
    scale: u32,
    /// MIN/MAX: the key the value is compared by, and the weight columns moving with it.
    key: Option<Key>,
    /// AVG: the SUM and COUNT aggregates (indices into the aggregate list).
    parts: Option<(usize, usize)>,
    /// DISTINCT aggregates: the arguments, and the first one's kind and decimals.
    args: Vec<Key>,
    arg: (Kind, u32),
    moments: Option<[usize; 3]>,
    concat: Option<ConcatCols>,
    /// The result column's decimals (a variance of exact values prints with a fixed number).
    decimals: u8,
}

#[derive(Debug)]
enum Acc {
    Count(i128),
    Exact(Option<i128>),
    Float(Option<f64>),
    Best(Option<KeyPart>),
    None,
    Distinct(DistinctSet),
    Concat(Pieces),
    Moments(Moments),
    Bits(u64),
}

struct Group {
    values: Values,
    accs: Vec<Acc>,
}

/// GROUP_CONCAT results outgrew what merge_memory_limit leaves after the groups.
const OVER_BUDGET: &str = "over merge_memory_limit";

/// A double's fixed decimals below this are the column's; at it, the value prints in full.
const NOT_FIXED_DEC: u8 = 31;

pub(super) struct Grouping {
    keys: Vec<Key>,
    aggs: Vec<Agg>,
    having: Option<Having>,
    kinds: Vec<Option<Kind>>,
    /// (all columns, hidden columns) of a shard row.
    shape: (usize, usize),
}

impl Grouping {
    pub(super) fn new(
        l: &Layout,
        keys: Vec<Key>,
        aggs: &[AggCol],
        having: Option<Having>,
    ) -> Result<Grouping, String> {
        let mut out: Vec<Agg> = Vec::new();
        for a in aggs {
            let col = l.index(a.col)?;
            let info = l.infos[col];
            let kind = match a.func {
                AggFn::Count => Kind::Exact,
                _ => l.kind(col)?,
            };
            let key = match a.func {
                AggFn::Min | AggFn::Max => Some(l.key(&crate::route::SortKey {
                    value: a.col,
                    weight: a.weight,
                    desc: false,
                })?),
                _ => None,
            };
            if matches!(a.func, AggFn::Sum | AggFn::Avg)
                && !matches!(kind, Kind::Exact | Kind::Float)
            {
                return Err(format!("{:?} of a non-numeric value across shards", a.func));
            }
            let args = l.keys(&a.args)?;
            let arg = match args.first() {
                Some(k) => (k.kind, u32::from(l.infos[k.value].decimals)),
                None => (kind, 0),
            };
            if matches!(a.func, AggFn::SumDistinct | AggFn::AvgDistinct)
                && !matches!(arg.0, Kind::Exact | Kind::Float)
            {
                return Err(format!("{:?} of a non-numeric value across shards", a.func));
            }
            let moments = match a.moments {
                Some(m) => Some([l.index(m[0])?, l.index(m[1])?, l.index(m[2])?]),
                None => None,
            };
            let concat = match &a.concat {
                Some(c) => Some(ConcatCols {
                    piece: l.index(c.piece)?,
                    count: l.index(c.count)?,
                    separator: c.separator.map(|s| l.index(s)).transpose()?,
                    max_len: l.index(c.max_len)?,
                    distinct: c.distinct,
                    args: l.keys(&c.args)?,
                    order: l.keys(&c.order)?,
                    text: info.charset != 63,
                }),
                None => None,
            };
            out.push(Agg {
                col,
                func: a.func,
                kind,
                scale: if kind == Kind::Exact {
                    u32::from(info.decimals)
                } else {
                    0
                },
                key,
                parts: None,
                args,
                arg,
                moments,
                concat,
                decimals: info.decimals,
            });
        }
        for (i, a) in aggs.iter().enumerate() {
            if let Some((s, c)) = a.parts {
                let find = |r| aggs.iter().position(|x| x.col == r);
                let (Some(s), Some(c)) = (find(s), find(c)) else {
                    return Err("AVG without its SUM and COUNT".into());
                };
                out[i].parts = Some((s, c));
            }
        }
        let kinds = l
            .infos
            .iter()
            .map(|i| super::value::kind_of(i).ok())
            .collect();
        Ok(Grouping {
            keys,
            aggs: out,
            having,
            kinds,
            shape: (l.infos.len(), l.hidden),
        })
    }

    fn start(&self) -> Vec<Acc> {
        self.aggs
            .iter()
            .map(|a| match (a.func, a.kind) {
                (AggFn::Count, _) => Acc::Count(0),
                (AggFn::Sum, Kind::Float) => Acc::Float(None),
                (AggFn::Sum, _) => Acc::Exact(None),
                (AggFn::Min | AggFn::Max, _) => Acc::Best(None),
                (AggFn::Avg, _) => Acc::None,
                (AggFn::CountDistinct | AggFn::SumDistinct | AggFn::AvgDistinct, _) => {
                    Acc::Distinct(DistinctSet::default())
                }
                (AggFn::GroupConcat, _) => Acc::Concat(Pieces::default()),
                (AggFn::Variance { .. }, _) => Acc::Moments(Moments::default()),
                (AggFn::BitAnd, _) => Acc::Bits(u64::MAX),
                (AggFn::BitOr | AggFn::BitXor, _) => Acc::Bits(0),
            })
            .collect()
    }

    /// Folds one shard row into its group; returns the bytes its distinct values and
    /// GROUP_CONCAT pieces now hold more.
    fn fold(&self, g: &mut Group, row: &Values, first: bool) -> Result<u64, String> {
        let mut held = 0u64;
        for (a, acc) in self.aggs.iter().zip(g.accs.iter_mut()) {
            match acc {
                Acc::Distinct(set) => {
                    held = held.saturating_add(set.add(&a.args, row)?);
                    continue;
                }
                Acc::Concat(p) => {
                    if let Some(c) = &a.concat {
                        held = held.saturating_add(p.add(c, row)?);
                    }
                    continue;
                }
                Acc::Moments(m) => {
                    if let Some(cols) = a.moments {
                        m.add(cols, row)?;
                    }
                    continue;
                }
                _ => {}
            }
            let Some(v) = row.get(a.col).and_then(|v| v.as_deref()) else {
                continue;
            };
            match acc {
                Acc::Count(n) => {
                    *n = n
                        .checked_add(exact(v, 0)?)
                        .ok_or("a COUNT beyond 38 digits")?
                }
                Acc::Exact(s) => {
                    let add = exact(v, a.scale)?;
                    *s = Some(
                        s.unwrap_or(0)
                            .checked_add(add)
                            .ok_or("a SUM beyond the 38 digits idgate adds exactly")?,
                    );
                }
                Acc::Float(s) => {
                    let f: f64 = std::str::from_utf8(v)
                        .ok()
                        .and_then(|t| t.parse().ok())
                        .ok_or("a shard sent a malformed double")?;
                    *s = Some(s.unwrap_or(0.0) + f);
                }
                Acc::Best(best) => {
                    let Some(k) = &a.key else { continue };
                    let part = k.part(row)?;
                    let better = match best {
                        None => true,
                        Some(b) if a.func == AggFn::Min => part < *b,
                        Some(b) => part > *b,
                    };
                    if better {
                        *best = Some(part);
                        if !first {
                            let mut cols = vec![k.value];
                            if let Some((w, s)) = k.weight {
                                cols.extend([w, s]);
                            }
                            for c in cols {
                                if let (Some(dst), Some(src)) = (g.values.get_mut(c), row.get(c)) {
                                    dst.clone_from(src);
                                }
                            }
                        }
                    }
                }
                Acc::Bits(b) => {
                    if let Some(x) = combine::bits(row, a.col)? {
                        *b = match a.func {
                            AggFn::BitAnd => *b & x,
                            AggFn::BitOr => *b | x,
                            _ => *b ^ x,
                        };
                    }
                }
                Acc::None | Acc::Distinct(_) | Acc::Concat(_) | Acc::Moments(_) => {}
            }
        }
        Ok(held)
    }

    /// Writes the combined aggregates into the group's row; returns the GROUP_CONCATs cut to
    /// group_concat_max_len here and those the shards cut (and warned about) themselves.
    fn finish(&self, g: &mut Group, budget: &mut u64) -> Result<(u64, u64), String> {
        let mut cuts = (0u64, 0u64);
        for (i, a) in self.aggs.iter().enumerate() {
            let text = match &mut g.accs[i] {
                Acc::Distinct(set) => match a.func {
                    AggFn::CountDistinct => Some(set.count().to_string()),
                    func => match set.sum(a.arg.0, a.arg.1)? {
                        None => None,
                        Some(sum) => Some(combine::distinct_result(
                            sum,
                            set.count(),
                            func == AggFn::AvgDistinct,
                            a.kind,
                            a.arg.1,
                            a.scale,
                        )?),
                    },
                },
                Acc::Concat(p) => {
                    let p = std::mem::take(p);
                    cuts.1 += p.shard_cuts;
                    let Some(c) = &a.concat else { continue };
                    let (v, cut) = p.finish(c, budget).ok_or(OVER_BUDGET)?;
                    cuts.0 += u64::from(cut);
                    if let Some(slot) = g.values.get_mut(a.col) {
                        *slot = v;
                    }
                    continue;
                }
                Acc::Moments(m) => match a.func {
                    AggFn::Variance { sample, root } => match m.result(sample, root) {
                        Some(v) => Some(format_double(v).ok_or("a variance beyond doubles")?),
                        None => None,
                    },
                    _ => None,
                },
                Acc::Bits(b) => Some(b.to_string()),
                Acc::Count(n) => Some(n.to_string()),
                Acc::Exact(s) => s.map(|v| format_scaled(v, a.scale)),
                Acc::Float(s) => match s {
                    Some(f) => Some(format_double(*f).ok_or("a SUM that is not a finite double")?),
                    None => None,
                },
                Acc::Best(_) => continue,
                Acc::None => {
                    let (s, c) = a.parts.ok_or("AVG without its parts")?;
                    let Acc::Count(count) = g.accs[c] else {
                        return Err("AVG's COUNT".into());
                    };
                    match (&g.accs[s], count) {
                        (_, 0) | (Acc::Exact(None), _) | (Acc::Float(None), _) => None,
                        (Acc::Exact(Some(sum)), n) => {
                            let want = self.scale_of(a)?;
                            let from = self.aggs[s].scale;
                            let num = number::rescale(*sum, from, want)
                                .ok_or("an AVG beyond the 38 digits idgate divides exactly")?;
                            let v = number::div_round(num, n).ok_or("AVG")?;
                            Some(format_scaled(v, want))
                        }
                        (Acc::Float(Some(sum)), n) => Some(
                            format_double(sum / n as f64)
                                .ok_or("an AVG that is not a finite double")?,
                        ),
                        _ => return Err("AVG's SUM".into()),
                    }
                }
            };
            if let Some(slot) = g.values.get_mut(a.col) {
                *slot = text.map(String::into_bytes);
            }
        }
        Ok(cuts)
    }

    /// Text-protocol rows print a variance of exact values at its column's fixed decimals
    /// (sorting and HAVING saw the full double, as in MariaDB; binary rows carry it whole).
    fn print_fixed(&self, row: &mut Values) {
        for a in &self.aggs {
            if matches!(a.func, AggFn::Variance { .. }) && a.decimals < NOT_FIXED_DEC {
                if let Some(Some(v)) = row.get_mut(a.col) {
                    if let Some(f) = combine::fixed(v, a.decimals) {
                        *v = f;
                    }
                }
            }
        }
    }

    /// The decimals of an AVG column: those of its definition (MariaDB: the argument's + 4).
    fn scale_of(&self, a: &Agg) -> Result<u32, String> {
        match a.kind {
            Kind::Exact => Ok(a.scale),
            _ => Err("AVG".into()),
        }
    }

    /// Writes the merged answer of the groups folded from the shards' rows (`held`: the bytes
    /// they take).
    #[allow(clippy::too_many_arguments)]
    async fn answer<W: AsyncWrite + Unpin>(
        self,
        mut groups: BTreeMap<Vec<KeyPart>, Group>,
        held: u64,
        client: &mut Client<'_, W>,
        order: &[Key],
        out: &Output<'_>,
        mut ends: Ends,
        memory_limit: u64,
    ) -> Result<Result<Relayed, String>, BackendError> {
        // Without GROUP BY there is one group even when no row matched (the shards, grouping
        // by DISTINCT arguments, then send none).
        if self.keys.is_empty() && groups.is_empty() {
            let (all, _) = self.shape;
            groups.insert(
                Vec::new(),
                Group {
                    values: vec![None; all],
                    accs: self.start(),
                },
            );
        }
        let mut budget = memory_limit.saturating_sub(held);
        let (rows, cuts) = match self.result(groups, order, out, &mut budget) {
            Ok(r) => r,
            Err(m) if m == OVER_BUDGET => {
                let start = client.writer.begin();
                super::memory_limit_error(memory_limit).encode(client.writer.payload());
                client.writer.end(start);
                return Ok(Ok(Relayed {
                    error: true,
                    ..Relayed::default()
                }));
            }
            Err(m) => return Ok(Err(m)),
        };
        let warnings = u64::from(ends.warnings)
            .saturating_sub(cuts.1)
            .saturating_add(cuts.0);
        ends.warnings = u16::try_from(warnings).unwrap_or(u16::MAX);
        let rows = match rows
            .iter()
            .map(|r| out.encode(r))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(r) => r,
            Err(m) => return Ok(Err(m)),
        };
        rows::write_header(client, out.defs, out.eof, out.visible);
        for r in rows {
            client.writer.write(&r);
            client
                .writer
                .maybe_flush()
                .await
                .map_err(BackendError::ClientGone)?;
        }
        rows::write_end(client, ends.warnings, ends.status(out.status));
        Ok(Ok(Relayed {
            status: out.status,
            rows: ends.rows,
            ..Relayed::default()
        }))
    }

    /// Folds a shard row into its group; returns the bytes a new group takes (0 for a known one).
    fn add(
        &self,
        groups: &mut BTreeMap<Vec<KeyPart>, Group>,
        packet: &[u8],
    ) -> Result<u64, String> {
        let row = rows::parse_text_row(packet).ok_or("a shard sent a malformed row")?;
        let key = Key::parts(&self.keys, &row)?;
        match groups.get_mut(&key) {
            Some(g) => self.fold(g, &row, false),
            None => {
                let mut g = Group {
                    accs: self.start(),
                    values: Vec::new(),
                };
                // A group's first row is its values; folding it reads them from `row`.
                let held = self.fold(&mut g, &row, true)?;
                g.values = row;
                // The row's values, its key and the accumulators as heap blocks, the map's
                // share of a node, and as much again for the blocks the shard rows parsed
                // meanwhile leave between them (measured against RSS by scripts/bench-memory).
                let live = heap_block(std::mem::size_of_val(g.values.as_slice()))
                    + g.values
                        .iter()
                        .map(|v| v.as_ref().map_or(0, |b| heap_block(b.len())))
                        .sum::<usize>()
                    + KeyPart::key_bytes(&key)
                    + heap_block(std::mem::size_of_val(g.accs.as_slice()))
                    + 96;
                groups.insert(key, g);
                Ok((2 * live as u64).saturating_add(held))
            }
        }
    }

    /// The groups' rows, filtered, sorted and cut to OFFSET/LIMIT; and the GROUP_CONCAT cuts
    /// (idgate's, the shards').
    fn result(
        &self,
        groups: BTreeMap<Vec<KeyPart>, Group>,
        order: &[Key],
        out: &Output<'_>,
        budget: &mut u64,
    ) -> Result<(Vec<Values>, (u64, u64)), String> {
        let mut rows = Vec::with_capacity(groups.len());
        let mut cuts = (0u64, 0u64);
        for (_, mut g) in groups {
            let (mine, theirs) = self.finish(&mut g, budget)?;
            cuts = (cuts.0 + mine, cuts.1 + theirs);
            if let Some(h) = &self.having {
                if !super::having::holds(h, &g.values, &self.kinds, self.shape)? {
                    continue;
                }
            }
            rows.push(g.values);
        }
        let skip = usize::try_from(out.offset).unwrap_or(usize::MAX);
        let take = out
            .limit
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX))
            .unwrap_or(usize::MAX);
        if !order.is_empty() {
            // Ties keep the groups' key order (the position breaks them), so only the first
            // OFFSET + LIMIT need sorting.
            let mut keyed = rows
                .into_iter()
                .enumerate()
                .map(|(i, r)| Key::parts(order, &r).map(|k| (k, i, r)))
                .collect::<Result<Vec<_>, _>>()?;
            let by = |a: &(Vec<KeyPart>, usize, Values), b: &(Vec<KeyPart>, usize, Values)| {
                compare(&a.0, &b.0, order).then(a.1.cmp(&b.1))
            };
            let wanted = skip.saturating_add(take);
            if wanted == 0 {
                keyed.clear();
            } else if wanted < keyed.len() {
                keyed.select_nth_unstable_by(wanted - 1, by);
                keyed.truncate(wanted);
            }
            keyed.sort_unstable_by(by);
            rows = keyed.into_iter().map(|(_, _, r)| r).collect();
        }
        let mut rows: Vec<Values> = rows.into_iter().skip(skip).take(take).collect();
        if !out.binary {
            for r in &mut rows {
                self.print_fixed(r);
            }
        }
        Ok((rows, cuts))
    }
}

/// Folds every shard's rows into groups as they arrive (a shard's columns resolve the plan when
/// the first header comes), then writes the merged answer.
pub(super) async fn relay<W: AsyncWrite + Unpin>(
    shards: &mut [&mut BackendConn],
    client: &mut Client<'_, W>,
    plan: &MergePlan,
    answer: &Answer<'_>,
    memory_limit: u64,
) -> Result<Result<Relayed, String>, BackendError> {
    let mut ends = Ends::default();
    let mut header: Option<(Vec<Vec<u8>>, Vec<u8>)> = None;
    let mut prepared = None;
    let mut groups: BTreeMap<Vec<KeyPart>, Group> = BTreeMap::new();
    let mut problem: Option<String> = None;
    // Bytes the groups hold (estimated per group when it is created).
    let mut held: u64 = 0;
    let mut over = false;
    rows::each_event(shards, &mut ends, |event| match event {
        Event::Columns(defs, eof) => {
            if prepared.is_none() {
                prepared = Some(super::prepare(plan, &defs, answer.key_types));
                header = Some((defs, eof));
            }
        }
        Event::Row(packet) => {
            let Some(Ok((_, _, Some(g)))) = &prepared else {
                return; // read to the end so the connections stay usable
            };
            if problem.is_some() || over {
                return;
            }
            match g.add(&mut groups, &packet) {
                Ok(added) => {
                    held = held.saturating_add(added);
                    if held > memory_limit {
                        over = true;
                        groups = BTreeMap::new();
                    }
                }
                Err(m) => problem = Some(m),
            }
        }
    })
    .await?;
    if ends.failed.is_some() {
        return Ok(super::failed_or(client, ends, String::new()));
    }
    let (layout, order, grouping) = match prepared {
        Some(Ok((l, o, Some(g)))) => (l, o, g),
        Some(Ok(_)) => return Ok(Err("a merge without groups".into())),
        Some(Err(m)) => return Ok(Err(m)),
        None => return Ok(Err("no shard answered".into())),
    };
    if over {
        let start = client.writer.begin();
        super::memory_limit_error(memory_limit).encode(client.writer.payload());
        client.writer.end(start);
        return Ok(Ok(Relayed {
            error: true,
            ..Relayed::default()
        }));
    }
    if let Some(m) = problem {
        return Ok(Err(m));
    }
    let Some((defs, eof)) = header else {
        return Ok(Err("no shard answered".into()));
    };
    let out = answer.output(&layout, &defs, &eof);
    grouping
        .answer(groups, held, client, &order, &out, ends, memory_limit)
        .await
}
