//! What a single VALUES item is, read from its exact bytes: the caller needs NULL / DEFAULT / 0
//! to decide whether to generate, integers and strings to route, and `?` to bind.

use super::lex::quoted_end;

/// The kind of one value in a VALUES row or SET assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueKind {
    /// `NULL` (any case).
    Null,
    /// The keyword `DEFAULT`.
    Default,
    /// An integer literal, sign included (`0`, `-5`, `+7`).
    Int(i128),
    /// A string literal ('…', "…", `_charset'…'`, `N'…'`) with MySQL escapes resolved, or a
    /// hexadecimal one with a character set introducer (`_utf8mb4 X'61'`), decoded.
    Str(Vec<u8>),
    /// `?`, with its 0-based index among all `?` of the statement.
    Placeholder(usize),
    /// Any other expression.
    Other,
}

/// Classifies the code bytes `v` of a value; `placeholder` is the index of a `?` at `v`.
pub(crate) fn value_kind(v: &[u8], placeholder: Option<usize>) -> ValueKind {
    if v == b"?" {
        return placeholder.map_or(ValueKind::Other, ValueKind::Placeholder);
    }
    if v.eq_ignore_ascii_case(b"NULL") {
        return ValueKind::Null;
    }
    if v.eq_ignore_ascii_case(b"DEFAULT") {
        return ValueKind::Default;
    }
    if let Some(n) = int_literal(v) {
        return ValueKind::Int(n);
    }
    string_literal(v)
        .or_else(|| introduced_hex(v))
        .map_or(ValueKind::Other, ValueKind::Str)
}

/// `_charset X'…'` (the introducer makes it a character string, whatever the column): its bytes.
/// A bare `X'…'` is a number in numeric contexts, so it stays an expression here.
fn introduced_hex(v: &[u8]) -> Option<Vec<u8>> {
    let rest = v.strip_prefix(b"_")?;
    let name_end = rest
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))?;
    if name_end == 0 {
        return None;
    }
    let rest = rest[name_end..].trim_ascii_start();
    let hex = rest
        .strip_prefix(b"X'")
        .or_else(|| rest.strip_prefix(b"x'"))?
        .strip_suffix(b"'")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    hex.chunks(2)
        .map(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 16).ok())
        .collect()
}

fn int_literal(v: &[u8]) -> Option<i128> {
    let (neg, digits) = match v.first()? {
        b'-' => (true, &v[1..]),
        b'+' => (false, &v[1..]),
        _ => (false, v),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: i128 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(if neg { -n } else { n })
}

/// The value of a single quoted string literal spanning all of `v`, with an optional
/// `_charset` introducer or `N` prefix.
fn string_literal(v: &[u8]) -> Option<Vec<u8>> {
    let q = v.iter().position(|&b| b == b'\'' || b == b'"')?;
    let prefix = &v[..q];
    let prefix_ok = prefix.is_empty()
        || prefix.eq_ignore_ascii_case(b"N")
        || (prefix.len() > 1
            && prefix[0] == b'_'
            && prefix[1..]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_'));
    if !prefix_ok || quoted_end(v, q) != Some(v.len()) {
        return None;
    }
    Some(unescape(&v[q + 1..v.len() - 1], v[q]))
}

/// MySQL's string escapes (default sql_mode): `\n`, `\0`, … and a doubled quote.
fn unescape(body: &[u8], q: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        // The run up to the next backslash or quote is copied as it is.
        let run = body[i..]
            .iter()
            .position(|&b| b == b'\\' || b == q)
            .unwrap_or(body.len() - i);
        out.extend_from_slice(&body[i..i + run]);
        i += run;
        let Some(&b) = body.get(i) else {
            break;
        };
        if b == b'\\' && i + 1 < body.len() {
            let e = body[i + 1];
            match e {
                b'0' => out.push(0),
                b'b' => out.push(8),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'Z' => out.push(26),
                // MySQL keeps the backslash for \% and \_ (they matter to LIKE).
                b'%' | b'_' => out.extend_from_slice(&[b'\\', e]),
                _ => out.push(e),
            }
            i += 2;
        } else if b == q && body.get(i + 1) == Some(&q) {
            out.push(q);
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ValueKind::*;

    #[test]
    fn kinds() {
        assert_eq!(value_kind(b"NULL", None), Null);
        assert_eq!(value_kind(b"null", None), Null);
        assert_eq!(value_kind(b"Default", None), Default);
        assert_eq!(value_kind(b"0", None), Int(0));
        assert_eq!(value_kind(b"-12", None), Int(-12));
        assert_eq!(value_kind(b"+7", None), Int(7));
        assert_eq!(
            value_kind(b"18446744073709551615", None),
            Int(u64::MAX as i128)
        );
        assert_eq!(value_kind(b"1e3", None), Other);
        assert_eq!(value_kind(b"1.5", None), Other);
        assert_eq!(value_kind(b"-", None), Other);
        assert_eq!(
            value_kind(b"999999999999999999999999999999999999999999", None),
            Other
        );
        assert_eq!(value_kind(b"?", Some(3)), Placeholder(3));
        assert_eq!(value_kind(b"DEFAULT(x)", None), Other);
        assert_eq!(value_kind(b"NOW()", None), Other);
        assert_eq!(value_kind(b"x'00ff'", None), Other);
        assert_eq!(value_kind(b"", None), Other);
    }

    #[test]
    fn strings() {
        assert_eq!(value_kind(b"'abc'", None), Str(b"abc".to_vec()));
        assert_eq!(value_kind(br"'a\\\'b'", None), Str(br"a\'b".to_vec()));
        assert_eq!(value_kind(b"'it''s'", None), Str(b"it's".to_vec()));
        assert_eq!(value_kind(b"\"x\"\"y\"", None), Str(b"x\"y".to_vec()));
        assert_eq!(
            value_kind(br"'\0\n\Z\%'", None),
            Str(b"\0\n\x1a\\%".to_vec())
        );
        assert_eq!(
            value_kind(b"_binary'\xff\x00'", None),
            Str(b"\xff\x00".to_vec())
        );
        assert_eq!(
            value_kind(b"_utf8mb4'\xf0\x9f\x98\x80'", None),
            Str("😀".as_bytes().to_vec())
        );
        assert_eq!(value_kind(b"N'x'", None), Str(b"x".to_vec()));
        assert_eq!(value_kind(b"_utf8mb4 X'6140'", None), Str(b"a@".to_vec()));
        assert_eq!(
            value_kind(b"_binary x'00ff'", None),
            Str(b"\x00\xff".to_vec())
        );
        assert_eq!(value_kind(b"_latin1 X''", None), Str(Vec::new()));
        assert_eq!(
            value_kind(b"X'61'", None),
            Other,
            "a number in numeric contexts"
        );
        assert_eq!(value_kind(b"_utf8mb4 X'6'", None), Other);
        assert_eq!(value_kind(b"_utf8mb4 X'6g'", None), Other);
        assert_eq!(value_kind(b"_ X'61'", None), Other);
        assert_eq!(value_kind(b"'a' 'b'", None), Other);
        assert_eq!(value_kind(b"'a", None), Other);
        assert_eq!(value_kind(b"'", None), Other);
        assert_eq!(value_kind(br"'a\'", None), Other);
        assert_eq!(value_kind(b"foo'a'", None), Other);
    }
}
