//! `LOAD DATA LOCAL INFILE` into a table idgate places or fills ids for: the statement's options
//! read into [`LoadData`], and [`FieldReader`], which cuts the client's file into rows of fields
//! the way MariaDB's own reader does (FIELDS TERMINATED/ENCLOSED/ESCAPED BY, LINES STARTING/
//! TERMINATED BY, `\N` and unenclosed `NULL`), fed packet by packet so the file is never held
//! whole.

use super::error::SqlParseError;
use super::insert::TableRef;
use super::words::{Token, Tokens};

/// What to do with a row whose key is already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDuplicate {
    /// No keyword: with LOCAL, MariaDB treats duplicates and bad values as IGNORE does.
    Default,
    Replace,
    Ignore,
}

/// A column of the file's rows: a table column, or a user variable (`@x`, to be discarded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Column(String),
    Variable(String),
}

/// How the file is cut into rows and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFormat {
    pub field_terminator: Vec<u8>,
    pub enclosed_by: Option<u8>,
    pub optionally: bool,
    pub escaped_by: Option<u8>,
    pub line_starting: Vec<u8>,
    pub line_terminator: Vec<u8>,
}

impl Default for FileFormat {
    /// MariaDB's defaults: tab-separated, newline-terminated, backslash escapes, no quotes.
    fn default() -> Self {
        FileFormat {
            field_terminator: b"\t".to_vec(),
            enclosed_by: None,
            optionally: false,
            escaped_by: Some(b'\\'),
            line_starting: Vec::new(),
            line_terminator: b"\n".to_vec(),
        }
    }
}

/// An analysed `LOAD DATA` statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadData {
    pub local: bool,
    /// The file name as the client wrote it (the client is asked for this name).
    pub file: Vec<u8>,
    pub on_duplicate: OnDuplicate,
    pub table: TableRef,
    /// `CHARACTER SET x`: the file's character set.
    pub charset: Option<String>,
    pub format: FileFormat,
    /// `IGNORE n LINES`: rows skipped at the start of the file.
    pub skip_lines: u64,
    /// The column list; `None`: every column of the table, in order.
    pub columns: Option<Vec<Target>>,
}

fn unsupported(what: &str) -> SqlParseError {
    SqlParseError::Unsupported(format!(
        "LOAD DATA into a table idgate places or fills ids for: {what} is not supported; \
         load into a staging table on the default backend and INSERT … SELECT from it"
    ))
}

fn syntax(near: &str, detail: &str) -> SqlParseError {
    SqlParseError::Syntax {
        near: near.chars().take(80).collect(),
        line: 1,
        detail: detail.to_string(),
    }
}

/// The value of a '…' literal: quotes removed, doubled quotes and backslash escapes undone.
fn string_value(quoted: &[u8]) -> Vec<u8> {
    let Some(&q) = quoted.first() else {
        return Vec::new();
    };
    let inner = &quoted[1..quoted.len().saturating_sub(1).max(1)];
    let mut out = Vec::with_capacity(inner.len());
    let mut k = 0;
    while k < inner.len() {
        let b = inner[k];
        if b == b'\\' && k + 1 < inner.len() {
            out.push(match inner[k + 1] {
                b'0' => 0,
                b'b' => 8,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'Z' => 0x1a,
                other => other,
            });
            k += 2;
        } else if b == q && inner.get(k + 1) == Some(&q) {
            out.push(q);
            k += 2;
        } else {
            out.push(b);
            k += 1;
        }
    }
    out
}

/// A cursor over the statement's tokens.
struct Cursor<'a> {
    t: Vec<Token<'a>>,
    i: usize,
    stmt: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn peek_word(&self, w: &str) -> bool {
        matches!(self.t.get(self.i), Some(Token::Word(x)) if x.eq_ignore_ascii_case(w.as_bytes()))
    }

    fn eat(&mut self, w: &str) -> bool {
        let hit = self.peek_word(w);
        self.i += hit as usize;
        hit
    }

    fn expect(&mut self, w: &str) -> Result<(), SqlParseError> {
        if self.eat(w) {
            Ok(())
        } else {
            Err(syntax(
                &String::from_utf8_lossy(self.stmt),
                &format!("expected {w}"),
            ))
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, SqlParseError> {
        match self.t.get(self.i) {
            Some(Token::Str(s)) => {
                self.i += 1;
                Ok(string_value(s))
            }
            _ => Err(syntax(
                &String::from_utf8_lossy(self.stmt),
                "expected a quoted string",
            )),
        }
    }

    /// A bare or backticked name.
    fn name(&mut self) -> Option<String> {
        let n = match self.t.get(self.i)? {
            Token::Word(w) => String::from_utf8_lossy(w).into_owned(),
            Token::Ident(q) => super::lex::unquote_ident(q),
            _ => return None,
        };
        self.i += 1;
        Some(n)
    }

    fn punct(&mut self, p: u8) -> bool {
        let hit = self.t.get(self.i) == Some(&Token::Punct(p));
        self.i += hit as usize;
        hit
    }

    fn done(&self) -> bool {
        self.t[self.i..].iter().all(|t| *t == Token::Punct(b';'))
    }
}

/// One byte for ENCLOSED BY / ESCAPED BY ('' for none), as MariaDB requires.
fn one_byte(v: Vec<u8>, what: &str) -> Result<Option<u8>, SqlParseError> {
    match v.as_slice() {
        [] => Ok(None),
        [b] => Ok(Some(*b)),
        _ => Err(SqlParseError::Unsupported(format!(
            "{what} takes one character ('' for none)"
        ))),
    }
}

/// Reads a `LOAD DATA … INFILE` statement.
pub fn analyze_load_data(stmt: &[u8]) -> Result<LoadData, SqlParseError> {
    let mut c = Cursor {
        t: Tokens::new(stmt).map(|(_, t)| t).collect(),
        i: 0,
        stmt,
    };
    c.expect("LOAD")?;
    if c.eat("XML") {
        return Err(unsupported("LOAD XML"));
    }
    c.expect("DATA")?;
    let _ = c.eat("LOW_PRIORITY") || c.eat("CONCURRENT");
    let local = c.eat("LOCAL");
    c.expect("INFILE")?;
    let file = c.string()?;
    let on_duplicate = if c.eat("REPLACE") {
        OnDuplicate::Replace
    } else if c.eat("IGNORE") {
        OnDuplicate::Ignore
    } else {
        OnDuplicate::Default
    };
    c.expect("INTO")?;
    c.expect("TABLE")?;
    let first = c
        .name()
        .ok_or_else(|| syntax(&String::from_utf8_lossy(stmt), "expected a table name"))?;
    let table = if c.punct(b'.') {
        let name = c
            .name()
            .ok_or_else(|| syntax(&String::from_utf8_lossy(stmt), "expected a table name"))?;
        TableRef {
            schema: Some(first),
            name,
        }
    } else {
        TableRef {
            schema: None,
            name: first,
        }
    };
    if c.peek_word("PARTITION") {
        return Err(unsupported("PARTITION"));
    }
    let mut charset = None;
    if c.eat("CHARACTER") {
        c.expect("SET")?;
        charset = c.name();
    } else if c.eat("CHARSET") {
        charset = c.name();
    }
    let mut format = FileFormat::default();
    if c.eat("FIELDS") || c.eat("COLUMNS") {
        loop {
            if c.eat("TERMINATED") {
                c.expect("BY")?;
                format.field_terminator = c.string()?;
            } else if c.peek_word("OPTIONALLY") || c.peek_word("ENCLOSED") {
                format.optionally = c.eat("OPTIONALLY");
                c.expect("ENCLOSED")?;
                c.expect("BY")?;
                format.enclosed_by = one_byte(c.string()?, "ENCLOSED BY")?;
            } else if c.eat("ESCAPED") {
                c.expect("BY")?;
                format.escaped_by = one_byte(c.string()?, "ESCAPED BY")?;
            } else {
                break;
            }
        }
    }
    if c.eat("LINES") {
        loop {
            if c.eat("STARTING") {
                c.expect("BY")?;
                format.line_starting = c.string()?;
            } else if c.eat("TERMINATED") {
                c.expect("BY")?;
                format.line_terminator = c.string()?;
            } else {
                break;
            }
        }
    }
    if format.field_terminator.is_empty() && format.enclosed_by.is_none() {
        return Err(unsupported(
            "fixed-width rows (FIELDS TERMINATED BY '' ENCLOSED BY '')",
        ));
    }
    if format.line_terminator.is_empty() {
        return Err(unsupported("LINES TERMINATED BY ''"));
    }
    let mut skip_lines = 0;
    if c.eat("IGNORE") {
        skip_lines = match c.t.get(c.i) {
            Some(Token::Word(n)) => std::str::from_utf8(n)
                .ok()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| syntax(&String::from_utf8_lossy(stmt), "expected a number"))?,
            _ => return Err(syntax(&String::from_utf8_lossy(stmt), "expected a number")),
        };
        c.i += 1;
        if !(c.eat("LINES") || c.eat("ROWS")) {
            return Err(syntax(&String::from_utf8_lossy(stmt), "expected LINES"));
        }
    }
    let mut columns = None;
    if c.punct(b'(') {
        let mut list = Vec::new();
        loop {
            if c.punct(b'@') {
                let v = c.name().ok_or_else(|| {
                    syntax(&String::from_utf8_lossy(stmt), "expected a variable name")
                })?;
                list.push(Target::Variable(v));
            } else {
                let mut n = c.name().ok_or_else(|| {
                    syntax(&String::from_utf8_lossy(stmt), "expected a column name")
                })?;
                while c.punct(b'.') {
                    n = c.name().ok_or_else(|| {
                        syntax(&String::from_utf8_lossy(stmt), "expected a column name")
                    })?;
                }
                list.push(Target::Column(n));
            }
            if c.punct(b')') {
                break;
            }
            if !c.punct(b',') {
                return Err(syntax(&String::from_utf8_lossy(stmt), "expected , or )"));
            }
        }
        columns = Some(list);
    }
    if c.peek_word("SET") {
        return Err(unsupported("a SET clause"));
    }
    if !c.done() {
        return Err(syntax(
            &String::from_utf8_lossy(stmt),
            "unexpected words after the LOAD DATA options",
        ));
    }
    Ok(LoadData {
        local,
        file,
        on_duplicate,
        table,
        charset,
        format,
        skip_lines,
        columns,
    })
}

/// One field of a row: `None` is SQL NULL.
pub type Field = Option<Vec<u8>>;

/// A row longer than this (bytes of the file) is refused: idgate holds at most one row of a
/// file beyond the rows it batches.
pub const MAX_ROW_BYTES: usize = 4 << 20;

/// Why the file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("a row of the file is longer than {MAX_ROW_BYTES} bytes")]
    RowTooLong,
}

/// Cuts a file arriving in pieces into rows.
pub struct FieldReader {
    format: FileFormat,
    buf: Vec<u8>,
    /// Lines still to skip (`IGNORE n LINES`).
    skip: u64,
}

enum Parsed {
    Row(Vec<Field>, usize),
    Skipped(usize),
    NeedMore,
}

impl FieldReader {
    pub fn new(format: FileFormat, skip_lines: u64) -> FieldReader {
        FieldReader {
            format,
            buf: Vec::new(),
            skip: skip_lines,
        }
    }

    /// Adds a piece of the file and returns the rows it completed.
    pub fn feed(&mut self, piece: &[u8]) -> Result<Vec<Vec<Field>>, FileError> {
        self.buf.extend_from_slice(piece);
        let rows = self.drain(false);
        if self.buf.len() > MAX_ROW_BYTES {
            return Err(FileError::RowTooLong);
        }
        Ok(rows)
    }

    /// The file ended: the rows left (a last line may lack its terminator).
    pub fn finish(&mut self) -> Vec<Vec<Field>> {
        self.drain(true)
    }

    fn drain(&mut self, eof: bool) -> Vec<Vec<Field>> {
        let mut rows = Vec::new();
        let mut at = 0;
        while at < self.buf.len() {
            match self.parse_line(at, eof) {
                Parsed::Row(fields, next) => {
                    if self.skip > 0 {
                        self.skip -= 1;
                    } else {
                        rows.push(fields);
                    }
                    at = next;
                }
                Parsed::Skipped(next) => at = next,
                Parsed::NeedMore => break,
            }
        }
        self.buf.drain(..at);
        if eof {
            self.buf.clear();
        }
        rows
    }

    /// One line from `at`: its fields and where the next line starts.
    fn parse_line(&self, at: usize, eof: bool) -> Parsed {
        let f = &self.format;
        let s = &self.buf[..];
        let mut i = at;
        if !f.line_starting.is_empty() {
            // Text before the prefix is skipped; a line without it is skipped whole.
            let line_end = find(s, i, &f.line_terminator);
            match find(s, i, &f.line_starting) {
                Some(p) if line_end.is_none_or(|e| p < e) => i = p + f.line_starting.len(),
                _ => {
                    return match line_end {
                        Some(e) => Parsed::Skipped(e + f.line_terminator.len()),
                        None if eof => Parsed::Skipped(s.len()),
                        None => Parsed::NeedMore,
                    }
                }
            }
        }
        let mut fields = Vec::new();
        loop {
            let (field, next, ended) = match self.parse_field(i, eof) {
                Some(x) => x,
                None => return Parsed::NeedMore,
            };
            fields.push(field);
            i = next;
            if ended {
                return Parsed::Row(fields, i);
            }
        }
    }

    /// One field from `i`: its value, where the next field (or line) starts, and whether the
    /// line ended after it. `None`: the buffer ends before the field does.
    fn parse_field(&self, mut i: usize, eof: bool) -> Option<(Field, usize, bool)> {
        let f = &self.format;
        let s = &self.buf[..];
        let ends_at = |j: usize| -> Option<(usize, bool)> {
            if s[j..].starts_with(&f.line_terminator) {
                Some((j + f.line_terminator.len(), true))
            } else if !f.field_terminator.is_empty() && s[j..].starts_with(&f.field_terminator) {
                Some((j + f.field_terminator.len(), false))
            } else {
                None
            }
        };
        let mut out = Vec::new();
        // Fewer bytes left at `j` than a terminator, and they begin one: more must come first.
        let split_terminator = |j: usize| {
            !eof && (f.line_terminator.starts_with(&s[j..])
                || (!f.field_terminator.is_empty() && f.field_terminator.starts_with(&s[j..])))
        };
        if let Some(q) = f.enclosed_by.filter(|&q| s.get(i) == Some(&q)) {
            i += 1;
            loop {
                if i >= s.len() {
                    return eof.then_some((Some(out), s.len(), true));
                }
                let b = s[i];
                if Some(b) == f.escaped_by && b != q {
                    let n = match s.get(i + 1) {
                        Some(&n) => n,
                        None if eof => b,
                        None => return None,
                    };
                    out.push(unescape(n));
                    i += 2;
                } else if b == q {
                    let j = i + 1;
                    if s.get(j) == Some(&q) {
                        out.push(q);
                        i += 2;
                    } else if j >= s.len() {
                        return eof.then_some((Some(out), s.len(), true));
                    } else if let Some((next, line)) = ends_at(j) {
                        return Some((Some(out), next, line));
                    } else if split_terminator(j) {
                        return None;
                    } else {
                        // A quote not followed by a terminator is data, as MariaDB reads it.
                        out.push(q);
                        i += 1;
                    }
                } else {
                    out.push(b);
                    i += 1;
                }
            }
        }
        let start = i;
        let mut escaped_any = false;
        loop {
            if i >= s.len() {
                if !eof {
                    return None;
                }
                return Some((
                    self.unenclosed(out, &s[start..], escaped_any),
                    s.len(),
                    true,
                ));
            }
            if let Some((next, line)) = ends_at(i) {
                return Some((self.unenclosed(out, &s[start..i], escaped_any), next, line));
            }
            if split_terminator(i) {
                return None;
            }
            let b = s[i];
            if Some(b) == f.escaped_by {
                let n = match s.get(i + 1) {
                    Some(&n) => n,
                    None if eof => b,
                    None => return None,
                };
                escaped_any = true;
                out.push(unescape(n));
                i += 2;
            } else {
                out.push(b);
                i += 1;
            }
        }
    }

    /// An unenclosed field's value: `\N` (or `NULL` when fields may be enclosed) is NULL.
    fn unenclosed(&self, value: Vec<u8>, raw: &[u8], escaped: bool) -> Field {
        let esc_null = self
            .format
            .escaped_by
            .is_some_and(|e| raw.len() == 2 && raw[0] == e && raw[1] == b'N');
        if esc_null || (!escaped && self.format.enclosed_by.is_some() && raw == b"NULL") {
            return None;
        }
        Some(value)
    }
}

/// The byte an escape sequence stands for (`\N` is handled by the caller).
fn unescape(n: u8) -> u8 {
    match n {
        b'0' => 0,
        b'b' => 8,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'Z' => 0x1a,
        other => other,
    }
}

fn find(s: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || from >= s.len() {
        return None;
    }
    s[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

#[cfg(test)]
#[path = "load_data_tests.rs"]
mod tests;
