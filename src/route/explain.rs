//! What `EXPLAIN ROUTE <statement>` shows: the plan idgate would run, without running it, as
//! rows of (backend, the SQL it would get, how the answers combine). Pure: made from the same
//! planning the statement itself would get; the session only writes the rows.

use super::join_steps::{join_steps, BATCH};
use super::plan::Route;
use super::statement::{reads_placed_tables, Plan, StatementContext};
use super::statement_gateway::{correlated_later, join_plan, subquery_plan};
use super::statement_load::{plan_load_data, plan_other, refuse_bypass};
use super::Placement;
use crate::sql::{self, StatementKind};
use crate::wire::errors::SqlError;

/// One row of the answer: backend, SQL, merge.
pub type Row = [String; 3];

/// The names of a row's columns.
pub const COLUMNS: [&str; 3] = ["backend", "sql", "merge"];

/// The rows of the plan for `stmt`, or the error the statement itself would get.
pub fn explain(stmt: &[u8], ctx: &StatementContext) -> Result<Vec<Row>, SqlError> {
    rows(stmt, ctx).or_else(|e| explain_join(stmt, &e, ctx).unwrap_or(Err(e)))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn rows(stmt: &[u8], ctx: &StatementContext) -> Result<Vec<Row>, SqlError> {
    let sql_text = text(stmt);
    let row = |b: &str, merge: &str| [b.to_string(), sql_text.clone(), merge.to_string()];
    let tables = ctx.tables.tables;
    match sql::classify(stmt) {
        StatementKind::Insert | StatementKind::Replace if tables.mentioned_in(stmt) => {
            let a = sql::analyze_insert(stmt)?;
            let schema = a.table.schema.as_deref().or(ctx.tables.db);
            let found = tables.lookup_shared(schema, &a.table.name).cloned();
            let Some(rule) = found.or_else(|| reads_placed_tables(stmt, &a, ctx)) else {
                return Ok(vec![row(ctx.default_backend, "none")]);
            };
            // What running it would refuse before writing anything (IGNORE/REPLACE/upserts
            // whose keys hold per shard only, an upsert moving a row), refused here alike.
            match &a.body {
                sql::InsertBody::Select { .. } => {
                    super::unique_keys::per_shard_key_write(&a, &rule)?
                }
                _ => super::insert::check_statement(stmt, &a, &rule)?,
            }
            let ids = match &rule.generator {
                Some(g) => format!("ids from generator `{g}` into `{}`; ", rule.id_column),
                None => String::new(),
            };
            let merge = match &rule.placement {
                Placement::Single { .. } => format!("{ids}one backend"),
                Placement::Broadcast { .. } => {
                    format!("{ids}every row on every backend; first backend's counts")
                }
                Placement::Sharded {
                    columns, algorithm, ..
                } => format!(
                    "{ids}rows split by {} ({}); affected rows summed; all-or-nothing in autocommit",
                    columns.join(", "),
                    algorithm.name()
                ),
            };
            let target = rule.backends().iter().map(|b| row(b, &merge));
            let sql::InsertBody::Select { query } = &a.body else {
                return Ok(target.collect());
            };
            // The source's own plan, read into idgate first.
            let source = stmt.get(query.clone()).unwrap_or_default();
            let mut out: Vec<Row> = rows(source, ctx)?
                .into_iter()
                .map(|[b, q, m]| [b, q, format!("source, read into idgate first: {m}")])
                .collect();
            out.extend(target.map(|[b, q, m]| [b, q, format!("target: {m}")]));
            Ok(out)
        }
        StatementKind::Ddl if ctx.backends.len() > 1 && sql::database_ddl(stmt).is_some() => {
            Ok(ctx
                .backends
                .iter()
                .enumerate()
                .map(|(k, b)| {
                    row(
                        b,
                        if k == 0 {
                            "first; its answer is the client's"
                        } else {
                            "then each other backend; none if the first failed"
                        },
                    )
                })
                .collect())
        }
        StatementKind::Other if sql::first_word(stmt).eq_ignore_ascii_case(b"LOAD") => {
            load_rows(stmt, ctx, &row)
        }
        StatementKind::Select | StatementKind::Update | StatementKind::Delete
            if ctx.route(stmt).is_err() =>
        {
            match subquery_plan(stmt, &ctx.tables) {
                Some(Plan::Subqueries(subs)) => subquery_rows(stmt, &subs, ctx),
                _ => ctx.route(stmt).map(|_| Vec::new()),
            }
        }
        _ => Ok(route_rows(
            ctx.route_by_key(stmt)?,
            &sql_text,
            ctx.default_backend,
        )),
    }
}

/// The rows of a `LOAD DATA`: where its rows go, or the refusal running it would get.
fn load_rows(
    stmt: &[u8],
    ctx: &StatementContext,
    row: &dyn Fn(&str, &str) -> Row,
) -> Result<Vec<Row>, SqlError> {
    let tables = ctx.tables.tables;
    let rule = match plan_load_data(stmt, ctx) {
        Some(Plan::LoadData(boxed)) => {
            let (ld, rule) = *boxed;
            let schema = ld.table.schema.as_deref().or(ctx.tables.db);
            if let Some(schema) = schema {
                if tables.global_keys(schema, &ld.table.name, &rule).is_some() {
                    return Err(crate::unique::load_data_refusal(&ld.table.name));
                }
            }
            let replace = ld.on_duplicate == sql::OnDuplicate::Replace;
            super::unique_keys::per_shard_key_load(replace, &rule)?;
            rule
        }
        Some(Plan::Refuse(e)) => return Err(e),
        _ if tables.mentioned_in(stmt) => {
            if let Some(e) = refuse_bypass(stmt, tables) {
                return Err(e);
            }
            return match plan_other(stmt, ctx.local_files) {
                Plan::Refuse(e) => Err(e),
                _ => Ok(vec![row(ctx.default_backend, "none")]),
            };
        }
        _ => {
            return match plan_other(stmt, ctx.local_files) {
                Plan::Refuse(e) => Err(e),
                _ => Ok(vec![row(ctx.default_backend, "none")]),
            }
        }
    };
    let ids = match &rule.generator {
        Some(g) => format!("ids from generator `{g}` into `{}`; ", rule.id_column),
        None => String::new(),
    };
    let merge = match &rule.placement {
        Placement::Single { .. } => format!("{ids}the file's rows read by idgate; one backend"),
        Placement::Broadcast { .. } => {
            format!("{ids}the file's rows read by idgate, every row on every backend")
        }
        Placement::Sharded {
            columns, algorithm, ..
        } => format!(
            "{ids}the file's rows read by idgate and split by {} ({}); affected rows summed",
            columns.join(", "),
            algorithm.name()
        ),
    };
    Ok(rule.backends().iter().map(|b| row(b, &merge)).collect())
}

/// The rows of a routed statement (`sql_text`) or of one run where it would without idgate.
fn route_rows(route: Option<Route>, sql_text: &str, default_backend: &str) -> Vec<Row> {
    let row = |b: &str, merge: &str| [b.to_string(), sql_text.to_string(), merge.to_string()];
    match route {
        None => vec![row(default_backend, "none")],
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
            // The statement the shards would get now: without weights once the plan's
            // keys showed no string.
            let (merge, shard_sql) = match &bound.lean {
                Some((plan, sql)) => (
                    format!(
                        "{} (no collation weights: no key was a string)",
                        plan.describe_page(bound.offset, bound.limit)
                    ),
                    text(sql),
                ),
                None => (bound.describe(), text(&bound.shard_sql)),
            };
            bs.iter()
                .map(|b| [b.clone(), shard_sql.clone(), merge.clone()])
                .collect()
        }
        Some(Route::ByKey(k)) => {
            let there = match k.otherwise {
                Route::Write { .. } => {
                    "its counts are the answer when it matched the row; else \
                                        the rows below run"
                }
                _ => "its rows are the answer; with none, the rows below run",
            };
            let mut out = vec![
                [
                    k.lookup.clone(),
                    text(&k.owner_sql),
                    "the key's lookup names the shard holding its row".to_string(),
                ],
                row(
                    &format!("that shard (one of {})", k.shards.join(", ")),
                    there,
                ),
            ];
            out.extend(
                route_rows(Some(k.otherwise), sql_text, default_backend)
                    .into_iter()
                    .map(|[b, q, m]| [b, q, format!("when that shard has no row: {m}")]),
            );
            out
        }
    }
}

/// The rows of a statement whose subqueries over sharded tables run first: each inner query's
/// plan, then the outer statement, whose route depends on the rows bound into it.
fn subquery_rows(
    stmt: &[u8],
    subs: &[sql::Subquery],
    ctx: &StatementContext,
) -> Result<Vec<Row>, SqlError> {
    let mut out = Vec::new();
    // Correlated ones the statement then runs in the gateway stay in it.
    let later: Vec<bool> = (0..subs.len())
        .map(|i| correlated_later(stmt, subs, i, &ctx.tables))
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
            sql::SubqueryUse::Cte => "common table expression",
            sql::SubqueryUse::Quantified => "ANY/SOME/ALL set",
        };
        // An inner join of tables not placed alike runs in the gateway first: its steps.
        for [b, q, m] in explain(inner, ctx)? {
            let m = format!("subquery {} ({what}), run first and bound in: {m}", n + 1);
            out.push([b, q, m]);
        }
    }
    // The outer statement with a stand-in for each subquery's rows: when that is a join idgate
    // runs in the gateway, its steps (a derived table's rows as one more table).
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
    if let Err(e) = ctx.route(&shown) {
        if let Some(Ok(steps)) = explain_join(&shown, &e, ctx) {
            out.extend(steps.into_iter().map(|[b, q, m]| {
                [
                    b,
                    q,
                    format!("outer statement, its subqueries' rows bound in: {m}"),
                ]
            }));
            return Ok(out);
        }
    }
    out.push([
        "(after the subqueries)".to_string(),
        text(stmt),
        "outer statement, routed once the subqueries' rows are bound in".to_string(),
    ]);
    Ok(out)
}

/// Where a statement would run.
fn backends_of(select: &[u8], ctx: &StatementContext) -> String {
    match ctx.route(select) {
        Ok(None) => ctx.default_backend.to_string(),
        Ok(Some(Route::One(b))) => b,
        Ok(Some(Route::Concat(bs) | Route::Merge(bs, _))) => bs.join(", "),
        Ok(Some(_)) => "?".into(),
        Err(e) => format!("refused: {}", e.message),
    }
}

/// The rows of a join idgate runs in the gateway (`refusal`: the shape planner's answer): the
/// driving fetch, each further table's fetch and the final evaluation.
fn explain_join(
    stmt: &[u8],
    refusal: &SqlError,
    ctx: &StatementContext,
) -> Option<Result<Vec<Row>, SqlError>> {
    let shape = match join_plan(stmt, refusal, &ctx.tables)? {
        Plan::Join(shape) => shape,
        Plan::Refuse(e) => return Some(Err(e)),
        _ => return None,
    };
    let steps = join_steps(&shape, &ctx.tables);
    let per_batch = if shape.row_wise {
        format!(" for each batch of up to {BATCH} driving rows")
    } else {
        String::new()
    };
    let mut out = Vec::with_capacity(steps.fetches.len() + 1);
    for (n, f) in steps.fetches.iter().enumerate() {
        let side = &shape.sides[f.side];
        let all = backends_of(&super::side_select(stmt, side, None), ctx);
        let row = match &f.key {
            None if n == 0 => {
                let kept = if shape.row_wise {
                    format!("kept in idgate (at most max_subquery_rows), run in batches of {BATCH}")
                } else {
                    "kept in idgate (at most max_subquery_rows)".into()
                };
                [
                    all,
                    text(&super::side_select(stmt, side, None)),
                    format!(
                        "join step 1: rows of `{}` (driving), {kept}",
                        side.qualifier
                    ),
                ]
            }
            None => [
                all,
                text(&super::side_select(stmt, side, None)),
                format!(
                    "join step {}: rows of `{}`{per_batch} (no column equality with a table \
                     fetched before: read whole)",
                    n + 1,
                    side.qualifier
                ),
            ],
            Some((from, from_column, column)) => {
                let cond = super::batch_condition(side, column, &[b"<value>".to_vec()]);
                let cond = cond.replace("<value>", &format!("<up to {BATCH} values>"));
                let backends = if f.pinned {
                    format!("the shards owning each batch's values (of {all})")
                } else {
                    all
                };
                [
                    backends,
                    text(&super::side_select(stmt, side, Some(&cond))),
                    format!(
                        "join step {}: rows of `{}`{per_batch} for batches of up to {BATCH} \
                         distinct `{}`.`{from_column}` values",
                        n + 1,
                        side.qualifier,
                        shape.sides[*from].qualifier
                    ),
                ]
            }
        };
        out.push(row);
    }
    let placeholders: Vec<Vec<u8>> = shape
        .sides
        .iter()
        .map(|s| format!("(<rows of `{}`>)", s.qualifier).into_bytes())
        .collect();
    let bound = super::bind_tables(stmt, &shape, placeholders);
    let how = if shape.row_wise {
        "the statement over each batch's fetched rows as literal tables, its rows sent batch by \
         batch"
    } else {
        "the statement over the fetched rows as literal tables"
    };
    out.push([
        ctx.default_backend.to_string(),
        text(&bound),
        format!("join step {}: {how}", steps.fetches.len() + 1),
    ]);
    Some(Ok(out))
}
