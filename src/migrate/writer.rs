//! Writes moved rows to the backends their new placement gives them, in bounded batches: the
//! copy's chunks and the catch-up's changes alike, through the batch writer a client's INSERT …
//! SELECT uses (`exec::primitives::bulk_write`, on the move's own connections). Every write is
//! idempotent (REPLACE of the whole row, DELETE by primary key), so a batch applied twice after
//! a restart leaves the same rows. A row whose new place is the backend it is read from is
//! already there and is skipped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::columns::{quote_ident, value_literal, TableShape};
use super::write_cursor::MoveCursor;
use crate::config::Backend;
use crate::exec::primitives::bulk_write::{write_batches, Outcome, Share};
use crate::exec::BackendConn;
use crate::route::TableRule;
use crate::wire::packets;

/// A row in the copy's form (see `columns`).
pub type Row = Vec<Option<Vec<u8>>>;

/// Longest wait for one write statement.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
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
    /// Connections kept between writes, by backend.
    conns: BTreeMap<String, BackendConn>,
    /// Backends where the table goes by another name (`hide`: renamed while a view stands in).
    renamed: BTreeMap<String, String>,
}

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
            renamed: BTreeMap::new(),
        }
    }

    /// Writes on `backend` go to the table named `name` there.
    pub fn renamed_on(mut self, backend: &str, name: String) -> Writer {
        self.renamed.insert(backend.to_string(), name);
        self
    }

    fn qualified(&self) -> String {
        format!("{}.{}", quote_ident(&self.schema), quote_ident(&self.table))
    }

    /// The table's qualified name on `backend`.
    fn qualified_on(&self, backend: &str) -> String {
        match self.renamed.get(backend) {
            Some(n) => format!("{}.{}", quote_ident(&self.schema), quote_ident(n)),
            None => self.qualified(),
        }
    }

    /// The backend the new placement gives `row` (for a broadcast target, all of them).
    pub fn places(&self, row: &Row) -> Result<Vec<String>, String> {
        self.target
            .backends_of_row(|c| self.shape.shard_value(row, c))
            .map(<[String]>::to_vec)
    }

    /// Applies `changes` in order; rows placed on `from` (the backend they were read on) are
    /// left alone. Each backend's share runs in one transaction, all written at the same time.
    /// Returns how many changes went to another backend.
    pub async fn apply(&mut self, from: &str, changes: &[Change]) -> Result<usize, String> {
        let mut per_backend: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut moved = 0;
        for (i, c) in changes.iter().enumerate() {
            let row = match c {
                Change::Upsert(r) | Change::Delete(r) => r,
            };
            let mut elsewhere = false;
            for b in self.places(row)? {
                if b != from {
                    per_backend.entry(b).or_default().push(i);
                    elsewhere = true;
                }
            }
            moved += usize::from(elsewhere);
        }
        let shares: Vec<Share> = per_backend
            .into_iter()
            .map(|(backend, items)| Share { backend, items })
            .collect();
        let tables: Vec<String> = shares
            .iter()
            .map(|s| self.qualified_on(&s.backend))
            .collect();
        let (table, shape) = (self.qualified(), self.shape.clone());
        let mut cursor = MoveCursor::new(&self.backends, &mut self.conns);
        let render = |share: usize, items: &[usize]| {
            let (sql, taken) = render_run(&tables[share], &shape, changes, items);
            (sql.into_bytes(), taken)
        };
        let what = "COMMIT of moved rows";
        let written = write_batches(&mut cursor, &shares, render, "idgate_move", what).await;
        cursor.finish(written.is_ok()).await;
        match written {
            Ok(Outcome::Written(_)) => Ok(moved),
            Ok(Outcome::Failed(err)) => {
                let (code, _, msg) = packets::parse_err(&err);
                Err(format!(
                    "writing moved rows of {table}: error {code}: {}",
                    String::from_utf8_lossy(msg)
                ))
            }
            Ok(Outcome::Refused(e)) => Err(e.message),
            Err(broken) => Err(broken),
        }
    }

    /// Closes every session.
    pub async fn close(&mut self) {
        for (_, c) in std::mem::take(&mut self.conns) {
            c.close().await;
        }
    }
}

/// One statement for the first of `items` (indexes into `changes`) and those after it of the
/// same kind, bounded in size: upserts as a multi-row REPLACE, deletes as one DELETE. Returns
/// it and how many items it took.
fn render_run(
    table: &str,
    shape: &TableShape,
    changes: &[Change],
    items: &[usize],
) -> (String, usize) {
    let mut cur = String::new();
    let mut taken = 0;
    let first_upsert = items
        .first()
        .is_some_and(|&i| matches!(changes[i], Change::Upsert(_)));
    for &i in items {
        let c = &changes[i];
        if matches!(c, Change::Upsert(_)) != first_upsert || cur.len() > STATEMENT_BYTES {
            break;
        }
        match c {
            Change::Upsert(row) => {
                if cur.is_empty() {
                    cur = format!("REPLACE INTO {table} ({}) VALUES ", shape.column_list());
                } else {
                    cur.push_str(", ");
                }
                cur.push('(');
                for (i, col) in shape.columns.iter().enumerate() {
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
                cur.push_str(&shape.pk_equals(row));
                cur.push(')');
            }
        }
        taken += 1;
    }
    (cur, taken)
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
        let changes = [a.clone(), b, d, a];
        let items: Vec<usize> = (0..changes.len()).collect();
        let mut s = Vec::new();
        let mut next = 0;
        while next < items.len() {
            let (sql, taken) = render_run(&w.qualified(), &w.shape, &changes, &items[next..]);
            s.push(sql);
            next += taken;
        }
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
