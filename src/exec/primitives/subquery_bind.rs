//! Subqueries run first: each outer-level inner query naming a placed table runs through
//! idgate's own routing (the cursor's `fetch`), and its rows are bound into the outer statement
//! as literals (an IN list, TRUE/FALSE, a value, a literal table, an ANY/ALL set). An inner
//! query with subqueries of its own is bound the same way first; one computing on aggregates
//! across shards is lifted over a derived table (`route::lift`); a join of tables not placed
//! alike becomes the join of literal tables of their rows (`join_bind`).

use super::{join_bind, GatewayLimits};
use crate::exec::cursor::{Cursor, FetchLimits, Fetched};
use crate::route::{self, Plan};
use crate::sql::{self, Subquery, SubqueryUse};
use crate::wire::errors::SqlError;

/// MariaDB's ER_BAD_FIELD_ERROR: what an inner query that names the outer query's columns
/// gets when it runs on its own.
const ER_BAD_FIELD_ERROR: u16 = 1054;

/// The qualifier of the unknown column in MariaDB's 1054 message (`Unknown column 'b.id' in
/// 'WHERE'`) when the statement outside the subquery at `inner` names it: the subquery is
/// correlated.
fn outer_qualifier(stmt: &[u8], inner: std::ops::Range<usize>, message: &str) -> Option<String> {
    let column = message.split('\'').nth(1)?;
    let (qualifier, _) = column.rsplit_once('.')?;
    let qualifier = qualifier.rsplit('.').next()?;
    sql::names_outside(stmt, inner, qualifier.as_bytes()).then(|| qualifier.to_string())
}

/// MariaDB's ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT.
const ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT: u16 = 1222;

pub fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

/// One inner query's rows; an IN list's `(SELECT …) UNION (SELECT …)` member by member
/// (duplicates do not change what IN finds), within the same limits.
async fn fetch_subquery<C: Cursor>(
    cursor: &mut C,
    inner: &[u8],
    kind: SubqueryUse,
    limits: FetchLimits,
) -> Result<Result<Fetched, SqlError>, C::End> {
    let members = match kind {
        SubqueryUse::In => sql::union_members(inner),
        _ => None,
    };
    let Some(members) = members else {
        return cursor.fetch(inner, limits).await;
    };
    let mut all: Option<Fetched> = None;
    for m in members {
        let Some(member) = inner.get(m) else {
            return Ok(Err(unsupported(
                "a UNION member idgate could not place".into(),
            )));
        };
        let fetched = match cursor.fetch(member, limits).await? {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        match &mut all {
            None => all = Some(fetched),
            Some(a) if a.columns.len() != fetched.columns.len() => {
                return Ok(Err(SqlError::new(
                    ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT,
                    b"21000",
                    "The used SELECT statements have a different number of columns",
                )));
            }
            Some(a) => {
                a.rows.extend(fetched.rows);
                if a.rows.len() as u64 > limits.max_rows {
                    return Ok(Err(unsupported(format!(
                        "the subquery over sharded tables gives more than \
                         max_subquery_rows ({}) rows, which idgate runs first and binds \
                         into the outer statement; narrow it (WHERE, LIMIT) or raise \
                         max_subquery_rows",
                        limits.max_rows
                    ))));
                }
            }
        }
    }
    Ok(Ok(all.unwrap_or_default()))
}

/// Runs each inner query and gives `stmt` with their rows bound in. `Ok(Err(_))`: the
/// statement's answer is this error.
pub async fn bind_subqueries<C: Cursor>(
    cursor: &mut C,
    stmt: &[u8],
    subs: &[Subquery],
    limits: GatewayLimits,
) -> Result<Result<Vec<u8>, SqlError>, C::End> {
    let GatewayLimits {
        max_rows,
        max_bytes,
    } = limits;
    let mut parts = Vec::with_capacity(subs.len());
    for (i, s) in subs.iter().enumerate() {
        if cursor.plan(|ctx| route::correlated_later(stmt, subs, i, ctx)) {
            continue;
        }
        let Some(inner) = stmt.get(s.inner.clone()) else {
            return Ok(Err(unsupported("a subquery idgate could not place".into())));
        };
        if matches!(s.kind, SubqueryUse::In | SubqueryUse::Quantified) && sql::has_own_limit(inner)
        {
            return Ok(Err(SqlError::new(
                sql::ER_NOT_SUPPORTED_YET,
                b"42000",
                "This version of MariaDB doesn't yet support 'LIMIT & IN/ALL/ANY/SOME subquery'",
            )));
        }
        // An inner query with subqueries of its own over sharded tables: those first. One
        // computing on aggregates across shards is lifted over a derived table of them
        // first (`route::lift`), which is then such a subquery of its own. A join of tables
        // not placed alike becomes the join of literal tables of their rows.
        let mut inner = inner.to_vec();
        if let Err(e) = cursor.route(&inner) {
            if let Some(lifted) = route::lift(&inner, &e) {
                inner = lifted.into_bytes();
            }
            if let Some(nested) = cursor.plan(|ctx| route::nested_subqueries(&inner, ctx)) {
                match Box::pin(bind_subqueries(cursor, &inner, &nested, limits)).await? {
                    Ok(bound) => inner = bound,
                    Err(e) => return Ok(Err(e)),
                }
            } else if let Some(Plan::Join(shape)) =
                cursor.plan(|ctx| route::join_plan(&inner, &e, ctx))
            {
                match Box::pin(join_bind::bind_join(cursor, &inner, &shape, limits)).await? {
                    Ok(bound) => inner = bound,
                    Err(e) => return Ok(Err(e)),
                }
            }
        }
        let limits = FetchLimits {
            max_rows,
            max_bytes,
            enough: (s.kind == SubqueryUse::Exists).then_some(1),
        };
        let mut fetched = match fetch_subquery(cursor, &inner, s.kind, limits).await? {
            Ok(f) => f,
            Err(e) if e.code == ER_BAD_FIELD_ERROR => {
                // A column of the outer query (correlated: not supported), or a typo.
                let advice = "idgate runs a subquery over sharded tables first, on its own; \
                              one that refers to the outer query (correlated) runs only \
                              over one table, tied to the outer query by a column equality \
                              AND-ed into its WHERE (`inner.book_id = outer.id`, not inside \
                              OR), with no subquery of its own: rewrite it so, as a join, \
                              or as an uncorrelated `IN (SELECT …)`";
                if let Some(q) = outer_qualifier(stmt, s.inner.clone(), &e.message) {
                    return Ok(Err(unsupported(format!(
                        "this subquery refers to `{q}` of the outer query; {advice}"
                    ))));
                }
                return Ok(Err(SqlError::new(
                    e.code,
                    &e.state,
                    format!("{} ({advice})", e.message),
                )));
            }
            Err(e) => return Ok(Err(e)),
        };
        let text = match s.kind {
            SubqueryUse::In => sql::render_in_list(&fetched.columns, &fetched.rows),
            SubqueryUse::Exists => sql::render_exists(!fetched.rows.is_empty()),
            SubqueryUse::Scalar => match sql::render_scalar(&fetched.columns, &fetched.rows) {
                // A whole sort or group item stays a subquery (of no table): a bare integer
                // there would name a select item by its position.
                Ok(t) if sql::is_sort_item(stmt, &s.replace) => {
                    let mut wrapped = b"(SELECT ".to_vec();
                    wrapped.extend_from_slice(&t);
                    wrapped.push(b')');
                    wrapped
                }
                Ok(t) => t,
                Err(e) => return Ok(Err(SqlError::new(e.code, e.state, e.message))),
            },
            SubqueryUse::Derived | SubqueryUse::Cte => {
                match sql::render_derived(&fetched.columns, &fetched.rows) {
                    Ok(t) => t,
                    Err(e) => return Ok(Err(SqlError::new(e.code, e.state, e.message))),
                }
            }
            SubqueryUse::Quantified => {
                match sql::render_quantified(&fetched.columns, &mut fetched.rows) {
                    Ok(t) => t,
                    Err(e) => return Ok(Err(SqlError::new(e.code, e.state, e.message))),
                }
            }
        };
        parts.push((s.replace.clone(), text));
    }
    // The columns keep the names one server gives them: an item's text as written.
    let replaced: Vec<std::ops::Range<usize>> = parts.iter().map(|(r, _)| r.clone()).collect();
    parts.extend(sql::bound_item_aliases(stmt, &replaced));
    parts.sort_by_key(|(r, _)| (r.start, r.end));
    Ok(Ok(sql::splice(stmt, &parts)))
}
