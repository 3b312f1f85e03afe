//! The slow statement log: a statement slower than `slow_statement_ms` is logged at WARN with
//! who ran it, how idgate ran it and how long it took. The text is logged with its literals
//! replaced by `?` (values can be personal data or secrets) and cut at `MAX_TEXT` bytes. The
//! last `KEPT` of them are also kept in memory for the operator's console.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

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

/// How many of the latest slow statements the console can show.
pub const KEPT: usize = 100;

/// A slow statement as kept for the console (its text without literals, as logged).
#[derive(Debug, Clone)]
pub struct Kept {
    pub at: SystemTime,
    pub user: String,
    pub route: &'static str,
    pub kind: &'static str,
    pub took: Duration,
    pub rows: u64,
    pub text: String,
}

/// The latest slow statements, oldest first. Only a slow statement takes this lock.
static RECENT: Mutex<VecDeque<Kept>> = Mutex::new(VecDeque::new());

/// The kept slow statements, oldest first.
pub fn recent() -> Vec<Kept> {
    let g = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    g.iter().cloned().collect()
}

fn keep(k: Kept) {
    let mut g = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    if g.len() >= KEPT {
        g.pop_front();
    }
    g.push_back(k);
}

pub fn log(s: &SlowStatement<'_>) {
    let statement = without_literals(s.text);
    keep(Kept {
        at: SystemTime::now(),
        user: String::from_utf8_lossy(s.user).into_owned(),
        route: s.route.label(),
        kind: kind_label(s.kind),
        took: s.took,
        rows: s.rows,
        text: statement.clone(),
    });
    tracing::warn!(
        user = %String::from_utf8_lossy(s.user),
        database = %s.database.map(String::from_utf8_lossy).unwrap_or_default(),
        route = s.route.label(),
        kind = kind_label(s.kind),
        duration_ms = s.took.as_secs_f64() * 1e3,
        rows = s.rows,
        statement = %statement,
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
    fn only_the_latest_are_kept() {
        for i in 0..KEPT + 5 {
            log(&SlowStatement {
                user: b"u",
                database: None,
                route: StmtRoute::Relayed,
                kind: StatementKind::Select,
                took: Duration::from_millis(i as u64),
                rows: 0,
                text: format!("SELECT {i}").as_bytes(),
            });
        }
        let kept = recent();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept[KEPT - 1].took, Duration::from_millis(KEPT as u64 + 4));
        assert_eq!(kept[KEPT - 1].text, "SELECT ?");
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
