//! A statement's shape: its text with each literal replaced by `?`, and where those literals
//! were. Statements of one shape are planned once (`route::cache`); each execution binds its
//! own literal texts. Only what is surely a value becomes a slot: single-quoted strings not
//! glued to an introducer (`_utf8mb4'…'`, `x'…'` stay as written) and plain decimal numbers not
//! part of a word. Double-quoted text (an identifier under ANSI_QUOTES), comments (hints,
//! executable comments) and everything else stay in the shape as written.

use std::ops::Range;

use super::lex::{comment_at, is_ident_byte, quoted_end};

/// The normalized text and the byte ranges of the literals it replaced, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub text: Vec<u8>,
    /// Where in `text` each literal's `?` is: a `?` the client wrote (a placeholder) is not a
    /// literal, and two statements are of one shape only when both agree.
    pub marks: Vec<u32>,
    pub slots: Vec<Range<usize>>,
}

/// End of the decimal number starting at `i` (digits, a fraction, an exponent); `None` when the
/// run continues into a word (`1abc` is an identifier in MySQL).
fn number_end(s: &[u8], i: usize) -> Option<usize> {
    let digits = |mut j: usize| {
        while j < s.len() && s[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut j = digits(i);
    if s.get(j) == Some(&b'.') {
        j = digits(j + 1);
    }
    if matches!(s.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(s.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if s.get(k).is_some_and(u8::is_ascii_digit) {
            j = digits(k);
        }
    }
    if s.get(j).is_some_and(|&b| is_ident_byte(b) || b == b'.') {
        return None;
    }
    Some(j)
}

/// The shape of `stmt`.
pub fn shape(stmt: &[u8]) -> Shape {
    let mut text = Vec::with_capacity(stmt.len());
    let mut slots = Vec::new();
    let mut marks = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    while i < stmt.len() {
        if let Some((_, end)) = comment_at(stmt, i) {
            i = end;
            continue;
        }
        let b = stmt[i];
        let prev_glues = i > 0 && (is_ident_byte(stmt[i - 1]) || stmt[i - 1] == b'.');
        let slot_end = match b {
            b'\'' if !prev_glues => match quoted_end(stmt, i) {
                Some(end) => Some(end),
                None => break, // unterminated: the rest stays as written
            },
            b'"' | b'`' | b'\'' => {
                i = quoted_end(stmt, i).unwrap_or(stmt.len());
                continue;
            }
            b'0'..=b'9' if !prev_glues => match number_end(stmt, i) {
                Some(end) => Some(end),
                None => {
                    i = super::lex::word_end(stmt, i);
                    continue;
                }
            },
            b'.' if !prev_glues && stmt.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                number_end(stmt, i)
            }
            _ if is_ident_byte(b) => {
                i = super::lex::word_end(stmt, i);
                continue;
            }
            _ => None,
        };
        match slot_end {
            Some(end) => {
                text.extend_from_slice(&stmt[copied..i]);
                marks.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
                text.push(b'?');
                slots.push(i..end);
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    text.extend_from_slice(&stmt[copied..]);
    Shape { text, marks, slots }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> (String, Vec<String>) {
        let sh = shape(s.as_bytes());
        let lits = sh.slots.iter().map(|r| s[r.clone()].to_string()).collect();
        (String::from_utf8(sh.text).unwrap(), lits)
    }

    #[test]
    fn literals_become_slots() {
        assert_eq!(
            norm("SELECT id, k FROM sbtest3 WHERE k >= 5012 ORDER BY k, id LIMIT 10"),
            (
                "SELECT id, k FROM sbtest3 WHERE k >= ? ORDER BY k, id LIMIT ?".into(),
                vec!["5012".into(), "10".into()]
            )
        );
        assert_eq!(
            norm("select * from t where a = 'x''y\\'z' and b in (-1.5e3, .5) and c = ?"),
            (
                "select * from t where a = ? and b in (-?, ?) and c = ?".into(),
                vec!["'x''y\\'z'".into(), "1.5e3".into(), ".5".into()]
            )
        );
    }

    #[test]
    fn words_identifiers_and_comments_stay() {
        for s in [
            "SELECT `a 1`, \"b 2\", t1.c3, 1abc, x'0A', _utf8mb4'k', N'n' FROM db2.t9",
            "SELECT /*+ MAX_EXECUTION_TIME(100) */ a FROM t -- 5\n",
            "SELECT /*!40001 SQL_NO_CACHE 5 */ a # 'x'\nFROM t",
            "SELECT a FROM t WHERE b = 'unterminated 5",
            "SELECT t.1e5 FROM t",
        ] {
            let (text, lits) = norm(s);
            assert_eq!((text.as_str(), lits.len()), (s, 0), "{s}");
        }
    }

    #[test]
    fn placeholders_are_not_literals() {
        let a = shape(b"SELECT * FROM t WHERE id = ? LIMIT 5");
        let b = shape(b"SELECT * FROM t WHERE id = 7 LIMIT ?");
        assert_eq!(a.text, b.text);
        assert_ne!(a.marks, b.marks);
    }

    #[test]
    fn same_shape_for_different_values() {
        let a = shape(b"SELECT * FROM t WHERE id = 1 AND s = 'a'");
        let b = shape(b"SELECT * FROM t WHERE id = 123456 AND s = 'bcd'");
        assert_eq!(a.text, b.text);
        assert_ne!(a.slots, b.slots);
    }
}
