//! Running sqlparser on statement bytes that may not be UTF-8, and mapping its spans back to
//! byte offsets in the original statement.

use std::borrow::Cow;

use sqlparser::ast::Statement;
use sqlparser::dialect::MySqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError, ParserOptions};
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan, Tokenizer, Whitespace};

use super::error::SqlParseError;

/// The statement as UTF-8 with the same byte length: each byte of an invalid sequence (raw bytes
/// in `_binary'…'`) becomes `x`, which is inert inside a string literal and keeps offsets 1:1.
pub(crate) fn sanitize(stmt: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(stmt) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            let mut out = String::with_capacity(stmt.len());
            for chunk in stmt.utf8_chunks() {
                out.push_str(chunk.valid());
                out.extend(std::iter::repeat_n('x', chunk.invalid().len()));
            }
            Cow::Owned(out)
        }
    }
}

/// Parses exactly one statement (a trailing `;` is allowed).
pub(crate) fn parse_one(text: &str) -> Result<Statement, SqlParseError> {
    let dialect = MySqlDialect {};
    let text = &*without_write_modifiers(text);
    let mut stmts = Tokenizer::new(&dialect, text)
        .with_unescape(false)
        .tokenize_with_location()
        .map_err(ParserError::from)
        .and_then(|tokens| {
            Parser::new(&dialect)
                .with_options(ParserOptions::new().with_unescape(false))
                .with_tokens_with_locations(update_commas_as_joins(tokens))
                .parse_statements()
        })
        .map_err(|e| syntax_error(text, e))?;
    match (stmts.pop(), stmts.is_empty()) {
        (Some(s), true) => Ok(s),
        (None, _) => Err(SqlParseError::Syntax {
            near: String::new(),
            line: 1,
            detail: "empty statement".into(),
        }),
        (Some(_), false) => Err(SqlParseError::Unsupported(
            "idgate rewrites one statement at a time here; separate the statements with ';' in a multi-statement query".into(),
        )),
    }
}

/// The tokens of `UPDATE a, b SET …` with each comma between UPDATE and SET (outside
/// parentheses) read as `CROSS JOIN`, keeping the comma's span. sqlparser reads only one table
/// with its joins there; MariaDB's comma is an inner join without a condition (of lower
/// precedence than JOIN, which changes no row the statement matches, only which ON
/// conditions may name which tables: MariaDB checks that when it runs the statement).
fn update_commas_as_joins(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut words = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t.token, Token::Whitespace(_)));
    let is_update = |t: &Token| matches!(t, Token::Word(w) if w.keyword == Keyword::UPDATE);
    match words.next() {
        Some((_, t)) if is_update(&t.token) => {}
        _ => return tokens,
    }
    let mut depth = 0usize;
    let mut commas = Vec::new();
    for (i, t) in words {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(w) if depth == 0 && w.keyword == Keyword::SET => break,
            Token::Comma if depth == 0 => commas.push(i),
            _ => {}
        }
    }
    // Back to front, so the indexes before each insertion stay put.
    for i in commas.into_iter().rev() {
        let span = tokens[i].span;
        tokens[i].token = Token::make_keyword("CROSS");
        tokens.insert(i + 1, TokenWithSpan::new(Token::make_keyword("JOIN"), span));
        tokens.insert(
            i + 1,
            TokenWithSpan::new(Token::Whitespace(Whitespace::Space), span),
        );
    }
    tokens
}

/// `text` with the modifiers of `UPDATE [LOW_PRIORITY] [IGNORE]` and `DELETE [LOW_PRIORITY]
/// [QUICK] [IGNORE]` blanked out (same length, so spans still map). sqlparser reads
/// `UPDATE IGNORE t` as table `IGNORE` aliased `t`, and `DELETE IGNORE FROM t` as a multi-table
/// delete of table `IGNORE`; they change how rows are written, never where they live.
fn without_write_modifiers(text: &str) -> Cow<'_, str> {
    let words = leading_words(text, 4);
    let modifiers: &[&str] = match words.first() {
        Some((w, _)) if w.eq_ignore_ascii_case("UPDATE") => &["LOW_PRIORITY", "IGNORE"],
        Some((w, _)) if w.eq_ignore_ascii_case("DELETE") => &["LOW_PRIORITY", "QUICK", "IGNORE"],
        _ => return Cow::Borrowed(text),
    };
    let blank: Vec<std::ops::Range<usize>> = words[1..]
        .iter()
        .take_while(|(w, _)| modifiers.iter().any(|m| w.eq_ignore_ascii_case(m)))
        .map(|(_, at)| at.clone())
        .collect();
    if blank.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for r in blank {
        out.replace_range(r.clone(), &" ".repeat(r.len()));
    }
    Cow::Owned(out)
}

/// The first `n` words of `text` (letters, digits, `_`) with their byte ranges, past
/// whitespace and comments; stops at anything else.
fn leading_words(text: &str, n: usize) -> Vec<(&str, std::ops::Range<usize>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < n && i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'/' if b.get(i + 1) == Some(&b'*') => match text[i + 2..].find("*/") {
                Some(end) => i += end + 4,
                None => break,
            },
            b'#' => i = text[i..].find('\n').map_or(b.len(), |e| i + e),
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_some_and(|c| c.is_ascii_whitespace()) =>
            {
                i = text[i..].find('\n').map_or(b.len(), |e| i + e)
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push((&text[start..i], start..i));
            }
            _ => break,
        }
    }
    out
}

fn syntax_error(text: &str, e: ParserError) -> SqlParseError {
    let detail = match &e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m.clone(),
        ParserError::RecursionLimitExceeded => "expression nested too deeply".into(),
    };
    // sqlparser appends " at Line: L, Column: C" to its messages.
    let (line, col) = location_in(&detail).unwrap_or((1, 1));
    let idx = LineIndex::new(text);
    let at = idx.offset(Location::new(line, col)).unwrap_or(text.len());
    let near: String = text.get(at..).unwrap_or("").chars().take(80).collect();
    let detail = match detail.find(" at Line: ") {
        Some(p) => detail[..p].to_string(),
        None => detail,
    };
    SqlParseError::Syntax { near, line, detail }
}

fn location_in(msg: &str) -> Option<(u64, u64)> {
    let rest = &msg[msg.rfind("Line: ")? + 6..];
    let (l, rest) = rest.split_once(", Column: ")?;
    let c: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((l.trim().parse().ok()?, c.parse().ok()?))
}

/// Line starts of the statement, for turning (line, char column) into byte offsets.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
    ascii: bool,
    /// Last (line, char column, byte offset) found: spans are mostly asked for in order, so
    /// non-ASCII lines are walked forward from here instead of from the line start.
    last: std::cell::Cell<(usize, usize, usize)>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr_newlines(text.as_bytes()));
        LineIndex {
            text,
            starts,
            ascii: text.is_ascii(),
            last: std::cell::Cell::new((usize::MAX, 0, 0)),
        }
    }

    /// Byte offset of a 1-based location; `None` for an empty or out-of-range location.
    pub(crate) fn offset(&self, loc: Location) -> Option<usize> {
        let line = usize::try_from(loc.line).ok()?.checked_sub(1)?;
        let col = usize::try_from(loc.column).ok()?.checked_sub(1)?;
        let start = *self.starts.get(line)?;
        let end = self
            .starts
            .get(line + 1)
            .copied()
            .unwrap_or(self.text.len());
        if self.ascii {
            return (start + col <= end).then_some(start + col);
        }
        let (l, c, b) = self.last.get();
        let (mut c, mut b) = if l == line && c <= col {
            (c, b)
        } else {
            (0, start)
        };
        let bytes = self.text.as_bytes();
        while c < col {
            if b >= end {
                return None;
            }
            b += 1;
            // Skip UTF-8 continuation bytes: one column per char.
            while b < end && (bytes[b] & 0xC0) == 0x80 {
                b += 1;
            }
            c += 1;
        }
        self.last.set((line, c, b));
        Some(b)
    }

    /// Byte range of a span (end exclusive, as sqlparser's end is one past the last char).
    pub(crate) fn range(&self, span: Span) -> Option<std::ops::Range<usize>> {
        let a = self.offset(span.start)?;
        let b = self.offset(span.end)?;
        (a <= b).then_some(a..b)
    }
}

fn memchr_newlines(s: &[u8]) -> impl Iterator<Item = usize> + '_ {
    s.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_keeps_length() {
        let raw = b"INSERT INTO t VALUES (_binary'\xff\x00\xc3')";
        let s = sanitize(raw);
        assert_eq!(s.len(), raw.len());
        assert!(s.contains("_binary'x\0x'"));
        assert!(matches!(sanitize(b"ok \xf0\x9f\x98\x80"), Cow::Borrowed(_)));
    }

    #[test]
    fn offsets_ascii_and_multibyte() {
        let t = "ab\ncd";
        let idx = LineIndex::new(t);
        assert_eq!(idx.offset(Location::new(2, 2)), Some(4));
        assert_eq!(idx.offset(Location::new(2, 3)), Some(5));
        assert_eq!(idx.offset(Location::new(0, 0)), None);
        assert_eq!(idx.offset(Location::new(9, 1)), None);
        let t = "é😀x\n😀y";
        let idx = LineIndex::new(t);
        assert_eq!(idx.offset(Location::new(1, 3)), Some(6));
        assert_eq!(idx.offset(Location::new(2, 2)), Some(12));
        assert_eq!(idx.offset(Location::new(2, 3)), Some(13));
    }

    #[test]
    fn syntax_errors_say_where() {
        let e = parse_one("INSERT INTO t VALUES (1,").unwrap_err();
        assert!(matches!(e, SqlParseError::Syntax { line: 1, .. }), "{e:?}");
        let e = parse_one("SELECT 1; SELECT 2").unwrap_err();
        assert!(matches!(e, SqlParseError::Unsupported(_)));
        assert!(parse_one("").is_err());
    }
}
