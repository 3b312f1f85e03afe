//! The ids an INSERT's generator gives its rows: drawn in one block for every row that needs one
//! (biased generators from each row's bias column), written into the rows' `Generated` slots.

use crate::exec::metadata::TableMeta;
use crate::idgen::{Generator, NewIds};
use crate::route::insert::RowId;
use crate::route::{insert_ids, TableRule};
use crate::sql::InsertAnalysis;
use crate::wire::errors::{self, SqlError};

fn err(code: u16, state: &[u8; 5], msg: impl Into<String>) -> SqlError {
    SqlError::new(code, state, msg)
}

/// Fills the `Generated` slots of `ids` from the generator; returns the first numeric id.
pub async fn fill(
    g: &Generator,
    rule: &TableRule,
    a: &InsertAnalysis,
    meta: &TableMeta,
    ids: &mut [RowId],
) -> Result<Option<u64>, SqlError> {
    let slots = insert_ids::generated_slots(ids);
    if slots.is_empty() {
        return Ok(None);
    }
    let gen_err = |e: crate::idgen::IdGenError| {
        err(errors::ER_UNKNOWN_ERROR, b"HY000", format!("idgate: {e}"))
    };
    let bias = match g.takes_bias() {
        true => insert_ids::bias_values(a, rule, meta, &slots)?,
        false => Vec::new(),
    };
    let new = g.next_ids(slots.len(), &bias).await.map_err(gen_err)?;
    match &new {
        NewIds::Uuids(out) => {
            let binary = insert_ids::id_column_is_binary(rule, meta);
            insert_ids::fill_uuids(ids, &slots, out, binary);
        }
        NewIds::Block(b) => insert_ids::fill_numeric(ids, &slots, b.iter()),
        NewIds::Numbers(n) => insert_ids::fill_numeric(ids, &slots, n.iter().copied()),
    }
    Ok(new.first())
}
