//! A hand-written scanner for the INSERTs applications send most: `INSERT [IGNORE] [INTO]
//! [schema.]table [(col, …)] VALUES|VALUE (…)[, (…)…] [;]` and `REPLACE [INTO] …` whose values
//! are single literals (numbers, strings with an optional `_charset` / `N` prefix, `x'…'`,
//! `b'…'`, `0x…`, NULL, DEFAULT, TRUE, FALSE, `?`). It builds exactly the [`InsertAnalysis`]
//! the sqlparser path builds (the differential tests hold it to that) in one pass without a
//! token list or syntax tree, which is most of the CPU idgate spends on such an INSERT.
//!
//! Anything else — ON DUPLICATE KEY UPDATE, SET, SELECT, RETURNING, row aliases, expressions,
//! functions, hints, `/*! … */`, non-ASCII outside quotes, keywords the parser treats
//! specially — makes it return `None`, and the statement goes through sqlparser as before.

use std::ops::Range;

use super::insert::{Column, InsertAnalysis, InsertBody, Row, TableRef, Value};
use super::lex::{quoted_end, unquote_ident};
use super::literal::value_kind;

/// The analysis of `s` if it has one of the common shapes; `None`: use the parser.
pub(crate) fn analyze_insert_fast(s: &[u8]) -> Option<InsertAnalysis> {
    let mut i = skip(s, 0)?;
    let replace = match keyword(s, i, b"INSERT") {
        Some(j) => {
            i = j;
            false
        }
        None => {
            i = keyword(s, i, b"REPLACE")?;
            true
        }
    };
    i = skip(s, i)?;
    let mut ignore = false;
    if !replace {
        if let Some(j) = keyword(s, i, b"IGNORE") {
            ignore = true;
            i = skip(s, j)?;
        }
    }
    if let Some(j) = keyword(s, i, b"INTO") {
        i = skip(s, j)?;
    }

    // [schema.]table, no space around the dot.
    let first = ident(s, i)?;
    let table = if s.get(first.end) == Some(&b'.') {
        let second = ident(s, first.end + 1)?;
        i = second.end;
        TableRef {
            schema: Some(unquote_ident(&s[first])),
            name: unquote_ident(&s[second]),
        }
    } else {
        i = first.end;
        TableRef {
            schema: None,
            name: unquote_ident(&s[first]),
        }
    };
    i = skip(s, i)?;

    let mut columns = None;
    let mut column_list_insert_at = None;
    if s.get(i) == Some(&b'(') {
        column_list_insert_at = Some(i + 1);
        let mut cols = Vec::new();
        i = skip(s, i + 1)?;
        if s.get(i) == Some(&b')') {
            i += 1;
        } else {
            loop {
                let r = ident(s, i)?;
                i = skip(s, r.end)?;
                cols.push(Column {
                    name: unquote_ident(&s[r.clone()]),
                    span: r,
                });
                match s.get(i)? {
                    b',' => i = skip(s, i + 1)?,
                    b')' => {
                        i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        columns = Some(cols);
        i = skip(s, i)?;
    }

    i = keyword(s, i, b"VALUES").or_else(|| keyword(s, i, b"VALUE"))?;
    i = skip(s, i)?;

    let mut placeholders = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    loop {
        if s.get(i) != Some(&b'(') {
            return None;
        }
        let open = i;
        let mut values = Vec::new();
        i = skip(s, i + 1)?;
        if s.get(i) == Some(&b')') {
            i += 1;
        } else {
            loop {
                let end = literal_end(s, i)?;
                let placeholder = (s[i] == b'?').then(|| {
                    placeholders.push(i);
                    placeholders.len() - 1
                });
                values.push(Value {
                    kind: value_kind(&s[i..end], placeholder),
                    span: i..end,
                });
                i = skip(s, end)?;
                match s.get(i)? {
                    b',' => i = skip(s, i + 1)?,
                    b')' => {
                        i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        // A row of the wrong length gets the parser's error.
        let expected = columns.as_ref().map_or_else(
            || rows.first().map_or(values.len(), |r| r.values.len()),
            Vec::len,
        );
        if values.len() != expected {
            return None;
        }
        rows.push(Row {
            span: open..i,
            values,
        });
        let after_row = i;
        i = skip(s, i)?;
        match s.get(i) {
            Some(b',') => i = skip(s, i + 1)?,
            // The end, or a `;` with nothing but trivia after it.
            None | Some(b';') => {
                if i < s.len() && skip(s, i + 1)? != s.len() {
                    return None;
                }
                return Some(analysis(
                    table,
                    replace,
                    ignore,
                    columns,
                    rows,
                    placeholders,
                    column_list_insert_at,
                    after_row,
                ));
            }
            Some(_) => return None,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn analysis(
    table: TableRef,
    replace: bool,
    ignore: bool,
    columns: Option<Vec<Column>>,
    rows: Vec<Row>,
    placeholders: Vec<usize>,
    column_list_insert_at: Option<usize>,
    suffix_start: usize,
) -> InsertAnalysis {
    InsertAnalysis {
        table,
        replace,
        ignore,
        on_duplicate_update: false,
        returning: false,
        row_alias: None,
        columns,
        rows_start: rows.first().map(|r| r.span.start),
        body: InsertBody::Values { rows },
        placeholders,
        column_list_insert_at,
        set_list_start: None,
        suffix_start,
    }
}

/// Bytes that continue a word for MySQL or for sqlparser's MySQL dialect (`@` and non-ASCII
/// included): a keyword, number or name followed by one of these is something else.
#[inline]
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'@' || b >= 0x80
}

#[inline]
fn at_boundary(s: &[u8], i: usize) -> bool {
    s.get(i).is_none_or(|&b| !is_word_byte(b))
}

/// Just past `kw` (ASCII, matched case-insensitively) when that word stands at `i`.
#[inline]
fn keyword(s: &[u8], i: usize, kw: &[u8]) -> Option<usize> {
    let end = i + kw.len();
    (s.get(i..end)?.eq_ignore_ascii_case(kw) && at_boundary(s, end)).then_some(end)
}

/// Whitespace and comments from `i` on: the first other byte. `None` for what the parser
/// might read differently (executable comments, hints, an unclosed comment, `--` not followed by
/// a space).
fn skip(s: &[u8], mut i: usize) -> Option<usize> {
    while let Some(&b) = s.get(i) {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'#' => i = line_end(s, i),
            b'-' if s.get(i + 1) == Some(&b'-') => match s.get(i + 2) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => i = line_end(s, i),
                _ => return None,
            },
            b'/' if s.get(i + 1) == Some(&b'*') => {
                if matches!(s.get(i + 2), Some(b'!' | b'+' | b'M')) {
                    return None;
                }
                let body = i + 2;
                let close = s.get(body..)?.windows(2).position(|w| w == b"*/")?;
                i = body + close + 2;
            }
            _ => return Some(i),
        }
    }
    Some(i)
}

fn line_end(s: &[u8], i: usize) -> usize {
    s[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(s.len(), |p| i + p + 1)
}

/// Words sqlparser reads as part of the INSERT's syntax where a name could stand (or MySQL's
/// literals): a name spelled like one of them is left to the parser.
const STRUCTURAL: &[&[u8]] = &[
    b"AS",
    b"DEFAULT",
    b"DELAYED",
    b"DIRECTORY",
    b"DUPLICATE",
    b"FALSE",
    b"FORMAT",
    b"FUNCTION",
    b"HIGH_PRIORITY",
    b"IGNORE",
    b"INSERT",
    b"INTO",
    b"LOCAL",
    b"LOW_PRIORITY",
    b"NULL",
    b"ON",
    b"OR",
    b"OUTPUT",
    b"OVERWRITE",
    b"PARTITION",
    b"REPLACE",
    b"RETURNING",
    b"ROW",
    b"SELECT",
    b"SET",
    b"SETTINGS",
    b"TABLE",
    b"TRUE",
    b"VALUE",
    b"VALUES",
    b"WITH",
];

/// A one-part name at `i`: a bare ASCII word starting with a letter, `_` or `$` (not a
/// [`STRUCTURAL`] word), or a non-empty backticked name.
fn ident(s: &[u8], i: usize) -> Option<Range<usize>> {
    match *s.get(i)? {
        b'`' => {
            let end = quoted_end(s, i)?;
            (end > i + 2).then_some(i..end)
        }
        b if b.is_ascii_alphabetic() || b == b'_' || b == b'$' => {
            let mut end = i + 1;
            while s
                .get(end)
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
            {
                end += 1;
            }
            let word = &s[i..end];
            (at_boundary(s, end) && !STRUCTURAL.iter().any(|k| word.eq_ignore_ascii_case(k)))
                .then_some(i..end)
        }
        _ => None,
    }
}

/// End of the single literal at `i`, or `None` when there is no literal the scanner knows there.
fn literal_end(s: &[u8], i: usize) -> Option<usize> {
    let b = *s.get(i)?;
    let end = match b {
        b'\'' | b'"' => quoted_end(s, i)?,
        b'?' => i + 1,
        b'0'..=b'9' | b'.' => number_end(s, i)?,
        b'-' | b'+' => match s.get(i + 1) {
            Some(b'0'..=b'9' | b'.') => number_end(s, i + 1)?,
            _ => return None,
        },
        b'_' => {
            // `_charset'…'`
            let q = i
                + 1
                + s[i + 1..]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))?;
            if q == i + 1 || s[q] != b'\'' {
                return None;
            }
            quoted_end(s, q)?
        }
        b'N' | b'n' if s.get(i + 1) == Some(&b'\'') => quoted_end(s, i + 1)?,
        b'X' | b'x' if s.get(i + 1) == Some(&b'\'') => {
            let end = quoted_end(s, i + 1)?;
            let body = &s[i + 2..end - 1];
            if !body.len().is_multiple_of(2) || !body.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            end
        }
        b'B' | b'b' if s.get(i + 1) == Some(&b'\'') => {
            let end = quoted_end(s, i + 1)?;
            if !s[i + 2..end - 1].iter().all(|&c| c == b'0' || c == b'1') {
                return None;
            }
            end
        }
        _ => [&b"NULL"[..], b"DEFAULT", b"TRUE", b"FALSE"]
            .iter()
            .find_map(|kw| keyword(s, i, kw))?,
    };
    // `'a' 'b'` (concatenation) and `1abc` (a name) are not single literals.
    (at_boundary(s, end) && !matches!(s.get(end), Some(b'\'' | b'"' | b'`'))).then_some(end)
}

/// End of an unsigned number at `i`: `0x…` (lower-case x, as MySQL requires), digits with an
/// optional fraction and exponent, or `.5`.
fn number_end(s: &[u8], i: usize) -> Option<usize> {
    let digits = |mut j: usize| {
        while s.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        j
    };
    if s.get(i) == Some(&b'0') && s.get(i + 1) == Some(&b'x') {
        let mut j = i + 2;
        while s.get(j).is_some_and(u8::is_ascii_hexdigit) {
            j += 1;
        }
        return (j > i + 2).then_some(j);
    }
    let int_end = digits(i);
    let mut j = int_end;
    if s.get(j) == Some(&b'.') {
        let frac_end = digits(j + 1);
        if int_end == i && frac_end == j + 1 {
            return None; // a lone `.`
        }
        j = frac_end;
    } else if int_end == i {
        return None;
    }
    if matches!(s.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(s.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let exp_end = digits(k);
        if exp_end == k {
            return None; // `1e` / `1e+`: MySQL reads a name or an error
        }
        j = exp_end;
    }
    Some(j)
}
