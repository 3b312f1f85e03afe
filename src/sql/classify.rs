//! Cheap byte-level looks at a statement: its kind from the first keyword, whether it names one
//! of the configured tables, and whether it changes sql_mode. None of these parse or allocate.

use super::lex::{
    comment_at, executable_prefix_len, is_ident_byte, skip_quoted, skip_trivia, word_end, Comment,
};

/// What a statement is, from its first keyword(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    Insert,
    Replace,
    /// SELECT, WITH, TABLE and VALUES statements.
    Select,
    Update,
    Delete,
    /// SET of any kind (variables, NAMES, TRANSACTION, sql_mode).
    Set,
    Use,
    /// BEGIN and START TRANSACTION.
    Begin,
    Commit,
    /// ROLLBACK that ends the transaction (not `ROLLBACK TO`).
    Rollback,
    /// SAVEPOINT, RELEASE SAVEPOINT and `ROLLBACK [WORK] TO [SAVEPOINT]`: the transaction goes on.
    Savepoint,
    /// CREATE, ALTER, DROP, TRUNCATE, RENAME.
    Ddl,
    Show,
    /// EXPLAIN, DESC, DESCRIBE.
    Explain,
    Call,
    Other,
}

/// The statement's kind. Leading whitespace, comments, `(` and executable-comment openings
/// (`/*!40101 SET …*/` from mysqldump) are skipped.
pub fn classify(stmt: &[u8]) -> StatementKind {
    let i = skip_lead(stmt, 0);
    let end = word_end(stmt, i);
    let first = &stmt[i..end];
    let kw = |w: &[u8]| first.eq_ignore_ascii_case(w);
    let next = || {
        let j = skip_lead(stmt, end);
        &stmt[j..word_end(stmt, j)]
    };
    use StatementKind::*;
    if kw(b"INSERT") {
        Insert
    } else if kw(b"REPLACE") {
        Replace
    } else if kw(b"SELECT") || kw(b"WITH") || kw(b"TABLE") || kw(b"VALUES") {
        Select
    } else if kw(b"UPDATE") {
        Update
    } else if kw(b"DELETE") {
        Delete
    } else if kw(b"SET") {
        Set
    } else if kw(b"USE") {
        Use
    } else if kw(b"BEGIN") {
        Begin
    } else if kw(b"START") {
        if next().eq_ignore_ascii_case(b"TRANSACTION") {
            Begin
        } else {
            Other
        }
    } else if kw(b"COMMIT") {
        Commit
    } else if kw(b"ROLLBACK") {
        if rollback_to(stmt, end) {
            Savepoint
        } else {
            Rollback
        }
    } else if kw(b"SAVEPOINT") {
        Savepoint
    } else if kw(b"RELEASE") {
        if next().eq_ignore_ascii_case(b"SAVEPOINT") {
            Savepoint
        } else {
            Other
        }
    } else if kw(b"CREATE") || kw(b"ALTER") || kw(b"DROP") || kw(b"TRUNCATE") || kw(b"RENAME") {
        Ddl
    } else if kw(b"SHOW") {
        Show
    } else if kw(b"EXPLAIN") || kw(b"DESC") || kw(b"DESCRIBE") {
        Explain
    } else if kw(b"CALL") {
        Call
    } else {
        Other
    }
}

fn skip_lead(s: &[u8], mut i: usize) -> usize {
    loop {
        i = skip_trivia(s, i);
        if i < s.len() && s[i] == b'(' {
            i += 1;
        } else {
            return i;
        }
    }
}

/// `ROLLBACK [WORK] TO …` keeps the transaction.
fn rollback_to(s: &[u8], after: usize) -> bool {
    let mut j = skip_trivia(s, after);
    let mut w = &s[j..word_end(s, j)];
    if w.eq_ignore_ascii_case(b"WORK") {
        j = skip_trivia(s, j + w.len());
        w = &s[j..word_end(s, j)];
    }
    w.eq_ignore_ascii_case(b"TO")
}

/// A small set of table names, stored lowercase, for [`identifiers_mention`].
#[derive(Debug, Clone, Default)]
pub struct TableNames {
    names: Vec<Box<[u8]>>,
    /// Bit `n % 64` set when some name has length `n`: rejects most tokens in one test.
    lengths: u64,
}

impl TableNames {
    /// Builds the set; names are lowercased (ASCII) here once.
    pub fn new<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut set = TableNames::default();
        for n in names {
            let lower: Box<[u8]> = n.as_ref().to_ascii_lowercase().into_bytes().into();
            set.lengths |= 1u64 << (lower.len() % 64);
            if !set.names.contains(&lower) {
                set.names.push(lower);
            }
        }
        set
    }

    #[inline]
    fn contains_bare(&self, tok: &[u8]) -> bool {
        self.lengths & (1u64 << (tok.len() % 64)) != 0
            && self.names.iter().any(|n| n.eq_ignore_ascii_case(tok))
    }

    /// `inner` is a quoted identifier's body, possibly with doubled quote bytes `q`.
    fn contains_quoted(&self, inner: &[u8], q: u8) -> bool {
        if !inner.windows(2).any(|w| w[0] == q && w[1] == q) {
            return self.contains_bare(inner);
        }
        self.names.iter().any(|n| eq_unescaped(inner, q, n))
    }
}

/// Compares a quoted identifier body (doubled quotes = one) to `name` without allocating.
fn eq_unescaped(inner: &[u8], q: u8, name: &[u8]) -> bool {
    let (mut i, mut k) = (0, 0);
    while i < inner.len() {
        if k >= name.len() || !inner[i].eq_ignore_ascii_case(&name[k]) {
            return false;
        }
        i += if inner[i] == q && inner.get(i + 1) == Some(&q) {
            2
        } else {
            1
        };
        k += 1;
    }
    k == name.len()
}

/// True when an unquoted or backticked identifier in `stmt` equals one of `names`
/// (ASCII case-insensitively). Tokens inside '…' strings and plain comments are ignored;
/// executable comments `/*! … */` count as code. "…" tokens are checked too, because under
/// ANSI_QUOTES they are identifiers: a false positive only costs a parse.
pub fn identifiers_mention(stmt: &[u8], names: &TableNames) -> bool {
    scan_words(stmt, |tok, quote| match quote {
        None => names.contains_bare(tok),
        Some(q) => names.contains_quoted(tok, q),
    })
}

/// True for a SET statement that names `sql_mode` outside strings and comments, so the
/// session should forget its cached sql_mode.
pub fn mentions_sql_mode(stmt: &[u8]) -> bool {
    classify(stmt) == StatementKind::Set
        && scan_words(stmt, |tok, quote| {
            quote != Some(b'\'') && tok.eq_ignore_ascii_case(b"sql_mode")
        })
}

/// Calls `f(token, quote)` for every word and backticked/double-quoted token outside '…'
/// strings and plain comments, stopping at the first `true`.
fn scan_words(s: &[u8], mut f: impl FnMut(&[u8], Option<u8>) -> bool) -> bool {
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        match b {
            b'\'' => i = skip_quoted(s, i),
            b'`' | b'"' => {
                let end = skip_quoted(s, i);
                let inner_end = if end > i + 1 && s[end - 1] == b {
                    end - 1
                } else {
                    end
                };
                if f(&s[i + 1..inner_end], Some(b)) {
                    return true;
                }
                i = end;
            }
            b'#' | b'-' | b'/' => match comment_at(s, i) {
                Some((Comment::Plain, end)) => i = end,
                Some((Comment::Executable, _)) => i = executable_prefix_len(s, i),
                None => i += 1,
            },
            _ if is_ident_byte(b) => {
                let end = word_end(s, i);
                // An introducer or hex/bit prefix glued to a string (`_binary'…'`, `x'…'`)
                // is not an identifier the caller cares about; the string is skipped next.
                if f(&s[i..end], None) {
                    return true;
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use StatementKind::*;

    #[test]
    fn kinds() {
        let cases: &[(&[u8], StatementKind)] = &[
            (b"insert into t values (1)", Insert),
            (b"  /* c */ INSERT INTO t VALUES (1)", Insert),
            (b"REPLACE INTO t VALUES (1)", Replace),
            (b"select 1", Select),
            (b"((SELECT 1)) UNION (SELECT 2)", Select),
            (b"WITH x AS (SELECT 1) SELECT * FROM x", Select),
            (b"TABLE t", Select),
            (b"update t set a=1", Update),
            (b"DELETE FROM t", Delete),
            (b"SET NAMES utf8mb4", Set),
            (b"/*!40101 SET @OLD=@@CHARACTER_SET_CLIENT */", Set),
            (b"use db", Use),
            (b"BEGIN", Begin),
            (b"begin work", Begin),
            (b"START TRANSACTION READ ONLY", Begin),
            (b"start slave", Other),
            (b"COMMIT", Commit),
            (b"ROLLBACK", Rollback),
            (b"ROLLBACK WORK", Rollback),
            (b"ROLLBACK TO SAVEPOINT a", Savepoint),
            (b"rollback work to a", Savepoint),
            (b"SAVEPOINT a", Savepoint),
            (b"RELEASE SAVEPOINT a", Savepoint),
            (b"CREATE TABLE t (id int)", Ddl),
            (b"alter table t add c int", Ddl),
            (b"DROP TABLE t", Ddl),
            (b"TRUNCATE t", Ddl),
            (b"RENAME TABLE a TO b", Ddl),
            (b"SHOW TABLES", Show),
            (b"EXPLAIN SELECT 1", Explain),
            (b"DESC t", Explain),
            (b"describe t", Explain),
            (b"CALL p()", Call),
            (b"XA START 'x'", Other),
            (b"-- only a comment", Other),
            (b"", Other),
            (b"(((", Other),
            (b"\xff\xfe", Other),
        ];
        for (sql, kind) in cases {
            assert_eq!(classify(sql), *kind, "{}", String::from_utf8_lossy(sql));
        }
    }

    #[test]
    fn mentions() {
        let names = TableNames::new(["orders", "users", "we`ird"]);
        let yes: &[&[u8]] = &[
            b"INSERT INTO orders VALUES (1)",
            b"insert into ORDERS values (1)",
            b"INSERT INTO `Orders` VALUES (1)",
            b"INSERT INTO shop.orders VALUES (1)",
            b"INSERT INTO `shop`.`users`(a) VALUES (1)",
            b"SELECT * FROM `we``ird`",
            b"/*!40000 ALTER TABLE orders */",
            b"SELECT 'x' FROM users",
        ];
        for s in yes {
            assert!(
                identifiers_mention(s, &names),
                "{}",
                String::from_utf8_lossy(s)
            );
        }
        let no: &[&[u8]] = &[
            b"INSERT INTO orders2 VALUES (1)",
            b"INSERT INTO t VALUES ('orders')",
            b"INSERT INTO t VALUES ('it''s orders')",
            b"INSERT INTO t /* orders */ VALUES (1) -- users",
            b"INSERT INTO t VALUES (1) # orders",
            b"INSERT INTO t VALUES (_binary'\xffusers\\'users')",
            b"SELECT `orders_x`, my_orders FROM t",
            b"",
        ];
        for s in no {
            assert!(
                !identifiers_mention(s, &names),
                "{}",
                String::from_utf8_lossy(s)
            );
        }
        assert!(!identifiers_mention(
            b"SELECT 1 FROM orders",
            &TableNames::new(Vec::<String>::new())
        ));
    }

    #[test]
    fn sql_mode() {
        assert!(mentions_sql_mode(b"SET sql_mode = 'ANSI'"));
        assert!(mentions_sql_mode(
            b"set @@SESSION.SQL_MODE='NO_AUTO_VALUE_ON_ZERO'"
        ));
        assert!(mentions_sql_mode(b"SET NAMES utf8, `sql_mode` = ''"));
        assert!(mentions_sql_mode(
            b"/*!40101 SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */"
        ));
        assert!(!mentions_sql_mode(b"SET NAMES utf8"));
        assert!(!mentions_sql_mode(b"SET @x = 'sql_mode'"));
        assert!(!mentions_sql_mode(b"SELECT @@sql_mode"));
        assert!(!mentions_sql_mode(b"SET autocommit=1 /* sql_mode */"));
    }
}
