//! What a source backend must offer before a table is moved off it: a row-based binlog with
//! whole row images, the rights to read it, and the table with a primary key.

use std::time::Duration;

use super::columns::{read_shape, Kind, TableShape};
use crate::exec::metadata::quote_literal;
use crate::exec::BackendConn;

/// Longest wait for one check statement.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `f` with the check deadline.
pub async fn bounded<T>(
    f: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(CHECK_TIMEOUT, f)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())))
}

/// Text rows of one query.
pub async fn rows(conn: &mut BackendConn, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let rows = bounded(async { conn.query_rows(sql).await.map_err(|e| e.to_string()) }).await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| v.map(|b| String::from_utf8_lossy(&b).into_owned()))
                .collect()
        })
        .collect())
}

/// The server settings a binlog stream needs, each missing one named with what to set.
pub async fn check_binlog(conn: &mut BackendConn, backend: &str) -> Result<(), String> {
    let got = rows(
        conn,
        "SELECT @@global.log_bin, @@global.binlog_format, @@global.binlog_row_image",
    )
    .await?;
    let row = got.into_iter().next().unwrap_or_default();
    let v = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
    let mut missing = Vec::new();
    if v(0) != "1" {
        missing.push("log_bin (start the server with --log-bin)".to_string());
    }
    if !v(1).eq_ignore_ascii_case("ROW") {
        missing.push(format!("binlog_format=ROW (it is {})", v(1)));
    }
    if !v(2).eq_ignore_ascii_case("FULL") {
        missing.push(format!("binlog_row_image=FULL (it is {})", v(2)));
    }
    if !missing.is_empty() {
        return Err(format!(
            "backend `{backend}` cannot stream the table's changes: it needs {}",
            missing.join(", ")
        ));
    }
    let grants = rows(conn, "SHOW GRANTS FOR CURRENT_USER()").await?;
    let text: String = grants
        .iter()
        .filter_map(|r| r.first().cloned().flatten())
        .map(|g| g.to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join("\n");
    let global = |right: &str| {
        text.lines()
            .any(|l| l.contains(" ON *.* ") && (l.contains("ALL PRIVILEGES") || l.contains(right)))
    };
    let mut lacking = Vec::new();
    if !global("REPLICATION SLAVE") {
        lacking.push("REPLICATION SLAVE");
    }
    if !(global("BINLOG MONITOR") || global("REPLICATION CLIENT") || global("SUPER")) {
        lacking.push("BINLOG MONITOR");
    }
    if !lacking.is_empty() {
        return Err(format!(
            "backend `{backend}`: idgate's account lacks {} ON *.* to read the binlog; \
             GRANT it there",
            lacking.join(" and ")
        ));
    }
    Ok(())
}

/// The table's shape on the source, refused when it is missing, has no primary key, or has
/// ENUM/SET members idgate cannot map from binlog indexes.
pub async fn table_shape(
    conn: &mut BackendConn,
    backend: &str,
    schema: &str,
    table: &str,
) -> Result<TableShape, String> {
    // Between SWITCH and COMPLETE a view may stand in for the table (`hide`): its key is the
    // table's.
    let holder = super::hide::holder(conn, schema, table).await?;
    let shape = bounded(read_shape(conn, schema, &holder))
        .await?
        .ok_or_else(|| format!("backend `{backend}` has no table `{schema}`.`{table}`"))?;
    if shape.primary_key.is_empty() {
        return Err(format!(
            "`{schema}`.`{table}` has no PRIMARY KEY; idgate copies and applies changes by it"
        ));
    }
    for c in &shape.columns {
        if let Kind::Members { members, .. } = &c.kind {
            if members.iter().any(|m| !m.is_ascii()) {
                return Err(format!(
                    "column `{}` has ENUM/SET members that are not ASCII, which idgate cannot \
                     carry from the binlog yet",
                    c.name
                ));
            }
        }
    }
    Ok(shape)
}

/// `SHOW CREATE TABLE` of the table.
pub async fn create_statement(
    conn: &mut BackendConn,
    schema: &str,
    table: &str,
) -> Result<String, String> {
    let got = rows(
        conn,
        &format!(
            "SHOW CREATE TABLE {}.{}",
            super::columns::quote_ident(schema),
            super::columns::quote_ident(table)
        ),
    )
    .await?;
    got.into_iter()
        .next()
        .and_then(|r| r.get(1).cloned().flatten())
        .ok_or_else(|| "SHOW CREATE TABLE gave nothing".into())
}

/// The row count the server estimates.
pub async fn estimated_rows(conn: &mut BackendConn, schema: &str, table: &str) -> i64 {
    let sql = format!(
        "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND \
         TABLE_NAME = {}",
        quote_literal(schema),
        quote_literal(table)
    );
    rows(conn, &sql)
        .await
        .ok()
        .and_then(|r| r.into_iter().next())
        .and_then(|r| r.into_iter().next().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Whether the table holds any row.
pub async fn has_rows(conn: &mut BackendConn, schema: &str, table: &str) -> Result<bool, String> {
    let sql = format!(
        "SELECT 1 FROM {}.{} LIMIT 1",
        super::columns::quote_ident(schema),
        super::columns::quote_ident(table)
    );
    Ok(!rows(conn, &sql).await?.is_empty())
}
