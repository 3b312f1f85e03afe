//! Between SWITCH and COMPLETE a backend that holds the table in both placements (a split's old
//! shards, an adopted table's backend kept as a shard) still holds the rows that moved away:
//! REVERSE needs them. A statement reaching several shards would read those rows twice, once
//! there and once where they moved. So at SWITCH the table there is renamed
//! `<table>_idgate_all` and a view with the table's name shows only the rows the new placement
//! keeps there. MariaDB merges such a view into every statement, so reads, writes through it,
//! joins and prepared statements see the table as the new placement has it, under its own name
//! and with its indexes. COMPLETE deletes the moved rows and swaps the table back in one RENAME;
//! REVERSE, and a SWITCH undone, swap it back at once.

use super::columns::quote_ident;
use super::fence::{moved_condition, LOCK_WAIT};
use super::job::Spec;
use super::writer::exec;
use crate::config::Backend;
use crate::exec::metadata::quote_literal;
use crate::exec::BackendConn;
use crate::route::TableRule;

/// Every statement idgate runs here names this, so the binlog followers know them as idgate's
/// own (they change no row).
pub const MARK: &str = "_idgate_all";

/// The table's own name while the view stands in for it (at most 64 characters).
pub fn base_name(table: &str) -> String {
    format!("{}{MARK}", table.chars().take(52).collect::<String>())
}

/// The view's name for the moment of the swap back.
fn spare_name(table: &str) -> String {
    format!("{}{MARK}_v", table.chars().take(50).collect::<String>())
}

/// The backends of a job that hold the table in both placements.
pub fn kept_on(spec: &Spec) -> Vec<String> {
    spec.sources
        .iter()
        .filter(|s| spec.target.backends().contains(s))
        .cloned()
        .collect()
}

async fn connect(backend: &str, cfg: &Backend) -> Result<BackendConn, String> {
    let mut c = BackendConn::connect(backend, cfg, Default::default(), LOCK_WAIT * 2)
        .await
        .map_err(|e| e.to_string())?;
    let set = format!("SET SESSION lock_wait_timeout = {}", LOCK_WAIT.as_secs());
    if let Err(e) = exec(&mut c, &set).await {
        c.close().await;
        return Err(e);
    }
    Ok(c)
}

/// What `name` is in `schema` on `c`: `Some(true)` a view, `Some(false)` a table, `None` absent.
async fn kind_of(c: &mut BackendConn, schema: &str, name: &str) -> Result<Option<bool>, String> {
    let sql = format!(
        "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND \
         TABLE_NAME = {}",
        quote_literal(schema),
        quote_literal(name)
    );
    let rows = tokio::time::timeout(LOCK_WAIT * 2, c.query_rows(&sql))
        .await
        .map_err(|_| "reading the table's kind timed out".to_string())?
        .map_err(|e| e.to_string())?;
    Ok(rows
        .first()
        .map(|r| r.first().cloned().flatten().as_deref() == Some(b"VIEW".as_slice())))
}

/// The name that holds every row of `table` on `c` now: its own, or the renamed one while
/// the moved rows are hidden.
pub async fn holder(c: &mut BackendConn, schema: &str, table: &str) -> Result<String, String> {
    let base = base_name(table);
    Ok(match kind_of(c, schema, &base).await? {
        Some(false) => base,
        _ => table.to_string(),
    })
}

/// Hides on `backend` the rows `to` places elsewhere, behind a view named as the table.
pub async fn hide(
    backend: &str,
    cfg: &Backend,
    schema: &str,
    table: &str,
    to: &TableRule,
) -> Result<(), String> {
    let base = base_name(table);
    let moved = moved_condition(to, backend, &quote_ident(&base))
        .ok_or_else(|| format!("the rows that leave `{backend}` cannot be told apart in SQL"))?;
    let mut c = connect(backend, cfg).await?;
    let r = async {
        let q = |n: &str| format!("{}.{}", quote_ident(schema), quote_ident(n));
        if kind_of(&mut c, schema, &base).await? != Some(false) {
            exec(
                &mut c,
                &format!("RENAME TABLE {} TO {}", q(table), q(&base)),
            )
            .await?;
        }
        if kind_of(&mut c, schema, table).await?.is_none() {
            let view = format!(
                "CREATE ALGORITHM = MERGE SQL SECURITY DEFINER VIEW {} AS SELECT * FROM {} \
                 WHERE ({moved}) IS NOT TRUE",
                q(table),
                q(&base)
            );
            if let Err(e) = exec(&mut c, &view).await {
                let back = format!("RENAME TABLE {} TO {}", q(&base), q(table));
                let _ = exec(&mut c, &back).await;
                return Err(e);
            }
        }
        Ok(())
    }
    .await;
    c.close().await;
    r.map_err(|e| format!("hiding the moved rows of `{schema}`.`{table}` on `{backend}`: {e}"))
}

/// Puts the table back under its name on `backend` (nothing to do when it is there).
pub async fn show(backend: &str, cfg: &Backend, schema: &str, table: &str) -> Result<(), String> {
    let base = base_name(table);
    let spare = spare_name(table);
    let mut c = connect(backend, cfg).await?;
    let r = async {
        let q = |n: &str| format!("{}.{}", quote_ident(schema), quote_ident(n));
        if kind_of(&mut c, schema, &base).await? != Some(false) {
            return Ok(());
        }
        match kind_of(&mut c, schema, table).await? {
            // One RENAME: the name never goes missing.
            Some(true) => {
                exec(
                    &mut c,
                    &format!(
                        "RENAME TABLE {} TO {}, {} TO {}",
                        q(table),
                        q(&spare),
                        q(&base),
                        q(table)
                    ),
                )
                .await?;
                exec(&mut c, &format!("DROP VIEW IF EXISTS {}", q(&spare))).await
            }
            None => {
                exec(
                    &mut c,
                    &format!("RENAME TABLE {} TO {}", q(&base), q(table)),
                )
                .await
            }
            Some(false) => Err(format!(
                "both `{table}` and `{base}` are tables; keep the one with every row under \
                 `{table}`"
            )),
        }
    }
    .await;
    c.close().await;
    r.map_err(|e| format!("showing every row of `{schema}`.`{table}` on `{backend}` again: {e}"))
}

/// [`show`] on every backend of `spec` that keeps the table; the first error is returned,
/// after trying them all.
pub async fn show_all(spec: &Spec) -> Result<(), String> {
    let mut first = Ok(());
    for b in kept_on(spec) {
        let Some(cfg) = spec.backends.get(&b) else {
            continue;
        };
        let r = show(&b, cfg, &spec.schema, &spec.table).await;
        if first.is_ok() {
            first = r;
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_and_carry_the_mark() {
        let long = "x".repeat(64);
        for n in [base_name(&long), spare_name(&long)] {
            assert!(n.chars().count() <= 64, "{n}");
            assert!(n.contains(MARK));
        }
        assert_eq!(base_name("orders"), "orders_idgate_all");
    }
}
