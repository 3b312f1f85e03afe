//! Byte scans over parts of an INSERT whose exact extents sqlparser's spans do not give
//! (items of a list, the `=` of an assignment), and the statement-wide placeholder scan.

use std::ops::Range;

use super::lex::{comment_at, is_ident_byte, skip_quoted, word_end, Comment};

/// Where a comma-separated list ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// At the `)` closing the list (the scan starts just after the `(`).
    CloseParen,
    /// At a top-level `AS` / `ON` / `RETURNING` keyword, `;`, or the end (an `INSERT … SET`
    /// list; none of these words can stand outside parentheses inside a value).
    Clause,
}

/// Items of a comma-separated list starting at `from`: each range spans the item's code, without
/// surrounding whitespace and comments. Also returns where the list stopped (the `)` index for
/// [`Stop::CloseParen`]). `None` for unbalanced parentheses.
pub(crate) fn list_items(s: &[u8], from: usize, stop: Stop) -> Option<(Vec<Range<usize>>, usize)> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    // Code extent of the current item.
    let mut first: Option<usize> = None;
    let mut last = from;
    let mut commas = 0;
    let mut i = from;
    let finish =
        |items: &mut Vec<Range<usize>>, first: Option<usize>, last: usize, at: usize| match first {
            Some(f) => items.push(f..last),
            None => items.push(at..at),
        };
    while i < s.len() {
        let b = s[i];
        let start = i;
        match b {
            _ if b.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'\'' | b'"' | b'`' => i = skip_quoted(s, i),
            b'#' | b'-' | b'/' if comment_at(s, i).is_some() => {
                if let Some((kind, end)) = comment_at(s, i) {
                    i = end;
                    if kind == Comment::Plain {
                        continue;
                    }
                }
            }
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' if depth == 0 => {
                if stop != Stop::CloseParen {
                    return None;
                }
                if first.is_some() || commas > 0 {
                    finish(&mut items, first, last, i);
                }
                return Some((items, i));
            }
            b')' => {
                depth -= 1;
                i += 1;
            }
            b',' if depth == 0 => {
                finish(&mut items, first, last, i);
                commas += 1;
                first = None;
                i += 1;
                continue;
            }
            b';' if depth == 0 && stop == Stop::Clause => break,
            _ if is_ident_byte(b) => {
                i = word_end(s, i);
                let w = &s[start..i];
                if depth == 0
                    && stop == Stop::Clause
                    && (w.eq_ignore_ascii_case(b"ON")
                        || w.eq_ignore_ascii_case(b"AS")
                        || w.eq_ignore_ascii_case(b"RETURNING"))
                {
                    i = start;
                    break;
                }
            }
            _ => i += 1,
        }
        first.get_or_insert(start);
        last = i;
    }
    if stop == Stop::CloseParen || depth != 0 {
        return None;
    }
    if first.is_some() || commas > 0 {
        finish(&mut items, first, last, i);
    }
    Some((items, i))
}

/// Splits an `INSERT … SET` item `col = expr` (or `col := expr`) at its first top-level `=`,
/// returning the column's and the value's code ranges.
pub(crate) fn split_assignment(
    s: &[u8],
    item: Range<usize>,
) -> Option<(Range<usize>, Range<usize>)> {
    let mut i = item.start;
    while i < item.end {
        match s[i] {
            b'\'' | b'"' | b'`' => i = skip_quoted(s, i),
            b'#' | b'-' | b'/' if comment_at(s, i).is_some() => i = comment_at(s, i)?.1,
            b'=' => {
                let name_end = if i > item.start && s[i - 1] == b':' {
                    i - 1
                } else {
                    i
                };
                let name = trim_code(s, item.start..name_end);
                let value = trim_code(s, i + 1..item.end);
                return (!name.is_empty() && !value.is_empty()).then_some((name, value));
            }
            _ => i += 1,
        }
    }
    None
}

/// `r` without leading/trailing whitespace and plain comments.
fn trim_code(s: &[u8], r: Range<usize>) -> Range<usize> {
    let sub = &s[..r.end];
    match list_items(sub, r.start, Stop::Clause) {
        Some((items, _)) if items.len() == 1 => items[0].clone(),
        // A comma inside (cannot happen for a column name or a top-level value): keep as is.
        _ => r,
    }
}

/// What the statement-wide scan found outside strings and comments.
pub(crate) struct Marks {
    /// Byte offsets of the `?` placeholders, in order.
    pub placeholders: Vec<usize>,
    /// Whether there is a `/*! … */` executable comment.
    pub executable_comment: bool,
}

pub(crate) fn marks(s: &[u8]) -> Marks {
    let mut m = Marks {
        placeholders: Vec::new(),
        executable_comment: false,
    };
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\'' | b'"' | b'`' => i = skip_quoted(s, i),
            b'#' | b'-' | b'/' => match comment_at(s, i) {
                Some((kind, end)) => {
                    m.executable_comment |= kind == Comment::Executable;
                    i = end;
                }
                None => i += 1,
            },
            b'?' => {
                m.placeholders.push(i);
                i += 1;
            }
            _ => i += 1,
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(s: &[u8], from: usize, stop: Stop) -> (Vec<&[u8]>, usize) {
        let (r, end) = list_items(s, from, stop).unwrap();
        (r.into_iter().map(|r| &s[r]).collect(), end)
    }

    #[test]
    fn paren_lists() {
        let s = b"( 1, /* c */ 'a,b' , f(1, (2)), -- x\n ? )";
        let (v, end) = items(s, 1, Stop::CloseParen);
        assert_eq!(v, vec![&b"1"[..], b"'a,b'", b"f(1, (2))", b"?"]);
        assert_eq!(end, s.len() - 1);
        assert_eq!(items(b"()", 1, Stop::CloseParen), (vec![], 1));
        assert_eq!(items(b"( )", 1, Stop::CloseParen), (vec![], 2));
        assert_eq!(items(b"(1,)", 1, Stop::CloseParen).0, vec![&b"1"[..], b""]);
        assert!(list_items(b"(1, (2)", 1, Stop::CloseParen).is_none());
        assert!(list_items(b"(1", 1, Stop::CloseParen).is_none());
    }

    #[test]
    fn set_lists() {
        let s = b"a = 1, `b` = (x, y) ON DUPLICATE KEY UPDATE a = 2";
        let (v, end) = items(s, 0, Stop::Clause);
        assert_eq!(v, vec![&b"a = 1"[..], b"`b` = (x, y)"]);
        assert_eq!(&s[end..end + 2], b"ON");
        let (v, end) = items(b"a = 1 ; ", 0, Stop::Clause);
        assert_eq!((v, end), (vec![&b"a = 1"[..]], 6));
        let (v, _) = items(b"a=1 RETURNING id", 0, Stop::Clause);
        assert_eq!(v, vec![&b"a=1"[..]]);
        let (v, end) = items(
            b"a=1 AS new ON DUPLICATE KEY UPDATE a=new.a",
            0,
            Stop::Clause,
        );
        assert_eq!((v, end), (vec![&b"a=1"[..]], 4));
        let (v, _) = items(b"a=version", 0, Stop::Clause);
        assert_eq!(v, vec![&b"a=version"[..]]);
    }

    #[test]
    fn assignments() {
        let s = b"`a=b` /*x*/ := 'q=r' /* y */";
        let (n, v) = split_assignment(s, 0..s.len()).unwrap();
        assert_eq!((&s[n], &s[v]), (&b"`a=b`"[..], &b"'q=r'"[..]));
        assert!(split_assignment(b"a", 0..1).is_none());
        assert!(split_assignment(b"a=", 0..2).is_none());
    }

    #[test]
    fn placeholder_marks() {
        let m = marks(b"INSERT INTO t VALUES (?, '?', `?`, \"?\", /* ? */ ?) -- ?");
        assert_eq!(m.placeholders, vec![22, 48]);
        assert!(!m.executable_comment);
        assert!(marks(b"INSERT /*! IGNORE */ INTO t VALUES (1)").executable_comment);
    }
}
