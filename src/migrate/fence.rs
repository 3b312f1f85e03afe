//! The fence on a table's old placement: triggers on each source backend that refuse, with an
//! error saying why, every write to a row that has moved (as gh-ost and pt-online-schema-change
//! guard their cut-over). A writer that bypasses this idgate (another instance that has not
//! learnt the switch yet, a direct client) can then no longer change what was copied. Creating
//! a trigger takes the table's metadata lock, so it also waits for transactions that already
//! wrote the table to end, up to `lock_wait_timeout`.

use std::time::Duration;

use super::columns::quote_ident;
use super::writer::exec;
use crate::config::Backend;
use crate::exec::BackendConn;
use crate::route::{Algorithm, Placement, TableRule};

/// The session variable with which idgate's own writers (the stream back to the old placement
/// after a switch) pass the fence.
pub const BYPASS: &str = "idgate_fence_bypass";

/// How long the fence waits for transactions that hold the table.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The trigger names of a fence (at most 64 characters).
fn trigger_names(table: &str) -> [String; 3] {
    let base: String = table.chars().take(40).collect();
    ["ins", "upd", "del"].map(|k| format!("idgate_fence_{k}_{base}"))
}

/// An SQL condition on `row` (`NEW` or `OLD`) true when `to` places the row elsewhere than
/// `source`; `None` when SQL cannot say (a `hash` placement that keeps rows on the source).
pub fn moved_condition(to: &TableRule, source: &str, row: &str) -> Option<String> {
    let here: Vec<usize> = to
        .backends()
        .iter()
        .enumerate()
        .filter(|(_, b)| b.as_str() == source)
        .map(|(i, _)| i)
        .collect();
    if here.is_empty() {
        return Some("TRUE".into());
    }
    let Placement::Sharded {
        columns,
        algorithm,
        shards,
    } = &to.placement
    else {
        return Some("FALSE".into());
    };
    let col = format!("{row}.{}", quote_ident(columns.first()?));
    let n = shards.len();
    let index = match algorithm {
        Algorithm::Mod => format!("MOD(MOD({col}, {n}) + {n}, {n})"),
        Algorithm::Slot { slot_bits } => {
            let mask = (1u128 << slot_bits) - 1;
            format!("MOD({col} & {mask}, {n})")
        }
        Algorithm::Range { bounds } => {
            let mut case = String::from("CASE");
            for (i, b) in bounds.iter().enumerate() {
                case.push_str(&format!(" WHEN {col} < {b} THEN {i}"));
            }
            case.push_str(&format!(" ELSE {} END", bounds.len()));
            case
        }
        Algorithm::Hash => return None,
    };
    let list: Vec<String> = here.iter().map(usize::to_string).collect();
    Some(format!("({index}) NOT IN ({})", list.join(", ")))
}

/// The three triggers' statements, on `holder` (the table's name there: its own, or the name
/// it has while `hide` shows a view in its place).
fn create_statements(
    schema: &str,
    table: &str,
    holder: &str,
    to: &TableRule,
    source: &str,
) -> Option<Vec<String>> {
    let qt = format!("{}.{}", quote_ident(schema), quote_ident(holder));
    let names = trigger_names(table);
    let message = format!("idgate moved this row of {schema}.{table}; write it through idgate");
    let message: String = message.chars().take(120).collect();
    let signal = format!(
        "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = {}",
        crate::exec::metadata::quote_literal(&message)
    );
    let new = moved_condition(to, source, "NEW")?;
    let old = moved_condition(to, source, "OLD")?;
    let trigger = |name: &str, event: &str, cond: String| {
        format!(
            "CREATE TRIGGER {}.{} BEFORE {event} ON {qt} FOR EACH ROW \
             BEGIN IF @{BYPASS} IS NULL AND ({cond}) THEN {signal}; END IF; END",
            quote_ident(schema),
            quote_ident(name)
        )
    };
    Some(vec![
        trigger(&names[0], "INSERT", new.clone()),
        trigger(&names[1], "UPDATE", format!("({old}) OR ({new})")),
        trigger(&names[2], "DELETE", old),
    ])
}

/// Whether a fence can be built for a move onto `to` from `source`.
pub fn possible(to: &TableRule, source: &str) -> bool {
    moved_condition(to, source, "NEW").is_some()
}

/// Puts the fence on `source`; on failure nothing of it is left.
pub async fn install(
    source: &str,
    cfg: &Backend,
    schema: &str,
    table: &str,
    to: &TableRule,
) -> Result<(), String> {
    if !possible(to, source) {
        return Err(format!("no fence can be written for `{source}`"));
    }
    let mut c = BackendConn::connect(source, cfg, Default::default(), LOCK_WAIT * 2)
        .await
        .map_err(|e| e.to_string())?;
    let r = async {
        exec(
            &mut c,
            &format!("SET SESSION lock_wait_timeout = {}", LOCK_WAIT.as_secs()),
        )
        .await?;
        let holder = super::hide::holder(&mut c, schema, table).await?;
        let statements = create_statements(schema, table, &holder, to, source)
            .ok_or_else(|| format!("no fence can be written for `{source}`"))?;
        for s in &statements {
            exec(&mut c, s).await?;
        }
        Ok::<_, String>(())
    }
    .await;
    if r.is_err() {
        let _ = drop_on(&mut c, schema, table).await;
    }
    c.close().await;
    r.map_err(|e| format!("fencing `{schema}`.`{table}` on `{source}`: {e}"))
}

/// Takes the fence off `source`.
pub async fn remove(source: &str, cfg: &Backend, schema: &str, table: &str) -> Result<(), String> {
    let mut c = BackendConn::connect(source, cfg, Default::default(), LOCK_WAIT * 2)
        .await
        .map_err(|e| e.to_string())?;
    let r = drop_on(&mut c, schema, table).await;
    c.close().await;
    r
}

async fn drop_on(c: &mut BackendConn, schema: &str, table: &str) -> Result<(), String> {
    for name in trigger_names(table) {
        exec(
            c,
            &format!(
                "DROP TRIGGER IF EXISTS {}.{}",
                quote_ident(schema),
                quote_ident(&name)
            ),
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::test_rules::{rule, sharded_by};

    fn sharded(a: Algorithm, shards: &[&str]) -> TableRule {
        rule("t", None, sharded_by("id", a, shards))
    }

    #[test]
    fn every_row_moved_off_a_backend_the_new_placement_leaves() {
        let to = sharded(Algorithm::Hash, &["b", "c"]);
        assert_eq!(moved_condition(&to, "a", "NEW").as_deref(), Some("TRUE"));
    }

    #[test]
    fn a_split_fences_only_the_rows_that_left() {
        let to = sharded(Algorithm::Mod, &["a", "b", "c", "d"]);
        assert_eq!(
            moved_condition(&to, "b", "NEW").as_deref(),
            Some("(MOD(MOD(NEW.`id`, 4) + 4, 4)) NOT IN (1)")
        );
        let range = sharded(
            Algorithm::Range {
                bounds: vec![10, 20],
            },
            &["a", "b", "c"],
        );
        assert_eq!(
            moved_condition(&range, "a", "OLD").as_deref(),
            Some(
                "(CASE WHEN OLD.`id` < 10 THEN 0 WHEN OLD.`id` < 20 THEN 1 ELSE 2 END) NOT IN (0)"
            )
        );
        assert!(!possible(&sharded(Algorithm::Hash, &["a", "b"]), "a"));
    }

    #[test]
    fn trigger_names_fit_mariadb_limits() {
        let long = "x".repeat(64);
        for n in trigger_names(&long) {
            assert!(n.len() <= 64, "{n}");
        }
    }
}
