//! Errors from analysing or rewriting a statement, and how each reaches the client.

use crate::wire::errors::{SqlError, ER_UNKNOWN_ERROR};

/// MySQL's ER_PARSE_ERROR.
pub const ER_PARSE_ERROR: u16 = 1064;
/// MySQL's ER_WRONG_VALUE_COUNT_ON_ROW.
pub const ER_WRONG_VALUE_COUNT_ON_ROW: u16 = 1136;
/// MySQL's ER_NOT_SUPPORTED_YET.
pub const ER_NOT_SUPPORTED_YET: u16 = 1235;

/// Why a statement could not be analysed or rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlParseError {
    /// The statement does not parse.
    #[error("syntax error near '{near}' at line {line}: {detail}")]
    Syntax {
        /// Up to 80 bytes of the statement where parsing stopped (lossy UTF-8).
        near: String,
        line: u64,
        /// The parser's own explanation.
        detail: String,
    },
    /// Valid SQL, but a form idgate does not rewrite; the message names it and says what to do.
    #[error("{0}")]
    Unsupported(String),
    /// A VALUES row with a different number of values than the column list.
    #[error("column count doesn't match value count at row {row}")]
    ColumnCount {
        /// 1-based, as MySQL reports it.
        row: usize,
    },
    /// The caller asked for an impossible rewrite (a bug in idgate, not in the statement).
    #[error("idgate internal error: {0}")]
    Internal(String),
}

impl From<SqlParseError> for SqlError {
    fn from(e: SqlParseError) -> Self {
        match e {
            SqlParseError::Syntax { near, line, detail } => SqlError::new(
                ER_PARSE_ERROR,
                b"42000",
                format!(
                    "You have an error in your SQL syntax near '{near}' at line {line} ({detail}); check the statement and send it again"
                ),
            ),
            SqlParseError::Unsupported(what) => SqlError::new(ER_NOT_SUPPORTED_YET, b"42000", what),
            SqlParseError::ColumnCount { row } => SqlError::new(
                ER_WRONG_VALUE_COUNT_ON_ROW,
                b"21S01",
                format!("Column count doesn't match value count at row {row}"),
            ),
            SqlParseError::Internal(what) => SqlError::new(
                ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate could not rewrite the statement ({what}); please report this to the idgate maintainers"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_states() {
        let e: SqlError = SqlParseError::Syntax {
            near: "VALUES".into(),
            line: 1,
            detail: "Expected: (".into(),
        }
        .into();
        assert_eq!((e.code, &e.state), (1064, b"42000"));
        assert!(e.message.contains("near 'VALUES' at line 1"));
        let e: SqlError = SqlParseError::Unsupported("INSERT … SELECT into t".into()).into();
        assert_eq!((e.code, &e.state), (1235, b"42000"));
        let e: SqlError = SqlParseError::ColumnCount { row: 2 }.into();
        assert_eq!((e.code, &e.state), (1136, b"21S01"));
        assert_eq!(e.message, "Column count doesn't match value count at row 2");
        let e: SqlError = SqlParseError::Internal("x".into()).into();
        assert_eq!((e.code, &e.state), (1105, b"HY000"));
    }
}
