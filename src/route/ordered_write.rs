//! An UPDATE or DELETE of one table with a LIMIT (`UPDATE t SET n = n + 1 WHERE
//! x > 1 ORDER BY id DESC LIMIT 3`) that reaches several shards: each shard alone would take its
//! own first rows, so the statement is rewritten to pick the rows as one server would. The
//! ordered SELECT of their ids runs first across the shards (merged, as any ordered SELECT) and
//! the write names exactly those rows:
//!
//! `UPDATE t SET n = n + 1 WHERE (x > 1) AND t.`id` IN (SELECT `id` FROM (SELECT t.`id` FROM
//! t WHERE x > 1 ORDER BY id DESC LIMIT 3) AS idgate_rows)`
//!
//! The id column must be a unique key by itself (the session checks it before running this),
//! or `IN` would reach rows beyond the LIMIT. The WHERE stays in the write, so a picked row that
//! another session changed meanwhile is left alone, as a locking read would have waited for it.

use sqlparser::ast::{FromTable, Statement, TableFactor, TableWithJoins};

use crate::sql::parse::parse_one;
use crate::sql::select_tokens::SelectText;
use crate::sql::TableRef;

/// The rewritten statement and the table it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderedWrite {
    pub sql: String,
    pub table: TableRef,
    /// `LIMIT 0`: nothing is written, and MariaDB answers without counting matched rows.
    pub limit_zero: bool,
}

/// The derived table the picked ids are read through (MariaDB refuses LIMIT directly in IN).
const DERIVED: &str = "idgate_rows";

/// `stmt` rewritten to write the rows its LIMIT (and ORDER BY) pick, by `id_column`; `None`
/// when it is not a single-table UPDATE/DELETE with a LIMIT, or has RETURNING. (ORDER BY
/// alone only orders each shard's own writes, which shards may do on their own.)
pub fn ordered_write(stmt: &[u8], id_column: &str) -> Option<OrderedWrite> {
    let text = std::str::from_utf8(stmt).ok()?;
    let zero = |l: &Option<sqlparser::ast::Expr>| l.as_ref().is_some_and(|e| e.to_string() == "0");
    let limit_zero;
    let (target, update) = match parse_one(text).ok()? {
        Statement::Update(u) => {
            limit_zero = zero(&u.limit);
            if u.from.is_some() || u.returning.is_some() || u.limit.is_none() {
                return None;
            }
            (single(&u.table)?, true)
        }
        Statement::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
            };
            if !d.tables.is_empty()
                || d.using.is_some()
                || d.returning.is_some()
                || d.limit.is_none()
            {
                return None;
            }
            let [t] = from.as_slice() else {
                return None;
            };
            limit_zero = zero(&d.limit);
            (single(t)?, false)
        }
        _ => return None,
    };
    let st = SelectText::new(text)?;
    let at = |w: &str| st.clause(w).map(|i| st.toks[i].at.start);
    let (where_at, order_at, limit_at) = (at("WHERE"), at("ORDER"), at("LIMIT"));
    let tail = order_at.or(limit_at)?;
    // The table as the client wrote it: after UPDATE's modifiers up to SET, or after FROM.
    let (table_start, table_end) = if update {
        let set = st.clause("SET")?;
        let mut i = st.clause("UPDATE")? + 1;
        while st.is_word(i, "LOW_PRIORITY") || st.is_word(i, "IGNORE") {
            i += 1;
        }
        (st.toks.get(i)?.at.start, st.toks[set].at.start)
    } else {
        let from = st.clause("FROM")?;
        (st.toks.get(from + 1)?.at.start, where_at.unwrap_or(tail))
    };
    let table_text = text.get(table_start..table_end)?.trim();
    let head = text.get(..where_at.unwrap_or(tail))?.trim_end();
    let condition = match where_at {
        Some(w) => Some(text.get(w + "WHERE".len()..tail)?.trim()),
        None => None,
    };
    let order_limit = text.get(tail..st.end)?.trim();
    let id = format!("`{}`", id_column.replace('`', "``"));
    let q = &target.1;
    let filter = match condition {
        Some(c) => format!("WHERE {c} "),
        None => String::new(),
    };
    let picked = format!(
        "{q}.{id} IN (SELECT {id} FROM (SELECT {q}.{id} FROM {table_text} {filter}{order_limit}) \
         AS {DERIVED})"
    );
    let sql = match condition {
        Some(c) => format!("{head} WHERE ({c}) AND {picked}"),
        None => format!("{head} WHERE {picked}"),
    };
    Some(OrderedWrite {
        sql,
        table: target.0,
        limit_zero,
    })
}

/// The one table of a write without joins, and the name its columns are qualified by (its
/// alias, or its own name as written).
fn single(t: &TableWithJoins) -> Option<(TableRef, String)> {
    if !t.joins.is_empty() {
        return None;
    }
    let TableFactor::Table { name, alias, .. } = &t.relation else {
        return None;
    };
    if name.0.len() > 2 {
        return None;
    }
    let table = crate::sql::dml::table_ref(name);
    let qualifier = match alias {
        Some(a) => a.name.to_string(),
        None => name.0.last()?.to_string(),
    };
    Some((table, qualifier))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(sql: &str) -> Option<String> {
        ordered_write(sql.as_bytes(), "id").map(|w| w.sql)
    }

    #[test]
    fn picks_the_rows_by_an_ordered_select_of_their_ids() {
        assert_eq!(
            rewrite("UPDATE t SET n = n + 1 WHERE x > 1 ORDER BY k DESC, id LIMIT 3;").as_deref(),
            Some(
                "UPDATE t SET n = n + 1 WHERE (x > 1) AND t.`id` IN (SELECT `id` FROM (SELECT \
                 t.`id` FROM t WHERE x > 1 ORDER BY k DESC, id LIMIT 3) AS idgate_rows)"
            )
        );
        assert_eq!(
            rewrite("update low_priority ignore app.`t` a set a.n = 0 limit 2").as_deref(),
            Some(
                "update low_priority ignore app.`t` a set a.n = 0 WHERE a.`id` IN (SELECT `id` \
                 FROM (SELECT a.`id` FROM app.`t` a limit 2) AS idgate_rows)"
            )
        );
        let w = ordered_write(
            b"DELETE FROM `app`.`t` WHERE (k = 'x' OR k IS NULL) ORDER BY id LIMIT 1",
            "id",
        )
        .unwrap();
        assert_eq!(
            w.sql,
            "DELETE FROM `app`.`t` WHERE ((k = 'x' OR k IS NULL)) AND `t`.`id` IN (SELECT `id` \
             FROM (SELECT `t`.`id` FROM `app`.`t` WHERE (k = 'x' OR k IS NULL) ORDER BY id \
             LIMIT 1) AS idgate_rows)"
        );
        assert_eq!(
            w.table,
            TableRef {
                schema: Some("app".into()),
                name: "t".into()
            }
        );
    }

    #[test]
    fn leaves_other_writes_alone() {
        for sql in [
            "UPDATE t SET n = 1 WHERE x > 1",
            "DELETE FROM t WHERE x = 1",
            "UPDATE t JOIN u ON t.id = u.id SET t.n = 1",
            "DELETE t FROM t JOIN u ON t.id = u.id WHERE u.x = 1",
            "DELETE FROM t ORDER BY id LIMIT 1 RETURNING id",
            "UPDATE t SET n = 1 ORDER BY id",
            "SELECT * FROM t ORDER BY id LIMIT 1",
        ] {
            assert_eq!(rewrite(sql), None, "{sql}");
        }
    }
}
