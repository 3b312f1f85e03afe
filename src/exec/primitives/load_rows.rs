//! The rows of a `LOAD DATA LOCAL INFILE` into a table idgate places or fills ids for: each row
//! of the client's file gets its id (the file's own, or a generated one where AUTO_INCREMENT
//! would generate) and its shard, and becomes a line of that shard's own file (tab-separated,
//! `\N` for NULL, backslash escapes), so that MariaDB still converts the values. No I/O but the
//! generator's: the session streams the lines to the backends.

use std::sync::Arc;

use crate::config::tables::ExplicitIds;
use crate::exec::collect::{merge_info, Collected};
use crate::exec::primitives::bulk_write::BulkOk;
use crate::idgen::{Generator, NewIds};
use crate::route::{Placement, ShardValue, TableRule};
use crate::sql::Field;
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

fn failed(msg: impl Into<String>) -> SqlError {
    SqlError::new(errors::ER_UNKNOWN_ERROR, b"HY000", msg.into())
}

/// How one row of the client's file becomes a row of a backend's file.
pub struct RowPlan {
    /// The table's generator, when idgate fills the id column.
    pub generator: Option<Arc<Generator>>,
    /// Index of the id column among the client's fields (`None`: not in the file).
    pub id_field: Option<usize>,
    /// For each sharding column, the client field holding it (`None`: the id column).
    pub shard_fields: Vec<(String, Option<usize>)>,
    /// Field holding the bias value of a biased generator.
    pub bias_field: Option<usize>,
    /// `0` in the id field keeps the value (NO_AUTO_VALUE_ON_ZERO).
    pub zero_is_value: bool,
    /// The id column is BINARY(16): uuidv7 ids go in as 16 bytes.
    pub binary_uuid: bool,
}

/// A row as a line of its backend's file, and its shard (`None`: every backend of the table).
pub type Line = (Option<usize>, Vec<u8>);

/// What rows ask of the generator.
#[derive(Debug, PartialEq)]
pub struct Wanted {
    /// Each row's id as the file gives it (`None` where one is to be generated).
    pub ids: Vec<Field>,
    /// The rows to generate an id for.
    pub slots: Vec<usize>,
    /// Their bias values (a biased generator).
    pub bias: Vec<u64>,
}

/// Rows turned into backend file lines.
#[derive(Debug, Default, PartialEq)]
pub struct Placed {
    pub lines: Vec<Line>,
    /// The first id generated for these rows.
    pub first_generated: Option<u64>,
    /// Each numeric id generated: (index of its row among these rows, id), in row order.
    pub generated: Vec<(usize, u64)>,
}

/// Gives `rows` (the file's rows from line `first_line` on) their ids and shards.
pub async fn place(
    rule: &TableRule,
    plan: &RowPlan,
    rows: &[Vec<Field>],
    first_line: u64,
) -> Result<Placed, SqlError> {
    let (ids, generated) = match &plan.generator {
        Some(g) => {
            let (ids, generated) = row_ids(g, rule, plan, rows, first_line).await?;
            (Some(ids), generated)
        }
        None => (None, Vec::new()),
    };
    Ok(Placed {
        lines: lines(rule, plan, rows, ids.as_deref(), first_line)?,
        first_generated: generated.first().map(|(_, id)| *id),
        generated,
    })
}

/// Each row's line of its backend's file; `ids`, when idgate fills the id column, go first.
pub fn lines(
    rule: &TableRule,
    plan: &RowPlan,
    rows: &[Vec<Field>],
    ids: Option<&[Field]>,
    first_line: u64,
) -> Result<Vec<Line>, SqlError> {
    let mut out = Vec::with_capacity(rows.len());
    for (k, row) in rows.iter().enumerate() {
        let shard = match &rule.placement {
            Placement::Sharded {
                algorithm, shards, ..
            } => {
                let mut value = None;
                let mut used = "";
                for (c, field) in &plan.shard_fields {
                    used = c;
                    value = match field {
                        None => ids.and_then(|i| i.get(k)).and_then(shard_value),
                        Some(f) => row.get(*f).and_then(shard_value),
                    };
                    if value.is_some() {
                        break;
                    }
                }
                let Some(v) = value else {
                    return Err(failed(format!(
                        "Row {} of the file has no value for the sharding column `{used}` of \
                         `{}`; idgate needs it to choose the shard",
                        first_line + k as u64,
                        rule.name
                    )));
                };
                Some(
                    algorithm
                        .shard_of(&v, shards.len(), used)
                        .map_err(|e| failed(e.to_string()))?,
                )
            }
            _ => None,
        };
        let mut encoded = Vec::new();
        if let Some(ids) = ids {
            push_field(&mut encoded, ids.get(k).unwrap_or(&None));
            if !row.is_empty() {
                encoded.push(b'\t');
            }
        }
        for (n, f) in row.iter().enumerate() {
            if n > 0 {
                encoded.push(b'\t');
            }
            push_field(&mut encoded, f);
        }
        encoded.push(b'\n');
        out.push((shard, encoded));
    }
    Ok(out)
}

/// A value as the backend's file writes it: tab-separated, `\N` for NULL, backslash escapes.
fn push_field(out: &mut Vec<u8>, f: &Field) {
    let Some(v) = f else {
        out.extend_from_slice(b"\\N");
        return;
    };
    for &b in v {
        match b {
            0 => out.extend_from_slice(b"\\0"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            _ => out.push(b),
        }
    }
}

fn shard_value(f: &Field) -> Option<ShardValue> {
    let v = f.as_ref()?;
    let text = std::str::from_utf8(v).ok();
    match text.and_then(|t| t.trim().parse::<i128>().ok()) {
        Some(i) => Some(ShardValue::Int(i)),
        None => Some(ShardValue::Str(v.clone())),
    }
}

/// What the rows ask of the generator.
pub fn wanted_ids(
    rule: &TableRule,
    plan: &RowPlan,
    rows: &[Vec<Field>],
    first_line: u64,
) -> Result<Wanted, SqlError> {
    let mut ids: Vec<Field> = Vec::with_capacity(rows.len());
    let mut slots = Vec::new();
    for (k, row) in rows.iter().enumerate() {
        let given = plan.id_field.and_then(|f| row.get(f)).cloned().flatten();
        let generate = match &given {
            None => true,
            Some(v) => {
                let t = String::from_utf8_lossy(v);
                let t = t.trim();
                t.is_empty() || (!plan.zero_is_value && t.parse::<i128>() == Ok(0))
            }
        };
        if generate {
            slots.push(k);
            ids.push(None);
        } else {
            if rule.explicit_ids == ExplicitIds::Reject {
                return Err(failed(format!(
                    "Explicit value for `{}`.`{}` on row {} rejected (explicit_ids: reject): \
                     leave the field empty or \\N and idgate generates it",
                    rule.name,
                    rule.id_column,
                    first_line + k as u64
                )));
            }
            ids.push(given);
        }
    }
    let mut bias = Vec::new();
    if plan.generator.as_ref().is_some_and(|g| g.takes_bias()) {
        for &k in &slots {
            let b = plan
                .bias_field
                .and_then(|f| rows[k].get(f))
                .and_then(shard_value)
                .and_then(|v| match v {
                    ShardValue::Int(i) => Some(i as u64),
                    ShardValue::Str(_) => None,
                });
            let Some(b) = b else {
                return Err(failed(format!(
                    "Row {} of the file needs an integer for `{}`: the id's low bits copy it",
                    first_line + k as u64,
                    rule.bias_column.as_deref().unwrap_or("")
                )));
            };
            bias.push(b);
        }
    }
    Ok(Wanted { ids, slots, bias })
}

/// Each row's id: the file's own value, or a generated one where AUTO_INCREMENT would
/// generate (no field, `\N`, empty, or 0 unless NO_AUTO_VALUE_ON_ZERO); and the first
/// generated.
async fn row_ids(
    g: &Generator,
    rule: &TableRule,
    plan: &RowPlan,
    rows: &[Vec<Field>],
    first_line: u64,
) -> Result<(Vec<Field>, Vec<(usize, u64)>), SqlError> {
    let Wanted {
        mut ids,
        slots,
        bias,
    } = wanted_ids(rule, plan, rows, first_line)?;
    if slots.is_empty() {
        return Ok((ids, Vec::new()));
    }
    let new = g
        .next_ids(slots.len(), &bias)
        .await
        .map_err(|e| failed(format!("idgate: {e}")))?;
    fill_ids(&mut ids, &slots, &new, plan.binary_uuid);
    let generated = slots
        .iter()
        .enumerate()
        .filter_map(|(n, &k)| Some((k, new.number(n)?)))
        .collect();
    Ok((ids, generated))
}

/// Writes the generated ids `new` into `ids` at `slots`, as the file gives them.
pub fn fill_ids(ids: &mut [Field], slots: &[usize], new: &NewIds, binary_uuid: bool) {
    match new {
        NewIds::Uuids(out) => {
            for (&k, u) in slots.iter().zip(out) {
                ids[k] = Some(if binary_uuid {
                    u.as_bytes().to_vec()
                } else {
                    u.to_hyphenated().to_vec()
                });
            }
        }
        _ => {
            for (n, &k) in slots.iter().enumerate() {
                ids[k] = new.number(n).map(|id| id.to_string().into_bytes());
            }
        }
    }
}

/// The one OK for the client: the backends' rows and `Records: … Deleted: … Skipped: …
/// Warnings: …` added up. Its insert id is 0, as MariaDB's LOAD DATA reports (the first id
/// becomes LAST_INSERT_ID() only).
pub fn answer(results: &[Collected]) -> BulkOk {
    let mut ok = BulkOk {
        affected: 0,
        insert_id: 0,
        warnings: 0,
        info: Vec::new(),
    };
    let mut infos = Vec::new();
    for r in results {
        if let Collected::Ok(p) = r {
            if let Some(o) = packets::parse_ok(p) {
                ok.affected += o.affected_rows;
                ok.warnings = ok.warnings.saturating_add(o.warnings);
            }
            infos.push(packets::ok_info(p));
        }
    }
    ok.info = merge_info(&infos);
    ok
}
