//! idgate's own statements: `SHOW IDGATE STATUS | BACKENDS | GENERATORS | SESSIONS | TABLES` and
//! `IDGATE RELOAD`, any case, with comments and a trailing `;` allowed. Recognised from the first
//! words only, so every other statement pays a keyword comparison.

use super::lex::{skip_trivia, word_end};

/// An admin statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminStatement {
    Status,
    Backends,
    Generators,
    Sessions,
    Tables,
    Reload,
    /// `SHOW IDGATE` followed by something else (answered with the list of what exists).
    UnknownShow,
}

/// The admin statement `stmt` is, if it is one.
pub fn admin_statement(stmt: &[u8]) -> Option<AdminStatement> {
    let mut words = Words { s: stmt, i: 0 };
    let first = words.next()?;
    let is = |w: &[u8], k: &[u8]| w.eq_ignore_ascii_case(k);
    if is(first, b"IDGATE") {
        let second = words.next()?;
        return (is(second, b"RELOAD") && words.at_end()).then_some(AdminStatement::Reload);
    }
    if !is(first, b"SHOW") || !is(words.next()?, b"IDGATE") {
        return None;
    }
    let what = words.next().unwrap_or(b"");
    let known = [
        (&b"STATUS"[..], AdminStatement::Status),
        (b"BACKENDS", AdminStatement::Backends),
        (b"GENERATORS", AdminStatement::Generators),
        (b"SESSIONS", AdminStatement::Sessions),
        (b"TABLES", AdminStatement::Tables),
    ];
    let found = known.iter().find(|(k, _)| is(what, k)).map(|(_, a)| *a);
    match found {
        Some(a) if words.at_end() => Some(a),
        _ => Some(AdminStatement::UnknownShow),
    }
}

/// The bare words of a statement, trivia (spaces, comments) skipped.
struct Words<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Words<'a> {
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = skip_trivia(self.s, self.i);
        let end = word_end(self.s, start);
        self.i = end;
        (end > start).then(|| &self.s[start..end])
    }

    /// Only trivia and `;` are left.
    fn at_end(&self) -> bool {
        let mut i = skip_trivia(self.s, self.i);
        while i < self.s.len() && self.s[i] == b';' {
            i = skip_trivia(self.s, i + 1);
        }
        i >= self.s.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AdminStatement::*;

    #[test]
    fn recognises_the_statements_in_any_case_with_comments() {
        assert_eq!(admin_statement(b"SHOW IDGATE STATUS"), Some(Status));
        assert_eq!(
            admin_statement(b"/* hi */ show\n idgate -- x\n backends ;"),
            Some(Backends)
        );
        assert_eq!(
            admin_statement(b"Show Idgate Generators;"),
            Some(Generators)
        );
        assert_eq!(admin_statement(b"SHOW IDGATE SESSIONS"), Some(Sessions));
        assert_eq!(admin_statement(b"show idgate tables # t"), Some(Tables));
        assert_eq!(admin_statement(b"idgate reload"), Some(Reload));
        assert_eq!(
            admin_statement(b"SHOW IDGATE STATUS LIKE 'x'"),
            Some(UnknownShow)
        );
        assert_eq!(admin_statement(b"SHOW IDGATE"), Some(UnknownShow));
        assert_eq!(admin_statement(b"SHOW IDGATES"), None);
        assert_eq!(admin_statement(b"SHOW TABLES"), None);
        assert_eq!(admin_statement(b"SELECT 'SHOW IDGATE STATUS'"), None);
        assert_eq!(admin_statement(b"IDGATE RELOAD NOW"), None);
        assert_eq!(admin_statement(b"idgate"), None);
        assert_eq!(admin_statement(b""), None);
    }
}
