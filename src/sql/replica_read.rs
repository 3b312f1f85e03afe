//! Which statements a replica answers as the primary would: a lone SELECT that locks nothing,
//! assigns nothing, reads no user or system variable and calls only built-in functions whose
//! answer depends on the rows and the session's settings, not on the server it runs on or the
//! session's last statement. Anything else (a stored function, which may write;
//! `LAST_INSERT_ID()`, `FOUND_ROWS()`, `GET_LOCK()`, a sequence; `FOR UPDATE`; `INTO`; the
//! information and performance schemas, which describe one server) goes to the primary. A
//! name not known here counts as unsafe: the price of a mistake is a read on the primary.

use super::words::{Token, Tokens};

/// Words that may stand before `(` without being a function call.
const KEYWORDS_BEFORE_PAREN: &[&str] = &[
    "ALL",
    "AND",
    "ANY",
    "AS",
    "BETWEEN",
    "BY",
    "CASE",
    "DISTINCT",
    "DIV",
    "ELSE",
    "EXISTS",
    "FROM",
    "HAVING",
    "IN",
    "INDEX",
    "IS",
    "JOIN",
    "KEY",
    "LATERAL",
    "LIKE",
    "LIMIT",
    "MOD",
    "NOT",
    "OFFSET",
    "ON",
    "OR",
    "OVER",
    "REGEXP",
    "RLIKE",
    "ROW",
    "SELECT",
    "SOME",
    "THEN",
    "UNION",
    "USING",
    "VALUES",
    "WHEN",
    "WHERE",
    "WITH",
    "XOR",
    "EXCEPT",
    "INTERSECT",
];

/// Built-in functions a replica answers as the primary does (the rows being the same).
const SAFE_FUNCTIONS: &[&str] = &[
    // aggregates and windows
    "AVG",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
    "COUNT",
    "GROUP_CONCAT",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
    "MAX",
    "MIN",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "SUM",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "CUME_DIST",
    "DENSE_RANK",
    "FIRST_VALUE",
    "LAG",
    "LAST_VALUE",
    "LEAD",
    "NTH_VALUE",
    "NTILE",
    "PERCENT_RANK",
    "RANK",
    "ROW_NUMBER",
    // control flow and comparison
    "COALESCE",
    "GREATEST",
    "IF",
    "IFNULL",
    "ISNULL",
    "LEAST",
    "NULLIF",
    "NVL",
    "NVL2",
    "INTERVAL",
    "STRCMP",
    "MATCH",
    "AGAINST",
    // casts
    "BINARY",
    "CAST",
    "CONVERT",
    // strings
    "ASCII",
    "BIN",
    "BIT_LENGTH",
    "CHAR",
    "CHARACTER_LENGTH",
    "CHAR_LENGTH",
    "CONCAT",
    "CONCAT_WS",
    "CONV",
    "CRC32",
    "ELT",
    "EXPORT_SET",
    "FIELD",
    "FIND_IN_SET",
    "FORMAT",
    "FROM_BASE64",
    "HEX",
    "INSERT",
    "INSTR",
    "LCASE",
    "LEFT",
    "LENGTH",
    "LOCATE",
    "LOWER",
    "LPAD",
    "LTRIM",
    "MAKE_SET",
    "MD5",
    "MID",
    "OCT",
    "OCTET_LENGTH",
    "ORD",
    "POSITION",
    "QUOTE",
    "REGEXP_INSTR",
    "REGEXP_REPLACE",
    "REGEXP_SUBSTR",
    "REPEAT",
    "REPLACE",
    "REVERSE",
    "RIGHT",
    "RPAD",
    "RTRIM",
    "SHA",
    "SHA1",
    "SHA2",
    "SOUNDEX",
    "SPACE",
    "SUBSTR",
    "SUBSTRING",
    "SUBSTRING_INDEX",
    "TO_BASE64",
    "TRIM",
    "UCASE",
    "UNHEX",
    "UPPER",
    "WEIGHT_STRING",
    "CHARSET",
    "COLLATION",
    // numbers
    "ABS",
    "ACOS",
    "ASIN",
    "ATAN",
    "ATAN2",
    "BIT_COUNT",
    "CEIL",
    "CEILING",
    "COS",
    "COT",
    "DEGREES",
    "EXP",
    "FLOOR",
    "LN",
    "LOG",
    "LOG10",
    "LOG2",
    "PI",
    "POW",
    "POWER",
    "RADIANS",
    "RAND",
    "ROUND",
    "SIGN",
    "SIN",
    "SQRT",
    "TAN",
    "TRUNCATE",
    // dates and times (the session's time_zone travels with its SETs)
    "ADDDATE",
    "ADDTIME",
    "CONVERT_TZ",
    "CURDATE",
    "CURRENT_DATE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURTIME",
    "DATE",
    "DATEDIFF",
    "DATE_ADD",
    "DATE_FORMAT",
    "DATE_SUB",
    "DAY",
    "DAYNAME",
    "DAYOFMONTH",
    "DAYOFWEEK",
    "DAYOFYEAR",
    "EXTRACT",
    "FROM_DAYS",
    "FROM_UNIXTIME",
    "HOUR",
    "LAST_DAY",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "MAKEDATE",
    "MAKETIME",
    "MICROSECOND",
    "MINUTE",
    "MONTH",
    "MONTHNAME",
    "NOW",
    "PERIOD_ADD",
    "PERIOD_DIFF",
    "QUARTER",
    "SECOND",
    "SEC_TO_TIME",
    "STR_TO_DATE",
    "SUBDATE",
    "SUBTIME",
    "SYSDATE",
    "TIME",
    "TIMEDIFF",
    "TIMESTAMP",
    "TIMESTAMPADD",
    "TIMESTAMPDIFF",
    "TIME_FORMAT",
    "TIME_TO_SEC",
    "TO_DAYS",
    "TO_SECONDS",
    "UNIX_TIMESTAMP",
    "UTC_DATE",
    "UTC_TIME",
    "UTC_TIMESTAMP",
    "WEEK",
    "WEEKDAY",
    "WEEKOFYEAR",
    "YEAR",
    "YEARWEEK",
    // JSON
    "JSON_ARRAY",
    "JSON_ARRAY_APPEND",
    "JSON_ARRAY_INSERT",
    "JSON_COMPACT",
    "JSON_CONTAINS",
    "JSON_CONTAINS_PATH",
    "JSON_DEPTH",
    "JSON_DETAILED",
    "JSON_EXISTS",
    "JSON_EXTRACT",
    "JSON_INSERT",
    "JSON_KEYS",
    "JSON_LENGTH",
    "JSON_MERGE",
    "JSON_MERGE_PATCH",
    "JSON_MERGE_PRESERVE",
    "JSON_OBJECT",
    "JSON_QUERY",
    "JSON_QUOTE",
    "JSON_REMOVE",
    "JSON_REPLACE",
    "JSON_SEARCH",
    "JSON_SET",
    "JSON_TABLE",
    "JSON_TYPE",
    "JSON_UNQUOTE",
    "JSON_VALID",
    "JSON_VALUE",
    // networks
    "INET6_ATON",
    "INET6_NTOA",
    "INET_ATON",
    "INET_NTOA",
    "IS_IPV4",
    "IS_IPV6",
];

/// Words after which the statement locks, assigns, writes a file or reads a sequence.
const UNSAFE_WORDS: &[&str] = &[
    "UPDATE",
    "SHARE",
    "LOCK",
    "INTO",
    "PROCEDURE",
    "NEXTVAL",
    "LASTVAL",
    "SETVAL",
    "INFORMATION_SCHEMA",
    "PERFORMANCE_SCHEMA",
    "SYS",
    "MYSQL",
];

fn is_any(word: &[u8], list: &[&str]) -> bool {
    list.iter().any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
}

/// Whether a replica answers `stmt` (one statement of a COM_QUERY) as the primary would.
pub fn replica_safe(stmt: &[u8]) -> bool {
    let toks: Vec<Token> = Tokens::new(stmt).map(|(_, t)| t).collect();
    let starts_read = matches!(toks.first(), Some(Token::Word(w))
        if w.eq_ignore_ascii_case(b"SELECT") || w.eq_ignore_ascii_case(b"WITH"));
    if !starts_read {
        return false;
    }
    for (i, t) in toks.iter().enumerate() {
        let next = toks.get(i + 1);
        match t {
            // A user or system variable.
            Token::Punct(b'@') => return false,
            // A second statement (a trailing `;` is none).
            Token::Punct(b';') if toks[i..].iter().any(|t| *t != Token::Punct(b';')) => {
                return false
            }
            Token::Word(w) if is_any(w, UNSAFE_WORDS) => return false,
            // `NEXT VALUE FOR s`, `PREVIOUS VALUE FOR s`.
            Token::Word(w)
                if (w.eq_ignore_ascii_case(b"NEXT") || w.eq_ignore_ascii_case(b"PREVIOUS"))
                    && matches!(next, Some(Token::Word(v)) if v.eq_ignore_ascii_case(b"VALUE")) =>
            {
                return false
            }
            Token::Word(w) | Token::Ident(w) if next == Some(&Token::Punct(b'(')) => {
                let after_dot = i > 0 && toks[i - 1] == Token::Punct(b'.');
                let quoted = matches!(t, Token::Ident(_));
                // `db.f(…)` and `` `f`(…) `` are stored functions.
                if after_dot || quoted {
                    return false;
                }
                if !is_any(w, KEYWORDS_BEFORE_PAREN) && !is_any(w, SAFE_FUNCTIONS) {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

/// Whether `stmt` may leave the session with something only its primary connection has: a
/// temporary table (named anywhere: `CREATE TEMPORARY TABLE`, in a batch or a procedure call's
/// text) or locked tables. Such a session reads the primary from then on.
pub fn pins_to_primary(stmt: &[u8]) -> bool {
    let mut toks = Tokens::new(stmt).map(|(_, t)| t);
    let lock = matches!(toks.next(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(b"LOCK"));
    lock || Tokens::new(stmt)
        .any(|(_, t)| matches!(t, Token::Word(w) if w.eq_ignore_ascii_case(b"TEMPORARY")))
}

/// Whether `stmt` reads what the session's last statement left behind (its warnings, found
/// rows, row count, diagnostics): it must run where that statement ran.
pub fn reads_last_answer(stmt: &[u8]) -> bool {
    let mut toks = Tokens::new(stmt).map(|(_, t)| t).peekable();
    let first = toks.next();
    let word = |t: Option<Token>, w: &str| matches!(t, Some(Token::Word(x)) if x.eq_ignore_ascii_case(w.as_bytes()));
    if word(first, "SHOW") {
        return Tokens::new(stmt).any(|(_, t)| {
            matches!(t, Token::Word(w) if w.eq_ignore_ascii_case(b"WARNINGS") || w.eq_ignore_ascii_case(b"ERRORS"))
        });
    }
    if word(first, "GET") {
        return true; // GET DIAGNOSTICS
    }
    Tokens::new(stmt).any(|(_, t)| {
        matches!(t, Token::Word(w) if is_any(w, &["FOUND_ROWS", "ROW_COUNT", "WARNING_COUNT", "ERROR_COUNT"]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_reads_are_replica_safe() {
        for s in [
            "SELECT * FROM t WHERE id = 3",
            "select a, COUNT(*) from t group by a having count(*) > 1 order by a limit 5",
            "SELECT t.a FROM t JOIN u ON (t.id = u.id) WHERE t.id IN (1, 2) AND EXISTS (SELECT 1 FROM v)",
            "WITH c AS (SELECT id FROM t) SELECT * FROM c",
            "SELECT FROM_UNIXTIME(0), CONCAT('a', name), CAST(x AS SIGNED) FROM t",
            "SELECT 'FOR UPDATE', `select` FROM t",
            "SELECT ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) FROM t",
            "SELECT * FROM t FORCE INDEX (k) WHERE MATCH (a) AGAINST ('x')",
            "SELECT 1;",
        ] {
            assert!(replica_safe(s.as_bytes()), "{s}");
        }
    }

    #[test]
    fn reads_with_effects_or_session_answers_stay_on_the_primary() {
        for s in [
            "SELECT * FROM t FOR UPDATE",
            "SELECT * FROM t LOCK IN SHARE MODE",
            "SELECT * FROM t FOR SHARE",
            "SELECT a INTO @x FROM t",
            "SELECT a FROM t INTO OUTFILE '/tmp/x'",
            "SELECT @v",
            "SELECT @v := a FROM t",
            "SELECT @@version",
            "SELECT LAST_INSERT_ID()",
            "SELECT FOUND_ROWS()",
            "SELECT ROW_COUNT()",
            "SELECT CONNECTION_ID()",
            "SELECT GET_LOCK('x', 1)",
            "SELECT RELEASE_LOCK('x')",
            "SELECT NEXTVAL(s)",
            "SELECT NEXT VALUE FOR s",
            "SELECT my_func(a) FROM t",
            "SELECT db.f(a) FROM t",
            "SELECT `f`(a) FROM t",
            "SELECT * FROM information_schema.PROCESSLIST",
            "SELECT * FROM mysql.user",
            "SELECT SLEEP(1)",
            "SELECT 1; DELETE FROM t",
            "SELECT * FROM t /*!50000 FOR UPDATE */",
            "INSERT INTO t SELECT * FROM u",
            "UPDATE t SET a = 1",
            "SHOW TABLES",
        ] {
            assert!(!replica_safe(s.as_bytes()), "{s}");
        }
    }

    #[test]
    fn temporary_tables_and_locks_pin_the_session() {
        for s in [
            "CREATE TEMPORARY TABLE t (a INT)",
            "SELECT 1; CREATE TEMPORARY TABLE t (a INT)",
            "create temporary table if not exists t like u",
            "LOCK TABLES t WRITE",
        ] {
            assert!(pins_to_primary(s.as_bytes()), "{s}");
        }
        for s in [
            "INSERT INTO t (temporary_flag) VALUES ('TEMPORARY')",
            "SELECT 1",
            "UNLOCK TABLES",
        ] {
            assert!(!pins_to_primary(s.as_bytes()), "{s}");
        }
    }

    #[test]
    fn statements_about_the_last_answer_are_known() {
        for s in [
            "SHOW WARNINGS",
            "show count(*) errors",
            "SELECT FOUND_ROWS()",
            "SELECT ROW_COUNT()",
            "SELECT @@warning_count",
            "GET DIAGNOSTICS @n = NUMBER",
        ] {
            assert!(reads_last_answer(s.as_bytes()), "{s}");
        }
        for s in ["SELECT * FROM t", "SHOW TABLES", "SELECT 'FOUND_ROWS'"] {
            assert!(!reads_last_answer(s.as_bytes()), "{s}");
        }
    }
}
