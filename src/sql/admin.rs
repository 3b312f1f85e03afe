//! idgate's own statements: `SHOW IDGATE STATUS | BACKENDS | GENERATORS | SESSIONS | TABLES`,
//! `SHOW IDGATE MIGRATIONS`, `IDGATE RELOAD`, `IDGATE MIGRATE …`, and the statements about
//! connections whose ids are idgate's: `KILL`, `SHOW [FULL] PROCESSLIST` and
//! `SELECT CONNECTION_ID()`. Any case, with comments and a trailing `;` allowed. Recognised from
//! the first words only, so every other statement pays a keyword comparison or two.

use super::admin_migrate::{self, MigrateStatement};
use super::admin_switchover::{self, SwitchoverStatement};
use super::lex::{only_trivia_left, skip_quoted, skip_trivia, unquote_ident, word_end};
use super::session_query::{session_query, SessionQuery};

/// An admin statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminStatement {
    Status,
    Backends,
    Generators,
    Sessions,
    Tables,
    Reload,
    /// `IDGATE MIGRATE …` and `SHOW IDGATE MIGRATIONS`.
    Migrate(MigrateStatement),
    /// `IDGATE SWITCHOVER <backend> TO '<host:port>'`.
    Switchover(SwitchoverStatement),
    /// `SHOW IDGATE` followed by something else (answered with the list of what exists).
    UnknownShow,
    /// `KILL [HARD | SOFT] [CONNECTION | QUERY] <id>`: the id is one idgate gave a session
    /// (the handshake's connection id), mapped to that session's backend connections.
    Kill {
        id: u64,
        query: bool,
    },
    /// `KILL [HARD | SOFT] QUERY ID query_id`: the statement with that id on the default
    /// backend (the ids its `information_schema.PROCESSLIST` shows), if an idgate session runs it.
    KillQueryId {
        query_id: u64,
    },
    /// `KILL [HARD | SOFT] [CONNECTION | QUERY] USER name`: every session of an idgate user.
    KillUser {
        user: KillUserName,
        query: bool,
    },
    /// `KILL [HARD | SOFT] [CONNECTION | QUERY] expr`, as MariaDB's grammar takes it
    /// (`KILL CONNECTION_ID()`, `KILL (SELECT 1) + LASTVAL(s)`): the byte range of the expression,
    /// which the session evaluates (with its own id for `CONNECTION_ID()`) before it kills.
    KillExpression {
        expr: std::ops::Range<usize>,
        query: bool,
    },
    /// A KILL idgate cannot map to its sessions (the text says which form).
    KillUnsupported(&'static str),
    /// `SHOW [FULL] PROCESSLIST`: idgate's sessions, with the ids their clients got.
    ProcessList {
        full: bool,
    },
    /// `SELECT CONNECTION_ID() [[AS] alias]`: the session's idgate id, under `column`.
    ConnectionId {
        column: String,
    },
    /// A SELECT reading `information_schema.PROCESSLIST`: run with idgate's sessions in its
    /// place (the byte ranges naming it), so its ids are the ones KILL takes.
    ProcessListQuery {
        tables: Vec<std::ops::Range<usize>>,
    },
    /// A SELECT reading `@@[SESSION.|LOCAL.]pseudo_thread_id`, which is the connection id on
    /// MariaDB until the session sets it: run with the session's idgate id in its place.
    PseudoThreadId,
}

/// Whose sessions `KILL USER` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillUserName {
    /// `CURRENT_USER` / `CURRENT_USER()`.
    Current,
    /// A user name, and the account host if one was written (`'app'@'%'`).
    Named { name: String, host: Option<String> },
}

/// The admin statement `stmt` is, if it is one.
pub fn admin_statement(stmt: &[u8]) -> Option<AdminStatement> {
    let mut words = Words { s: stmt, i: 0 };
    let first = words.next()?;
    let is = |w: &[u8], k: &[u8]| w.eq_ignore_ascii_case(k);
    if is(first, b"KILL") {
        return Some(kill(&mut words));
    }
    if is(first, b"SELECT") {
        // One more word for SELECTs, and a look only when it is the function's name or the
        // statement names the process list.
        if super::words::mentions(stmt, b"PROCESSLIST") {
            let tables = super::words::processlist_tables(stmt);
            if !tables.is_empty() {
                return Some(AdminStatement::ProcessListQuery { tables });
            }
        }
        // A byte search first (memchr): only a SELECT naming a system variable is read again.
        if stmt.contains(&b'@') && !super::words::pseudo_thread_ids(stmt).is_empty() {
            return Some(AdminStatement::PseudoThreadId);
        }
        if !is(words.next()?, b"CONNECTION_ID") {
            return None;
        }
        return match session_query(stmt) {
            Some(SessionQuery::ConnectionId { column }) => {
                Some(AdminStatement::ConnectionId { column })
            }
            _ => None,
        };
    }
    if is(first, b"IDGATE") {
        let second = words.next()?;
        if is(second, b"MIGRATE") {
            return Some(AdminStatement::Migrate(admin_migrate::parse(
                &words.s[words.i..],
            )));
        }
        if is(second, b"SWITCHOVER") {
            return Some(AdminStatement::Switchover(admin_switchover::parse(
                &words.s[words.i..],
            )));
        }
        return (is(second, b"RELOAD") && words.at_end()).then_some(AdminStatement::Reload);
    }
    if !is(first, b"SHOW") {
        return None;
    }
    let second = words.next()?;
    if is(second, b"PROCESSLIST") || is(second, b"FULL") {
        let full = is(second, b"FULL");
        if full && !is(words.next()?, b"PROCESSLIST") {
            return None;
        }
        return words
            .at_end()
            .then_some(AdminStatement::ProcessList { full });
    }
    if !is(second, b"IDGATE") {
        return None;
    }
    let what = words.next().unwrap_or(b"");
    if is(what, b"MIGRATIONS") && words.at_end() {
        return Some(AdminStatement::Migrate(MigrateStatement::Status {
            table: None,
        }));
    }
    let known = [
        (&b"STATUS"[..], AdminStatement::Status),
        (b"BACKENDS", AdminStatement::Backends),
        (b"GENERATORS", AdminStatement::Generators),
        (b"SESSIONS", AdminStatement::Sessions),
        (b"TABLES", AdminStatement::Tables),
    ];
    let found = known
        .iter()
        .find(|(k, _)| is(what, k))
        .map(|(_, a)| a.clone());
    match found {
        Some(a) if words.at_end() => Some(a),
        _ => Some(AdminStatement::UnknownShow),
    }
}

/// The rest of a `KILL` statement.
fn kill(words: &mut Words) -> AdminStatement {
    let is = |w: &[u8], k: &[u8]| w.eq_ignore_ascii_case(k);
    let mut at = words.i;
    let mut w = words.next().unwrap_or(b"");
    if is(w, b"HARD") || is(w, b"SOFT") {
        at = words.i;
        w = words.next().unwrap_or(b"");
    }
    let mut query = false;
    if is(w, b"CONNECTION") || is(w, b"QUERY") {
        query = is(w, b"QUERY");
        at = words.i;
        w = words.next().unwrap_or(b"");
        if query && is(w, b"ID") {
            let id = words
                .next()
                .and_then(|w| std::str::from_utf8(w).ok())
                .and_then(|t| t.parse::<u64>().ok());
            return match id {
                Some(query_id) if words.at_end() => AdminStatement::KillQueryId { query_id },
                _ => AdminStatement::KillUnsupported("KILL QUERY ID with an expression"),
            };
        }
    }
    // `KILL USER()` is an expression: the function's value, as MariaDB's grammar reads it.
    let call = words.s.get(skip_trivia(words.s, words.i)) == Some(&b'(');
    if is(w, b"USER") && !call {
        return match kill_user_name(words) {
            Some(user) if words.at_end() => AdminStatement::KillUser { user, query },
            _ => AdminStatement::KillUnsupported("KILL USER with that name"),
        };
    }
    let id = std::str::from_utf8(w)
        .ok()
        .and_then(|t| t.parse::<u64>().ok());
    match id {
        Some(id) if words.at_end() => AdminStatement::Kill { id, query },
        _ => match kill_expression(words.s, at) {
            Some(expr) => AdminStatement::KillExpression { expr, query },
            None => AdminStatement::KillUnsupported("KILL with an expression"),
        },
    }
}

/// The expression a KILL names from `at` on, without the statement's closing `;`: `None` when
/// there is none, or when it holds another statement (a `;` before its end).
fn kill_expression(s: &[u8], at: usize) -> Option<std::ops::Range<usize>> {
    let start = skip_trivia(s, at);
    let mut end = s.len();
    while end > start && (s[end - 1].is_ascii_whitespace() || s[end - 1] == b';') {
        end -= 1;
    }
    let mut i = start;
    while i < end {
        match s[i] {
            b'\'' | b'"' | b'`' => i = skip_quoted(s, i),
            b';' => return None,
            _ => i += 1,
        }
    }
    (end > start).then_some(start..end)
}

/// After `KILL … USER`: `name`, `'name'`, `` `name` ``, `'name'@'host'` or `CURRENT_USER[()]`.
fn kill_user_name(words: &mut Words) -> Option<KillUserName> {
    let part = |words: &mut Words| -> Option<String> {
        let s = words.s;
        let start = skip_trivia(s, words.i);
        let end = match s.get(start)? {
            b'\'' | b'"' | b'`' => skip_quoted(s, start),
            _ => word_end(s, start),
        };
        words.i = end;
        let text = &s[start..end];
        (end > start).then(|| match text {
            [b'\'', inner @ .., b'\''] => String::from_utf8_lossy(inner).replace("''", "'"),
            _ => unquote_ident(text),
        })
    };
    let name = part(words)?;
    if name.eq_ignore_ascii_case("CURRENT_USER") {
        let save = words.i;
        let j = skip_trivia(words.s, words.i);
        if words.s.get(j) == Some(&b'(') {
            let k = skip_trivia(words.s, j + 1);
            if words.s.get(k) != Some(&b')') {
                return None;
            }
            words.i = k + 1;
        } else {
            words.i = save;
        }
        return Some(KillUserName::Current);
    }
    let j = skip_trivia(words.s, words.i);
    let host = if words.s.get(j) == Some(&b'@') {
        words.i = j + 1;
        Some(part(words)?)
    } else {
        None
    };
    Some(KillUserName::Named { name, host })
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
        only_trivia_left(self.s, self.i)
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

    #[test]
    fn kill_takes_an_expression() {
        let expr = |sql: &str| match admin_statement(sql.as_bytes()) {
            Some(KillExpression { expr, query }) => Some((sql[expr].to_string(), query)),
            _ => None,
        };
        assert_eq!(
            expr("KILL CONNECTION_ID()"),
            Some(("CONNECTION_ID()".into(), false))
        );
        assert_eq!(
            expr("kill query (SELECT 1) + LASTVAL(s) ;"),
            Some(("(SELECT 1) + LASTVAL(s)".into(), true))
        );
        assert_eq!(
            expr("KILL HARD CONNECTION @@pseudo_thread_id"),
            Some(("@@pseudo_thread_id".into(), false))
        );
        assert_eq!(expr("KILL ';'"), Some(("';'".into(), false)));
        assert_eq!(
            admin_statement(b"KILL 1; DROP TABLE t"),
            Some(KillUnsupported("KILL with an expression"))
        );
        assert_eq!(
            admin_statement(b"KILL"),
            Some(KillUnsupported("KILL with an expression"))
        );
    }

    #[test]
    fn recognises_kill_in_its_forms() {
        assert_eq!(
            admin_statement(b"KILL 12"),
            Some(Kill {
                id: 12,
                query: false
            })
        );
        assert_eq!(
            admin_statement(b"kill query 7;"),
            Some(Kill { id: 7, query: true })
        );
        assert_eq!(
            admin_statement(b"KILL HARD CONNECTION /* x */ 9"),
            Some(Kill {
                id: 9,
                query: false
            })
        );
        assert_eq!(
            admin_statement(b"KILL SOFT QUERY 3"),
            Some(Kill { id: 3, query: true })
        );
        assert_eq!(
            admin_statement(b"KILL QUERY ID 3"),
            Some(KillQueryId { query_id: 3 })
        );
        assert_eq!(
            admin_statement(b"kill hard query id 40;"),
            Some(KillQueryId { query_id: 40 })
        );
        assert_eq!(
            admin_statement(b"KILL QUERY ID @q"),
            Some(KillUnsupported("KILL QUERY ID with an expression"))
        );
        let named = |name: &str, host: Option<&str>| KillUserName::Named {
            name: name.into(),
            host: host.map(String::from),
        };
        assert_eq!(
            admin_statement(b"KILL USER app"),
            Some(KillUser {
                user: named("app", None),
                query: false
            })
        );
        assert_eq!(
            admin_statement(b"kill query user 'app'@'%';"),
            Some(KillUser {
                user: named("app", Some("%")),
                query: true
            })
        );
        assert_eq!(
            admin_statement(b"KILL CONNECTION USER `a b` @ 'h'"),
            Some(KillUser {
                user: named("a b", Some("h")),
                query: false
            })
        );
        assert_eq!(
            admin_statement(b"KILL USER CURRENT_USER()"),
            Some(KillUser {
                user: KillUserName::Current,
                query: false
            })
        );
        assert_eq!(
            admin_statement(b"KILL USER current_user"),
            Some(KillUser {
                user: KillUserName::Current,
                query: false
            })
        );
        assert_eq!(
            admin_statement(b"KILL USER app extra"),
            Some(KillUnsupported("KILL USER with that name"))
        );
        assert_eq!(admin_statement(b"SELECT 'KILL 1'"), None);
    }

    #[test]
    fn kill_user_call_is_an_expression() {
        assert!(matches!(
            admin_statement(b"KILL USER()"),
            Some(KillExpression { query: false, .. })
        ));
        assert!(matches!(
            admin_statement(b"KILL QUERY USER ( )"),
            Some(KillExpression { query: true, .. })
        ));
        assert!(matches!(
            admin_statement(b"KILL USER app"),
            Some(KillUser { .. })
        ));
    }

    #[test]
    fn recognises_a_select_reading_pseudo_thread_id() {
        for s in [
            &b"SELECT @@pseudo_thread_id"[..],
            b"select 1, @@SESSION.pseudo_thread_id + 1 from t",
        ] {
            assert_eq!(admin_statement(s), Some(PseudoThreadId), "{s:?}");
        }
        for s in [
            &b"SELECT '@@pseudo_thread_id'"[..],
            b"SELECT @@pseudo_thread_ids",
            b"SELECT @@global.autocommit",
            b"SET @@pseudo_thread_id = 5",
        ] {
            assert_eq!(admin_statement(s), None, "{s:?}");
        }
    }

    #[test]
    fn recognises_processlist_and_connection_id() {
        assert_eq!(
            admin_statement(b"SHOW PROCESSLIST"),
            Some(ProcessList { full: false })
        );
        assert_eq!(
            admin_statement(b"show full processlist;"),
            Some(ProcessList { full: true })
        );
        assert_eq!(admin_statement(b"SHOW FULL TABLES"), None);
        assert_eq!(admin_statement(b"SHOW PROCESSLIST LIMIT 1"), None);
        assert_eq!(
            admin_statement(b"SELECT CONNECTION_ID() AS me"),
            Some(ConnectionId {
                column: "me".into()
            })
        );
        assert_eq!(admin_statement(b"SELECT CONNECTION_ID() + 1"), None);
        assert_eq!(admin_statement(b"SELECT 1"), None);
        assert_eq!(
            admin_statement(b"SELECT ID FROM information_schema.`PROCESSLIST` WHERE ID > 1"),
            Some(ProcessListQuery {
                tables: std::iter::once(15..47).collect()
            })
        );
        assert_eq!(
            admin_statement(b"SELECT 'information_schema.PROCESSLIST', processlist FROM t"),
            None
        );
    }
}
