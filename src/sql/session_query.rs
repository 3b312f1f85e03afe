//! Recognising the SELECTs the session answers itself: the last generated ID, the sequence
//! functions and the connection id. Anything more than the exact forms below goes to the
//! backend.

use super::lex::{is_ident_byte, skip_quoted, skip_trivia, unquote_ident, word_end};

/// A SELECT the session answers without a backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionQuery {
    /// `SELECT LAST_INSERT_ID()`, `@@identity`, `@@last_insert_id`, `@@session.…`.
    LastInsertId {
        /// Result-set column name: the expression as written, or the alias.
        column: String,
    },
    /// `SELECT NEXTVAL(gen)`, `SELECT NEXT VALUE FOR gen` (MariaDB; count 1) and
    /// `SELECT NEXT n VALUES FROM gen` (Vitess; the first of a contiguous block of `count`).
    NextValues {
        schema: Option<String>,
        generator: String,
        count: u64,
        /// Result-set column name: the expression as written (`nextval` for the Vitess form),
        /// or the alias.
        column: String,
    },
    /// `SELECT CONNECTION_ID()`: idgate's id of the session (the handshake's, the one `KILL`
    /// takes), not the id of whichever backend connection would run it.
    ConnectionId {
        /// Result-set column name: the expression as written, or the alias.
        column: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Word,
    /// `` `…` `` or "…" (an identifier or alias) or '…' (an alias).
    Quoted,
    /// `@@name` or `@@scope.name`.
    SysVar,
    Punct(u8),
    End,
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    /// Next significant token and its byte range.
    fn next(&mut self) -> (Tok, usize, usize) {
        let s = self.s;
        let start = skip_trivia(s, self.i);
        if start >= s.len() {
            self.i = s.len();
            return (Tok::End, s.len(), s.len());
        }
        let b = s[start];
        let (tok, end) = if is_ident_byte(b) {
            (Tok::Word, word_end(s, start))
        } else if matches!(b, b'`' | b'"' | b'\'') {
            (Tok::Quoted, skip_quoted(s, start))
        } else if b == b'@' && s.get(start + 1) == Some(&b'@') {
            let mut e = word_end(s, start + 2);
            if s.get(e) == Some(&b'.') {
                e = word_end(s, e + 1);
            }
            (Tok::SysVar, e)
        } else {
            (Tok::Punct(b), start + 1)
        };
        self.i = end;
        (tok, start, end)
    }

    fn word(&mut self, w: &[u8]) -> bool {
        let (t, a, b) = self.next();
        t == Tok::Word && self.s[a..b].eq_ignore_ascii_case(w)
    }

    fn punct(&mut self, p: u8) -> bool {
        self.next().0 == Tok::Punct(p)
    }

    /// `name` or `schema.name`, each bare or quoted; returns (schema, name, end).
    fn object_name(&mut self) -> Option<(Option<String>, String, usize)> {
        let first = self.ident()?;
        let save = self.i;
        if self.punct(b'.') {
            let second = self.ident()?;
            return Some((Some(first.0), second.0, second.1));
        }
        self.i = save;
        Some((None, first.0, first.1))
    }

    fn ident(&mut self) -> Option<(String, usize)> {
        match self.next() {
            (Tok::Word, a, b) => Some((unquote_ident(&self.s[a..b]), b)),
            (Tok::Quoted, a, b) if self.s[a] != b'\'' => Some((unquote_ident(&self.s[a..b]), b)),
            _ => None,
        }
    }

    /// After a function's name (which starts at `start`): `()`, then the tail. Returns the
    /// column name: the call as written, or the alias.
    fn no_argument_call(&mut self, start: usize) -> Option<String> {
        if !self.punct(b'(') {
            return None;
        }
        let (t, _, close) = self.next();
        if t != Tok::Punct(b')') {
            return None;
        }
        let written = text(&self.s[start..close]);
        let alias = self.tail()?;
        Some(alias.unwrap_or(written))
    }

    /// Optional `[AS] alias`, then optional `;`, then the end. Returns the alias if any.
    fn tail(&mut self) -> Option<Option<String>> {
        let (mut t, mut a, mut b) = self.next();
        let mut alias = None;
        if t == Tok::Word && self.s[a..b].eq_ignore_ascii_case(b"AS") {
            (t, a, b) = self.next();
            if !matches!(t, Tok::Word | Tok::Quoted) {
                return None;
            }
        }
        if matches!(t, Tok::Word | Tok::Quoted) {
            if t == Tok::Word && is_reserved_after_item(&self.s[a..b]) {
                return None;
            }
            alias = Some(unquote_alias(&self.s[a..b]));
            (t, _, _) = self.next();
        }
        if t == Tok::Punct(b';') {
            t = self.next().0;
        }
        (t == Tok::End).then_some(alias)
    }
}

/// Words that start a clause rather than name an alias.
fn is_reserved_after_item(w: &[u8]) -> bool {
    const CLAUSES: &[&[u8]] = &[
        b"FROM",
        b"WHERE",
        b"LIMIT",
        b"INTO",
        b"UNION",
        b"ORDER",
        b"GROUP",
        b"HAVING",
        b"FOR",
        b"LOCK",
        b"WINDOW",
        b"EXCEPT",
        b"INTERSECT",
    ];
    CLAUSES.iter().any(|c| w.eq_ignore_ascii_case(c))
}

fn unquote_alias(s: &[u8]) -> String {
    if s.first() == Some(&b'\'') && s.len() >= 2 {
        let inner = &s[1..s.len() - 1];
        return String::from_utf8_lossy(inner).replace("''", "'");
    }
    unquote_ident(s)
}

fn text(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

/// Recognises the SELECTs listed on [`SessionQuery`]; `None` sends the statement to a backend.
pub fn session_query(stmt: &[u8]) -> Option<SessionQuery> {
    let mut lx = Lexer { s: stmt, i: 0 };
    if !lx.word(b"SELECT") {
        return None;
    }
    let (t, a, b) = lx.next();
    let item = &stmt[a..b];
    match t {
        Tok::SysVar => {
            let name = &item[2..];
            let name = strip_scope(name);
            if !(name.eq_ignore_ascii_case(b"identity")
                || name.eq_ignore_ascii_case(b"last_insert_id"))
            {
                return None;
            }
            let alias = lx.tail()?;
            Some(SessionQuery::LastInsertId {
                column: alias.unwrap_or_else(|| text(item)),
            })
        }
        Tok::Word if item.eq_ignore_ascii_case(b"LAST_INSERT_ID") => {
            let column = lx.no_argument_call(a)?;
            Some(SessionQuery::LastInsertId { column })
        }
        Tok::Word if item.eq_ignore_ascii_case(b"CONNECTION_ID") => {
            let column = lx.no_argument_call(a)?;
            Some(SessionQuery::ConnectionId { column })
        }
        Tok::Word if item.eq_ignore_ascii_case(b"NEXTVAL") => {
            if !lx.punct(b'(') {
                return None;
            }
            let (schema, generator, _) = lx.object_name()?;
            let (t, _, close) = lx.next();
            if t != Tok::Punct(b')') {
                return None;
            }
            let written = text(&stmt[a..close]);
            let alias = lx.tail()?;
            Some(SessionQuery::NextValues {
                schema,
                generator,
                count: 1,
                column: alias.unwrap_or(written),
            })
        }
        Tok::Word if item.eq_ignore_ascii_case(b"NEXT") => next_values(&mut lx, a),
        _ => None,
    }
}

/// `@@session.x` / `@@local.x` are the session's `x`; `@@global.x` is not ours to answer.
fn strip_scope(name: &[u8]) -> &[u8] {
    for scope in [&b"session."[..], b"local."] {
        if name.len() > scope.len() && name[..scope.len()].eq_ignore_ascii_case(scope) {
            return &name[scope.len()..];
        }
    }
    name
}

/// After `NEXT`: `VALUE FOR gen` (MariaDB), `n VALUES FROM gen` or `VALUE FROM gen` (Vitess).
fn next_values(lx: &mut Lexer<'_>, start: usize) -> Option<SessionQuery> {
    let s = lx.s;
    let (t, a, b) = lx.next();
    if t != Tok::Word {
        return None;
    }
    let w = &s[a..b];
    let (count, vitess) = if w.eq_ignore_ascii_case(b"VALUE") {
        let (t2, c, d) = lx.next();
        let kw = &s[c..d];
        if t2 == Tok::Word && kw.eq_ignore_ascii_case(b"FOR") {
            (1, false)
        } else if t2 == Tok::Word && kw.eq_ignore_ascii_case(b"FROM") {
            (1, true)
        } else {
            return None;
        }
    } else if w.iter().all(u8::is_ascii_digit) {
        let n: u64 = std::str::from_utf8(w).ok()?.parse().ok()?;
        if n == 0 || !lx.word(b"VALUES") || !lx.word(b"FROM") {
            return None;
        }
        (n, true)
    } else {
        return None;
    };
    let (schema, generator, end) = lx.object_name()?;
    let written = text(&s[start..end]);
    let alias = lx.tail()?;
    let column = alias.unwrap_or_else(|| {
        if vitess {
            "nextval".to_string()
        } else {
            written
        }
    });
    Some(SessionQuery::NextValues {
        schema,
        generator,
        count,
        column,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lid(sql: &str) -> Option<String> {
        match session_query(sql.as_bytes()) {
            Some(SessionQuery::LastInsertId { column }) => Some(column),
            _ => None,
        }
    }

    fn nv(sql: &str) -> Option<(Option<String>, String, u64, String)> {
        match session_query(sql.as_bytes()) {
            Some(SessionQuery::NextValues {
                schema,
                generator,
                count,
                column,
            }) => Some((schema, generator, count, column)),
            _ => None,
        }
    }

    #[test]
    fn connection_id_forms() {
        let cid = |sql: &str| match session_query(sql.as_bytes()) {
            Some(SessionQuery::ConnectionId { column }) => Some(column),
            _ => None,
        };
        assert_eq!(
            cid("SELECT CONNECTION_ID()").as_deref(),
            Some("CONNECTION_ID()")
        );
        assert_eq!(cid("select connection_id( ) as me;").as_deref(), Some("me"));
        assert_eq!(cid("SELECT CONNECTION_ID() + 1"), None);
        assert_eq!(cid("SELECT CONNECTION_ID(), 2"), None);
        assert_eq!(cid("SELECT CONNECTION_ID() FROM t"), None);
    }

    #[test]
    fn last_insert_id_forms() {
        assert_eq!(
            lid("SELECT LAST_INSERT_ID()").as_deref(),
            Some("LAST_INSERT_ID()")
        );
        assert_eq!(
            lid("select last_insert_id( )").as_deref(),
            Some("last_insert_id( )")
        );
        assert_eq!(
            lid("  SELECT /* c */ LAST_INSERT_ID() ; ").as_deref(),
            Some("LAST_INSERT_ID()")
        );
        assert_eq!(lid("SELECT LAST_INSERT_ID() AS id").as_deref(), Some("id"));
        assert_eq!(
            lid("SELECT LAST_INSERT_ID() `my id`").as_deref(),
            Some("my id")
        );
        assert_eq!(lid("SELECT LAST_INSERT_ID() AS 'x'").as_deref(), Some("x"));
        assert_eq!(lid("SELECT @@identity").as_deref(), Some("@@identity"));
        assert_eq!(
            lid("SELECT @@IDENTITY -- why\n").as_deref(),
            Some("@@IDENTITY")
        );
        assert_eq!(
            lid("SELECT @@last_insert_id").as_deref(),
            Some("@@last_insert_id")
        );
        assert_eq!(
            lid("SELECT @@session.last_insert_id;").as_deref(),
            Some("@@session.last_insert_id")
        );
        assert_eq!(lid("SELECT @@SESSION.identity as i").as_deref(), Some("i"));
    }

    #[test]
    fn not_ours() {
        for sql in [
            "SELECT LAST_INSERT_ID(5)",
            "SELECT LAST_INSERT_ID() FROM t",
            "SELECT LAST_INSERT_ID(), 1",
            "SELECT LAST_INSERT_ID() + 1",
            "SELECT LAST_INSERT_ID",
            "SELECT @@global.identity",
            "SELECT @@identity2",
            "SELECT @@identity; SELECT 1",
            "SELECT 1",
            "SELECT",
            "",
            "SELECT LAST_INSERT_ID() AS",
            "SELECT NEXTVAL(s) FROM dual",
            "SELECT NEXTVAL()",
            "SELECT NEXT 0 VALUES FROM s",
            "SELECT NEXT -1 VALUES FROM s",
            "SELECT NEXT 99999999999999999999999 VALUES FROM s",
            "SELECT NEXT 2 VALUE FROM s",
            "SELECT NEXT VALUE FOR",
            "UPDATE t SET a = LAST_INSERT_ID()",
        ] {
            assert_eq!(session_query(sql.as_bytes()), None, "{sql}");
        }
    }

    #[test]
    fn sequence_forms() {
        assert_eq!(
            nv("SELECT NEXTVAL(orders_seq)"),
            Some((None, "orders_seq".into(), 1, "NEXTVAL(orders_seq)".into()))
        );
        assert_eq!(
            nv("select nextval( `shop`.`Seq` ) as n;"),
            Some((Some("shop".into()), "Seq".into(), 1, "n".into()))
        );
        assert_eq!(
            nv("SELECT NEXT VALUE FOR s"),
            Some((None, "s".into(), 1, "NEXT VALUE FOR s".into()))
        );
        assert_eq!(
            nv("SELECT next 100 values from db.s"),
            Some((Some("db".into()), "s".into(), 100, "nextval".into()))
        );
        assert_eq!(
            nv("SELECT NEXT VALUE FROM s"),
            Some((None, "s".into(), 1, "nextval".into()))
        );
    }

    #[test]
    fn odd_bytes_do_not_panic() {
        for sql in [
            &b"SELECT @@"[..],
            b"SELECT '\xff",
            b"SELECT NEXTVAL(`a",
            b"SELECT \xff\xfe()",
        ] {
            let _ = session_query(sql);
        }
    }
}
