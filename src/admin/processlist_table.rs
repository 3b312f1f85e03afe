//! `information_schema.PROCESSLIST` read through idgate: a SELECT naming it runs on the default
//! backend with idgate's sessions in its place, as a literal table named `PROCESSLIST` (a CTE),
//! so the ids a tool reads there are the ones `KILL` takes, as in `SHOW PROCESSLIST`. Each row's
//! figures (memory, examined rows, the thread's TID) are those of the backend thread the session
//! holds, a busy one first; a session holding none shows zeros. QUERY_ID is shown only from a
//! thread on the default backend, whose query ids are the ones `KILL QUERY ID` takes (another
//! backend's could name another session's statement there). As on MariaDB
//! without the PROCESS right, a user sees its own user's sessions; an idgate admin every one.

use std::ops::Range;
use std::sync::Arc;

use mysql_common::constants::{ColumnFlags, ColumnType};

use super::processlist::{activity, Activity, Caller};
use crate::proxy::Proxy;
use crate::sql::{BindError, BoundColumn, BoundRow};

/// The columns of MariaDB 10.11's `information_schema.PROCESSLIST`, in order.
const COLUMNS: &[(&str, ColumnType, u16)] = {
    use ColumnType::*;
    const TEXT: u16 = 45;
    const BINARY: u16 = 63;
    &[
        ("ID", MYSQL_TYPE_LONGLONG, BINARY),
        ("USER", MYSQL_TYPE_VAR_STRING, TEXT),
        ("HOST", MYSQL_TYPE_VAR_STRING, TEXT),
        ("DB", MYSQL_TYPE_VAR_STRING, TEXT),
        ("COMMAND", MYSQL_TYPE_VAR_STRING, TEXT),
        ("TIME", MYSQL_TYPE_LONG, BINARY),
        ("STATE", MYSQL_TYPE_VAR_STRING, TEXT),
        ("INFO", MYSQL_TYPE_BLOB, TEXT),
        ("TIME_MS", MYSQL_TYPE_NEWDECIMAL, BINARY),
        ("STAGE", MYSQL_TYPE_TINY, BINARY),
        ("MAX_STAGE", MYSQL_TYPE_TINY, BINARY),
        ("PROGRESS", MYSQL_TYPE_NEWDECIMAL, BINARY),
        ("MEMORY_USED", MYSQL_TYPE_LONGLONG, BINARY),
        ("MAX_MEMORY_USED", MYSQL_TYPE_LONGLONG, BINARY),
        ("EXAMINED_ROWS", MYSQL_TYPE_LONG, BINARY),
        ("QUERY_ID", MYSQL_TYPE_LONGLONG, BINARY),
        ("INFO_BINARY", MYSQL_TYPE_BLOB, BINARY),
        ("TID", MYSQL_TYPE_LONGLONG, BINARY),
    ]
};

fn columns() -> Vec<BoundColumn> {
    COLUMNS
        .iter()
        .map(|&(name, ty, charset)| BoundColumn {
            name: name.as_bytes().to_vec(),
            ty,
            charset,
            flags: ColumnFlags::empty(),
            decimals: if ty == ColumnType::MYSQL_TYPE_NEWDECIMAL {
                3
            } else {
                0
            },
        })
        .collect()
}

/// `stmt` (a SELECT) with `tables` (the ranges naming `information_schema.PROCESSLIST`) reading
/// idgate's sessions instead.
pub async fn rewrite(
    proxy: &Arc<Proxy>,
    caller: Caller<'_>,
    stmt: &[u8],
    tables: &[Range<usize>],
) -> Result<Vec<u8>, BindError> {
    let rows = rows(proxy, &caller).await;
    let table = crate::sql::render_derived(&columns(), &rows)?;
    let name = cte_name(stmt, tables);
    let mut parts: Vec<(Range<usize>, Vec<u8>)> =
        tables.iter().map(|r| (r.clone(), name.clone())).collect();
    parts.extend(connection_ids(stmt, caller.session));
    parts.sort_by_key(|(r, _)| r.start);
    let mut out = b"WITH ".to_vec();
    out.extend_from_slice(&name);
    out.extend_from_slice(b" AS ");
    out.extend_from_slice(&table);
    out.push(b' ');
    out.extend_from_slice(&crate::sql::splice(stmt, &parts));
    Ok(out)
}

/// `CONNECTION_ID()` in such a statement is idgate's id of the session, the one its table
/// shows (the backend would answer its own thread's); a select item keeps the name it had.
fn connection_ids(stmt: &[u8], session: u32) -> Vec<(Range<usize>, Vec<u8>)> {
    crate::sql::connection_id_calls(stmt)
        .into_iter()
        .map(|(r, item)| {
            let mut text = session.to_string().into_bytes();
            if item {
                text.extend_from_slice(b" AS ");
                text.extend_from_slice(
                    &crate::route::quote_ident(&String::from_utf8_lossy(&stmt[r.clone()]))
                        .into_bytes(),
                );
            }
            (r, text)
        })
        .collect()
}

/// The table's name as the statement first spells it (`processlist`, `PROCESSLIST`), backticked:
/// columns qualified by that spelling then find it, as MariaDB finds its own table.
fn cte_name(stmt: &[u8], tables: &[Range<usize>]) -> Vec<u8> {
    let spelled = tables
        .first()
        .and_then(|r| stmt.get(r.clone()))
        .and_then(|t| t.rsplit(|&b| b == b'.').next())
        .map(|t| t.trim_ascii())
        .unwrap_or(b"PROCESSLIST");
    let name: Vec<u8> = spelled.iter().copied().filter(|&b| b != b'`').collect();
    let mut out = vec![b'`'];
    out.extend_from_slice(&name);
    out.push(b'`');
    out
}

async fn rows(proxy: &Arc<Proxy>, caller: &Caller<'_>) -> Vec<BoundRow> {
    let sessions = super::processlist::visible_to(proxy, caller.user);
    let ids: Vec<u32> = sessions.iter().map(|r| r.id).collect();
    let found = tokio::time::timeout(
        super::processlist::BACKEND_LOOK,
        activity(proxy, &ids, false),
    )
    .await
    .unwrap_or_default();
    sessions
        .into_iter()
        .map(|r| {
            let mut a = found.get(&r.id).cloned().unwrap_or_default();
            if r.id == caller.session {
                a.state = Some("Filling schema table".into());
                a.info = Some(String::from_utf8_lossy(caller.statement).into_owned());
            } else if a.sleeping {
                // An idle session's thread has nothing to say about a statement.
                a.state = None;
                a.info = None;
            }
            row(&r, a, &proxy.default_pool.name)
        })
        .collect()
}

fn row(r: &crate::proxy::sessions::Row, a: Activity, default_backend: &str) -> BoundRow {
    let text = |s: &str| Some(s.as_bytes().to_vec());
    let figure = |i: usize, or: &str| {
        a.figures
            .get(i)
            .cloned()
            .flatten()
            .map_or_else(|| text(or), |v| Some(v.into_bytes()))
    };
    let time_ms = format!("{}.000", r.time_s * 1000);
    let busy = !a.figures.is_empty() && !a.sleeping;
    vec![
        text(&r.id.to_string()),
        text(&r.user),
        text(&r.host),
        r.db.as_deref().and_then(text),
        text(r.command),
        text(&r.time_s.to_string()),
        a.state.as_deref().and_then(text),
        a.info.as_deref().and_then(text),
        if busy {
            figure(0, &time_ms)
        } else {
            text(&time_ms)
        },
        figure(1, "0"),
        figure(2, "0"),
        Some(a.progress.unwrap_or_else(|| "0.000".into()).into_bytes()),
        figure(3, "0"),
        figure(4, "0"),
        figure(5, "0"),
        if a.backend == default_backend {
            figure(6, "0")
        } else {
            text("0")
        },
        a.info.as_deref().and_then(text),
        figure(7, "0"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_without_a_backend_thread_shows_zeros_and_its_own_time() {
        let r = crate::proxy::sessions::Row {
            id: 7,
            user: "app".into(),
            host: "10.0.0.1".into(),
            db: None,
            command: "Sleep",
            time_s: 3,
            in_transaction: false,
            pinned: None,
        };
        let row = row(&r, Activity::default(), "b0");
        assert_eq!(row.len(), COLUMNS.len());
        let shown: Vec<Option<&str>> = row
            .iter()
            .map(|v| v.as_deref().map(|b| std::str::from_utf8(b).unwrap()))
            .collect();
        assert_eq!(
            shown,
            [
                Some("7"),
                Some("app"),
                Some("10.0.0.1"),
                None,
                Some("Sleep"),
                Some("3"),
                None,
                None,
                Some("3000.000"),
                Some("0"),
                Some("0"),
                Some("0.000"),
                Some("0"),
                Some("0"),
                Some("0"),
                Some("0"),
                None,
                Some("0"),
            ]
        );
    }

    #[test]
    fn connection_id_is_the_sessions_and_a_select_item_keeps_its_name() {
        let stmt =
            b"SELECT connection_id(), ID = CONNECTION_ID ( ) FROM t WHERE ID=CONNECTION_ID()";
        let parts = connection_ids(stmt, 42);
        let texts: Vec<&[u8]> = parts.iter().map(|(_, t)| t.as_slice()).collect();
        assert_eq!(texts, [&b"42 AS `connection_id()`"[..], b"42", b"42"]);
        let spliced = crate::sql::splice(stmt, &parts);
        assert_eq!(
            spliced,
            b"SELECT 42 AS `connection_id()`, ID = 42 FROM t WHERE ID=42".to_vec()
        );
        // A column or a string of that name is not a call.
        assert!(connection_ids(b"SELECT t.CONNECTION_ID, 'CONNECTION_ID()' FROM t", 1).is_empty());
    }

    #[test]
    fn a_query_id_is_shown_only_from_the_default_backend() {
        let r = crate::proxy::sessions::Row {
            id: 9,
            user: "app".into(),
            host: "h".into(),
            db: None,
            command: "Query",
            time_s: 0,
            in_transaction: false,
            pinned: None,
        };
        let figures: Vec<Option<String>> = (1..=8).map(|i| Some(i.to_string())).collect();
        let on = |backend: &str| Activity {
            backend: backend.into(),
            figures: figures.clone(),
            ..Default::default()
        };
        let query_id = |row: BoundRow| row[15].clone().unwrap();
        assert_eq!(query_id(row(&r, on("b0"), "b0")), b"7");
        assert_eq!(query_id(row(&r, on("shard1"), "b0")), b"0");
    }

    #[test]
    fn the_table_is_a_cte_named_as_the_one_it_replaces() {
        let stmt = b"SELECT ID FROM information_schema.PROCESSLIST WHERE ID = 7";
        let table = crate::sql::render_derived(&columns(), &[]).unwrap();
        assert!(
            table.starts_with(b"(SELECT CAST(NULL AS SIGNED) AS `ID`"),
            "{}",
            String::from_utf8_lossy(&table)
        );
        assert_eq!(
            cte_name(stmt, std::slice::from_ref(&(15..45))),
            b"`PROCESSLIST`"
        );
        let lower = b"SELECT 1 FROM information_schema . `processlist`";
        assert_eq!(
            cte_name(lower, std::slice::from_ref(&(14..lower.len()))),
            b"`processlist`"
        );
    }
}
