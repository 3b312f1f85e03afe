//! `IDGATE SWITCHOVER <backend> TO '<host:port>'`: makes a replica of the backend's group its
//! primary. A malformed form keeps what is wrong, so the client is told the usage.

use super::admin_migrate::Parser;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchoverStatement {
    To { backend: String, node: String },
    Malformed(String),
}

pub const USAGE: &str = "IDGATE SWITCHOVER <backend> TO '<host:port>'";

/// The statement after `IDGATE SWITCHOVER` (`rest` starts after those words).
pub fn parse(rest: &[u8]) -> SwitchoverStatement {
    let mut p = Parser { s: rest, i: 0 };
    let malformed =
        |what: &str| SwitchoverStatement::Malformed(format!("{what}; the form is {USAGE}"));
    let Some(backend) = p.ident() else {
        return malformed("IDGATE SWITCHOVER needs a backend's name");
    };
    if !p.word().is_some_and(|w| w.eq_ignore_ascii_case(b"TO")) {
        return malformed("IDGATE SWITCHOVER <backend> needs TO '<host:port>'");
    }
    let Some(node) = p.string() else {
        return malformed("the node after TO must be a quoted 'host:port'");
    };
    if !p.at_end() {
        return malformed("unexpected text after the statement");
    }
    SwitchoverStatement::To { backend, node }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_and_its_mistakes() {
        assert_eq!(
            parse(b" `db` to '127.0.0.1:3307' ;"),
            SwitchoverStatement::To {
                backend: "db".into(),
                node: "127.0.0.1:3307".into()
            }
        );
        for bad in [
            &b""[..],
            b"db",
            b"db TO",
            b"db TO 127.0.0.1",
            b"db TO 'a:1' now",
        ] {
            assert!(
                matches!(parse(bad), SwitchoverStatement::Malformed(m) if m.contains(USAGE)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
