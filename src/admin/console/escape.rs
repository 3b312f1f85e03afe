//! The one way a value reaches the console's HTML: every character HTML gives a meaning in text
//! or in a quoted attribute is written as a character reference. Table names, user names,
//! errors and statement text are chosen by clients and backends.

use std::fmt;

/// `s`, escaped, for `write!`/`format!` into text or a double- or single-quoted attribute.
pub struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['&', '<', '>', '"', '\'', '\0']) {
            f.write_str(&rest[..i])?;
            f.write_str(match rest.as_bytes()[i] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                b'\'' => "&#39;",
                // A NUL is a parse error in HTML text: shown as the replacement character.
                _ => "\u{FFFD}",
            })?;
            rest = &rest[i + 1..];
        }
        f.write_str(rest)
    }
}

/// Shorthand: `esc(&name)` in a format string.
pub fn esc(s: &str) -> Esc<'_> {
    Esc(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_strings_stay_text() {
        let cases = [
            (
                "<script>alert(1)</script>",
                "&lt;script&gt;alert(1)&lt;/script&gt;",
            ),
            (
                "\"><img src=x onerror=alert(1)>",
                "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;",
            ),
            ("' onmouseover='x", "&#39; onmouseover=&#39;x"),
            ("a&b &amp; c", "a&amp;b &amp;amp; c"),
            ("</section><!--", "&lt;/section&gt;&lt;!--"),
            ("nul\0byte", "nul\u{FFFD}byte"),
            ("ünïcödé ✓ `t`", "ünïcödé ✓ `t`"),
            ("", ""),
        ];
        for (raw, want) in cases {
            assert_eq!(esc(raw).to_string(), want, "{raw:?}");
        }
    }

    #[test]
    fn nothing_markup_survives() {
        let nasty = "<&>\"'".repeat(50) + "<x y='z'>";
        let out = esc(&nasty).to_string();
        assert!(!out.contains(['<', '>', '"', '\'']), "{out}");
        // Every `&` starts a reference.
        for (i, _) in out.match_indices('&') {
            let r = &out[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                    .iter()
                    .any(|e| r.starts_with(e)),
                "{r}"
            );
        }
    }
}
