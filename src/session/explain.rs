//! `EXPLAIN ROUTE <statement>`: the plan idgate would run, without running it — one row per
//! backend with the SQL it would get and how the answers would be combined.

use mysql_common::constants::{ColumnFlags, ColumnType};
use tokio::io::{AsyncRead, AsyncWrite};

use super::dml::Route;
use super::Session;
use crate::route::{self, Placement, Plan};
use crate::sql::{self, StatementKind};
use crate::wire::errors::SqlError;
use crate::wire::packets;

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
                let target = rule.backends().iter().map(|b| row(b, &merge));
                let sql::InsertBody::Select { query } = &a.body else {
                    return Ok(target.collect());
                };
                let source = stmt.get(query.clone()).unwrap_or_default();
                let mut rows = self.source_rows(source)?;
                rows.extend(target.map(|[b, q, m]| [b, q, format!("target: {m}")]));
                Ok(rows)
            }
            StatementKind::Select | StatementKind::Update | StatementKind::Delete
                if self.route_dml(stmt).is_err() =>
            {
                match self.with_plan_context(|ctx| route::subquery_plan(stmt, ctx)) {
                    Some(Plan::Subqueries(subs)) => self.subquery_rows(stmt, &subs),
                    _ => self.route_dml(stmt).map(|_| Vec::new()),
                }
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
                Some(Route::Merge(bs, bound)) => {
                    let merge = bound.describe();
                    let shard_sql = String::from_utf8_lossy(&bound.shard_sql).into_owned();
                    bs.iter()
                        .map(|b| [b.clone(), shard_sql.clone(), merge.clone()])
                        .collect()
                }
            }),
        }
    }

    /// The rows of an INSERT … SELECT's source: its own plan, read into idgate first.
    fn source_rows(&self, source: &[u8]) -> Result<Vec<[String; 3]>, SqlError> {
        let rows = self.explain_rows(source)?;
        Ok(rows
            .into_iter()
            .map(|[b, q, m]| [b, q, format!("source, read into idgate first: {m}")])
            .collect())
    }

    /// The rows of a statement whose subqueries over sharded tables run first: each inner query's
    /// plan, then the outer statement, whose route depends on the rows bound into it.
    fn subquery_rows(
        &self,
        stmt: &[u8],
        subs: &[sql::Subquery],
    ) -> Result<Vec<[String; 3]>, SqlError> {
        let mut rows = Vec::new();
        // Correlated ones the statement then runs in the gateway stay in it.
        let later: Vec<bool> = (0..subs.len())
            .map(|i| self.with_plan_context(|ctx| route::correlated_later(stmt, subs, i, ctx)))
            .collect();
        for (n, s) in subs.iter().enumerate() {
            if later[n] {
                continue;
            }
            let inner = stmt.get(s.inner.clone()).unwrap_or_default();
            let what = match s.kind {
                sql::SubqueryUse::In => "IN list",
                sql::SubqueryUse::Exists => "EXISTS, first row",
                sql::SubqueryUse::Scalar => "scalar",
                sql::SubqueryUse::Derived => "derived table",
                sql::SubqueryUse::Quantified => "ANY/SOME/ALL set",
            };
            for [b, q, m] in self.explain_rows(inner)? {
                let m = format!("subquery {} ({what}), run first and bound in: {m}", n + 1);
                rows.push([b, q, m]);
            }
        }
        // The outer statement with a stand-in for each subquery's rows: when that is a join
        // idgate runs in the gateway, its steps (a derived table's rows as one more table).
        let parts: Vec<(std::ops::Range<usize>, Vec<u8>)> = subs
            .iter()
            .enumerate()
            .filter(|&(n, _)| !later[n])
            .map(|(n, s)| {
                let text = format!("(SELECT 'rows of subquery {}')", n + 1).into_bytes();
                (s.replace.clone(), text)
            })
            .collect();
        let shown = sql::splice(stmt, &parts);
        if let Err(e) = self.route_dml(&shown) {
            if let Some(Ok(steps)) = self.explain_join(&shown, &e) {
                rows.extend(steps.into_iter().map(|[b, q, m]| {
                    [
                        b,
                        q,
                        format!("outer statement, its subqueries' rows bound in: {m}"),
                    ]
                }));
                return Ok(rows);
            }
        }
        rows.push([
            "(after the subqueries)".to_string(),
            String::from_utf8_lossy(stmt).into_owned(),
            "outer statement, routed once the subqueries' rows are bound in".to_string(),
        ]);
        Ok(rows)
    }

    /// Answers `EXPLAIN ROUTE …` with a result set; false when the client got an error.
    pub(super) fn explain_route(&mut self, stmt: &[u8], more: bool) -> bool {
        let rows = match self
            .explain_rows(stmt)
            .or_else(|e| self.explain_join(stmt, &e).unwrap_or(Err(e)))
        {
            Ok(r) => r,
            Err(e) => {
                self.send_error(&e);
                return false;
            }
        };
        let columns: Vec<Vec<u8>> = ["backend", "sql", "merge"]
            .iter()
            .map(|name| {
                let mut def = Vec::new();
                // utf8mb4_general_ci text, as SHOW statements answer.
                packets::column_def(
                    &mut def,
                    name.as_bytes(),
                    45,
                    4 * 65535,
                    ColumnType::MYSQL_TYPE_VAR_STRING,
                    ColumnFlags::NOT_NULL_FLAG,
                    0x27,
                );
                def
            })
            .collect();
        let packed: Vec<Vec<u8>> = rows
            .iter()
            .map(|r| {
                let mut p = Vec::new();
                for v in r {
                    packets::put_lenenc_str(&mut p, v.as_bytes());
                }
                p
            })
            .collect();
        let status = self.status_with(more);
        self.send_result_set(&columns, packed.iter().map(Vec::as_slice), 0, status);
        true
    }
}
