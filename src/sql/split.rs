//! Splitting a multi-statement COM_QUERY (e.g. MariaDB Connector/J's rewriteBatchedStatements
//! batch of `;`-separated INSERTs) into its statements, without allocating per statement.

use std::ops::Range;

use super::lex::{comment_at, skip_quoted};

/// Byte ranges of the `;`-separated statements in `sql`, trimmed of surrounding whitespace.
/// Statements that are empty or only comments are dropped. `;` inside quotes ('…', "…", `…`)
/// and comments (`-- `, `#`, `/* */`, `/*! */`) does not split.
pub fn split_statements(sql: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    // Whether the current statement has any byte outside whitespace and plain comments.
    let mut has_code = false;
    let mut i = 0;
    while i < sql.len() {
        let b = sql[i];
        match b {
            b';' => {
                push(sql, start..i, has_code, &mut out);
                i += 1;
                start = i;
                has_code = false;
            }
            b'\'' | b'"' | b'`' => {
                i = skip_quoted(sql, i);
                has_code = true;
            }
            b'#' | b'-' | b'/' => match comment_at(sql, i) {
                Some((kind, end)) => {
                    has_code |= kind == super::lex::Comment::Executable;
                    i = end;
                }
                None => {
                    has_code = true;
                    i += 1;
                }
            },
            _ => {
                has_code |= !b.is_ascii_whitespace();
                i += 1;
            }
        }
    }
    push(sql, start..sql.len(), has_code, &mut out);
    out
}

fn push(sql: &[u8], r: Range<usize>, has_code: bool, out: &mut Vec<Range<usize>>) {
    if !has_code {
        return;
    }
    let s = &sql[r.clone()];
    let lead = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let trail = s[lead..]
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    out.push(r.start + lead..r.end - trail);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(sql: &[u8]) -> Vec<&[u8]> {
        split_statements(sql).into_iter().map(|r| &sql[r]).collect()
    }

    #[test]
    fn simple_and_empty() {
        assert_eq!(
            parts(b"SELECT 1; SELECT 2;"),
            vec![&b"SELECT 1"[..], b"SELECT 2"]
        );
        assert_eq!(parts(b" ; ;\n"), Vec::<&[u8]>::new());
        assert_eq!(parts(b""), Vec::<&[u8]>::new());
        assert_eq!(parts(b"SELECT 1"), vec![&b"SELECT 1"[..]]);
        assert_eq!(parts(b"SELECT 1; -- bye"), vec![&b"SELECT 1"[..]]);
        assert_eq!(parts(b"SELECT 1; /* bye */ "), vec![&b"SELECT 1"[..]]);
    }

    #[test]
    fn quotes_and_comments_do_not_split() {
        let sql = br#"INSERT INTO t VALUES ('a;b', "c;d", 'e\';f', 'g'';h'); SELECT `x;y` FROM t"#;
        let p = parts(sql);
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0],
            &br#"INSERT INTO t VALUES ('a;b', "c;d", 'e\';f', 'g'';h')"#[..]
        );
        assert_eq!(p[1], b"SELECT `x;y` FROM t");

        let sql = b"SELECT 1 -- a;b\n; SELECT 2 # c;d\n; SELECT /* e;f */ 3; /*!40101 SET x=1; */; SELECT 4";
        let p = parts(sql);
        assert_eq!(
            p,
            vec![
                &b"SELECT 1 -- a;b"[..],
                b"SELECT 2 # c;d",
                b"SELECT /* e;f */ 3",
                b"/*!40101 SET x=1; */",
                b"SELECT 4"
            ]
        );
        // `--` without a following space is two minus signs, not a comment.
        assert_eq!(parts(b"SELECT 1--1; SELECT 2").len(), 2);
    }

    #[test]
    fn unterminated_quote_runs_to_end() {
        assert_eq!(
            parts(b"SELECT 'a; SELECT 2"),
            vec![&b"SELECT 'a; SELECT 2"[..]]
        );
        assert_eq!(parts(b"SELECT 1; /* x; y"), vec![&b"SELECT 1"[..]]);
    }

    #[test]
    fn batch_of_fifty_inserts() {
        let mut sql = Vec::new();
        for i in 0..50 {
            if i > 0 {
                sql.extend_from_slice(b";");
            }
            sql.extend_from_slice(format!("INSERT INTO t (a, b) VALUES ({i}, 'x;{i}')").as_bytes());
        }
        let p = parts(&sql);
        assert_eq!(p.len(), 50);
        for (i, s) in p.iter().enumerate() {
            assert_eq!(
                *s,
                format!("INSERT INTO t (a, b) VALUES ({i}, 'x;{i}')").as_bytes()
            );
        }
    }

    #[test]
    fn non_utf8_bytes_pass_through() {
        let sql = b"INSERT INTO t VALUES (_binary'\xff\x00;\x27\x27'); SELECT 1";
        let p = parts(sql);
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0],
            &b"INSERT INTO t VALUES (_binary'\xff\x00;\x27\x27')"[..]
        );
    }
}
