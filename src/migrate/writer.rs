//! Writes moved rows to the backends their new placement gives them, in bounded batches: the
//! copy's chunks and the catch-up's changes alike. Every write is idempotent (REPLACE of the
//! whole row, DELETE by primary key), so a batch applied twice after a restart leaves the same
//! rows. A row whose new place is the backend it is read from is already there and is skipped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::columns::{quote_ident, value_literal, TableShape};
use crate::config::Backend;
use crate::exec::BackendConn;
use crate::route::TableRule;

/// A row in the copy's form (see `columns`).
pub type Row = Vec<Option<Vec<u8>>>;

/// Longest wait for one write statement.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of SQL per statement, well under any `max_allowed_packet`.
const STATEMENT_BYTES: usize = 1 << 20;

/// One change to apply, in binlog order.
#[derive(Debug, Clone)]
pub enum Change {
    /// The row as it is now (written whole).
    Upsert(Row),
    /// The row that is gone (its primary key is what counts).
    Delete(Row),
}

/// Where moved rows go, and the sessions that write them.
pub struct Writer {
    pub schema: String,
    pub table: String,
    pub shape: Arc<TableShape>,
    pub target: Arc<TableRule>,
    backends: BTreeMap<String, Backend>,
    conns: BTreeMap<String, BackendConn>,
}

/// Settings of every session that writes moved rows: values as the copy reads them (UTC
/// times), an explicit 0 stays 0, no check of foreign keys to rows not moved yet, and the fence
/// of a switched table passed (`fence::BYPASS`: the stream back to the old placement).
const SESSION_SETUP: &str = "SET NAMES utf8mb4, time_zone = '+00:00', \
    sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION', foreign_key_checks = 0, \
    @idgate_fence_bypass = 1";

impl Writer {
    pub fn new(
        schema: &str,
        table: &str,
        shape: Arc<TableShape>,
        target: Arc<TableRule>,
        backends: BTreeMap<String, Backend>,
    ) -> Writer {
        Writer {
            schema: schema.into(),
            table: table.into(),
            shape,
            target,
            backends,
            conns: BTreeMap::new(),
        }
    }

    fn qualified(&self) -> String {
        format!("{}.{}", quote_ident(&self.schema), quote_ident(&self.table))
    }

    /// The backend the new placement gives `row` (for a broadcast target, all of them).
    pub fn places(&self, row: &Row) -> Result<Vec<String>, String> {
        self.target
            .backends_of_row(|c| self.shape.shard_value(row, c))
            .map(<[String]>::to_vec)
    }

    /// Applies `changes` in order; rows placed on `from` (the backend they were read on) are
    /// left alone. Each backend's share runs in one transaction. Returns how many changes went
    /// to another backend.
    pub async fn apply(&mut self, from: &str, changes: &[Change]) -> Result<usize, String> {
        let mut per_backend: BTreeMap<String, Vec<&Change>> = BTreeMap::new();
        let mut moved = 0;
        for c in changes {
            let row = match c {
                Change::Upsert(r) | Change::Delete(r) => r,
            };
            let mut elsewhere = false;
            for b in self.places(row)? {
                if b != from {
                    per_backend.entry(b).or_default().push(c);
                    elsewhere = true;
                }
            }
            moved += usize::from(elsewhere);
        }
        // Each backend's share is written at the same time as the others'.
        let mut work = Vec::new();
        for (backend, changes) in per_backend {
            let statements = self.statements(&changes);
            let conn = self.take_conn(&backend).await?;
            work.push(async move {
                let r = run_on(conn, &backend, &statements).await;
                (backend, r)
            });
        }
        let mut first_error = None;
        for (backend, r) in futures_util::future::join_all(work).await {
            match r {
                Ok(conn) => {
                    self.conns.insert(backend, conn);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(moved), Err)
    }

    /// The statements for one backend's changes: runs of upserts as multi-row REPLACE, runs of
    /// deletes as one DELETE, each bounded in size, order kept.
    fn statements(&self, changes: &[&Change]) -> Vec<String> {
        let table = self.qualified();
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut cur_is_upsert = None;
        for c in changes {
            let upsert = matches!(c, Change::Upsert(_));
            if cur_is_upsert != Some(upsert) || cur.len() > STATEMENT_BYTES {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur_is_upsert = Some(upsert);
            }
            match c {
                Change::Upsert(row) => {
                    if cur.is_empty() {
                        cur = format!(
                            "REPLACE INTO {table} ({}) VALUES ",
                            self.shape.column_list()
                        );
                    } else {
                        cur.push_str(", ");
                    }
                    cur.push('(');
                    for (i, col) in self.shape.columns.iter().enumerate() {
                        if i > 0 {
                            cur.push_str(", ");
                        }
                        cur.push_str(&value_literal(
                            &col.kind,
                            row.get(i).and_then(|v| v.as_deref()),
                        ));
                    }
                    cur.push(')');
                }
                Change::Delete(row) => {
                    if cur.is_empty() {
                        cur = format!("DELETE FROM {table} WHERE ");
                    } else {
                        cur.push_str(" OR ");
                    }
                    cur.push('(');
                    cur.push_str(&self.shape.pk_equals(row));
                    cur.push(')');
                }
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    /// The session to `backend`, taken out while it writes (connected when there is none).
    async fn take_conn(&mut self, backend: &str) -> Result<BackendConn, String> {
        if let Some(c) = self.conns.remove(backend) {
            return Ok(c);
        }
        let cfg = self
            .backends
            .get(backend)
            .ok_or_else(|| format!("backend `{backend}` is not configured"))?;
        let mut c = BackendConn::connect(backend, cfg, false, WRITE_TIMEOUT)
            .await
            .map_err(|e| format!("writing to backend `{backend}`: {e}"))?;
        exec(&mut c, SESSION_SETUP).await?;
        Ok(c)
    }

    /// Closes every session.
    pub async fn close(&mut self) {
        for (_, c) in std::mem::take(&mut self.conns) {
            c.close().await;
        }
    }
}

/// Runs `statements` on `backend` in one transaction; the session comes back when it may be
/// used again (a session that failed mid-transaction is closed).
async fn run_on(
    mut conn: BackendConn,
    backend: &str,
    statements: &[String],
) -> Result<BackendConn, String> {
    let single = statements.len() == 1;
    let r = async {
        if !single {
            exec(&mut conn, "BEGIN").await?;
        }
        for s in statements {
            exec(&mut conn, s).await?;
        }
        if !single {
            exec(&mut conn, "COMMIT").await?;
        }
        Ok::<_, String>(())
    }
    .await;
    match r {
        Ok(()) => Ok(conn),
        Err(e) => {
            conn.close().await;
            Err(format!("writing to backend `{backend}`: {e}"))
        }
    }
}

/// Runs one statement with the write deadline.
pub async fn exec(conn: &mut BackendConn, sql: &str) -> Result<(), String> {
    match tokio::time::timeout(WRITE_TIMEOUT, conn.query_drop(sql)).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no answer within {} s", WRITE_TIMEOUT.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::columns::{Column, Kind};
    use crate::route::test_rules::{rule, sharded};

    fn writer() -> Writer {
        let shape = TableShape {
            columns: vec![
                Column {
                    name: "id".into(),
                    kind: Kind::Integer {
                        bits: 64,
                        unsigned: false,
                    },
                },
                Column {
                    name: "v".into(),
                    kind: Kind::Bytes,
                },
            ],
            primary_key: vec![0],
        };
        let rule = rule("t", None, sharded("id", &["a", "b"]));
        Writer::new("s", "t", Arc::new(shape), Arc::new(rule), BTreeMap::new())
    }

    fn row(id: &str, v: &[u8]) -> Row {
        vec![Some(id.as_bytes().to_vec()), Some(v.to_vec())]
    }

    #[test]
    fn rows_go_where_the_new_placement_puts_them() {
        let w = writer();
        assert_eq!(w.places(&row("3", b"")).unwrap(), vec!["b".to_string()]);
        assert_eq!(w.places(&row("4", b"")).unwrap(), vec!["a".to_string()]);
        assert!(w.places(&vec![None, None]).is_err());
    }

    #[test]
    fn runs_of_changes_become_one_statement_each_in_order() {
        let w = writer();
        let a = Change::Upsert(row("1", b"x"));
        let b = Change::Upsert(row("3", b"y"));
        let d = Change::Delete(row("5", b""));
        let s = w.statements(&[&a, &b, &d, &a]);
        assert_eq!(
            s,
            vec![
                "REPLACE INTO `s`.`t` (`id`, `v`) VALUES ('1', X'78'), ('3', X'79')".to_string(),
                "DELETE FROM `s`.`t` WHERE (`id` = '5')".to_string(),
                "REPLACE INTO `s`.`t` (`id`, `v`) VALUES ('1', X'78')".to_string(),
            ]
        );
    }
}
