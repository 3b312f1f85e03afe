//! A Jepsen-style check of an insert history: what every client was told (JSON lines from
//! tests/clients/py_chaos_writer.py) against what the shards hold afterwards.
//!
//! Holds when: every acknowledged INSERT has all its rows, once, on the shard that owns each, the
//! first with the id the client got, and `LAST_INSERT_ID()` answered that id; an INSERT whose
//! outcome the client does not know left all its rows or none; no id appears twice in a table
//! across the shards; no row exists that no client tried to write.

use std::collections::{HashMap, HashSet};

use mysql::prelude::Queryable;

use super::MariaDb;

#[derive(Debug, serde::Deserialize)]
pub struct Attempt {
    pub c: u64,
    pub t: String,
    pub notes: Vec<String>,
    pub ok: bool,
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub lid: Option<u64>,
    #[serde(default)]
    pub err: Option<String>,
    #[serde(default)]
    pub ts: f64,
}

#[derive(Debug, Clone)]
pub struct Row {
    pub id: u64,
    pub user_id: u64,
    pub shard: usize,
}

/// What a history check found; `problems` must be empty.
#[derive(Debug, Default)]
pub struct Report {
    pub attempts: usize,
    pub acknowledged: usize,
    pub unknown: usize,
    pub rows: usize,
    pub duplicates: usize,
    /// The longest time a client went without an answer, in seconds.
    pub longest_stall: f64,
    /// Client errors by their first words.
    pub errors: HashMap<String, usize>,
    pub problems: Vec<String>,
}

impl Report {
    pub fn summary(&self, what: &str) -> String {
        let mut errors: Vec<_> = self.errors.iter().collect();
        errors.sort();
        format!(
            "{what}: {} INSERTs, {} acknowledged and checked, {} with unknown outcome, {} rows, \
             {} duplicate ids, longest client stall {:.2} s, errors {errors:?}",
            self.attempts,
            self.acknowledged,
            self.unknown,
            self.rows,
            self.duplicates,
            self.longest_stall
        )
    }
}

pub fn parse(lines: &str) -> Vec<Attempt> {
    lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("history line `{l}`: {e}")))
        .collect()
}

/// Every row of `table` on every shard, by note.
pub fn read_rows(shards: &[&MariaDb], table: &str) -> HashMap<String, Vec<Row>> {
    let mut out: HashMap<String, Vec<Row>> = HashMap::new();
    for (shard, db) in shards.iter().enumerate() {
        let mut c = super::direct(db);
        let rows: Vec<(u64, u64, String)> = c
            .query(format!("SELECT id, user_id, note FROM {table}"))
            .unwrap_or_else(|e| panic!("read {table} on shard {shard}: {e}"));
        for (id, user_id, note) in rows {
            out.entry(note)
                .or_default()
                .push(Row { id, user_id, shard });
        }
    }
    out
}

/// How the ids of one INSERT relate, by generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdOrder {
    /// One contiguous block, as AUTO_INCREMENT gives (segment ids).
    Block,
    /// Increasing (snowflake ids).
    Increasing,
    /// No order: the low bits of a biased id are its row's slot.
    Any,
}

/// Checks `history` against the rows of each table. `owner(table, id)` is the shard that must
/// hold a row; `order(table)` how one INSERT's ids relate.
pub fn check(
    history: &[Attempt],
    rows: &HashMap<String, HashMap<String, Vec<Row>>>,
    owner: impl Fn(&str, u64) -> usize,
    order: impl Fn(&str) -> IdOrder,
) -> Report {
    let mut r = Report {
        attempts: history.len(),
        ..Report::default()
    };
    let mut last_ts: HashMap<u64, f64> = HashMap::new();
    let mut tried: HashSet<(&str, &str)> = HashSet::new();
    for a in history {
        if let Some(prev) = last_ts.insert(a.c, a.ts) {
            r.longest_stall = r.longest_stall.max(a.ts - prev);
        }
        for n in &a.notes {
            tried.insert((a.t.as_str(), n.as_str()));
        }
        let table = rows.get(&a.t).unwrap_or_else(|| panic!("rows of {}", a.t));
        let found: Vec<Option<&Vec<Row>>> = a.notes.iter().map(|n| table.get(n)).collect();
        if let Some(e) = &a.err {
            // Connector/J puts the connection id first: `(conn=12) unexpected end of stream`.
            let words = e.split_whitespace().filter(|w| !w.starts_with("(conn="));
            let kind: String = words.take(3).collect::<Vec<_>>().join(" ");
            *r.errors.entry(kind).or_default() += 1;
        }
        if !a.ok {
            r.unknown += 1;
            let present = found.iter().filter(|f| f.is_some()).count();
            if present != 0 && present != a.notes.len() {
                r.problems.push(format!(
                    "half an INSERT: {present} of {} rows of client {}'s {:?} into {} ({:?})",
                    a.notes.len(),
                    a.c,
                    a.notes,
                    a.t,
                    a.err
                ));
            }
            continue;
        }
        r.acknowledged += 1;
        let mut ids = Vec::new();
        for (note, f) in a.notes.iter().zip(&found) {
            match f {
                Some(v) if v.len() == 1 => {
                    let row = &v[0];
                    let want = owner(&a.t, row.id);
                    if row.shard != want {
                        r.problems.push(format!(
                            "{} row {note} id {} on shard {} instead of {want}",
                            a.t, row.id, row.shard
                        ));
                    }
                    ids.push(row.id);
                }
                Some(v) => r.problems.push(format!(
                    "{} row {note} stored {} times: {v:?}",
                    a.t,
                    v.len()
                )),
                None => r.problems.push(format!(
                    "acknowledged {} row {note} (client {}, id {:?}) is missing",
                    a.t, a.c, a.id
                )),
            }
        }
        if ids.len() != a.notes.len() {
            continue;
        }
        if Some(ids[0]) != a.id {
            r.problems.push(format!(
                "{} {:?}: the client was told id {:?}, the first row has {}",
                a.t, a.notes, a.id, ids[0]
            ));
        }
        if let Some(lid) = a.lid {
            if Some(lid) != a.id {
                r.problems.push(format!(
                    "{} {:?}: LAST_INSERT_ID() answered {lid}, the INSERT's id is {:?}",
                    a.t, a.notes, a.id
                ));
            }
        }
        let expected = order(&a.t);
        let holds = match expected {
            IdOrder::Block => ids.windows(2).all(|w| w[1] == w[0] + 1),
            IdOrder::Increasing => ids.windows(2).all(|w| w[1] > w[0]),
            IdOrder::Any => true,
        };
        if !holds {
            r.problems.push(format!(
                "{} {:?}: ids {ids:?} are not {expected:?}",
                a.t, a.notes
            ));
        }
    }
    for (table, by_note) in rows {
        let mut seen: HashMap<u64, &str> = HashMap::new();
        for (note, v) in by_note {
            r.rows += v.len();
            if !tried.contains(&(table.as_str(), note.as_str())) {
                r.problems
                    .push(format!("{table} row {note} was written by no client"));
            }
            for row in v {
                if let Some(other) = seen.insert(row.id, note) {
                    r.duplicates += 1;
                    r.problems.push(format!(
                        "{table}: id {} given to both {other} and {note}",
                        row.id
                    ));
                }
            }
        }
    }
    r
}
