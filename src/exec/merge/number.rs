//! Exact and floating-point numbers as MariaDB prints them in the text protocol: decimals as
//! integers scaled by 10^scale, rounding half away from zero, and doubles in MariaDB's notation.

/// A decimal text as an integer scaled by 10^scale (`None`: not a decimal, or too many digits).
pub fn parse_scaled(text: &[u8], scale: u32) -> Option<i128> {
    let text = std::str::from_utf8(text).ok()?;
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > scale as usize
        || (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut v: i128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        v = v.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    v = v.checked_mul(pow10(scale - frac.len() as u32)?)?;
    Some(if neg { -v } else { v })
}

/// The number of digits after the point in a decimal text.
pub fn scale_of(text: &[u8]) -> u32 {
    text.iter()
        .position(|b| *b == b'.')
        .map(|p| (text.len() - p - 1) as u32)
        .unwrap_or(0)
}

pub fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

pub fn format_scaled(v: i128, scale: u32) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    if scale == 0 {
        return format!("{sign}{a}");
    }
    let p = 10u128.pow(scale);
    format!("{sign}{}.{:0width$}", a / p, a % p, width = scale as usize)
}

/// `num / den` rounded half away from zero (MariaDB's rounding of decimal division).
pub fn div_round(num: i128, den: i128) -> Option<i128> {
    if den == 0 {
        return None;
    }
    let q = num / den;
    let r = num % den;
    let twice = r.unsigned_abs().checked_mul(2)?;
    if twice >= den.unsigned_abs() {
        let away = if (num < 0) != (den < 0) { -1 } else { 1 };
        return q.checked_add(away);
    }
    Some(q)
}

/// Rescales `v` from scale `from` to scale `to`, rounding half away from zero.
pub fn rescale(v: i128, from: u32, to: u32) -> Option<i128> {
    if to >= from {
        v.checked_mul(pow10(to - from)?)
    } else {
        div_round(v, pow10(from - to)?)
    }
}

/// A double as MariaDB's text protocol prints it: the shortest digits that read back to the same
/// value, positional for exponents -15..=14, else `d.ddde±x`.
pub fn format_double(x: f64) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    if x == 0.0 {
        return Some("0".into());
    }
    let exp_form = format!("{x:e}");
    let exp: i32 = exp_form.rsplit_once('e')?.1.parse().ok()?;
    Some(if (-15..15).contains(&exp) {
        format!("{x}")
    } else {
        exp_form
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_parse_round_and_print() {
        assert_eq!(parse_scaled(b"-1.25", 4), Some(-12500));
        assert_eq!(parse_scaled(b"1.255", 2), None);
        assert_eq!(parse_scaled(b"12", 0), Some(12));
        assert_eq!(format_scaled(-5, 2), "-0.05");
        assert_eq!(div_round(1, 32 * 10i128.pow(0)).map(|_| ()), Some(()));
        // 1/32 = 0.03125 at 4 decimals rounds to 0.0313, and -0.0313 for the negative.
        assert_eq!(div_round(10_000, 32), Some(313));
        assert_eq!(div_round(-10_000, 32), Some(-313));
        assert_eq!(div_round(50_000, 3), Some(16667));
        assert_eq!(rescale(12345, 3, 1), Some(123));
    }

    #[test]
    fn doubles_print_as_mariadb_does() {
        for (x, s) in [
            (1e15, "1e15"),
            (1.5e15, "1.5e15"),
            (1e14, "100000000000000"),
            (1e-15, "0.000000000000001"),
            (1e-16, "1e-16"),
            (0.21428571428571427, "0.21428571428571427"),
            (-0.0, "0"),
            (1.2345678901234568e16, "1.2345678901234568e16"),
            (-1.5e-7, "-0.00000015"),
        ] {
            assert_eq!(format_double(x).unwrap(), s);
        }
    }
}
