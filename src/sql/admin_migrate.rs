//! `IDGATE MIGRATE …`: moving a table's placement while it serves. Read from the words after
//! `IDGATE MIGRATE`; a malformed form is kept with what is wrong, so the client is told the
//! usage rather than getting the statement sent to a backend.

use super::lex::{only_trivia_left, skip_trivia, unquote_ident};

/// What `IDGATE MIGRATE` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrateStatement {
    /// `START <table> TO '<entry>'`: the entry is YAML in the schema of a `tables:` entry.
    Start { table: TableName, entry: String },
    /// `STATUS [<table>]` (and `SHOW IDGATE MIGRATIONS`).
    Status { table: Option<TableName> },
    /// `VERIFY | SWITCH | REVERSE | COMPLETE | CANCEL <table>`.
    Step { step: MigrateStep, table: TableName },
    /// What was wrong with the statement.
    Malformed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateStep {
    Verify,
    Switch,
    Reverse,
    Complete,
    Cancel,
}

impl MigrateStep {
    pub fn word(self) -> &'static str {
        match self {
            MigrateStep::Verify => "VERIFY",
            MigrateStep::Switch => "SWITCH",
            MigrateStep::Reverse => "REVERSE",
            MigrateStep::Complete => "COMPLETE",
            MigrateStep::Cancel => "CANCEL",
        }
    }
}

/// A table as the statement names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub schema: Option<String>,
    pub name: String,
}

pub const USAGE: &str = "IDGATE MIGRATE START <table> TO '<tables: entry as YAML>' | \
     STATUS [<table>] | VERIFY <table> | SWITCH <table> | REVERSE <table> | COMPLETE <table> | \
     CANCEL <table>";

/// The statement after `IDGATE MIGRATE` (`rest` starts after those words).
pub fn parse(rest: &[u8]) -> MigrateStatement {
    let mut p = Parser { s: rest, i: 0 };
    let malformed =
        |what: &str| MigrateStatement::Malformed(format!("{what}; the forms are {USAGE}"));
    let Some(verb) = p.word() else {
        return malformed("IDGATE MIGRATE needs what to do");
    };
    let verb = verb.to_ascii_uppercase();
    let stmt = match verb.as_slice() {
        b"START" => {
            let Some(table) = p.table() else {
                return malformed("IDGATE MIGRATE START needs a table");
            };
            if !p.word().is_some_and(|w| w.eq_ignore_ascii_case(b"TO")) {
                return malformed("IDGATE MIGRATE START <table> needs TO '<entry>'");
            }
            let Some(entry) = p.string() else {
                return malformed("the placement after TO must be a quoted string");
            };
            MigrateStatement::Start { table, entry }
        }
        b"STATUS" => MigrateStatement::Status { table: p.table() },
        _ => {
            let step = match verb.as_slice() {
                b"VERIFY" => MigrateStep::Verify,
                b"SWITCH" => MigrateStep::Switch,
                b"REVERSE" => MigrateStep::Reverse,
                b"COMPLETE" => MigrateStep::Complete,
                b"CANCEL" => MigrateStep::Cancel,
                _ => {
                    return malformed(&format!(
                        "IDGATE MIGRATE has no `{}`",
                        String::from_utf8_lossy(&verb)
                    ))
                }
            };
            let Some(table) = p.table() else {
                return malformed(&format!("IDGATE MIGRATE {} needs a table", step.word()));
            };
            MigrateStatement::Step { step, table }
        }
    };
    if !p.at_end() {
        return malformed("unexpected text after the statement");
    }
    stmt
}

/// Reads the words, names and strings of an admin statement's tail.
pub(super) struct Parser<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn word(&mut self) -> Option<&'a [u8]> {
        let start = skip_trivia(self.s, self.i);
        let mut end = start;
        while end < self.s.len() && (self.s[end].is_ascii_alphanumeric() || self.s[end] == b'_') {
            end += 1;
        }
        self.i = end;
        (end > start).then(|| &self.s[start..end])
    }

    /// One identifier, bare or in backquotes (a doubled backquote inside is one).
    pub(super) fn ident(&mut self) -> Option<String> {
        let start = skip_trivia(self.s, self.i);
        if self.s.get(start) == Some(&b'`') {
            let mut j = start + 1;
            loop {
                match self.s.get(j) {
                    None => return None,
                    Some(b'`') if self.s.get(j + 1) == Some(&b'`') => j += 2,
                    Some(b'`') => break,
                    Some(_) => j += 1,
                }
            }
            self.i = j + 1;
            let name = unquote_ident(&self.s[start..=j]);
            return (!name.is_empty()).then_some(name);
        }
        self.i = start;
        let w = self.word()?;
        if w.first().is_some_and(u8::is_ascii_digit) && w.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(w).ok().map(str::to_string)
    }

    /// `name` or `schema.name`; `None` (nothing consumed) when no identifier follows.
    pub(super) fn table(&mut self) -> Option<TableName> {
        let before = self.i;
        let first = self.ident();
        let Some(first) = first else {
            self.i = before;
            return None;
        };
        let dot = skip_trivia(self.s, self.i);
        if self.s.get(dot) == Some(&b'.') {
            self.i = dot + 1;
            let name = self.ident()?;
            return Some(TableName {
                schema: Some(first),
                name,
            });
        }
        Some(TableName {
            schema: None,
            name: first,
        })
    }

    /// A string in single or double quotes, with SQL's escapes (`''`, `\'`, `\\`, `\n`).
    pub(super) fn string(&mut self) -> Option<String> {
        let start = skip_trivia(self.s, self.i);
        let q = *self.s.get(start).filter(|&&b| b == b'\'' || b == b'"')?;
        let mut out = Vec::new();
        let mut j = start + 1;
        loop {
            match *self.s.get(j)? {
                b'\\' => {
                    let c = *self.s.get(j + 1)?;
                    out.push(match c {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        b'0' => 0,
                        other => other,
                    });
                    j += 2;
                }
                b if b == q && self.s.get(j + 1) == Some(&q) => {
                    out.push(q);
                    j += 2;
                }
                b if b == q => break,
                b => {
                    out.push(b);
                    j += 1;
                }
            }
        }
        self.i = j + 1;
        String::from_utf8(out).ok()
    }

    pub(super) fn at_end(&self) -> bool {
        only_trivia_left(self.s, self.i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(schema: Option<&str>, name: &str) -> TableName {
        TableName {
            schema: schema.map(str::to_string),
            name: name.into(),
        }
    }

    #[test]
    fn reads_start_with_its_entry() {
        assert_eq!(
            parse(b" start app.`or``ders` TO '{generator: s, sharding: {columns: [id]}}';"),
            MigrateStatement::Start {
                table: t(Some("app"), "or`ders"),
                entry: "{generator: s, sharding: {columns: [id]}}".into()
            }
        );
        assert_eq!(
            parse(b"START t TO 'a: ''x'' \\n'"),
            MigrateStatement::Start {
                table: t(None, "t"),
                entry: "a: 'x' \n".into()
            }
        );
    }

    #[test]
    fn reads_status_and_steps() {
        assert_eq!(parse(b"STATUS"), MigrateStatement::Status { table: None });
        assert_eq!(
            parse(b"status orders"),
            MigrateStatement::Status {
                table: Some(t(None, "orders"))
            }
        );
        assert_eq!(
            parse(b"CANCEL db.orders"),
            MigrateStatement::Step {
                step: MigrateStep::Cancel,
                table: t(Some("db"), "orders")
            }
        );
    }

    #[test]
    fn says_what_is_wrong() {
        for bad in [
            &b""[..],
            b"START",
            b"START t",
            b"START t TO x",
            b"START t TO 'unterminated",
            b"SWITCH",
            b"FROB t",
            b"CANCEL t extra",
        ] {
            assert!(
                matches!(parse(bad), MigrateStatement::Malformed(_)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
