//! The slow statement log: a statement slower than `slow_statement_ms` is logged at WARN with
//! who ran it, how idgate ran it and how long it took. The text is logged with its literals
//! replaced by `?` (values can be personal data or secrets) and cut at `MAX_TEXT` bytes.

use std::time::Duration;

use crate::metrics::statement_metrics::{kind_label, StmtRoute};
use crate::sql::StatementKind;

/// Longest statement text a slow log line carries.
pub const MAX_TEXT: usize = 1024;

/// One slow statement, as the session saw it.
pub struct SlowStatement<'a> {
    pub user: &'a [u8],
    pub database: Option<&'a [u8]>,
    pub route: StmtRoute,
    pub kind: StatementKind,
    pub took: Duration,
    /// Rows the client got (a result set) or the statement changed, where idgate tracks them.
    pub rows: u64,
    pub text: &'a [u8],
}

pub fn log(s: &SlowStatement<'_>) {
    tracing::warn!(
        user = %String::from_utf8_lossy(s.user),
        database = %s.database.map(String::from_utf8_lossy).unwrap_or_default(),
        route = s.route.label(),
        kind = kind_label(s.kind),
        duration_ms = s.took.as_secs_f64() * 1e3,
        rows = s.rows,
        statement = %without_literals(s.text),
        "slow statement"
    );
}

/// `stmt` with string and number literals replaced by `?`, runs of whitespace made one space,
/// at most `MAX_TEXT` bytes (then `…`). Identifiers, quoted with backticks or not, stay.
pub fn without_literals(stmt: &[u8]) -> String {
    let mut out = Vec::with_capacity(stmt.len().min(MAX_TEXT) + 4);
    let mut i = 0;
    while i < stmt.len() && out.len() < MAX_TEXT {
        let b = stmt[i];
        match b {
            b'\'' | b'"' => {
                i = quoted_end(stmt, i);
                out.push(b'?');
            }
            b'`' => {
                let end = quoted_end(stmt, i);
                out.extend_from_slice(&stmt[i..end]);
                i = end;
            }
            b'0'..=b'9' if !out.last().is_some_and(|&p| is_ident_byte(p)) => {
                while i < stmt.len() && (is_ident_byte(stmt[i]) || stmt[i] == b'.') {
                    i += 1;
                }
                out.push(b'?');
            }
            b if b.is_ascii_whitespace() => {
                while i < stmt.len() && stmt[i].is_ascii_whitespace() {
                    i += 1;
                }
                if !out.is_empty() {
                    out.push(b' ');
                }
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    let mut text = String::from_utf8_lossy(&out[..out.len().min(MAX_TEXT)]).into_owned();
    if i < stmt.len() {
        text.push('…');
    }
    text.trim_end().to_string()
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Just past the quoted token at `i` (backslash escapes and doubled quotes inside); the end of
/// `s` if it never closes.
fn quoted_end(s: &[u8], i: usize) -> usize {
    let q = s[i];
    let mut j = i + 1;
    while j < s.len() {
        if s[j] == b'\\' && q != b'`' {
            j += 2;
        } else if s[j] == q {
            if s.get(j + 1) == Some(&q) {
                j += 2;
            } else {
                return j + 1;
            }
        } else {
            j += 1;
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_placeholders() {
        let t = without_literals(
            b"SELECT * FROM `t1` WHERE name = 'O''Brien\\'s'  AND\n id IN (1, 2.5e3) AND x2 = \"s\"",
        );
        assert_eq!(
            t,
            "SELECT * FROM `t1` WHERE name = ? AND id IN (?, ?) AND x2 = ?"
        );
        assert_eq!(without_literals(b"SELECT SLEEP(0.2)"), "SELECT SLEEP(?)");
    }

    #[test]
    fn long_text_is_cut() {
        let long = format!("SELECT {}", "a, ".repeat(2000));
        let t = without_literals(long.as_bytes());
        assert!(t.len() <= MAX_TEXT + '…'.len_utf8(), "{}", t.len());
        assert!(t.ends_with('…'));
        // An unterminated string swallows the rest and is still one placeholder.
        assert_eq!(without_literals(b"SELECT 'abc"), "SELECT ?");
    }
}
