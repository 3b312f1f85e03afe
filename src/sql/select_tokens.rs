//! The top-level layout of one SELECT's text: where its clauses start and end and where each
//! select item, GROUP BY item and ORDER BY item lies, as byte ranges of the client's statement.
//! sqlparser's spans leave out closing parentheses and keywords, so the per-shard rewrite finds
//! its splice points here, from tokens, and checks every piece it cuts out by parsing it again.

use std::ops::Range;

use sqlparser::dialect::MySqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::parse::LineIndex;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An unquoted word, upper-cased.
    Word(String),
    /// A quoted identifier, a literal or an operator.
    Other,
    LParen,
    RParen,
    Comma,
    Semicolon,
}

#[derive(Debug, Clone)]
pub(crate) struct Lexeme {
    pub tok: Tok,
    pub at: Range<usize>,
    /// Parenthesis depth (0: the statement's own level).
    pub depth: u32,
}

/// The clause keywords of a SELECT, in the order they may appear.
const CLAUSES: &[&str] = &[
    "FROM",
    "WHERE",
    "GROUP",
    "HAVING",
    "WINDOW",
    "ORDER",
    "LIMIT",
    "PROCEDURE",
    "INTO",
    "FOR",
    "LOCK",
];

/// Whether `w` (upper-cased) starts a clause or a query: never a name in a WITH list.
pub(crate) fn is_clause_word(w: &str) -> bool {
    w == "SELECT" || w == "VALUES" || w == "TABLE" || CLAUSES.contains(&w)
}

pub(crate) struct SelectText {
    pub toks: Vec<Lexeme>,
    /// Byte length of the statement without a trailing `;`.
    pub end: usize,
}

/// The options that may stand between SELECT and its first item.
pub(crate) const SELECT_OPTIONS: &[&str] = &[
    "ALL",
    "DISTINCT",
    "DISTINCTROW",
    "HIGH_PRIORITY",
    "STRAIGHT_JOIN",
    "SQL_SMALL_RESULT",
    "SQL_BIG_RESULT",
    "SQL_BUFFER_RESULT",
    "SQL_CACHE",
    "SQL_NO_CACHE",
];

impl SelectText {
    pub(crate) fn new(text: &str) -> Option<SelectText> {
        let dialect = MySqlDialect {};
        let raw = Tokenizer::new(&dialect, text)
            .with_unescape(false)
            .tokenize_with_location()
            .ok()?;
        let index = LineIndex::new(text);
        let mut toks = Vec::with_capacity(raw.len());
        let mut depth = 0u32;
        for t in raw {
            let at = index.range(t.span)?;
            let tok = match &t.token {
                Token::Whitespace(_) | Token::EOF => continue,
                Token::Word(w) if w.quote_style.is_none() => {
                    Tok::Word(w.value.to_ascii_uppercase())
                }
                Token::LParen => Tok::LParen,
                Token::RParen => Tok::RParen,
                Token::Comma => Tok::Comma,
                Token::SemiColon => Tok::Semicolon,
                _ => Tok::Other,
            };
            if tok == Tok::RParen {
                depth = depth.checked_sub(1)?;
            }
            toks.push(Lexeme { tok, at, depth });
            if let Some(last) = toks.last() {
                if last.tok == Tok::LParen {
                    depth += 1;
                }
            }
        }
        while toks.last().is_some_and(|t| t.tok == Tok::Semicolon) {
            toks.pop();
        }
        let end = toks.last().map(|t| t.at.end).unwrap_or(0);
        Some(SelectText { toks, end })
    }

    pub(crate) fn is_word(&self, i: usize, w: &str) -> bool {
        self.toks
            .get(i)
            .is_some_and(|t| t.depth == 0 && t.tok == Tok::Word(w.to_string()))
    }

    /// Token index of the top-level clause keyword `name` (FROM, HAVING, …).
    pub(crate) fn clause(&self, name: &str) -> Option<usize> {
        (0..self.toks.len()).find(|&i| self.is_word(i, name))
    }

    /// Byte range of a clause from its keyword to the start of the next clause (or the end).
    pub(crate) fn clause_range(&self, name: &str) -> Option<Range<usize>> {
        let start = self.clause(name)?;
        let pos = CLAUSES.iter().position(|c| *c == name)?;
        let next = (start + 1..self.toks.len())
            .find(|&i| CLAUSES[pos + 1..].iter().any(|c| self.is_word(i, c)));
        let end = match next {
            Some(i) => self.toks[i].at.start,
            None => self.end,
        };
        Some(self.toks[start].at.start..end)
    }

    /// The comma-separated pieces (byte ranges) of tokens `from..to` at depth 0.
    pub(crate) fn pieces(&self, from: usize, to: usize) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut first = from;
        for i in from..=to {
            if i == to || (self.toks[i].depth == 0 && self.toks[i].tok == Tok::Comma) {
                if first < i {
                    out.push(self.toks[first].at.start..self.toks[i - 1].at.end);
                }
                first = i + 1;
            }
        }
        out
    }

    /// Index of the first token starting at or after byte `at`.
    pub(crate) fn token_at(&self, at: usize) -> usize {
        self.toks
            .iter()
            .position(|t| t.at.start >= at)
            .unwrap_or(self.toks.len())
    }

    /// The select items (byte ranges, each with its alias if any), after SELECT and its options.
    pub(crate) fn select_items(&self) -> Option<Vec<Range<usize>>> {
        let mut i = (0..self.toks.len()).find(|&i| self.is_word(i, "SELECT"))? + 1;
        while SELECT_OPTIONS.iter().any(|o| self.is_word(i, o)) {
            i += 1;
        }
        let from = self.clause("FROM")?;
        Some(self.pieces(i, from))
    }

    /// The items of `GROUP BY` / `ORDER BY` (`name` is GROUP or ORDER).
    pub(crate) fn by_items(&self, name: &str) -> Option<Vec<Range<usize>>> {
        let r = self.clause_range(name)?;
        let start = self.clause(name)? + 2; // the keyword and BY
        let end = self.token_at(r.end);
        Some(self.pieces(start, end))
    }

    /// The byte range of the parenthesized group that starts with the `(` at or after `at`.
    pub(crate) fn paren_group(&self, at: usize) -> Option<Range<usize>> {
        let open = self.token_at(at);
        if self.toks.get(open)?.tok != Tok::LParen {
            return None;
        }
        let depth = self.toks[open].depth;
        let close = (open + 1..self.toks.len())
            .find(|&i| self.toks[i].tok == Tok::RParen && self.toks[i].depth == depth)?;
        Some(self.toks[open].at.start..self.toks[close].at.end)
    }

    /// The range of a piece without its last token when that token is a trailing keyword
    /// (`ASC`/`DESC`) or alias (`[AS] name`).
    pub(crate) fn strip_last(&self, piece: Range<usize>, also_as: bool) -> Range<usize> {
        let first = self.token_at(piece.start);
        let mut last = self.token_at(piece.end).saturating_sub(1);
        if last <= first {
            return piece;
        }
        last -= 1;
        if also_as && last > first && self.toks[last].tok == Tok::Word("AS".into()) {
            last -= 1;
        }
        piece.start..self.toks[last].at.end
    }

    /// Whether a keyword (e.g. `ROLLUP` after `WITH`) appears at the top level.
    pub(crate) fn has_top_word(&self, w: &str) -> bool {
        (0..self.toks.len()).any(|i| self.is_word(i, w))
    }
}
