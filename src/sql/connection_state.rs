//! Whether a statement leaves state on the backend connection that idgate cannot carry to
//! another connection by replaying the session's SETs: user variables, temporary tables,
//! locks (LOCK TABLES, GET_LOCK, FLUSH … WITH READ LOCK, BACKUP), SQL-level prepared
//! statements, XA branches, open HANDLERs and procedure calls (which may set any of these).
//! A session that ran one stays on its connection: it lends it to no other session, and when
//! that connection must go (its node stopped being the primary) the session is told and ends
//! rather than going on without the state. A false positive only keeps a session where it is.

use sqlparser::ast::{ContextModifier, Set, Statement};

use super::replica_read::pins_to_primary;
use super::words::{Token, Tokens};

/// How long what a SET sets lasts, which decides whether idgate replays it on the session's
/// other connections and on connections it takes later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetReach {
    /// Session variables, `SET NAMES`, `SET SESSION TRANSACTION`: replayed.
    Session,
    /// `SET STATEMENT … FOR stmt`: one statement; replaying it would run `stmt` again.
    Statement,
    /// `SET TRANSACTION …`: the next transaction only, on the connection it ran on.
    NextTransaction,
    /// `SET GLOBAL …`: the server's, done once; replaying it later would undo later changes.
    Global,
    /// A SET the parser does not know: replayed as before, and the session stays on its
    /// connection (what it set may not be what a replay sets).
    Unknown,
}

/// The reach of the SET statement `stmt`, read with the SQL parser (`SET STATEMENT`, which the
/// parser does not know, from its second word).
pub fn set_reach(stmt: &[u8]) -> SetReach {
    let mut words = Tokens::new(stmt).map(|(_, t)| t);
    let (first, second) = (words.next(), words.next());
    if !matches!(first, Some(Token::Word(w)) if w.eq_ignore_ascii_case(b"SET")) {
        return SetReach::Unknown;
    }
    let second_is =
        |w: &str| matches!(second, Some(Token::Word(x)) if x.eq_ignore_ascii_case(w.as_bytes()));
    if second_is("STATEMENT") {
        return SetReach::Statement;
    }
    // Account changes, made once: `SET PASSWORD [FOR …] = …`, `SET DEFAULT ROLE …`.
    if second_is("PASSWORD") || second_is("DEFAULT") {
        return SetReach::Global;
    }
    let Ok(Statement::Set(set)) = super::parse::parse_one(&super::parse::sanitize(stmt)) else {
        return SetReach::Unknown;
    };
    let global = |scope: &Option<ContextModifier>, name: &sqlparser::ast::ObjectName| {
        matches!(scope, Some(ContextModifier::Global))
            || name
                .to_string()
                .to_ascii_lowercase()
                .starts_with("@@global.")
    };
    match set {
        // The parser drops the scope word of `SET SESSION TRANSACTION`: read it back.
        Set::SetTransaction { .. } if second_is("SESSION") || second_is("LOCAL") => {
            SetReach::Session
        }
        Set::SetTransaction { .. } if second_is("GLOBAL") => SetReach::Global,
        Set::SetTransaction { .. } => SetReach::NextTransaction,
        Set::SingleAssignment {
            scope, variable, ..
        } if global(&scope, &variable) => SetReach::Global,
        Set::MultipleAssignments { assignments } => {
            match assignments
                .iter()
                .filter(|a| global(&a.scope, &a.name))
                .count()
            {
                0 => SetReach::Session,
                n if n == assignments.len() => SetReach::Global,
                _ => SetReach::Unknown, // some of each: replaying all of it would redo the global part
            }
        }
        Set::SingleAssignment { .. } | Set::SetNames { .. } | Set::SetNamesDefault {} => {
            SetReach::Session
        }
        Set::SetTimeZone { .. } | Set::SetRole { .. } => SetReach::Session,
        _ => SetReach::Unknown,
    }
}

/// Why a session is kept on its connection (`SHOW IDGATE SESSIONS`' `Pinned`, the
/// `idgate_sessions_pinned` gauge): each reason's name as shown.
pub const PIN_REASONS: &[&str] = &[
    "user variable",
    "temporary table",
    "LOCK TABLES",
    "GET_LOCK",
    "PREPARE",
    "XA",
    "HANDLER",
    "CALL",
    "FLUSH",
    "BACKUP",
    "SET",
    "prepared statement",
];

/// Whether `stmt` (a COM_QUERY's text, one statement or several) may leave such state.
pub fn binds_connection(stmt: &[u8]) -> bool {
    pin_reason(stmt).is_some()
}

/// What state `stmt` may leave on its connection, by its name in [`PIN_REASONS`].
pub fn pin_reason(stmt: &[u8]) -> Option<&'static str> {
    let toks: Vec<Token> = Tokens::new(stmt).map(|(_, t)| t).collect();
    let starts = |w: &[u8]| {
        toks.iter().enumerate().any(|(i, t)| {
            (i == 0 || toks[i - 1] == Token::Punct(b';'))
                && matches!(t, Token::Word(x) if x.eq_ignore_ascii_case(w))
        })
    };
    if pins_to_primary(stmt) {
        return Some(if starts(b"LOCK") {
            "LOCK TABLES"
        } else {
            "temporary table"
        });
    }
    // A procedure may set anything a statement can; FLUSH … WITH READ LOCK and BACKUP hold
    // locks.
    for (w, reason) in [
        (&b"PREPARE"[..], "PREPARE"),
        (b"EXECUTE", "PREPARE"),
        (b"XA", "XA"),
        (b"HANDLER", "HANDLER"),
        (b"CALL", "CALL"),
        (b"FLUSH", "FLUSH"),
        (b"BACKUP", "BACKUP"),
    ] {
        if starts(w) {
            return Some(reason);
        }
    }
    toks.iter().enumerate().find_map(|(i, t)| match t {
        // `@v`, not `@@sysvar` and not the host part of an account ('u'@'h').
        Token::Punct(b'@') => {
            let before = i.checked_sub(1).map(|j| &toks[j]);
            let after = toks.get(i + 1);
            (!matches!(
                before,
                Some(Token::Punct(b'@') | Token::Str(_) | Token::Ident(_))
            ) && !matches!(after, Some(Token::Punct(b'@')))
                && after.is_some())
            .then_some("user variable")
        }
        Token::Word(w) => (w.eq_ignore_ascii_case(b"GET_LOCK")
            && toks.get(i + 1) == Some(&Token::Punct(b'(')))
        .then_some("GET_LOCK"),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::{binds_connection, set_reach, SetReach};

    #[test]
    fn a_set_reaches_as_far_as_mariadb_keeps_it() {
        use SetReach::*;
        for (s, want) in [
            ("SET sql_mode = 'ANSI'", Session),
            (
                "SET SESSION sql_mode = 'ANSI', time_zone = '+01:00'",
                Session,
            ),
            ("SET @@session.time_zone = '+00:00'", Session),
            ("SET @@time_zone = '+00:00'", Session),
            ("SET NAMES utf8mb4 COLLATE 'utf8mb4_bin'", Session),
            (
                "set session transaction isolation level serializable",
                Session,
            ),
            (
                "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
                NextTransaction,
            ),
            ("SET TRANSACTION READ ONLY", NextTransaction),
            (
                "SET GLOBAL TRANSACTION ISOLATION LEVEL READ COMMITTED",
                Global,
            ),
            ("SET GLOBAL max_connections = 500", Global),
            ("SET @@global.max_connections = 500", Global),
            ("SET GLOBAL a = 1, SESSION b = 2", Unknown),
            (
                "SET STATEMENT max_statement_time = 1 FOR INSERT INTO t VALUES (1)",
                Statement,
            ),
            ("set statement sql_mode='' for select 1", Statement),
            ("SET PASSWORD = PASSWORD('x')", Global),
            ("SET PASSWORD FOR 'u'@'%' = PASSWORD('x')", Global),
            ("SET DEFAULT ROLE r FOR u", Global),
            ("SET ROLE r", Session),
            ("SELECT 1", Unknown),
        ] {
            assert_eq!(set_reach(s.as_bytes()), want, "{s}");
        }
    }

    #[test]
    fn state_the_replayed_sets_do_not_carry_binds_the_connection() {
        for s in [
            "SET @a = 1",
            "SELECT @a := id FROM t",
            "SELECT id INTO @x FROM t LIMIT 1",
            "CREATE TEMPORARY TABLE t (a INT)",
            "LOCK TABLES t WRITE",
            "SELECT GET_LOCK('x', 1)",
            "PREPARE s FROM 'SELECT 1'",
            "SELECT 1; EXECUTE s",
            "XA START 'x'",
            "HANDLER t OPEN",
            "CALL p()",
            "FLUSH TABLES WITH READ LOCK",
            "BACKUP STAGE START",
        ] {
            assert!(binds_connection(s.as_bytes()), "{s}");
        }
    }

    #[test]
    fn each_pin_has_a_reason_the_list_names() {
        use super::{pin_reason, PIN_REASONS};
        for (s, want) in [
            ("SET @a = 1", "user variable"),
            ("CREATE TEMPORARY TABLE t (a INT)", "temporary table"),
            ("LOCK TABLES t WRITE", "LOCK TABLES"),
            ("SELECT GET_LOCK('x', 1)", "GET_LOCK"),
            ("SELECT 1; EXECUTE s", "PREPARE"),
            ("CALL p()", "CALL"),
        ] {
            assert_eq!(pin_reason(s.as_bytes()), Some(want), "{s}");
            assert!(PIN_REASONS.contains(&want));
        }
    }

    #[test]
    fn plain_statements_and_system_variables_do_not() {
        for s in [
            "SELECT 1",
            "SET sql_mode = 'ANSI'",
            "SET @@session.time_zone = '+00:00'",
            "SELECT @@version, @@session.sql_mode",
            "INSERT INTO t (a) VALUES ('@x')",
            "CREATE USER 'u'@'localhost'",
            "GRANT SELECT ON db.* TO `u`@`%`",
            "SELECT get_lock_count FROM t",
            "UPDATE t SET prepared = 1",
        ] {
            assert!(!binds_connection(s.as_bytes()), "{s}");
        }
    }
}
