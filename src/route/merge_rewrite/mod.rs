//! Planning the merge of a SELECT that reaches several shards, and the statement each shard
//! runs instead: the client's bytes with hidden select items spliced in before FROM (weights of
//! string keys, sort and group expressions not selected, SUM/COUNT for AVG, aggregates HAVING
//! uses), and HAVING/ORDER BY/LIMIT removed or rewritten where idgate applies them itself.

use std::collections::HashMap;
use std::ops::Range;

use sqlparser::ast::{
    Distinct, DuplicateTreatment, Expr, Function, FunctionArguments, GroupByExpr, LimitClause,
    OrderByKind, OrderBySort, Query, Select, SelectItem, Spanned, Value as SqlValue,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserOptions};

use super::merge_plan::*;
use crate::sql::aggregates::{find_aggregate, fn_name};

mod aggs;
mod full_group;
mod having;
use crate::sql::parse::LineIndex;
use crate::sql::select_tokens::SelectText;

/// Aggregates idgate combines across shards.
fn combinable(name: &str) -> Option<AggFn> {
    Some(match name {
        "count" => AggFn::Count,
        "sum" => AggFn::Sum,
        "min" => AggFn::Min,
        "max" => AggFn::Max,
        "avg" => AggFn::Avg,
        "group_concat" => AggFn::GroupConcat,
        "std" | "stddev" | "stddev_pop" => AggFn::Variance {
            sample: false,
            root: true,
        },
        "stddev_samp" => AggFn::Variance {
            sample: true,
            root: true,
        },
        "variance" | "var_pop" => AggFn::Variance {
            sample: false,
            root: false,
        },
        "var_samp" => AggFn::Variance {
            sample: true,
            root: false,
        },
        "bit_and" => AggFn::BitAnd,
        "bit_or" => AggFn::BitOr,
        "bit_xor" => AggFn::BitXor,
        _ => return None,
    })
}

/// What the refusal of a SELECT whose shard answers cannot be merged says (`aggregate_lift`
/// takes over those computing on aggregates).
pub const MERGE_REFUSED: &str = "idgate cannot merge their answers";

pub(crate) fn parse_expr(text: &str) -> Option<Expr> {
    Parser::new(&MySqlDialect {})
        .with_options(ParserOptions::new().with_unescape(false))
        .try_with_sql(text)
        .ok()?
        .parse_expr()
        .ok()
}

/// A client select item.
struct Item<'a> {
    expr: Option<&'a Expr>,
    alias: Option<String>,
    /// The expression's bytes (without its alias); `None` for `*`.
    text: Option<Range<usize>>,
}

struct Planner<'a> {
    stmt: &'a [u8],
    text: &'a str,
    layout: SelectText,
    index: LineIndex<'a>,
    items: Vec<Item<'a>>,
    hidden: Vec<Vec<u8>>,
    by_text: HashMap<Vec<u8>, ColRef>,
    aggs: Vec<AggCol>,
    /// Expressions the shards group by beyond the client's keys, so that every distinct
    /// argument value (or GROUP_CONCAT piece) reaches idgate.
    extras: Vec<Vec<u8>>,
    /// Ask the shards for collation weights (see [`plan_merge_with`]).
    weights: bool,
}

type Plan<T> = Result<T, String>;

impl<'a> Planner<'a> {
    /// The text of `range`, checked to parse back into `expr`.
    fn checked(&self, range: Range<usize>, expr: &Expr) -> Plan<Range<usize>> {
        let ok = self
            .text
            .get(range.clone())
            .and_then(parse_expr)
            .is_some_and(|p| p.to_string() == expr.to_string());
        if ok {
            Ok(range)
        } else {
            Err(format!(
                "the expression `{expr}` could not be located in the statement"
            ))
        }
    }

    /// The byte range of a sub-expression: its span, widened to the closing parenthesis of a
    /// trailing function call.
    fn range_of(&self, e: &Expr) -> Plan<Range<usize>> {
        let span = self
            .index
            .range(e.span())
            .ok_or_else(|| format!("the expression `{e}` has no position"))?;
        if let Expr::Function(f) = e {
            let name_end = self
                .index
                .range(f.name.span())
                .map(|r| r.end)
                .ok_or_else(|| format!("the expression `{e}` has no position"))?;
            if let Some(g) = self.layout.paren_group(name_end) {
                return self.checked(span.start..g.end, e);
            }
        }
        self.checked(span, e)
    }

    fn bytes(&self, r: &Range<usize>) -> Vec<u8> {
        self.stmt[r.clone()].to_vec()
    }

    /// A hidden column computing `text` (or the client's own column computing the same).
    fn column(&mut self, text: Vec<u8>) -> ColRef {
        if let Some(c) = self.by_text.get(&text) {
            return *c;
        }
        let c = ColRef::Hidden(self.hidden.len());
        self.hidden.push(text.clone());
        self.by_text.insert(text, c);
        c
    }

    /// The weight columns of a compared value, unless the plan leaves weights out (the
    /// executor then checks that no key is a string).
    fn weight_of(&mut self, text: &[u8]) -> Option<Weight> {
        self.weights.then(|| self.weight(text))
    }

    fn weight(&mut self, text: &[u8]) -> Weight {
        let mut w = b"WEIGHT_STRING(".to_vec();
        w.extend_from_slice(text);
        w.push(b')');
        let mut s = b"WEIGHT_STRING(CONCAT(LEFT(".to_vec();
        s.extend_from_slice(text);
        s.extend_from_slice(b", 0), ' '))");
        Weight {
            bytes: self.column(w),
            space: self.column(s),
        }
    }

    /// The client item `e` names: by position (`ORDER BY 2`), alias, or the same expression.
    fn visible(&self, e: &Expr, positional: bool) -> Plan<Option<usize>> {
        if positional {
            if let Expr::Value(v) = e {
                if let SqlValue::Number(n, _) = &v.value {
                    let i: usize = n
                        .parse()
                        .map_err(|_| format!("position {n} in ORDER BY/GROUP BY"))?;
                    if i == 0 || i > self.items.len() {
                        return Err(format!("position {n} is not a select item"));
                    }
                    if self.items[i - 1].text.is_none() {
                        return Err("a position that falls on `*`".into());
                    }
                    return Ok(Some(i - 1));
                }
            }
        }
        if let Expr::Identifier(id) = e {
            if id.quote_style.is_none() || id.quote_style == Some('`') {
                let found = self.items.iter().position(|it| {
                    it.alias
                        .as_deref()
                        .is_some_and(|a| a.eq_ignore_ascii_case(&id.value))
                });
                if found.is_some() {
                    return Ok(found);
                }
            }
        }
        let shown = e.to_string();
        Ok(self
            .items
            .iter()
            .position(|it| it.expr.is_some_and(|x| x.to_string() == shown)))
    }

    /// The column of an aggregate call (`text`: its bytes), registered with its combination.
    fn aggregate(&mut self, f: &Function, text: Range<usize>, own: Option<usize>) -> Plan<AggCol> {
        let name = fn_name(f);
        let upper = name.to_ascii_uppercase();
        if f.over.is_some() {
            return Err(format!("window function {upper}() over several shards"));
        }
        let func = combinable(&name).ok_or_else(|| format!("{upper}() over several shards"))?;
        if f.filter.is_some() {
            return Err(format!("{upper}() with FILTER over several shards"));
        }
        let FunctionArguments::List(list) = &f.args else {
            return Err(format!("{upper} without arguments"));
        };
        let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
        let func = match (func, distinct) {
            (f, false) | (f @ (AggFn::Min | AggFn::Max | AggFn::GroupConcat), true) => f,
            (AggFn::Count, true) => AggFn::CountDistinct,
            (AggFn::Sum, true) => AggFn::SumDistinct,
            (AggFn::Avg, true) => AggFn::AvgDistinct,
            _ => return Err(format!("{upper}(DISTINCT …) over several shards")),
        };
        if func != AggFn::GroupConcat && !list.clauses.is_empty() {
            return Err(format!(
                "{upper}() with ORDER BY or LIMIT over several shards"
            ));
        }
        let bytes = self.bytes(&text);
        let col = match own {
            Some(i) => ColRef::Visible(i),
            None => self.column(bytes.clone()),
        };
        if let Some(a) = self.aggs.iter().find(|a| a.col == col) {
            return Ok(a.clone());
        }
        let mut agg = AggCol::new(col, func);
        match func {
            AggFn::Min | AggFn::Max => agg.weight = self.weight_of(&bytes),
            AggFn::Avg => {
                let inner = self.args_text(f)?;
                let mut part = |func: AggFn, name: &[u8]| {
                    let mut t = name.to_vec();
                    t.extend_from_slice(&inner);
                    let c = self.column(t);
                    if !self.aggs.iter().any(|a| a.col == c) {
                        self.aggs.push(AggCol::new(c, func));
                    }
                    c
                };
                let sum = part(AggFn::Sum, b"SUM");
                let count = part(AggFn::Count, b"COUNT");
                agg.parts = Some((sum, count));
            }
            AggFn::CountDistinct | AggFn::SumDistinct | AggFn::AvgDistinct => {
                agg.args = self.distinct_args(list, &upper)?;
            }
            AggFn::GroupConcat => agg.concat = Some(Box::new(self.group_concat(list, distinct)?)),
            AggFn::Variance { .. } => {
                let inner = self.args_text(f)?;
                let mut part = |head: &[u8], tail: &[u8]| {
                    let mut t = head.to_vec();
                    t.extend_from_slice(&inner);
                    t.extend_from_slice(tail);
                    self.column(t)
                };
                agg.moments = Some([
                    part(b"COUNT", b""),
                    part(b"SUM", b""),
                    part(b"CAST(VAR_POP", b" AS DOUBLE)"),
                ]);
            }
            _ => {}
        }
        self.aggs.push(agg.clone());
        Ok(agg)
    }

    /// The bytes of a call's parenthesised arguments, parentheses included.
    fn args_text(&self, f: &Function) -> Plan<Vec<u8>> {
        let name_end = self
            .index
            .range(f.name.span())
            .map(|r| r.end)
            .ok_or("an aggregate without a position")?;
        let args = self
            .layout
            .paren_group(name_end)
            .ok_or("an aggregate's arguments")?;
        Ok(self.stmt[args].to_vec())
    }

    /// The weight columns a client item needs as a key (none for COUNT/SUM/AVG).
    fn item_weight(&mut self, i: usize) -> Plan<Option<Weight>> {
        if let Some(a) = self.aggs.iter().find(|a| a.col == ColRef::Visible(i)) {
            if a.func == AggFn::GroupConcat {
                return Err(CONCAT_KEY.into());
            }
            return Ok(a.weight);
        }
        let r = self.items[i]
            .text
            .clone()
            .ok_or("a sort or group key that falls on `*`")?;
        let t = self.bytes(&r);
        Ok(self.weight_of(&t))
    }

    /// A sort or group key for `e` whose text is `r`.
    fn key(&mut self, e: &Expr, r: Range<usize>, desc: bool, grouped: bool) -> Plan<SortKey> {
        if let Some(i) = self.visible(e, true)? {
            return Ok(SortKey {
                value: ColRef::Visible(i),
                weight: self.item_weight(i)?,
                desc,
            });
        }
        if let Some((name, _)) = find_aggregate(e) {
            let Expr::Function(f) = e else {
                return Err(format!(
                    "sorting by an expression over {name}() across shards"
                ));
            };
            if !grouped {
                return Err(format!(
                    "{name}() in ORDER BY of a query without aggregates"
                ));
            }
            let a = self.aggregate(f, r, None)?;
            if a.func == AggFn::GroupConcat {
                return Err(CONCAT_KEY.into());
            }
            return Ok(SortKey {
                value: a.col,
                weight: a.weight,
                desc,
            });
        }
        let t = self.bytes(&r);
        let value = self.column(t.clone());
        Ok(SortKey {
            value,
            weight: self.weight_of(&t),
            desc,
        })
    }
}

const CONCAT_KEY: &str = "sorting or grouping by GROUP_CONCAT() across shards";

fn literal_u64(e: &Expr) -> Plan<u64> {
    if let Expr::Value(v) = e {
        if let SqlValue::Number(n, _) = &v.value {
            return n.parse().map_err(|_| format!("LIMIT {n}"));
        }
    }
    Err(format!("LIMIT {e} (only literal numbers)"))
}

/// Whether each shard may answer only its first OFFSET + LIMIT rows. Streaming, always. A
/// grouped or DISTINCT merge ordered by exactly its keys, too: the first OFFSET + LIMIT groups
/// overall are, on every shard holding rows of them, among that shard's first OFFSET + LIMIT
/// groups (the order is total on groups, and a shard's groups all belong to the whole), and each
/// shard sends a group's rows folded whole. Not with HAVING (judged on the combined groups: a
/// shard cannot know which of its groups survive) nor when the shards group more finely than the
/// client (DISTINCT aggregate arguments, GROUP_CONCAT pieces: `!whole_groups`).
fn shards_may_stop_early(mode: &MergeMode, order: &[SortKey], whole_groups: bool) -> bool {
    let ordered_by = |keys: &[SortKey]| {
        !order.is_empty()
            && order
                .iter()
                .all(|o| keys.iter().any(|k| k.value == o.value))
            && keys
                .iter()
                .all(|k| order.iter().any(|o| o.value == k.value))
    };
    match mode {
        MergeMode::Stream => true,
        MergeMode::Group { keys, having, .. } => {
            whole_groups && having.is_none() && ordered_by(keys)
        }
        MergeMode::Distinct { keys } => ordered_by(keys),
    }
}

/// (offset, limit) of a LIMIT clause.
fn limits(q: &Query) -> Plan<(u64, Option<u64>)> {
    match &q.limit_clause {
        None => Ok((0, None)),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err("LIMIT BY".into());
            }
            let off = match offset {
                Some(o) => literal_u64(&o.value)?,
                None => 0,
            };
            let lim = limit.as_ref().map(literal_u64).transpose()?;
            Ok((off, lim))
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            Ok((literal_u64(offset)?, Some(literal_u64(limit)?)))
        }
    }
}

/// Where a LIMIT's literal numbers are in the client's statement: its form, the offset's and the
/// row count's bytes. `None` when they are not plain numbers idgate reads back the same.
fn window_at(p: &Planner, q: &Query) -> Option<(LimitForm, Option<Range<usize>>, Range<usize>)> {
    let at = |e: &Expr| {
        let r = p.index.range(e.span())?;
        let text = p.stmt.get(r.clone())?;
        (literal_u64(e).ok()? == limit_value(text)?).then_some(r)
    };
    match q.limit_clause.as_ref()? {
        LimitClause::LimitOffset {
            limit: Some(limit),
            offset,
            ..
        } => match offset {
            Some(o) => Some((LimitForm::LimitOffset, Some(at(&o.value)?), at(limit)?)),
            None => Some((LimitForm::Limit, None, at(limit)?)),
        },
        LimitClause::OffsetCommaLimit { offset, limit } => {
            Some((LimitForm::OffsetComma, Some(at(offset)?), at(limit)?))
        }
        _ => None,
    }
}

/// What the shard statement groups by: the client's GROUP BY (a position or an alias standing
/// for its select item's expression) and the expressions idgate adds to it.
fn shard_groups(p: &Planner, group_exprs: &[Expr]) -> Plan<full_group::Groups> {
    let mut texts = Vec::new();
    if !group_exprs.is_empty() {
        let ranges = p.layout.by_items("GROUP").ok_or("GROUP BY")?;
        for (e, r) in group_exprs.iter().zip(ranges) {
            let item = p.visible(e, true)?.and_then(|i| p.items[i].text.clone());
            texts.push(p.bytes(&item.unwrap_or(r)));
        }
    }
    texts.extend(p.extras.iter().cloned());
    Ok(full_group::Groups::new(texts.iter().map(Vec::as_slice)))
}

#[cfg(test)]
/// Plans the merge of `s` (the body of `q`, parsed from `text`, the sanitized `stmt`).
pub(crate) fn plan_merge(stmt: &[u8], text: &str, q: &Query, s: &Select) -> Plan<MergePlan> {
    plan_merge_with(stmt, text, q, s, true)
}

/// [`plan_merge`]; `weights`: ask the shards for collation weights of compared values (without
/// them the plan is right only while no key is a string).
pub(crate) fn plan_merge_with(
    stmt: &[u8],
    text: &str,
    q: &Query,
    s: &Select,
    weights: bool,
) -> Plan<MergePlan> {
    if q.with.is_some() {
        return Err("WITH (common table expressions)".into());
    }
    if s.select_modifiers
        .as_ref()
        .is_some_and(|m| m.sql_calc_found_rows)
    {
        return Err("SQL_CALC_FOUND_ROWS".into());
    }
    if !s.named_window.is_empty() {
        return Err("WINDOW clauses".into());
    }
    let layout = SelectText::new(text).ok_or("a statement idgate could not tokenize")?;
    let pieces = layout.select_items().ok_or("the select list")?;
    if pieces.len() != s.projection.len() {
        return Err("a select list idgate could not split".into());
    }
    let mut p = Planner {
        stmt,
        text,
        layout,
        index: LineIndex::new(text),
        items: Vec::new(),
        hidden: Vec::new(),
        by_text: HashMap::new(),
        aggs: Vec::new(),
        extras: Vec::new(),
        weights,
    };
    for (item, piece) in s.projection.iter().zip(pieces) {
        let it = match item {
            SelectItem::UnnamedExpr(e) => Item {
                expr: Some(e),
                alias: None,
                text: Some(p.checked(piece, e)?),
            },
            SelectItem::ExprWithAlias { expr, alias } => {
                let r = p.layout.strip_last(piece, true);
                Item {
                    expr: Some(expr),
                    alias: Some(alias.value.clone()),
                    text: Some(p.checked(r, expr)?),
                }
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => Item {
                expr: None,
                alias: None,
                text: None,
            },
            other => return Err(format!("the select item {other}")),
        };
        p.items.push(it);
    }
    for (i, it) in p.items.iter().enumerate() {
        if let Some(r) = &it.text {
            p.by_text
                .insert(stmt[r.clone()].to_vec(), ColRef::Visible(i));
        }
    }
    let group_exprs: &[Expr] = match &s.group_by {
        GroupByExpr::Expressions(e, mods) if mods.is_empty() => e,
        _ => return Err("GROUP BY ALL or WITH ROLLUP".into()),
    };
    if p.layout.has_top_word("ROLLUP") {
        return Err("WITH ROLLUP".into());
    }
    let distinct = match &s.distinct {
        None | Some(Distinct::All) => false,
        Some(Distinct::Distinct) => true,
        Some(_) => return Err("DISTINCT ON".into()),
    };
    let order_items = match &q.order_by {
        None => Vec::new(),
        Some(o) => match &o.kind {
            OrderByKind::Expressions(items) => items.clone(),
            OrderByKind::All(_) => return Err("ORDER BY ALL".into()),
        },
    };
    let mut aggregated = false;
    for it in &p.items {
        if let Some((name, window)) = it.expr.and_then(find_aggregate) {
            if window {
                return Err(format!("window function {name}() over several shards"));
            }
            aggregated = true;
        }
    }
    for o in &order_items {
        if let Some((name, window)) = find_aggregate(&o.expr) {
            if window {
                return Err(format!("window function {name}() over several shards"));
            }
            aggregated = true;
        }
    }
    // HAVING without GROUP BY or any aggregate filters rows one by one (MariaDB does not group
    // them): each shard applies it as written.
    let having_aggregates = s
        .having
        .as_ref()
        .is_some_and(|h| find_aggregate(h).is_some());
    let grouped = aggregated || !group_exprs.is_empty() || having_aggregates;
    if grouped && distinct {
        return Err("DISTINCT together with GROUP BY or aggregates".into());
    }
    // The client's aggregate items, each combined by its own function.
    if grouped {
        for i in 0..p.items.len() {
            let Some(e) = p.items[i].expr else {
                return Err("`*` in a grouped query".into());
            };
            if let Some((name, _)) = find_aggregate(e) {
                let Expr::Function(f) = e else {
                    return Err(format!("an expression over {name}() across shards"));
                };
                let r = p.items[i].text.clone().ok_or("an aggregate item")?;
                p.aggregate(f, r, Some(i))?;
            }
        }
    }
    let mut order = Vec::new();
    if !order_items.is_empty() {
        let texts = p.layout.by_items("ORDER").ok_or("ORDER BY")?;
        if texts.len() != order_items.len() {
            return Err("an ORDER BY idgate could not split".into());
        }
        for (o, r) in order_items.iter().zip(texts) {
            if o.with_fill.is_some() || o.options.nulls_first.is_some() {
                return Err("NULLS FIRST/LAST".into());
            }
            let desc = match &o.options.sort {
                None => false,
                Some(OrderBySort::Asc) => false,
                Some(OrderBySort::Desc) => true,
                Some(_) => return Err("ORDER BY … USING".into()),
            };
            let r = if o.options.sort.is_some() {
                p.layout.strip_last(r, false)
            } else {
                r
            };
            let r = p.checked(r, &o.expr)?;
            if distinct && p.visible(&o.expr, true)?.is_none() {
                return Err("ORDER BY an expression not selected, with DISTINCT".into());
            }
            order.push(p.key(&o.expr, r, desc, grouped)?);
        }
    }
    let (offset, limit) = limits(q)?;
    let window_at = window_at(&p, q);
    let mode = if grouped {
        let mut keys = Vec::new();
        if !group_exprs.is_empty() {
            let texts = p.layout.by_items("GROUP").ok_or("GROUP BY")?;
            if texts.len() != group_exprs.len() {
                return Err("a GROUP BY idgate could not split".into());
            }
            for (e, r) in group_exprs.iter().zip(texts) {
                let r = p.checked(r, e)?;
                keys.push(p.key(e, r, false, false)?);
            }
        }
        let having = match &s.having {
            Some(h) => Some(p.having(h)?),
            None => None,
        };
        MergeMode::Group {
            keys,
            aggs: p.aggs.clone(),
            having,
        }
    } else if distinct {
        let mut keys = Vec::new();
        for i in 0..p.items.len() {
            keys.push(SortKey {
                value: ColRef::Visible(i),
                weight: p.item_weight(i)?,
                desc: false,
            });
        }
        MergeMode::Distinct { keys }
    } else {
        MergeMode::Stream
    };
    // The shard statement: hidden items before FROM (valid under ONLY_FULL_GROUP_BY when
    // grouped); clauses idgate applies itself removed.
    let mut edits: Vec<(Range<usize>, Vec<u8>)> = Vec::new();
    if !p.hidden.is_empty() {
        let groups = match grouped {
            true => Some(shard_groups(&p, group_exprs)?),
            false => None,
        };
        let from = p.layout.clause("FROM").ok_or("FROM")?;
        let at = p.layout.toks[from].at.start;
        let mut ins = Vec::new();
        for h in &p.hidden {
            ins.extend_from_slice(b", ");
            match &groups {
                Some(g) => ins.extend_from_slice(&g.hidden_item(h)),
                None => ins.extend_from_slice(h),
            }
        }
        ins.push(b' ');
        edits.push((at..at, ins));
    }
    // FROM … WHERE: nothing the merge does depends on the bytes there.
    let unread = match p.layout.clause("FROM") {
        Some(from) => {
            const AFTER_WHERE: &[&str] = &[
                "GROUP",
                "HAVING",
                "WINDOW",
                "ORDER",
                "LIMIT",
                "OFFSET",
                "FETCH",
                "PROCEDURE",
                "INTO",
                "FOR",
                "LOCK",
                "UNION",
                "EXCEPT",
                "INTERSECT",
            ];
            let end = (from + 1..p.layout.toks.len())
                .find(|&i| AFTER_WHERE.iter().any(|w| p.layout.is_word(i, w)))
                .map_or(p.layout.end, |i| p.layout.toks[i].at.start);
            p.layout.toks[from].at.end..end
        }
        None => 0..0,
    };
    if !p.extras.is_empty() {
        let mut ins = Vec::new();
        let at = if group_exprs.is_empty() {
            // Without GROUP BY every select item must be an aggregate: a group with no rows
            // gets its one row from idgate, which knows no other item's value.
            if p.items
                .iter()
                .any(|it| it.expr.and_then(find_aggregate).is_none())
            {
                return Err("a select item that is not an aggregate next to DISTINCT aggregates or GROUP_CONCAT() without GROUP BY".into());
            }
            if unread.is_empty() {
                return Err("DISTINCT aggregates or GROUP_CONCAT() without FROM".into());
            }
            ins.extend_from_slice(b" GROUP BY ");
            unread.end
        } else {
            ins.extend_from_slice(b", ");
            p.layout
                .by_items("GROUP")
                .and_then(|t| t.last().map(|r| r.end))
                .ok_or("GROUP BY")?
        };
        ins.extend_from_slice(&p.extras.join(&b", "[..]));
        if group_exprs.is_empty() {
            ins.push(b' ');
        }
        edits.push((at..at, ins));
    }
    let shards_stop_early = shards_may_stop_early(&mode, &order, p.extras.is_empty());
    // Where the shard SQL's LIMIT number goes: the start of an edit and the offset in it.
    let mut sum_edit: Option<(usize, usize)> = None;
    for clause in ["HAVING", "ORDER", "LIMIT"] {
        let Some(r) = p.layout.clause_range(clause) else {
            continue;
        };
        // Shards keep the ORDER BY even where idgate orders the merged groups itself: it is what
        // makes MariaDB answer through a sorted temporary table as for the client's query, and
        // its column flags (key flags dropped, BINARY on COUNT, GROUP_CONCAT's length) follow
        // from that.
        if clause == "ORDER" || (clause == "HAVING" && !grouped) {
            continue;
        }
        let with = match (clause, shards_stop_early, limit) {
            // MariaDB answers LIMIT 0 without running the query (and flags its columns so).
            ("LIMIT", _, Some(0)) => b"LIMIT 0 ".to_vec(),
            ("LIMIT", true, Some(l)) => {
                sum_edit = Some((r.start, "LIMIT ".len()));
                format!("LIMIT {} ", offset.saturating_add(l)).into_bytes()
            }
            _ => b" ".to_vec(),
        };
        edits.push((r, with));
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut shard_sql = Vec::with_capacity(stmt.len() + 64);
    let mut copied = Vec::with_capacity(edits.len() + 1);
    let mut sum_at = None;
    let mut at = 0;
    for (r, with) in edits {
        copied.push((at..r.start, shard_sql.len()));
        shard_sql.extend_from_slice(&stmt[at..r.start]);
        if let Some((_, skip)) = sum_edit.filter(|(start, _)| *start == r.start) {
            let from = shard_sql.len() + skip;
            sum_at = Some(from..shard_sql.len() + with.len() - 1);
        }
        shard_sql.extend_from_slice(&with);
        at = r.end;
    }
    copied.push((at..stmt.len(), shard_sql.len()));
    shard_sql.extend_from_slice(&stmt[at..]);
    Ok(MergePlan {
        shard_sql,
        copied,
        unread,
        hidden: p.hidden.len(),
        mode,
        order,
        offset,
        limit,
        window: window_at.map(|(form, offset_at, limit_at)| Window {
            form,
            offset_at,
            limit_at,
            sum_at,
        }),
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_aggs;
