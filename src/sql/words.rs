//! The few words idgate reads from statements it otherwise passes on: `USE db`, savepoint names,
//! `COMMIT AND CHAIN`, `SET autocommit`, `CREATE TEMPORARY`, `SHOW TABLES`, `EXPLAIN ROUTE`,
//! `CREATE`/`DROP`/`ALTER DATABASE`.
//! Read through [`Tokens`], which knows comments, quotes and executable comments, so a word
//! inside a string or a comment never counts.

use std::ops::Range;

use super::lex::{is_ident_byte, quoted_end, skip_trivia, word_end};

/// One token of a statement; whitespace and comments are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    /// An unquoted word: a keyword, an identifier or a number.
    Word(&'a [u8]),
    /// A `` `backticked` `` identifier, quotes included.
    Ident(&'a [u8]),
    /// A '…' or "…" string literal, quotes included (unterminated: to the end).
    Str(&'a [u8]),
    /// Any other byte.
    Punct(u8),
}

impl Token<'_> {
    fn is_word(&self, w: &str) -> bool {
        matches!(self, Token::Word(x) if x.eq_ignore_ascii_case(w.as_bytes()))
    }

    /// The name a word or a backticked identifier stands for.
    fn name(&self) -> Option<Vec<u8>> {
        match self {
            Token::Word(w) => Some(w.to_vec()),
            Token::Ident(q) => Some(unquote(q)),
            _ => None,
        }
    }
}

/// The tokens of a statement with their byte ranges.
pub(crate) struct Tokens<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Tokens<'a> {
    pub(crate) fn new(s: &'a [u8]) -> Tokens<'a> {
        Tokens { s, i: 0 }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = (Range<usize>, Token<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.s;
        let i = skip_trivia(s, self.i);
        let &b = s.get(i)?;
        let end = match b {
            b'`' | b'\'' | b'"' => quoted_end(s, i).unwrap_or(s.len()),
            _ if is_ident_byte(b) => word_end(s, i),
            _ => i + 1,
        };
        self.i = end;
        let text = &s[i..end];
        let t = match b {
            b'`' => Token::Ident(text),
            b'\'' | b'"' => Token::Str(text),
            _ if is_ident_byte(b) => Token::Word(text),
            _ => Token::Punct(b),
        };
        Some((i..end, t))
    }
}

fn tokens(s: &[u8]) -> impl Iterator<Item = Token<'_>> {
    Tokens::new(s).map(|(_, t)| t)
}

/// A backticked identifier without its quotes, doubled backticks undone.
fn unquote(q: &[u8]) -> Vec<u8> {
    let inner = q
        .strip_prefix(b"`")
        .map(|r| r.strip_suffix(b"`").unwrap_or(r))
        .unwrap_or(q);
    let mut out = Vec::with_capacity(inner.len());
    let mut k = 0;
    while k < inner.len() {
        out.push(inner[k]);
        k += if inner[k] == b'`' && inner.get(k + 1) == Some(&b'`') {
            2
        } else {
            1
        };
    }
    out
}

/// Appends `name` as a backticked identifier (inner backticks doubled): the inverse of the
/// unquoting `savepoint` and `use_target` do, for names idgate writes back into statements.
pub fn push_name(out: &mut Vec<u8>, name: &[u8]) {
    out.push(b'`');
    for &b in name {
        if b == b'`' {
            out.push(b'`');
        }
        out.push(b);
    }
    out.push(b'`');
}

/// Only `;` may follow.
fn at_end<'a>(mut rest: impl Iterator<Item = Token<'a>>) -> bool {
    rest.all(|t| t == Token::Punct(b';'))
}

/// The database `USE db` switches to (`` `quoted` `` names unquoted).
pub fn use_target(stmt: &[u8]) -> Option<Vec<u8>> {
    let mut t = tokens(stmt);
    if !t.next()?.is_word("USE") {
        return None;
    }
    let name = t.next()?.name()?;
    at_end(t).then_some(name)
}

/// What a statement about a whole database does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseVerb {
    Create,
    Drop,
    Alter,
}

/// `CREATE [OR REPLACE] DATABASE|SCHEMA [IF NOT EXISTS] name …`, `DROP DATABASE|SCHEMA [IF
/// EXISTS] name`, `ALTER DATABASE|SCHEMA [name] …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseDdl {
    pub verb: DatabaseVerb,
    /// The database named; `None`: an ALTER of the current one.
    pub name: Option<Vec<u8>>,
    /// `IF NOT EXISTS` (CREATE) or `IF EXISTS` (DROP).
    pub if_exists: bool,
}

/// The statement about a whole database `stmt` is, if it is one.
pub fn database_ddl(stmt: &[u8]) -> Option<DatabaseDdl> {
    let mut t = tokens(stmt).peekable();
    let first = t.next()?;
    let verb = if first.is_word("CREATE") {
        DatabaseVerb::Create
    } else if first.is_word("DROP") {
        DatabaseVerb::Drop
    } else if first.is_word("ALTER") {
        DatabaseVerb::Alter
    } else {
        return None;
    };
    if verb == DatabaseVerb::Create && t.next_if(|x| x.is_word("OR")).is_some() {
        t.next_if(|x| x.is_word("REPLACE"))?;
    }
    if !t
        .next()
        .is_some_and(|x| x.is_word("DATABASE") || x.is_word("SCHEMA"))
    {
        return None;
    }
    let mut if_exists = false;
    if t.next_if(|x| x.is_word("IF")).is_some() {
        if verb == DatabaseVerb::Create {
            t.next_if(|x| x.is_word("NOT"))?;
        }
        t.next_if(|x| x.is_word("EXISTS"))?;
        if_exists = true;
    }
    // ALTER DATABASE without a name alters the current one: its next word starts an option.
    let option = |x: &Token| {
        ["DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT"]
            .iter()
            .any(|o| x.is_word(o))
    };
    let name = match t.peek() {
        Some(x) if verb == DatabaseVerb::Alter && option(x) => None,
        Some(x) => x.name(),
        None => None,
    };
    if name.is_none() && verb != DatabaseVerb::Alter {
        return None;
    }
    Some(DatabaseDdl {
        verb,
        name,
        if_exists,
    })
}

/// `CREATE TEMPORARY …` / `DROP TEMPORARY …`: DDL that does not end a transaction.
pub fn is_temporary_ddl(stmt: &[u8]) -> bool {
    tokens(stmt).nth(1).is_some_and(|t| t.is_word("TEMPORARY"))
}

/// A SET that turns the session's autocommit on (which commits an open transaction):
/// `SET autocommit = 1`, `SET @@session.autocommit := ON`, not `SET GLOBAL autocommit = 1`.
pub fn sets_autocommit_on(stmt: &[u8]) -> bool {
    let t: Vec<Token> = tokens(stmt).collect();
    t.iter().enumerate().any(|(k, x)| {
        if !x.is_word("AUTOCOMMIT") {
            return false;
        }
        let global = t[..k]
            .iter()
            .rev()
            .find(|p| matches!(p, Token::Word(_)))
            .is_some_and(|p| p.is_word("GLOBAL"));
        let mut v = k + 1;
        if t.get(v) == Some(&Token::Punct(b':')) {
            v += 1;
        }
        if t.get(v) != Some(&Token::Punct(b'=')) {
            return false;
        }
        let on = t
            .get(v + 1)
            .is_some_and(|w| w.is_word("1") || w.is_word("ON") || w.is_word("TRUE"));
        on && !global
    })
}

/// `COMMIT AND CHAIN`, `ROLLBACK RELEASE` (not `AND NO CHAIN`, `NO RELEASE`).
pub fn chain_or_release(stmt: &[u8]) -> bool {
    let t: Vec<Token> = tokens(stmt).collect();
    t.iter().enumerate().any(|(k, x)| {
        (x.is_word("CHAIN") || x.is_word("RELEASE")) && (k == 0 || !t[k - 1].is_word("NO"))
    })
}

/// `START TRANSACTION READ ONLY` (among other characteristics, in any order).
pub fn starts_read_only(stmt: &[u8]) -> bool {
    let t: Vec<Token> = tokens(stmt).collect();
    t.windows(2)
        .any(|p| p[0].is_word("READ") && p[1].is_word("ONLY"))
}

/// What a savepoint statement does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SavepointAction {
    /// `SAVEPOINT name`
    Set,
    /// `RELEASE SAVEPOINT name`
    Release,
    /// `ROLLBACK [WORK] TO [SAVEPOINT] name`
    RollbackTo,
}

/// The action and the (unquoted) name of a savepoint statement.
pub fn savepoint(stmt: &[u8]) -> Option<(SavepointAction, Vec<u8>)> {
    let t: Vec<Token> = tokens(stmt)
        .take_while(|t| *t != Token::Punct(b';'))
        .collect();
    let action = match t.first()? {
        w if w.is_word("SAVEPOINT") => SavepointAction::Set,
        w if w.is_word("RELEASE") => SavepointAction::Release,
        w if w.is_word("ROLLBACK") => SavepointAction::RollbackTo,
        _ => return None,
    };
    Some((action, t.last()?.name()?))
}

/// `SHOW [FULL] TABLES …` or `SHOW TABLE STATUS …`: the first column of each row is a table.
pub fn lists_tables(stmt: &[u8]) -> bool {
    let mut t = tokens(stmt);
    if !t.next().is_some_and(|w| w.is_word("SHOW")) {
        return false;
    }
    match (t.next(), t.next()) {
        (Some(a), _) if a.is_word("TABLES") => true,
        (Some(a), Some(b)) => {
            (a.is_word("FULL") && b.is_word("TABLES"))
                || (a.is_word("TABLE") && b.is_word("STATUS"))
        }
        _ => false,
    }
}

/// True when a '…' string literal in `stmt` holds exactly `name` (ASCII case-insensitively):
/// how information_schema lookups name a table.
pub fn string_literal_is(stmt: &[u8], name: &str) -> bool {
    tokens(stmt).any(|t| match t {
        Token::Str(s) if s.len() >= 2 && s[0] == s[s.len() - 1] => {
            s[1..s.len() - 1].eq_ignore_ascii_case(name.as_bytes())
        }
        _ => false,
    })
}

/// Whether `needle` occurs anywhere in `stmt`, ASCII case-insensitively: a cheap pre-check whose
/// false positives only cost the caller a closer look.
pub fn mentions(stmt: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty()
        && stmt
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// The byte ranges of `stmt` naming `information_schema.PROCESSLIST` (either name backticked,
/// any case; a name inside a string or a comment does not count).
pub fn processlist_tables(stmt: &[u8]) -> Vec<Range<usize>> {
    let tokens: Vec<(Range<usize>, Token)> = Tokens::new(stmt).collect();
    let is_name = |t: &Token, n: &str| {
        t.name()
            .is_some_and(|x| x.eq_ignore_ascii_case(n.as_bytes()))
    };
    tokens
        .windows(3)
        .filter(|w| {
            is_name(&w[0].1, "information_schema")
                && w[1].1 == Token::Punct(b'.')
                && is_name(&w[2].1, "PROCESSLIST")
        })
        .map(|w| w[0].0.start..w[2].0.end)
        .collect()
}

/// The `CONNECTION_ID()` calls of `stmt`: each call's byte range, and whether it is a whole
/// select item without an alias (`SELECT CONNECTION_ID(), …`, named by its own text).
pub fn connection_id_calls(stmt: &[u8]) -> Vec<(Range<usize>, bool)> {
    let tokens: Vec<(Range<usize>, Token)> = Tokens::new(stmt).collect();
    let mut out = Vec::new();
    for (i, w) in tokens.windows(3).enumerate() {
        let call = w[0].1.is_word("CONNECTION_ID")
            && w[1].1 == Token::Punct(b'(')
            && w[2].1 == Token::Punct(b')')
            && (i == 0 || tokens[i - 1].1 != Token::Punct(b'.'));
        if !call {
            continue;
        }
        let before = i.checked_sub(1).map(|j| tokens[j].1);
        let after = tokens.get(i + 3).map(|t| t.1);
        let item_start = matches!(before, Some(t) if t.is_word("SELECT") || t.is_word("DISTINCT") || t == Token::Punct(b','));
        let item_end = match after {
            None => true,
            Some(t) => t == Token::Punct(b',') || t == Token::Punct(b';') || t.is_word("FROM"),
        };
        out.push((w[0].0.start..w[2].0.end, item_start && item_end));
    }
    out
}

/// `expr` with the session's own id, `id`, in place of each `CONNECTION_ID()` call and, unless the
/// client set its own (`pseudo_thread_set`), of `@@[SESSION.|LOCAL.]pseudo_thread_id`: what the
/// client was told its connection is, not the backend connection's thread.
pub fn with_session_id(expr: &[u8], id: u32, pseudo_thread_set: bool) -> Vec<u8> {
    let mut spans: Vec<Range<usize>> = connection_id_calls(expr)
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    if !pseudo_thread_set {
        spans.extend(pseudo_thread_ids(expr));
    }
    spans.sort_by_key(|r| r.start);
    let mut out = Vec::with_capacity(expr.len());
    let mut at = 0;
    for r in spans {
        if r.start < at {
            continue;
        }
        out.extend_from_slice(&expr[at..r.start]);
        out.extend_from_slice(id.to_string().as_bytes());
        at = r.end;
    }
    out.extend_from_slice(&expr[at..]);
    out
}

/// What a `KILL` expression reaches beyond values: MariaDB refuses one that reads a table
/// (a subquery with a FROM, a sequence's NEXTVAL / LASTVAL / SETVAL or `NEXT | PREVIOUS VALUE FOR`) or calls
/// a stored function.
#[derive(Debug, PartialEq, Eq)]
pub enum ExpressionReach {
    /// Reads a table, or calls a function by a qualified name: a stored one.
    Tables,
    /// The names of the functions it calls unqualified (built-in or stored: the caller asks).
    Calls(Vec<Vec<u8>>),
}

pub fn expression_reach(expr: &[u8]) -> ExpressionReach {
    let t: Vec<Token> = tokens(expr).collect();
    let mut calls = Vec::new();
    for (i, tok) in t.iter().enumerate() {
        let next = t.get(i + 1).copied();
        let sequence_call = ["NEXTVAL", "LASTVAL", "SETVAL"]
            .iter()
            .any(|w| tok.is_word(w));
        let value_for = (tok.is_word("NEXT") || tok.is_word("PREVIOUS"))
            && next.is_some_and(|n| n.is_word("VALUE"));
        // A subquery reads a table when it has a FROM (other than DUAL).
        let from_table = tok.is_word("FROM") && !next.is_some_and(|n| n.is_word("DUAL"));
        if from_table || value_for || (sequence_call && next == Some(Token::Punct(b'('))) {
            return ExpressionReach::Tables;
        }
        let Some(name) = tok.name() else { continue };
        if name.first().is_some_and(u8::is_ascii_digit) {
            continue;
        }
        let after_dot = i > 0 && t[i - 1] == Token::Punct(b'.');
        match next {
            Some(Token::Punct(b'(')) if after_dot => return ExpressionReach::Tables,
            Some(Token::Punct(b'(')) => calls.push(name),
            _ => {}
        }
    }
    ExpressionReach::Calls(calls)
}

/// The byte ranges of `@@pseudo_thread_id` (with `SESSION.` or `LOCAL.`) outside quotes.
pub(crate) fn pseudo_thread_ids(s: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\'' | b'"' | b'`' => i = super::lex::skip_quoted(s, i),
            b'@' if s[i..].starts_with(b"@@") => {
                let mut j = i + 2;
                for scope in [&b"session."[..], b"local."] {
                    if s.len() >= j + scope.len()
                        && s[j..j + scope.len()].eq_ignore_ascii_case(scope)
                    {
                        j += scope.len();
                    }
                }
                let name = b"pseudo_thread_id";
                let end = j + name.len();
                let whole = s.len() >= end
                    && s[j..end].eq_ignore_ascii_case(name)
                    && !s
                        .get(end)
                        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
                if whole {
                    out.push(i..end);
                }
                i = j.max(i + 2);
            }
            _ => i += 1,
        }
    }
    out
}

/// The statement after `EXPLAIN ROUTE`, if `stmt` is one.
pub fn explain_route_target(stmt: &[u8]) -> Option<&[u8]> {
    let mut t = Tokens::new(stmt);
    if !t.next()?.1.is_word("EXPLAIN") {
        return None;
    }
    let (route, w) = t.next()?;
    if !w.is_word("ROUTE") {
        return None;
    }
    Some(stmt[route.end..].trim_ascii())
}

/// Whether `name` (a table name or alias, compared without case) is a word or backticked
/// identifier of `stmt` outside the byte range `skip`: whether the rest of the statement
/// defines or uses it.
pub fn names_outside(stmt: &[u8], skip: Range<usize>, name: &[u8]) -> bool {
    Tokens::new(stmt)
        .filter(|(r, _)| r.end <= skip.start || r.start >= skip.end)
        .any(|(_, t)| t.name().is_some_and(|n| n.eq_ignore_ascii_case(name)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_a_kill_expression_reaches() {
        use super::{expression_reach, ExpressionReach::*};
        let r = |e: &str| expression_reach(e.as_bytes());
        assert_eq!(r("(SELECT v FROM t) + 2"), Tables);
        assert_eq!(r("(SELECT 1) + 2"), Calls(vec![]));
        assert_eq!(r("(SELECT 1 FROM DUAL)"), Calls(vec![]));
        assert_eq!(r("LASTVAL(s)"), Tables);
        assert_eq!(r("NEXT VALUE FOR s"), Tables);
        assert_eq!(r("db.f(1)"), Tables);
        assert_eq!(r("@v + 1"), Calls(vec![]));
        assert_eq!(
            r("CONNECTION_ID() + f(2)"),
            Calls(vec![b"CONNECTION_ID".to_vec(), b"f".to_vec()])
        );
        assert_eq!(r("'SELECT' + 1"), Calls(vec![]));
    }

    #[test]
    fn the_session_id_stands_for_connection_id_and_pseudo_thread_id() {
        let w = |e: &str, set: bool| {
            String::from_utf8(super::with_session_id(e.as_bytes(), 7, set)).unwrap()
        };
        assert_eq!(w("CONNECTION_ID()", false), "7");
        assert_eq!(w("connection_id( ) + 1", false), "7 + 1");
        assert_eq!(w("@@pseudo_thread_id", false), "7");
        assert_eq!(w("@@SESSION.Pseudo_Thread_Id*2", false), "7*2");
        assert_eq!(w("@@pseudo_thread_id", true), "@@pseudo_thread_id");
        assert_eq!(w("@@pseudo_thread_idx", false), "@@pseudo_thread_idx");
        assert_eq!(w("'@@pseudo_thread_id'", false), "'@@pseudo_thread_id'");
        assert_eq!(w("t.CONNECTION_ID()", false), "t.CONNECTION_ID()");
    }

    use super::*;

    #[test]
    fn use_targets() {
        assert_eq!(use_target(b"USE app").unwrap(), b"app");
        assert_eq!(use_target(b" use `my``db` ; ").unwrap(), b"my`db");
        assert_eq!(use_target(b"/* x */ USE`a b`").unwrap(), b"a b");
        assert_eq!(use_target(b"USE a b"), None);
        assert_eq!(use_target(b"USER"), None);
        assert_eq!(use_target(b"USE"), None);
    }

    #[test]
    fn transaction_words() {
        assert!(!is_temporary_ddl(b"CREATE TABLE t (a int)"));
        assert!(is_temporary_ddl(
            b"create /* c */ temporary table t (a int)"
        ));
        assert!(sets_autocommit_on(b"SET autocommit = 1"));
        assert!(sets_autocommit_on(b"set @@session.autocommit=ON"));
        assert!(sets_autocommit_on(b"SET sql_mode='', autocommit := true"));
        assert!(!sets_autocommit_on(b"SET autocommit=0"));
        assert!(!sets_autocommit_on(b"SET autocommit := 0"));
        assert!(!sets_autocommit_on(b"SET GLOBAL autocommit = 1"));
        assert!(!sets_autocommit_on(b"SET @@global.autocommit = 1"));
        assert!(!sets_autocommit_on(b"SET @x = 'autocommit = 1'"));
        assert!(starts_read_only(
            b"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
        ));
        assert!(!starts_read_only(
            b"START TRANSACTION READ WRITE /* READ ONLY */"
        ));
        assert!(chain_or_release(b"COMMIT AND CHAIN"));
        assert!(chain_or_release(b"ROLLBACK RELEASE"));
        assert!(!chain_or_release(b"COMMIT AND NO CHAIN NO RELEASE"));
        assert!(!chain_or_release(b"COMMIT /* AND CHAIN */"));
    }

    #[test]
    fn savepoints() {
        assert_eq!(
            savepoint(b"SAVEPOINT a1;"),
            Some((SavepointAction::Set, b"a1".to_vec()))
        );
        assert_eq!(
            savepoint(b"ROLLBACK WORK TO SAVEPOINT `a b`"),
            Some((SavepointAction::RollbackTo, b"a b".to_vec()))
        );
        assert_eq!(
            savepoint(b"release savepoint x -- done"),
            Some((SavepointAction::Release, b"x".to_vec()))
        );
        assert_eq!(savepoint(b"COMMIT"), None);
        let mut out = Vec::new();
        push_name(&mut out, b"a`b");
        assert_eq!(
            savepoint(&[b"SAVEPOINT ", &out[..]].concat()).unwrap().1,
            b"a`b"
        );
    }

    #[test]
    fn table_lists_and_literals() {
        assert!(lists_tables(b"SHOW TABLES"));
        assert!(lists_tables(b"show full tables from app like 'o%'"));
        assert!(lists_tables(b"SHOW TABLE STATUS LIKE 'orders'"));
        assert!(!lists_tables(b"SHOW CREATE TABLE orders"));
        assert!(!lists_tables(b"SHOW TABLE_STATISTICS"));
        let q = b"SELECT * FROM information_schema.COLUMNS WHERE TABLE_NAME = 'Orders'";
        assert!(string_literal_is(q, "orders"));
        assert!(!string_literal_is(q, "order"));
        assert!(string_literal_is(
            b"x LIKE 'a\\'b' OR t = 'orders'",
            "orders"
        ));
        assert!(!string_literal_is(b"SELECT 'unterminated", "orders"));
        assert!(!string_literal_is(b"SELECT 1 -- 'orders'", "orders"));
        assert!(mentions(b"SET @@WAIT_TIMEOUT = 5", b"wait_timeout"));
        assert!(!mentions(b"SET NAMES utf8mb4", b"wait_timeout"));
    }

    #[test]
    fn explain_route() {
        assert_eq!(
            explain_route_target(b"EXPLAIN ROUTE SELECT 1"),
            Some(&b"SELECT 1"[..])
        );
        assert_eq!(
            explain_route_target(b"  explain\nroute  DELETE FROM t "),
            Some(&b"DELETE FROM t"[..])
        );
        assert_eq!(
            explain_route_target(b"/* app */ EXPLAIN ROUTE SELECT 1"),
            Some(&b"SELECT 1"[..])
        );
        assert_eq!(explain_route_target(b"EXPLAIN SELECT 1"), None);
        assert_eq!(explain_route_target(b"EXPLAIN routes"), None);
    }

    #[test]
    fn database_statements() {
        let d = |s: &str| database_ddl(s.as_bytes());
        let create = d("CREATE DATABASE IF NOT EXISTS `my db` CHARACTER SET utf8mb4").unwrap();
        assert_eq!(
            (create.verb, create.name.as_deref(), create.if_exists),
            (DatabaseVerb::Create, Some(&b"my db"[..]), true)
        );
        let drop = d("/* app */ drop schema shop;").unwrap();
        assert_eq!(
            (drop.verb, drop.name.as_deref(), drop.if_exists),
            (DatabaseVerb::Drop, Some(&b"shop"[..]), false)
        );
        assert!(d("DROP DATABASE IF EXISTS shop").unwrap().if_exists);
        assert!(d("CREATE OR REPLACE DATABASE shop").is_some());
        let alter = d("ALTER DATABASE DEFAULT CHARACTER SET latin1").unwrap();
        assert_eq!((alter.verb, alter.name), (DatabaseVerb::Alter, None));
        let alter = d("ALTER SCHEMA shop COLLATE utf8mb4_bin").unwrap();
        assert_eq!(alter.name.as_deref(), Some(&b"shop"[..]));
        for other in [
            "CREATE TABLE database_x (id INT)",
            "DROP TABLE shop",
            "CREATE DATABASE",
            "DROP DATABASE IF shop",
            "CREATE OR DATABASE shop",
            "SELECT 'CREATE DATABASE x'",
        ] {
            assert_eq!(d(other), None, "{other}");
        }
    }
}
