//! Combining per-shard answers of `SELECT COUNT(..), SUM(..), MIN(..), MAX(..) FROM t …` (one
//! row from each shard, text protocol) into the one row the whole table would give.

use mysql_common::constants::ColumnType;

use crate::sql::Aggregate;
use crate::wire::packets;

/// A text row's values (`None` for NULL).
pub fn parse_text_row(p: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
    let mut rest = p;
    let mut out = Vec::new();
    while !rest.is_empty() {
        if rest[0] == 0xfb {
            out.push(None);
            rest = &rest[1..];
            continue;
        }
        let len = packets::get_lenenc_int(&mut rest)? as usize;
        out.push(Some(rest.get(..len)?.to_vec()));
        rest = &rest[len..];
    }
    Some(out)
}

/// The name (alias) of a column definition packet.
pub fn column_name(def: &[u8]) -> Option<&[u8]> {
    let mut rest = def;
    for _ in 0..4 {
        let len = packets::get_lenenc_int(&mut rest)? as usize;
        rest = rest.get(len..)?;
    }
    let len = packets::get_lenenc_int(&mut rest)? as usize;
    rest.get(..len)
}

/// (type, decimals) of a column definition packet.
pub fn column_type(def: &[u8]) -> Option<(ColumnType, u8)> {
    let mut rest = def;
    for _ in 0..6 {
        let len = packets::get_lenenc_int(&mut rest)? as usize;
        rest = rest.get(len..)?;
    }
    // 0x0c, charset (2), length (4), type (1), flags (2), decimals (1)
    let ty = *rest.get(7)?;
    let decimals = *rest.get(10)?;
    Some((ColumnType::try_from(ty).ok()?, decimals))
}

/// A decimal number as an integer scaled by 10^scale.
pub(crate) fn scaled(text: &str, scale: u32) -> Option<i128> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > scale as usize || int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    for _ in 0..scale {
        v = v.checked_mul(10)?;
    }
    let mut f: i128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    for _ in frac.len()..scale as usize {
        f *= 10;
    }
    v = v.checked_add(f)?;
    Some(if neg { -v } else { v })
}

fn format_scaled(v: i128, scale: u32) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let p = 10i128.pow(scale);
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    format!(
        "{sign}{}.{:0width$}",
        a / p as u128,
        a % p as u128,
        width = scale as usize
    )
}

pub(crate) fn is_integer(ty: ColumnType) -> bool {
    use ColumnType::*;
    matches!(
        ty,
        MYSQL_TYPE_TINY
            | MYSQL_TYPE_SHORT
            | MYSQL_TYPE_LONG
            | MYSQL_TYPE_INT24
            | MYSQL_TYPE_LONGLONG
            | MYSQL_TYPE_YEAR
    )
}

pub(crate) fn is_exact(ty: ColumnType) -> bool {
    is_integer(ty)
        || matches!(
            ty,
            ColumnType::MYSQL_TYPE_NEWDECIMAL | ColumnType::MYSQL_TYPE_DECIMAL
        )
}

pub(crate) fn is_float(ty: ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::MYSQL_TYPE_FLOAT | ColumnType::MYSQL_TYPE_DOUBLE
    )
}

/// Temporal values in MySQL's text format order as their text does (same width), except
/// negative TIME values, which are refused.
pub(crate) fn is_temporal(ty: ColumnType) -> bool {
    use ColumnType::*;
    matches!(
        ty,
        MYSQL_TYPE_DATE
            | MYSQL_TYPE_DATETIME
            | MYSQL_TYPE_TIMESTAMP
            | MYSQL_TYPE_NEWDATE
            | MYSQL_TYPE_TIME
    )
}

fn combine(
    agg: Aggregate,
    ty: ColumnType,
    decimals: u8,
    values: &[Option<Vec<u8>>],
) -> Result<Option<Vec<u8>>, String> {
    let present: Vec<String> = values
        .iter()
        .flatten()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    if present.is_empty() {
        return Ok(match agg {
            Aggregate::Count => Some(b"0".to_vec()),
            _ => None,
        });
    }
    let scale = if is_integer(ty) { 0 } else { decimals as u32 };
    let bad = || format!("cannot combine the shards' {agg:?} values of a {ty:?} column");
    match agg {
        Aggregate::Count | Aggregate::Sum if is_exact(ty) => {
            let mut total: i128 = 0;
            for v in &present {
                total = total
                    .checked_add(scaled(v, scale).ok_or_else(bad)?)
                    .ok_or_else(bad)?;
            }
            Ok(Some(format_scaled(total, scale).into_bytes()))
        }
        Aggregate::Sum if is_float(ty) => {
            let mut total = 0f64;
            for v in &present {
                total += v.parse::<f64>().map_err(|_| bad())?;
            }
            Ok(Some(total.to_string().into_bytes()))
        }
        Aggregate::Min | Aggregate::Max => {
            let pick = |a: &String, b: &String| -> Result<bool, String> {
                // true when b should replace a
                let less = if is_exact(ty) {
                    scaled(b, scale).ok_or_else(bad)? < scaled(a, scale).ok_or_else(bad)?
                } else if is_float(ty) {
                    b.parse::<f64>().map_err(|_| bad())? < a.parse::<f64>().map_err(|_| bad())?
                } else if is_temporal(ty)
                    && !a.starts_with('-')
                    && !b.starts_with('-')
                    && a.len() == b.len()
                {
                    b < a
                } else {
                    return Err(format!(
                        "MIN/MAX over shards of a {ty:?} column needs the column's collation, which idgate does not apply yet"
                    ));
                };
                Ok(if agg == Aggregate::Min {
                    less
                } else {
                    !less && a != b
                })
            };
            let mut best = present[0].clone();
            for v in &present[1..] {
                if pick(&best, v)? {
                    best = v.clone();
                }
            }
            Ok(Some(best.into_bytes()))
        }
        _ => Err(bad()),
    }
}

/// The combined row (as a text row packet) of per-shard rows.
pub fn merge_rows(
    aggs: &[Aggregate],
    columns: &[Vec<u8>],
    rows: &[Vec<u8>],
) -> Result<Vec<u8>, String> {
    let parsed: Vec<Vec<Option<Vec<u8>>>> = rows
        .iter()
        .map(|r| parse_text_row(r).ok_or_else(|| "a shard sent a malformed row".to_string()))
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for (i, agg) in aggs.iter().enumerate() {
        let (ty, decimals) = columns
            .get(i)
            .and_then(|c| column_type(c))
            .ok_or_else(|| "a shard sent a malformed column definition".to_string())?;
        let values: Vec<Option<Vec<u8>>> =
            parsed.iter().map(|r| r.get(i).cloned().flatten()).collect();
        match combine(*agg, ty, decimals, &values)? {
            Some(v) => packets::put_lenenc_str(&mut out, &v),
            None => out.push(0xfb),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_add_exactly() {
        let v = [Some(b"1.25".to_vec()), Some(b"-0.05".to_vec()), None];
        let got = combine(Aggregate::Sum, ColumnType::MYSQL_TYPE_NEWDECIMAL, 2, &v).unwrap();
        assert_eq!(got, Some(b"1.20".to_vec()));
        let c = [Some(b"3".to_vec()), Some(b"4".to_vec())];
        assert_eq!(
            combine(Aggregate::Count, ColumnType::MYSQL_TYPE_LONGLONG, 0, &c).unwrap(),
            Some(b"7".to_vec())
        );
        assert_eq!(
            combine(
                Aggregate::Sum,
                ColumnType::MYSQL_TYPE_NEWDECIMAL,
                0,
                &[None, None]
            )
            .unwrap(),
            None
        );
        assert_eq!(
            combine(
                Aggregate::Count,
                ColumnType::MYSQL_TYPE_LONGLONG,
                0,
                &[None]
            )
            .unwrap(),
            Some(b"0".to_vec())
        );
    }

    #[test]
    fn min_and_max() {
        let v = [
            Some(b"10".to_vec()),
            Some(b"9".to_vec()),
            Some(b"-3".to_vec()),
        ];
        assert_eq!(
            combine(Aggregate::Min, ColumnType::MYSQL_TYPE_LONG, 0, &v).unwrap(),
            Some(b"-3".to_vec())
        );
        assert_eq!(
            combine(Aggregate::Max, ColumnType::MYSQL_TYPE_LONG, 0, &v).unwrap(),
            Some(b"10".to_vec())
        );
        let d = [Some(b"2024-01-02".to_vec()), Some(b"2023-12-31".to_vec())];
        assert_eq!(
            combine(Aggregate::Min, ColumnType::MYSQL_TYPE_DATE, 0, &d).unwrap(),
            Some(b"2023-12-31".to_vec())
        );
        assert!(combine(Aggregate::Max, ColumnType::MYSQL_TYPE_VAR_STRING, 0, &d).is_err());
    }
}
