//! Evaluating HAVING over a merged group, with MySQL's three-valued logic and its arithmetic:
//! exact for integers and decimals (division keeps 4 more decimals, rounded half away from
//! zero), double when a double is involved. Comparing strings or dates would need collations
//! and temporal conversions, so that gets ERROR 1235.

use std::cmp::Ordering;

use super::number::{div_round, parse_scaled, pow10, scale_of};
use super::rows::Values;
use super::value::Kind;
use crate::route::{Having, HavingOp};

#[derive(Debug, Clone, Copy)]
enum V {
    Null,
    Dec(i128, u32),
    Float(f64),
    /// A string or temporal value: only IS [NOT] NULL works on it here.
    Text,
}

const NO_STRINGS: &str =
    "HAVING comparing strings or dates across shards (pin the query to one shard)";

fn dec(text: &[u8]) -> Result<V, String> {
    if text.iter().any(|b| matches!(b, b'e' | b'E')) {
        return std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse().ok())
            .map(V::Float)
            .ok_or_else(|| "a malformed number in HAVING".into());
    }
    let scale = scale_of(text);
    parse_scaled(text, scale)
        .map(|v| V::Dec(v, scale))
        .ok_or_else(|| "a number beyond 38 digits in HAVING".into())
}

fn float(v: V) -> Result<f64, String> {
    match v {
        V::Dec(m, s) => Ok(m as f64 / 10f64.powi(s as i32)),
        V::Float(f) => Ok(f),
        _ => Err(NO_STRINGS.into()),
    }
}

fn align(a: (i128, u32), b: (i128, u32)) -> Option<(i128, i128, u32)> {
    let s = a.1.max(b.1);
    Some((
        a.0.checked_mul(pow10(s - a.1)?)?,
        b.0.checked_mul(pow10(s - b.1)?)?,
        s,
    ))
}

fn compare(a: V, b: V) -> Result<Option<Ordering>, String> {
    Ok(match (a, b) {
        (V::Null, _) | (_, V::Null) => None,
        (V::Dec(x, s), V::Dec(y, t)) => {
            let (x, y, _) = align((x, s), (y, t)).ok_or("HAVING numbers beyond 38 digits")?;
            Some(x.cmp(&y))
        }
        (V::Text, _) | (_, V::Text) => return Err(NO_STRINGS.into()),
        _ => float(a)?.partial_cmp(&float(b)?),
    })
}

fn arith(op: HavingOp, a: V, b: V) -> Result<V, String> {
    let overflow = || "HAVING arithmetic beyond 38 digits".to_string();
    Ok(match (a, b) {
        (V::Null, _) | (_, V::Null) => V::Null,
        (V::Text, _) | (_, V::Text) => return Err(NO_STRINGS.into()),
        (V::Dec(x, s), V::Dec(y, t)) => match op {
            HavingOp::Add | HavingOp::Sub => {
                let (x, y, s) = align((x, s), (y, t)).ok_or_else(overflow)?;
                let r = if op == HavingOp::Add {
                    x.checked_add(y)
                } else {
                    x.checked_sub(y)
                };
                V::Dec(r.ok_or_else(overflow)?, s)
            }
            HavingOp::Mul => V::Dec(x.checked_mul(y).ok_or_else(overflow)?, s + t),
            _ => {
                if y == 0 {
                    return Ok(V::Null);
                }
                let num = x
                    .checked_mul(pow10(t + 4).ok_or_else(overflow)?)
                    .ok_or_else(overflow)?;
                V::Dec(div_round(num, y).ok_or_else(overflow)?, s + 4)
            }
        },
        _ => {
            let (x, y) = (float(a)?, float(b)?);
            match op {
                HavingOp::Add => V::Float(x + y),
                HavingOp::Sub => V::Float(x - y),
                HavingOp::Mul => V::Float(x * y),
                _ if y == 0.0 => V::Null,
                _ => V::Float(x / y),
            }
        }
    })
}

/// SQL truth: `Some(true/false)` or `None` for NULL.
fn truth(v: V) -> Result<Option<bool>, String> {
    Ok(match v {
        V::Null => None,
        V::Dec(m, _) => Some(m != 0),
        V::Float(f) => Some(f != 0.0),
        V::Text => return Err(NO_STRINGS.into()),
    })
}

fn bool_v(b: Option<bool>) -> V {
    match b {
        None => V::Null,
        Some(t) => V::Dec(i128::from(t), 0),
    }
}

struct Ctx<'a> {
    row: &'a Values,
    kinds: &'a [Option<Kind>],
    shape: (usize, usize),
}

impl Ctx<'_> {
    fn eval(&self, h: &Having) -> Result<V, String> {
        use HavingOp::*;
        Ok(match h {
            Having::Col(c) => {
                let i = c
                    .index(self.shape.0, self.shape.1)
                    .ok_or("a HAVING column the shards did not return")?;
                match (
                    self.row.get(i).and_then(|v| v.as_deref()),
                    self.kinds.get(i),
                ) {
                    (None, _) => V::Null,
                    (Some(t), Some(Some(Kind::Exact))) => dec(t)?,
                    (Some(t), Some(Some(Kind::Float))) => V::Float(
                        std::str::from_utf8(t)
                            .ok()
                            .and_then(|x| x.parse().ok())
                            .ok_or("a malformed double")?,
                    ),
                    _ => V::Text,
                }
            }
            Having::Num(t) => dec(t.as_bytes())?,
            Having::Str(_) => V::Text,
            Having::Null => V::Null,
            Having::Bin(op, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                match op {
                    And => bool_v(match (truth(x)?, truth(y)?) {
                        (Some(false), _) | (_, Some(false)) => Some(false),
                        (Some(true), Some(true)) => Some(true),
                        _ => None,
                    }),
                    Or => bool_v(match (truth(x)?, truth(y)?) {
                        (Some(true), _) | (_, Some(true)) => Some(true),
                        (Some(false), Some(false)) => Some(false),
                        _ => None,
                    }),
                    Add | Sub | Mul | Div => arith(*op, x, y)?,
                    _ => bool_v(compare(x, y)?.map(|o| match op {
                        Eq => o == Ordering::Equal,
                        NotEq => o != Ordering::Equal,
                        Lt => o == Ordering::Less,
                        LtEq => o != Ordering::Greater,
                        Gt => o == Ordering::Greater,
                        _ => o != Ordering::Less,
                    })),
                }
            }
            Having::Not(a) => bool_v(truth(self.eval(a)?)?.map(|t| !t)),
            Having::Neg(a) => match self.eval(a)? {
                V::Dec(m, s) => V::Dec(
                    m.checked_neg()
                        .ok_or("HAVING arithmetic beyond 38 digits")?,
                    s,
                ),
                V::Float(f) => V::Float(-f),
                V::Null => V::Null,
                V::Text => return Err(NO_STRINGS.into()),
            },
            Having::IsNull(a, negated) => {
                let null = matches!(self.eval(a)?, V::Null);
                bool_v(Some(null != *negated))
            }
            Having::Between(x, lo, hi, negated) => {
                let x = self.eval(x)?;
                let ge = compare(x, self.eval(lo)?)?.map(|o| o != Ordering::Less);
                let le = compare(x, self.eval(hi)?)?.map(|o| o != Ordering::Greater);
                let within = match (ge, le) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                bool_v(within.map(|w| w != *negated))
            }
            Having::In(x, list, negated) => {
                let x = self.eval(x)?;
                let mut found = Some(false);
                for item in list {
                    match compare(x, self.eval(item)?)? {
                        Some(Ordering::Equal) => {
                            found = Some(true);
                            break;
                        }
                        None => found = None,
                        _ => {}
                    }
                }
                bool_v(found.map(|f| f != *negated))
            }
        })
    }
}

/// Whether a merged group passes HAVING.
pub(super) fn holds(
    h: &Having,
    row: &Values,
    kinds: &[Option<Kind>],
    shape: (usize, usize),
) -> Result<bool, String> {
    let v = Ctx { row, kinds, shape }.eval(h)?;
    Ok(truth(v)? == Some(true))
}
