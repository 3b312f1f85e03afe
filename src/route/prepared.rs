//! The shard of a prepared SELECT about a sharded table, decided at each execution from the plan
//! made once at prepare time and the values just bound: a point lookup by sharding key needs no
//! text binding, no parse and no copy of the plan on its way to the shard.

use std::sync::Arc;

use mysql_common::value::Value;

use super::plan::{through_lookup, Route, ShapeKind, Term};
use super::{ShapePlan, ShardValue};
use crate::sql::DmlKind;

/// A prepared SELECT whose target is sharded, with the plan its routing needs.
#[derive(Debug, Clone)]
pub struct PreparedSelect {
    plan: Arc<ShapePlan>,
    /// Where the statement's own literals are (a key condition may use one).
    literals: Vec<std::ops::Range<usize>>,
    /// The configuration generation the plan was made for.
    generation: u64,
}

/// The sharding value a bound parameter gives, as the same literal in the text would.
fn bound_key(v: &Value) -> Option<ShardValue> {
    match v {
        Value::Int(i) => Some(ShardValue::Int(i128::from(*i))),
        Value::UInt(u) => Some(ShardValue::Int(i128::from(*u))),
        Value::Bytes(b) => Some(ShardValue::Str(b.clone())),
        _ => None,
    }
}

impl PreparedSelect {
    /// `Some` for a SELECT whose target is sharded and whose WHERE restricts some column to
    /// known values or parameters; anything else is routed from its bound text at each
    /// execution.
    pub fn new(
        plan: Arc<ShapePlan>,
        literals: Vec<std::ops::Range<usize>>,
        generation: u64,
    ) -> Option<PreparedSelect> {
        let ShapeKind::Sharded(p) = &plan.kind else {
            return None;
        };
        (p.kind == DmlKind::Select && !p.keys.is_empty()).then_some(PreparedSelect {
            plan,
            literals,
            generation,
        })
    }

    /// `otherwise` (this execution's route over several shards) through the lookup of a key
    /// held across shards that the WHERE gives whole, from literals or `values` (strings bound
    /// as `_charset X'…'`, as the bound text has them); unchanged when none does, or the
    /// configuration changed since PREPARE.
    pub fn by_key(
        &self,
        sql: &[u8],
        values: &[Value],
        charset: &str,
        generation: u64,
        otherwise: Route,
    ) -> Route {
        let ShapeKind::Sharded(p) = &self.plan.kind else {
            return otherwise;
        };
        if self.generation != generation || p.probes.is_empty() {
            return otherwise;
        }
        let literal = |t: &Term| match t {
            Term::Placeholder(i) => {
                let v = values.get(*i)?;
                let mut text = Vec::new();
                crate::sql::push_literal(
                    &mut text,
                    v,
                    mysql_common::constants::ColumnType::MYSQL_TYPE_VAR_STRING,
                    charset,
                );
                Some((bound_key(v)?, text))
            }
            _ => t.literal_text(sql, &self.literals),
        };
        through_lookup(&p.probes, &literal, otherwise)
    }

    /// The one shard that owns every row this execution of `sql` (the prepared text, with
    /// `values` bound to its `?`) can return; `None` when the bound values reach several shards
    /// (or cannot be read), or the configuration changed since PREPARE (`generation`): then the
    /// text route decides.
    pub fn single_shard(&self, sql: &[u8], values: &[Value], generation: u64) -> Option<String> {
        if self.generation != generation {
            return None;
        }
        // A key whose bound value cannot route (NULL, a float…) pins nothing: another sharding
        // column may still pin the rows, else the text route decides.
        let resolve = |t: &Term| match t {
            Term::Placeholder(i) => values.get(*i).and_then(bound_key),
            _ => t.literal_value(sql, &self.literals),
        };
        let (plan, set) = self.plan.pinned(resolve)?;
        let set = set?;
        match set.len() {
            1 => set
                .first()
                .and_then(|&i| plan.rule.backends().get(i).cloned()),
            _ => None,
        }
    }
}
