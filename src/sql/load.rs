//! `LOAD DATA … LOCAL INFILE` / `LOAD XML … LOCAL INFILE` recognised from their leading keywords,
//! so idgate knows when a client's file may be asked for.

use super::lex::{skip_trivia, word_end};

/// The statement's leading keywords, uppercased, up to `n` of them.
fn leading_words(stmt: &[u8], n: usize) -> Vec<Vec<u8>> {
    let mut words = Vec::with_capacity(n);
    let mut i = 0;
    while words.len() < n {
        i = skip_trivia(stmt, i);
        let end = word_end(stmt, i);
        if end == i {
            break;
        }
        words.push(stmt[i..end].to_ascii_uppercase());
        i = end;
    }
    words
}

/// The statement's first word, uppercased (comments and whitespace before it skipped).
pub fn first_word(stmt: &[u8]) -> Vec<u8> {
    leading_words(stmt, 1).pop().unwrap_or_default()
}

/// `LOAD {DATA|XML} [LOW_PRIORITY|CONCURRENT] LOCAL INFILE …`: the server asks the client for
/// the file.
pub fn is_load_local(stmt: &[u8]) -> bool {
    let w = leading_words(stmt, 4);
    let word = |k: usize| w.get(k).map(Vec::as_slice);
    if word(0) != Some(b"LOAD") || !matches!(word(1), Some(b"DATA" | b"XML")) {
        return false;
    }
    let k = if matches!(word(2), Some(b"LOW_PRIORITY" | b"CONCURRENT")) {
        3
    } else {
        2
    };
    word(k) == Some(b"LOCAL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_local_forms() {
        assert!(is_load_local(b"LOAD DATA LOCAL INFILE 'f' INTO TABLE t"));
        assert!(is_load_local(
            b"  /* c */ load data\nconcurrent local infile 'f' into table t"
        ));
        assert!(is_load_local(
            b"LOAD XML LOW_PRIORITY LOCAL INFILE 'f' INTO TABLE t"
        ));
        assert!(is_load_local(
            b"/*!LOAD DATA LOCAL INFILE 'f' INTO TABLE t*/"
        ));
        assert!(!is_load_local(b"LOAD DATA INFILE 'local' INTO TABLE t"));
        assert!(!is_load_local(b"LOAD INDEX INTO CACHE t"));
        assert!(!is_load_local(b"SELECT 'LOAD DATA LOCAL'"));
        assert!(!is_load_local(b"LOAD"));
        assert!(first_word(b"load index into cache t") == b"LOAD");
        assert!(first_word(b"SELECT 1") != b"LOAD");
        assert!(first_word(b"/* x */ -- c\n LOAD DATA INFILE 'f' INTO TABLE t") == b"LOAD");
        assert_eq!(first_word(b"  /*c*/lock tables t write"), b"LOCK");
    }
}
