//! `EXPLAIN ROUTE <statement>`: the plan idgate would run, without running it — one row per
//! backend with the SQL it would get and how the answers would be combined.

use mysql_common::constants::{ColumnFlags, ColumnType, StatusFlags};
use tokio::io::{AsyncRead, AsyncWrite};

use super::dml::Route;
use super::Session;
use crate::route::Placement;
use crate::sql::{self, StatementKind};
use crate::wire::errors::SqlError;
use crate::wire::packets;

/// The statement after `EXPLAIN ROUTE`, if `stmt` is one.
pub(super) fn explain_route_target(stmt: &[u8]) -> Option<&[u8]> {
    let text = stmt.trim_ascii_start();
    let head = text.get(..7)?;
    if !head.eq_ignore_ascii_case(b"explain") {
        return None;
    }
    let rest = text[7..].trim_ascii_start();
    let word = rest.get(..5)?;
    if !word.eq_ignore_ascii_case(b"route") || rest.get(5).is_some_and(|b| !b.is_ascii_whitespace())
    {
        return None;
    }
    Some(rest[5..].trim_ascii())
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The (backend, sql, merge) rows of the plan for `stmt`.
    fn explain_rows(&self, stmt: &[u8]) -> Result<Vec<[String; 3]>, SqlError> {
        let sql_text = String::from_utf8_lossy(stmt).into_owned();
        let default = self.proxy.default_pool.name.clone();
        let row = |b: &str, merge: &str| [b.to_string(), sql_text.clone(), merge.to_string()];
        match sql::classify(stmt) {
            StatementKind::Insert | StatementKind::Replace
                if self.proxy.tables.mentioned_in(stmt) =>
            {
                let a = sql::analyze_insert(stmt)?;
                let schema = a.table.schema.clone().or_else(|| {
                    self.db
                        .as_ref()
                        .map(|d| String::from_utf8_lossy(d).into_owned())
                });
                let Some(rule) = self.proxy.tables.lookup(schema.as_deref(), &a.table.name) else {
                    return Ok(vec![row(&default, "none")]);
                };
                let ids = match &rule.generator {
                    Some(g) => format!("ids from generator `{g}` into `{}`; ", rule.id_column),
                    None => String::new(),
                };
                let merge = match &rule.placement {
                    Placement::Single { .. } => format!("{ids}one backend"),
                    Placement::Broadcast { .. } => format!("{ids}every row on every backend; first backend's counts"),
                    Placement::Sharded { columns, algorithm, .. } => format!(
                        "{ids}rows split by {} ({}); affected rows summed; all-or-nothing in autocommit",
                        columns.join(", "),
                        algorithm.name()
                    ),
                };
                Ok(rule.backends().iter().map(|b| row(b, &merge)).collect())
            }
            _ => Ok(match self.route_dml(stmt)? {
                None => vec![row(&default, "none")],
                Some(Route::One(b)) => vec![row(&b, "none")],
                Some(Route::Concat(bs)) => bs.iter().map(|b| row(b, "rows concatenated")).collect(),
                Some(Route::Write {
                    backends,
                    broadcast,
                }) => {
                    let merge = if broadcast {
                        "every backend; first backend's counts"
                    } else {
                        "affected rows summed; all-or-nothing in autocommit"
                    };
                    backends.iter().map(|b| row(b, merge)).collect()
                }
                Some(Route::Everywhere(bs)) => bs
                    .iter()
                    .map(|b| row(b, "run on every backend in turn"))
                    .collect(),
                Some(Route::Aggregate(bs, aggs)) => {
                    let merge = format!("one row per shard combined: {aggs:?}");
                    bs.iter().map(|b| row(b, &merge)).collect()
                }
                Some(Route::Sorted {
                    backends,
                    order,
                    limit,
                }) => {
                    let keys: Vec<String> = order
                        .iter()
                        .map(|(c, d)| format!("{c}{}", if *d { " DESC" } else { "" }))
                        .collect();
                    let merge = format!(
                        "k-way merge by [{}]{}",
                        keys.join(", "),
                        limit
                            .map(|l| format!(", first {l} rows"))
                            .unwrap_or_default()
                    );
                    backends.iter().map(|b| row(b, &merge)).collect()
                }
            }),
        }
    }

    /// Answers `EXPLAIN ROUTE …` with a result set; false when the client got an error.
    pub(super) fn explain_route(&mut self, stmt: &[u8], more: bool) -> bool {
        let rows = match self.explain_rows(stmt) {
            Ok(r) => r,
            Err(e) => {
                self.send_error(&e);
                return false;
            }
        };
        let mut status = self.status;
        if more {
            status |= StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits();
        }
        let status = StatusFlags::from_bits_retain(status);
        self.writer.write(&[3]);
        for name in ["backend", "sql", "merge"] {
            let start = self.writer.begin();
            let b = self.writer.payload();
            packets::put_lenenc_str(b, b"def");
            for part in [&b""[..], b"", b"", name.as_bytes(), b""] {
                packets::put_lenenc_str(b, part);
            }
            b.push(0x0c);
            b.extend_from_slice(&45u16.to_le_bytes()); // utf8mb4_general_ci
            b.extend_from_slice(&(4 * 65535u32).to_le_bytes());
            b.push(ColumnType::MYSQL_TYPE_VAR_STRING as u8);
            b.extend_from_slice(&ColumnFlags::NOT_NULL_FLAG.bits().to_le_bytes());
            b.extend_from_slice(&[0x27, 0, 0]);
            self.writer.end(start);
        }
        let deprecate = self.deprecate_eof();
        if !deprecate {
            let start = self.writer.begin();
            packets::eof(self.writer.payload(), 0, status);
            self.writer.end(start);
        }
        for r in rows {
            let start = self.writer.begin();
            for v in &r {
                packets::put_lenenc_str(self.writer.payload(), v.as_bytes());
            }
            self.writer.end(start);
        }
        let start = self.writer.begin();
        if deprecate {
            packets::ok(
                self.writer.payload(),
                packets::EOF_HEADER,
                0,
                0,
                status,
                0,
                b"",
            );
        } else {
            packets::eof(self.writer.payload(), 0, status);
        }
        self.writer.end(start);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::explain_route_target;

    #[test]
    fn recognises_explain_route() {
        assert_eq!(
            explain_route_target(b"EXPLAIN ROUTE SELECT 1"),
            Some(&b"SELECT 1"[..])
        );
        assert_eq!(
            explain_route_target(b"  explain\nroute  DELETE FROM t "),
            Some(&b"DELETE FROM t"[..])
        );
        assert_eq!(
            explain_route_target(b"explain  route\tDELETE FROM t "),
            Some(&b"DELETE FROM t"[..])
        );
        assert_eq!(explain_route_target(b"EXPLAIN SELECT 1"), None);
        assert_eq!(explain_route_target(b"EXPLAIN routes"), None);
    }
}
