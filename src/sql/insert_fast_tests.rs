//! The INSERT scanner against the sqlparser path: wherever the scanner answers, its analysis is
//! exactly the parser's; statements of the shapes it is for are answered; anything else is left
//! to the parser.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::insert_fast::analyze_insert_fast;
use super::*;

/// The scanner's answer, checked against the parser's. `None`: the scanner declined.
fn fast_checked(s: &[u8]) -> Option<InsertAnalysis> {
    let fast = analyze_insert_fast(s)?;
    match analyze_insert_parsed(s) {
        Ok(parsed) => assert_eq!(
            fast,
            parsed,
            "scanner and parser differ on {:?}",
            String::from_utf8_lossy(s)
        ),
        Err(e) => panic!(
            "the scanner accepted what the parser rejects ({e}): {:?}",
            String::from_utf8_lossy(s)
        ),
    }
    Some(fast)
}

fn accepted(s: &[u8]) -> InsertAnalysis {
    fast_checked(s)
        .unwrap_or_else(|| panic!("the scanner declined {:?}", String::from_utf8_lossy(s)))
}

fn row_values(a: &InsertAnalysis) -> Vec<Vec<ValueKind>> {
    match &a.body {
        InsertBody::Values { rows } => rows
            .iter()
            .map(|r| r.values.iter().map(|v| v.kind.clone()).collect())
            .collect(),
        _ => panic!("not a VALUES body"),
    }
}

fn spans<'a>(s: &'a [u8], a: &InsertAnalysis) -> Vec<&'a [u8]> {
    match &a.body {
        InsertBody::Values { rows } => rows
            .iter()
            .flat_map(|r| r.values.iter().map(|v| &s[v.span.clone()]))
            .collect(),
        _ => panic!("not a VALUES body"),
    }
}

#[test]
fn sysbench_insert() {
    let s = b"INSERT INTO sbtest3 (id, k, c, pad) VALUES (0, 5012, '8342-9', '1-2')";
    let a = accepted(s);
    assert_eq!(a.table.name, "sbtest3");
    assert_eq!(a.column_index("pad"), Some(3));
    assert_eq!(
        row_values(&a),
        vec![vec![
            ValueKind::Int(0),
            ValueKind::Int(5012),
            ValueKind::Str(b"8342-9".to_vec()),
            ValueKind::Str(b"1-2".to_vec())
        ]]
    );
}

#[test]
fn tricky_literals() {
    use ValueKind::*;
    let s = br"INSERT INTO t VALUES ('it''s', 'a\'b', _binary'\xff', x'ff', X'0A', b'101', -1, +7, 1e3, .5, 1., -2.5E-3, 0x1F, N'n', _utf8mb4'q', NULL, default, TRUE, false, '', '\\')";
    let a = accepted(s);
    assert_eq!(
        row_values(&a)[0],
        vec![
            Str(b"it's".to_vec()),
            Str(b"a'b".to_vec()),
            Str(b"xff".to_vec()),
            Other,
            Other,
            Other,
            Int(-1),
            Int(7),
            Other,
            Other,
            Other,
            Other,
            Other,
            Str(b"n".to_vec()),
            Str(b"q".to_vec()),
            Null,
            Default,
            Other,
            Other,
            Str(vec![]),
            Str(b"\\".to_vec()),
        ]
    );
    assert_eq!(spans(s, &a)[2], br"_binary'\xff'");
    assert_eq!(spans(s, &a)[11], b"-2.5E-3");
}

/// Odd literals: whatever the scanner does with them, it never disagrees with the parser.
#[test]
fn odd_literals_never_disagree() {
    for v in [
        "1.e3",
        ".5e-1",
        "00.0",
        "-0x1f",
        "+0x1f",
        "0x",
        "0xg",
        "- -1",
        "-+1",
        "+-1",
        "1.5.",
        "_binary''",
        "N''",
        "X''",
        "b''",
        "'\\\\'",
        "'a, '",
        "\"\"\"\"",
        "\"'\"",
        "'\"'",
        "_utf8mb4\"x\"",
        "n\"x\"",
        "x\"ff\"",
        "1e+",
        "1e-5",
        "9e999",
        "-.5",
        "+.",
        "?",
        "??",
        "? ?",
        "NULL NULL",
        "TRUE1",
        "_x'a'",
        "_'a'",
        "__'a'",
        "_1'a'",
    ] {
        for s in [
            format!("INSERT INTO t VALUES ({v})"),
            format!("INSERT INTO t (a, b) VALUES ({v}, 1), (2, {v})"),
        ] {
            fast_checked(s.as_bytes());
        }
    }
}

#[test]
fn raw_bytes_in_strings() {
    let s =
        b"INSERT INTO t (id, b) VALUES (NULL, _binary'\xff\x00\xc3''\\'\x80'), (2, '\xe9t\xe9')";
    let a = accepted(s);
    assert_eq!(
        row_values(&a),
        vec![
            vec![
                ValueKind::Null,
                ValueKind::Str(b"\xff\x00\xc3''\x80".to_vec())
            ],
            vec![ValueKind::Int(2), ValueKind::Str(b"\xe9t\xe9".to_vec())],
        ]
    );
}

#[test]
fn names_and_comments() {
    let s = b"/* app */ insert ignore into `my db`.`odd``name.x` ( `id` , `a b`,c$1 ) -- c\n value(1,2,3) # x\n,( ? /* p */ , 'x', ?) ; -- end";
    let a = accepted(s);
    assert_eq!(a.table.schema.as_deref(), Some("my db"));
    assert_eq!(a.table.name, "odd`name.x");
    assert!(a.ignore && !a.replace);
    let cols = a.columns.as_ref().unwrap();
    assert_eq!(cols[1].name, "a b");
    assert_eq!(&s[cols[0].span.clone()], b"`id`");
    assert_eq!(a.placeholders.len(), 2);
    assert_eq!(
        row_values(&a)[1],
        vec![
            ValueKind::Placeholder(0),
            ValueKind::Str(b"x".to_vec()),
            ValueKind::Placeholder(1)
        ]
    );
    assert_eq!(&s[a.suffix_start..a.suffix_start + 3], b" ; ");
}

#[test]
fn other_common_forms() {
    for s in [
        &b"REPLACE INTO t VALUES (1)"[..],
        b"replace t (a) values (1), (2);",
        b"INSERT t VALUES ()",
        b"INSERT INTO t () VALUES (), ()",
        b"INSERT INTO d.t(a)VALUES(1),(2)",
        b"INSERT INTO user (name, status, type) VALUES ('a', 1, 2)",
        b"\r\n\tINSERT\tINTO\r\nt\nVALUES\n(1)\n",
    ] {
        accepted(s);
    }
}

#[test]
fn declines_what_it_does_not_read() {
    for s in [
        &b"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1"[..],
        b"INSERT INTO t VALUES (1) AS new",
        b"INSERT INTO t VALUES (1) RETURNING id",
        b"INSERT INTO t SET a = 1",
        b"INSERT INTO t SELECT 1",
        b"INSERT INTO t (SELECT 1)",
        b"INSERT INTO t VALUES ROW(1)",
        b"INSERT INTO t VALUES (NOW())",
        b"INSERT INTO t VALUES (1 + 2)",
        b"INSERT INTO t VALUES ('a' 'b')",
        b"INSERT INTO t VALUES (- 1)",
        b"INSERT INTO t VALUES (--1)",
        b"INSERT INTO t VALUES (@x)",
        b"INSERT INTO t VALUES (`a`)",
        b"INSERT INTO t VALUES (1e)",
        b"INSERT INTO t VALUES (1abc)",
        b"INSERT INTO t VALUES (0X1F)",
        b"INSERT INTO t VALUES (x'f')",
        b"INSERT INTO t VALUES (b'2')",
        b"INSERT INTO t VALUES (_binary 'x')",
        b"INSERT INTO t VALUES ((1))",
        b"INSERT INTO t VALUES (1,)",
        b"INSERT INTO t VALUES (1),",
        b"INSERT INTO t VALUES (1), (1, 2)",
        b"INSERT INTO t (a, b) VALUES (1)",
        b"INSERT INTO t VALUES ('unclosed)",
        b"INSERT /*! IGNORE */ INTO t VALUES (1)",
        b"INSERT /*+ hint */ INTO t VALUES (1)",
        b"INSERT INTO t VALUES (1) /* unclosed",
        b"INSERT LOW_PRIORITY INTO t VALUES (1)",
        b"REPLACE IGNORE INTO t VALUES (1)",
        b"INSERT INTO t PARTITION (p0) VALUES (1)",
        b"INSERT INTO a.b.c VALUES (1)",
        b"INSERT INTO d . t VALUES (1)",
        b"INSERT INTO t (t.a) VALUES (1)",
        b"INSERT INTO `` VALUES (1)",
        b"INSERT INTO t\xc3\xa9 VALUES (1)",
        b"INSERT INTO t VALUES (1); SELECT 1",
        b"INSERT INTO t VALUES (1);;",
        b"INSERT INTO t VALUES (?1)",
        b"INSERT INTO values (a) VALUES (1)",
        b"INSERT REPLACE VALUES (1)",
        b"INSERT INTO t (select) VALUES (1)",
        b"INSERT INTO t VALUES",
        b"INSERT INTO t",
        b"",
    ] {
        assert!(
            fast_checked(s).is_none(),
            "the scanner accepted {:?}",
            String::from_utf8_lossy(s)
        );
    }
}

/// Every sqlparser keyword as a table, schema and column name: the scanner declines it or agrees.
#[test]
fn keywords_as_names() {
    for kw in sqlparser::keywords::ALL_KEYWORDS {
        for lower in [false, true] {
            let kw = if lower {
                kw.to_ascii_lowercase()
            } else {
                kw.to_string()
            };
            for s in [
                format!("INSERT INTO {kw} (a) VALUES (1)"),
                format!("INSERT INTO {kw} VALUES (1)"),
                format!("INSERT {kw} VALUES (1)"),
                format!("INSERT IGNORE {kw} VALUES (1)"),
                format!("INSERT INTO {kw}.t VALUES (1)"),
                format!("INSERT INTO t.{kw} (a) VALUES (1)"),
                format!("INSERT INTO t ({kw}) VALUES (1)"),
                format!("INSERT INTO t ({kw}, b) VALUES (1, 2)"),
                format!("INSERT INTO t (a, {kw}) VALUES (1, 2)"),
                format!("REPLACE {kw} (a) VALUES (1)"),
            ] {
                fast_checked(s.as_bytes());
            }
        }
    }
}

/// Random INSERT statements: `clean` ones are of the shapes the scanner reads.
struct Gen {
    rng: StdRng,
    /// Everything generated so far is of a shape the scanner must accept.
    clean: bool,
    /// Whether to produce things outside those shapes at all.
    wild: bool,
}

impl Gen {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    /// Something outside the scanner's shapes, `p` of the time when wild.
    fn off(&mut self, p: f64) -> bool {
        if self.wild && self.chance(p) {
            self.clean = false;
            true
        } else {
            false
        }
    }

    fn trivia(&mut self, out: &mut Vec<u8>, required: bool) {
        if self.off(0.01) {
            let bad: &[u8] = self.pick(&[
                &b" --x "[..],
                b" /*! 1 */ ",
                b" /*+ x */ ",
                b" /*M! 1 */ ",
                b"\x0c",
                b" /* open",
                b"--",
            ]);
            out.extend_from_slice(bad);
            return;
        }
        let n = if required { 1 } else { 0 } + self.rng.random_range(0..2);
        for _ in 0..n {
            let t: &[u8] = self.pick(&[
                &b" "[..],
                b" ",
                b" ",
                b"  ",
                b"\n",
                b"\r\n",
                b"\t",
                b"/* c */",
                b" /* c, ( ) ' */ ",
                b" # note ' (\n",
                b" -- note ) \n",
                b"--\t\n",
                b"/**/",
            ]);
            out.extend_from_slice(t);
        }
    }

    fn name(&mut self, out: &mut Vec<u8>) {
        if self.off(0.03) {
            let kw = self.pick(sqlparser::keywords::ALL_KEYWORDS);
            out.extend_from_slice(kw.as_bytes());
            return;
        }
        if self.off(0.01) {
            let bad: &[u8] = self.pick(&[&b"1t"[..], b"t\xc3\xa9", b"``", b"@v", b"\"t\""]);
            out.extend_from_slice(bad);
            return;
        }
        let n: &[u8] = self.pick(&[
            &b"t"[..],
            b"sbtest1",
            b"Orders",
            b"_x",
            b"$t",
            b"t$1",
            b"id",
            b"ID",
            b"k",
            b"user",
            b"status",
            b"name",
            b"type",
            b"date",
            b"`id`",
            b"`my table`",
            b"`a.b`",
            b"`x``y`",
            b"`select`",
            b"`\xc3\xa9`",
            b"`\xff`",
        ]);
        out.extend_from_slice(n);
    }

    fn string_body(&mut self, out: &mut Vec<u8>, q: u8) {
        for _ in 0..self.rng.random_range(0..8) {
            match self.rng.random_range(0..10) {
                0 => out.extend_from_slice(&[q, q]),
                1 => out.extend_from_slice(&[b'\\', q]),
                2 => out.extend_from_slice(b"\\\\"),
                3 => out.extend_from_slice(b"\\n"),
                4 => out.push(self.rng.random_range(0x80..=0xff)),
                // A quote of the other kind, or a backtick, needs no escape.
                5 => out.push(if q == b'\'' { b'"' } else { b'\'' }),
                6 => out.push(b'`'),
                _ => out.push(self.pick(b"aZ0 ,()?;#-/*\n\t%_")),
            }
        }
        // A lone quote of the other kind is fine; of this kind it would close the string.
        if let Some(last) = out.last() {
            if *last == b'\\' {
                out.push(b'x');
            }
        }
    }

    fn literal(&mut self, out: &mut Vec<u8>) {
        if self.off(0.02) {
            let bad: &[u8] = self.pick(&[
                &b"NOW()"[..],
                b"1 + 2",
                b"'a' 'b'",
                b"- 1",
                b"@x",
                b"`c`",
                b"(1)",
                b"CAST(1 AS CHAR)",
                b"1e",
                b"0b11",
                b"0X1F",
                b"x'f'",
                b"DEFAULT(a)",
                b"_binary 'x'",
                b"'a'b",
                b"?1",
                b"NULLx",
                b"ROW(1)",
                b"'unclosed",
            ]);
            out.extend_from_slice(bad);
            return;
        }
        match self.rng.random_range(0..14) {
            0 => out.extend_from_slice(self.pick(&[&b"0"[..], b"-1", b"+7", b"42", b"007"])),
            1 => out.extend_from_slice(self.pick(&[
                &b"18446744073709551615"[..],
                b"-9223372036854775808",
                b"99999999999999999999999999999999999999999",
            ])),
            2 => out.extend_from_slice(self.pick(&[
                &b"1.5"[..],
                b".5",
                b"1.",
                b"1e3",
                b"1E-3",
                b"-1.5e+2",
                b"+.5e1",
                b"0.0",
            ])),
            3 => out.extend_from_slice(self.pick(&[
                &b"0x1f"[..],
                b"0xFF",
                b"x'ff'",
                b"X'0A0b'",
                b"x''",
                b"b'101'",
                b"B''",
            ])),
            4 => out.extend_from_slice(self.pick(&[
                &b"NULL"[..],
                b"null",
                b"DEFAULT",
                b"Default",
                b"TRUE",
                b"false",
            ])),
            5 => out.push(b'?'),
            6 | 7 => {
                out.push(b'\'');
                self.string_body(out, b'\'');
                out.push(b'\'');
            }
            8 => {
                out.push(b'"');
                self.string_body(out, b'"');
                out.push(b'"');
            }
            _ => {
                let prefix: &[u8] =
                    self.pick(&[&b"_binary"[..], b"_utf8mb4", b"_latin1", b"N", b"n"]);
                out.extend_from_slice(prefix);
                out.push(b'\'');
                self.string_body(out, b'\'');
                out.push(b'\'');
            }
        }
    }

    fn statement(&mut self) -> Vec<u8> {
        let mut s = Vec::new();
        self.trivia(&mut s, false);
        let replace = self.chance(0.2);
        s.extend_from_slice(if replace {
            self.pick(&[&b"REPLACE"[..], b"replace"])
        } else {
            self.pick(&[&b"INSERT"[..], b"insert", b"Insert"])
        });
        if self.off(0.02) {
            s.extend_from_slice(self.pick(&[&b" LOW_PRIORITY"[..], b" DELAYED", b" IGNORE"]));
        }
        self.trivia(&mut s, true);
        if !replace && self.chance(0.3) {
            s.extend_from_slice(b"IGNORE");
            self.trivia(&mut s, true);
        }
        if self.chance(0.8) {
            s.extend_from_slice(self.pick(&[&b"INTO"[..], b"into"]));
            self.trivia(&mut s, true);
        }
        if self.chance(0.3) {
            self.name(&mut s);
            s.push(b'.');
        }
        self.name(&mut s);
        let with_columns = self.chance(0.7);
        self.trivia(&mut s, !with_columns);
        let columns = if with_columns {
            let n = self.rng.random_range(0..5);
            s.push(b'(');
            for k in 0..n {
                self.trivia(&mut s, false);
                if k > 0 {
                    s.push(b',');
                    self.trivia(&mut s, false);
                }
                self.name(&mut s);
            }
            self.trivia(&mut s, false);
            s.push(b')');
            self.trivia(&mut s, false);
            Some(n)
        } else {
            None
        };
        s.extend_from_slice(self.pick(&[&b"VALUES"[..], b"values", b"VALUE"]));
        self.trivia(&mut s, false);
        let width = columns.unwrap_or_else(|| self.rng.random_range(0..5));
        for r in 0..self.rng.random_range(1..4) {
            if r > 0 {
                self.trivia(&mut s, false);
                s.push(b',');
                self.trivia(&mut s, false);
            }
            let mut n = width;
            if self.off(0.02) {
                n += 1;
            }
            s.push(b'(');
            for k in 0..n {
                self.trivia(&mut s, false);
                if k > 0 {
                    s.push(b',');
                    self.trivia(&mut s, false);
                }
                self.literal(&mut s);
            }
            self.trivia(&mut s, false);
            s.push(b')');
        }
        if self.off(0.1) {
            let tail: &[u8] = self.pick(&[
                &b" ON DUPLICATE KEY UPDATE k = 1"[..],
                b" AS new",
                b" AS new ON DUPLICATE KEY UPDATE k = new.k",
                b" RETURNING id",
                b";;",
                b"; SELECT 1",
                b",",
                b" x",
            ]);
            s.extend_from_slice(tail);
        } else {
            self.trivia(&mut s, false);
            if self.chance(0.3) {
                s.push(b';');
                self.trivia(&mut s, false);
            }
        }
        if self.off(0.05) {
            // A random cut or a stray byte.
            let at = self.rng.random_range(0..=s.len());
            if self.chance(0.5) {
                s.truncate(at);
            } else {
                let b = self.rng.random();
                s.insert(at, b);
            }
        }
        s
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Statements of the scanner's shapes are read by it, exactly as the parser reads them.
    #[test]
    fn common_shapes_are_scanned_as_parsed(seed in any::<u64>()) {
        let mut g = Gen { rng: StdRng::seed_from_u64(seed), clean: true, wild: false };
        let s = g.statement();
        prop_assert!(fast_checked(&s).is_some(), "declined {:?}", String::from_utf8_lossy(&s));
    }

    /// Anything near those shapes: the scanner declines or agrees with the parser.
    #[test]
    fn near_shapes_are_declined_or_agree(seed in any::<u64>()) {
        let mut g = Gen { rng: StdRng::seed_from_u64(seed), clean: true, wild: true };
        let s = g.statement();
        let fast = fast_checked(&s);
        if g.clean {
            prop_assert!(fast.is_some(), "declined {:?}", String::from_utf8_lossy(&s));
        }
    }

    /// Any bytes after an INSERT's start: no panic, and no disagreement.
    #[test]
    fn arbitrary_tails_agree(tail in proptest::collection::vec(any::<u8>(), 0..60)) {
        let mut s = b"INSERT INTO t (a) VALUES ".to_vec();
        s.extend_from_slice(&tail);
        fast_checked(&s);
    }
}
