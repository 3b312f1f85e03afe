//! Planning DISTINCT aggregates and GROUP_CONCAT across shards: the shards group by the client's
//! keys plus the aggregates' arguments (so each distinct value, or each GROUP_CONCAT piece with
//! how often it occurs, arrives as its own row) and idgate combines them per client group.

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArgumentList, OrderBySort,
    Value as SqlValue,
};

use super::{Plan, Planner};
use crate::route::merge_plan::{Concat, SortKey};

impl Planner<'_> {
    /// An expression the shards must group by too.
    fn extra(&mut self, text: Vec<u8>) {
        if !self.extras.contains(&text) {
            self.extras.push(text);
        }
    }

    /// A value idgate compares (by collation weight for strings): a hidden column or the
    /// client's own.
    fn compared(&mut self, text: &[u8], desc: bool) -> SortKey {
        SortKey {
            value: self.column(text.to_vec()),
            weight: self.weight_of(text),
            desc,
        }
    }

    /// The argument expressions of an aggregate call, with their bytes.
    fn arg_texts<'e>(
        &self,
        list: &'e FunctionArgumentList,
        name: &str,
    ) -> Plan<Vec<(&'e Expr, Vec<u8>)>> {
        let mut out = Vec::new();
        for a in &list.args {
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
                return Err(format!(
                    "{name}() with the argument `{a}` over several shards"
                ));
            };
            let r = self.range_of(e)?;
            out.push((e, self.bytes(&r)));
        }
        if out.is_empty() {
            return Err(format!("{name}() without arguments"));
        }
        Ok(out)
    }

    /// COUNT/SUM/AVG(DISTINCT …): the arguments, which the shards group by.
    pub(super) fn distinct_args(
        &mut self,
        list: &FunctionArgumentList,
        name: &str,
    ) -> Plan<Vec<SortKey>> {
        let args = self.arg_texts(list, name)?;
        if name != "COUNT" && args.len() > 1 {
            return Err(format!("{name}(DISTINCT …) of several arguments"));
        }
        let mut keys = Vec::new();
        for (_, t) in args {
            self.extra(t.clone());
            keys.push(self.compared(&t, false));
        }
        Ok(keys)
    }

    /// GROUP_CONCAT: the piece (`CONCAT(args…)`), its count, separator, ORDER BY keys and the
    /// session's group_concat_max_len as hidden columns. Without DISTINCT the shards group by
    /// each argument's bytes (`CAST(… AS BINARY)`), so pieces a collation calls equal stay
    /// apart; with DISTINCT by the arguments themselves, as MariaDB compares them.
    pub(super) fn group_concat(
        &mut self,
        list: &FunctionArgumentList,
        distinct: bool,
    ) -> Plan<Concat> {
        let args = self.arg_texts(list, "GROUP_CONCAT")?;
        let mut piece = b"CONCAT(".to_vec();
        for (i, (_, t)) in args.iter().enumerate() {
            if i > 0 {
                piece.extend_from_slice(b", ");
            }
            piece.extend_from_slice(t);
            if distinct {
                self.extra(t.clone());
            } else {
                let mut c = b"CAST(".to_vec();
                c.extend_from_slice(t);
                c.extend_from_slice(b" AS BINARY)");
                self.extra(c);
            }
        }
        piece.push(b')');
        let mut order = Vec::new();
        let mut separator = None;
        for clause in &list.clauses {
            match clause {
                FunctionArgumentClause::OrderBy(items) => {
                    for o in items {
                        let desc = match &o.options.sort {
                            None | Some(OrderBySort::Asc) => false,
                            Some(OrderBySort::Desc) => true,
                            Some(_) => return Err("GROUP_CONCAT(… ORDER BY … USING)".into()),
                        };
                        if o.options.nulls_first.is_some() || o.with_fill.is_some() {
                            return Err("GROUP_CONCAT(… ORDER BY … NULLS FIRST/LAST)".into());
                        }
                        // A number names an argument by position, as in MariaDB.
                        let text = match &o.expr {
                            Expr::Value(v) => {
                                match &v.value {
                                    SqlValue::Number(n, _) => {
                                        let i: usize = n.parse().unwrap_or(0);
                                        args.get(i.wrapping_sub(1))
                                        .map(|(_, t)| t.clone())
                                        .ok_or_else(|| {
                                            format!("GROUP_CONCAT(… ORDER BY {n}): no such argument")
                                        })?
                                    }
                                    _ => return Err("GROUP_CONCAT(… ORDER BY a literal)".into()),
                                }
                            }
                            e => {
                                let r = self.range_of(e)?;
                                self.bytes(&r)
                            }
                        };
                        self.extra(text.clone());
                        order.push(self.compared(&text, desc));
                    }
                }
                FunctionArgumentClause::Separator(v) => {
                    let r = self
                        .index
                        .range(v.span)
                        .ok_or("GROUP_CONCAT's SEPARATOR has no position")?;
                    let t = self.bytes(&r);
                    separator = Some(self.column(t));
                }
                other => return Err(format!("GROUP_CONCAT(… {other}) over several shards")),
            }
        }
        // DISTINCT pieces are compared by their arguments.
        let args_keys = if distinct {
            args.iter().map(|(_, t)| self.compared(t, false)).collect()
        } else {
            Vec::new()
        };
        Ok(Concat {
            piece: self.column(piece),
            count: self.column(b"COUNT(*)".to_vec()),
            separator,
            max_len: self.column(b"@@group_concat_max_len".to_vec()),
            distinct,
            order,
            args: args_keys,
        })
    }
}
