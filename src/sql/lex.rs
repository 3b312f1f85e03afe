//! Byte-level lexing helpers shared by the splitter, the classifier and the INSERT analysis.
//! They follow MySQL's rules with default sql_mode: backslash escapes in '…' and "…", doubled
//! quotes, `-- ` (dash dash + whitespace), `#` and `/* */` comments. Nothing here allocates.

/// What a comment at some position is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Comment {
    /// `-- …`, `#…` or `/* … */` (optimizer hints `/*+ … */` included): no code inside.
    Plain,
    /// `/*! … */` or `/*M! … */`: MySQL runs the text inside as code.
    Executable,
}

/// Bytes MySQL accepts in an unquoted identifier (non-ASCII UTF-8 bytes included).
#[inline]
pub(crate) fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Index just past the quoted token starting at `i` (`s[i]` is the quote byte). Unterminated
/// quotes run to the end of the input.
#[inline]
pub(crate) fn skip_quoted(s: &[u8], i: usize) -> usize {
    quoted_end(s, i).unwrap_or(s.len())
}

/// Index just past the closing quote of the quoted token at `i`; `None` if it never closes.
#[inline]
pub(crate) fn quoted_end(s: &[u8], i: usize) -> Option<usize> {
    let q = s[i];
    let backslash = q != b'`';
    let mut j = i + 1;
    while j < s.len() {
        // Skip to the next byte that can end or escape.
        match s[j..]
            .iter()
            .position(|&b| b == q || (backslash && b == b'\\'))
        {
            Some(p) => j += p,
            None => return None,
        }
        let b = s[j];
        if backslash && b == b'\\' {
            j += 2;
        } else if b == q {
            if s.get(j + 1) == Some(&q) {
                j += 2; // doubled quote stands for one quote character
            } else {
                return Some(j + 1);
            }
        } else {
            j += 1;
        }
    }
    None
}

/// If a comment starts at `i`, its kind and the index just past it.
#[inline]
pub(crate) fn comment_at(s: &[u8], i: usize) -> Option<(Comment, usize)> {
    match s[i] {
        b'#' => Some((Comment::Plain, line_end(s, i))),
        b'-' if s.get(i + 1) == Some(&b'-')
            && s.get(i + 2)
                .is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_control()) =>
        {
            Some((Comment::Plain, line_end(s, i)))
        }
        b'/' if s.get(i + 1) == Some(&b'*') => {
            let exec = s.get(i + 2) == Some(&b'!')
                || (s.get(i + 2) == Some(&b'M') && s.get(i + 3) == Some(&b'!'));
            let end = find_block_end(s, i + 2);
            let kind = if exec {
                Comment::Executable
            } else {
                Comment::Plain
            };
            Some((kind, end))
        }
        _ => None,
    }
}

fn line_end(s: &[u8], i: usize) -> usize {
    s[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(s.len(), |p| i + p + 1)
}

fn find_block_end(s: &[u8], from: usize) -> usize {
    let mut j = from;
    while j + 1 < s.len() {
        if s[j] == b'*' && s[j + 1] == b'/' {
            return j + 2;
        }
        j += 1;
    }
    s.len()
}

/// Length of the opening of an executable comment at `i` (`/*!`, `/*M!` plus version digits).
pub(crate) fn executable_prefix_len(s: &[u8], i: usize) -> usize {
    let mut j = i + 2;
    if s.get(j) == Some(&b'M') {
        j += 1;
    }
    j += 1; // the '!'
    while j < s.len() && s[j].is_ascii_digit() {
        j += 1;
    }
    j.min(s.len())
}

/// Index of the first byte at or after `i` that is neither whitespace nor inside a plain
/// comment. Executable comments are entered (their text is code); their closing `*/` is skipped.
pub(crate) fn skip_trivia(s: &[u8], mut i: usize) -> usize {
    while i < s.len() {
        let b = s[i];
        if b.is_ascii_whitespace() {
            i += 1;
        } else if b == b'*' && s.get(i + 1) == Some(&b'/') {
            i += 2; // the end of an executable comment we entered
        } else {
            match comment_at(s, i) {
                Some((Comment::Plain, end)) => i = end,
                Some((Comment::Executable, _)) => i = executable_prefix_len(s, i),
                None => return i,
            }
        }
    }
    s.len()
}

/// Index just past `s`'s last token: before trailing whitespace, plain comments and `;` (the
/// end of an executable comment counts as code).
pub(crate) fn code_end(s: &[u8]) -> usize {
    let (mut i, mut end) = (0, 0);
    while i < s.len() {
        let b = s[i];
        if b.is_ascii_whitespace() || b == b';' {
            i += 1;
            continue;
        }
        match comment_at(s, i) {
            Some((Comment::Plain, e)) => i = e,
            Some((Comment::Executable, _)) => {
                i = executable_prefix_len(s, i);
                end = i;
            }
            None => {
                i = if matches!(b, b'\'' | b'"' | b'`') {
                    skip_quoted(s, i)
                } else {
                    i + 1
                };
                end = i;
            }
        }
    }
    end
}

/// Whether only trivia and `;` are left in `s` after `i`.
pub(crate) fn only_trivia_left(s: &[u8], i: usize) -> bool {
    let mut i = skip_trivia(s, i);
    while i < s.len() && s[i] == b';' {
        i = skip_trivia(s, i + 1);
    }
    i >= s.len()
}

/// End of the maximal unquoted identifier/keyword run starting at `i`.
#[inline]
pub(crate) fn word_end(s: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < s.len() && is_ident_byte(s[j]) {
        j += 1;
    }
    j
}

/// The identifier written at `s` (a bare word, `` `quoted` `` or "quoted"), unquoted.
pub(crate) fn unquote_ident(s: &[u8]) -> String {
    match s.first() {
        Some(&q @ (b'`' | b'"')) if s.len() >= 2 && s[s.len() - 1] == q => {
            let inner = &s[1..s.len() - 1];
            let mut out = Vec::with_capacity(inner.len());
            let mut k = 0;
            while k < inner.len() {
                out.push(inner[k]);
                k += if inner[k] == q && inner.get(k + 1) == Some(&q) {
                    2
                } else {
                    1
                };
            }
            String::from_utf8_lossy(&out).into_owned()
        }
        _ => String::from_utf8_lossy(s).into_owned(),
    }
}

/// Splits a possibly qualified name (`a.b`, `` `a`.`b` ``) into its unquoted parts.
pub(crate) fn split_qualified(s: &[u8]) -> Vec<String> {
    let mut parts = Vec::new();
    let mut i = 0;
    let mut start = 0;
    while i < s.len() {
        match s[i] {
            b'`' | b'"' => i = skip_quoted(s, i),
            b'.' => {
                parts.push(unquote_ident(trim_ws(&s[start..i])));
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    parts.push(unquote_ident(trim_ws(&s[start..])));
    parts
}

/// `s` without leading and trailing ASCII whitespace.
pub(crate) fn trim_ws(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |p| p + 1);
    &s[start..end.max(start)]
}

/// Appends `name` as a backticked identifier (inner backticks doubled).
pub(crate) fn push_backticked(out: &mut Vec<u8>, name: &str) {
    out.push(b'`');
    for &b in name.as_bytes() {
        if b == b'`' {
            out.push(b'`');
        }
        out.push(b);
    }
    out.push(b'`');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_escapes() {
        let s = br"'a\'b' x";
        assert_eq!(skip_quoted(s, 0), 6);
        let s = b"'a''b' x";
        assert_eq!(skip_quoted(s, 0), 6);
        let s = b"`a``b` x";
        assert_eq!(skip_quoted(s, 0), 6);
        let s = br"`a\` x";
        assert_eq!(skip_quoted(s, 0), 4);
        assert_eq!(skip_quoted(b"'abc", 0), 4);
        assert_eq!(skip_quoted(b"'ab\\", 0), 4);
    }

    #[test]
    fn comments() {
        assert_eq!(comment_at(b"-- x\ny", 0), Some((Comment::Plain, 5)));
        assert_eq!(comment_at(b"--x", 0), None);
        assert_eq!(comment_at(b"--", 0), Some((Comment::Plain, 2)));
        assert_eq!(comment_at(b"# x", 0), Some((Comment::Plain, 3)));
        assert_eq!(comment_at(b"/* x */y", 0), Some((Comment::Plain, 7)));
        assert_eq!(
            comment_at(b"/*!40101 x */", 0).map(|c| c.0),
            Some(Comment::Executable)
        );
        assert_eq!(
            comment_at(b"/*M!100 x */", 0).map(|c| c.0),
            Some(Comment::Executable)
        );
        assert_eq!(comment_at(b"/* x", 0), Some((Comment::Plain, 4)));
        assert_eq!(skip_trivia(b" /* a */ -- b\n #c\n/*!40101 SET */", 0), 27);
    }

    #[test]
    fn identifiers() {
        assert_eq!(unquote_ident(b"`a``b`"), "a`b");
        assert_eq!(unquote_ident(b"Tbl"), "Tbl");
        assert_eq!(unquote_ident(b"`"), "`");
        assert_eq!(split_qualified(b"`my.db` . `t`"), vec!["my.db", "t"]);
        let mut out = Vec::new();
        push_backticked(&mut out, "i`d");
        assert_eq!(out, b"`i``d`");
        assert_eq!(trim_ws(b"  a b \n"), b"a b");
        assert_eq!(trim_ws(b"   "), b"");
    }
}
