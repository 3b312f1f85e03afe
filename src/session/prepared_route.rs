//! The shard of a prepared SELECT about one sharded table, decided at each execution from the
//! analysis made once at prepare time and the values just bound: a point lookup by sharding key
//! needs no text binding and no parse on its way to the shard.

use mysql_common::value::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::route::Placement;
use crate::sql::{self, DmlAnalysis, DmlKind, KeyValue};

/// A SELECT naming exactly one table, with the analysis its routing needs.
#[derive(Debug, Clone)]
pub struct PreparedSelect {
    analysis: DmlAnalysis,
}

/// The sharding value a bound parameter gives, as the same literal in the text would.
fn bound_key(v: &Value) -> Option<KeyValue> {
    match v {
        Value::Int(i) => Some(KeyValue::Int(i128::from(*i))),
        Value::UInt(u) => Some(KeyValue::Int(i128::from(*u))),
        Value::Bytes(b) => Some(KeyValue::Str(b.clone())),
        _ => None,
    }
}

impl PreparedSelect {
    /// `Some` for a SELECT over one table whose WHERE restricts some column to known values or
    /// parameters; anything else is routed from its bound text at each execution.
    pub fn analyze(stmt: &[u8]) -> Option<PreparedSelect> {
        let a = sql::analyze_dml(stmt).ok()?;
        (a.kind == DmlKind::Select
            && a.relations.len() == 1
            && a.target.is_some()
            && !a.keys.is_empty())
        .then_some(PreparedSelect { analysis: a })
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// The one shard that owns every row this execution can return; `None` when the bound
    /// values reach several shards (or cannot be read), and the text route decides.
    pub(super) fn single_shard_for(&self, p: &PreparedSelect, values: &[Value]) -> Option<String> {
        let target = p.analysis.target.as_ref()?;
        let rule = self.rule_for(target)?;
        let Placement::Sharded { shards, .. } = &rule.placement else {
            return None;
        };
        let mut a = p.analysis.clone();
        // A key whose bound value cannot route (NULL, a float…) is left out: another sharding
        // column may still pin the rows, else the text route decides.
        a.keys.retain_mut(|(_, vs)| {
            vs.iter_mut().all(|v| match v {
                KeyValue::Placeholder(i) => match values.get(*i).and_then(bound_key) {
                    Some(k) => {
                        *v = k;
                        true
                    }
                    None => false,
                },
                _ => true,
            })
        });
        let set = super::dml::pinned_shards(&rule, &a).ok()??;
        match set.len() {
            1 => set.first().map(|&i| shards[i].clone()),
            _ => None,
        }
    }
}
