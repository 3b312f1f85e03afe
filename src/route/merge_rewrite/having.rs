//! HAVING as idgate evaluates it after the groups combine: the condition as a tree over merged
//! columns, its aggregates and non-selected columns added as hidden select items.

use sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, Value as SqlValue};

use super::{Plan, Planner};
use crate::route::merge_plan::{ColRef, Having, HavingOp};

impl Planner<'_> {
    pub(super) fn having(&mut self, e: &Expr) -> Plan<Having> {
        use HavingOp::*;
        let b = |h: Having| Box::new(h);
        Ok(match e {
            Expr::Nested(x) => self.having(x)?,
            Expr::Value(v) => match &v.value {
                SqlValue::Number(n, _) => Having::Num(n.clone()),
                SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => {
                    Having::Str(s.as_bytes().to_vec())
                }
                SqlValue::Null => Having::Null,
                SqlValue::Boolean(t) => Having::Num(if *t { "1" } else { "0" }.into()),
                other => return Err(format!("the literal {other} in HAVING")),
            },
            Expr::BinaryOp { left, op, right } => {
                let op = match op {
                    BinaryOperator::Eq => Eq,
                    BinaryOperator::NotEq => NotEq,
                    BinaryOperator::Lt => Lt,
                    BinaryOperator::LtEq => LtEq,
                    BinaryOperator::Gt => Gt,
                    BinaryOperator::GtEq => GtEq,
                    BinaryOperator::And => And,
                    BinaryOperator::Or => Or,
                    BinaryOperator::Plus => Add,
                    BinaryOperator::Minus => Sub,
                    BinaryOperator::Multiply => Mul,
                    BinaryOperator::Divide => Div,
                    other => return Err(format!("the operator {other} in HAVING")),
                };
                Having::Bin(op, b(self.having(left)?), b(self.having(right)?))
            }
            Expr::UnaryOp { op, expr } => match op {
                UnaryOperator::Not => Having::Not(b(self.having(expr)?)),
                UnaryOperator::Minus => Having::Neg(b(self.having(expr)?)),
                UnaryOperator::Plus => self.having(expr)?,
                other => return Err(format!("the operator {other} in HAVING")),
            },
            Expr::IsNull(x) => Having::IsNull(b(self.having(x)?), false),
            Expr::IsNotNull(x) => Having::IsNull(b(self.having(x)?), true),
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => Having::Between(
                b(self.having(expr)?),
                b(self.having(low)?),
                b(self.having(high)?),
                *negated,
            ),
            Expr::InList {
                expr,
                list,
                negated,
            } => Having::In(
                b(self.having(expr)?),
                list.iter()
                    .map(|x| self.having(x))
                    .collect::<Plan<Vec<_>>>()?,
                *negated,
            ),
            Expr::Function(f) => {
                let own = self.visible(e, false)?;
                let r = self.range_of(e)?;
                Having::Col(self.aggregate(f, r, own)?.col)
            }
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => match self.visible(e, false)? {
                Some(i) => Having::Col(ColRef::Visible(i)),
                None => {
                    let r = self.range_of(e)?;
                    let t = self.bytes(&r);
                    Having::Col(self.column(t))
                }
            },
            other => return Err(format!("`{other}` in HAVING")),
        })
    }
}
