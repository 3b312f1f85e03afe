//! Whether a statement leaves state on the backend connection that idgate cannot carry to
//! another connection by replaying the session's SETs: user variables, temporary tables,
//! locks (LOCK TABLES, GET_LOCK), SQL-level prepared statements, XA branches and open
//! HANDLERs. A session that ran one stays on its connection; when that connection must go
//! (its node stopped being the primary), the session is told and ends rather than going on
//! without the state. A false positive only keeps a session where it is.

use super::replica_read::pins_to_primary;
use super::words::{Token, Tokens};

/// Whether `stmt` (a COM_QUERY's text, one statement or several) may leave such state.
pub fn binds_connection(stmt: &[u8]) -> bool {
    if pins_to_primary(stmt) {
        return true;
    }
    let toks: Vec<Token> = Tokens::new(stmt).map(|(_, t)| t).collect();
    let starts = |w: &[u8]| {
        toks.iter().enumerate().any(|(i, t)| {
            (i == 0 || toks[i - 1] == Token::Punct(b';'))
                && matches!(t, Token::Word(x) if x.eq_ignore_ascii_case(w))
        })
    };
    if [&b"PREPARE"[..], b"EXECUTE", b"XA", b"HANDLER"]
        .iter()
        .any(|w| starts(w))
    {
        return true;
    }
    toks.iter().enumerate().any(|(i, t)| match t {
        // `@v`, not `@@sysvar` and not the host part of an account ('u'@'h').
        Token::Punct(b'@') => {
            let before = i.checked_sub(1).map(|j| &toks[j]);
            let after = toks.get(i + 1);
            !matches!(
                before,
                Some(Token::Punct(b'@') | Token::Str(_) | Token::Ident(_))
            ) && !matches!(after, Some(Token::Punct(b'@')))
                && after.is_some()
        }
        Token::Word(w) => {
            w.eq_ignore_ascii_case(b"GET_LOCK") && toks.get(i + 1) == Some(&Token::Punct(b'('))
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::binds_connection;

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
        ] {
            assert!(binds_connection(s.as_bytes()), "{s}");
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
