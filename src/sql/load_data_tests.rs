use super::*;

fn rows(format: FileFormat, file: &[u8]) -> Vec<Vec<Field>> {
    // Every way of cutting the file into two pieces reads the same rows.
    let whole = {
        let mut r = FieldReader::new(format.clone(), 0);
        let mut out = r.feed(file).unwrap();
        out.extend(r.finish());
        out
    };
    for cut in 0..=file.len() {
        let mut r = FieldReader::new(format.clone(), 0);
        let mut out = r.feed(&file[..cut]).unwrap();
        out.extend(r.feed(&file[cut..]).unwrap());
        out.extend(r.finish());
        assert_eq!(out, whole, "cut at {cut}");
    }
    whole
}

fn v(s: &str) -> Field {
    Some(s.as_bytes().to_vec())
}

#[test]
fn statement_options() {
    let a = analyze_load_data(
        b"LOAD DATA LOCAL INFILE '/tmp/o.csv' IGNORE INTO TABLE app.`orders` CHARACTER SET utf8mb4 \
          FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' \
          LINES STARTING BY '>' TERMINATED BY '\\r\\n' IGNORE 1 LINES (id, @skip, note);",
    )
    .unwrap();
    assert!(a.local);
    assert_eq!(a.file, b"/tmp/o.csv");
    assert_eq!(a.on_duplicate, OnDuplicate::Ignore);
    assert_eq!(a.table.schema.as_deref(), Some("app"));
    assert_eq!(a.table.name, "orders");
    assert_eq!(a.charset.as_deref(), Some("utf8mb4"));
    assert_eq!(
        a.format,
        FileFormat {
            field_terminator: b",".to_vec(),
            enclosed_by: Some(b'"'),
            optionally: true,
            escaped_by: None,
            line_starting: b">".to_vec(),
            line_terminator: b"\r\n".to_vec(),
        }
    );
    assert_eq!(a.skip_lines, 1);
    assert_eq!(
        a.columns,
        Some(vec![
            Target::Column("id".into()),
            Target::Variable("skip".into()),
            Target::Column("note".into())
        ])
    );
    let d = analyze_load_data(b"load data local infile 'f' into table t").unwrap();
    assert_eq!(d.format, FileFormat::default());
    assert_eq!(d.on_duplicate, OnDuplicate::Default);
    assert_eq!(d.columns, None);
    for bad in [
        &b"LOAD DATA LOCAL INFILE 'f' INTO TABLE t SET a = 1"[..],
        b"LOAD XML LOCAL INFILE 'f' INTO TABLE t",
        b"LOAD DATA LOCAL INFILE 'f' INTO TABLE t PARTITION (p0)",
        b"LOAD DATA LOCAL INFILE 'f' INTO TABLE t FIELDS TERMINATED BY '' ENCLOSED BY ''",
    ] {
        assert!(matches!(
            analyze_load_data(bad),
            Err(SqlParseError::Unsupported(_))
        ));
    }
    assert!(matches!(
        analyze_load_data(b"LOAD DATA LOCAL INFILE 'f' INTO TABLE t garbage"),
        Err(SqlParseError::Syntax { .. })
    ));
}

#[test]
fn tab_separated_with_escapes() {
    let r = rows(
        FileFormat::default(),
        b"1\ta\\tb\t\\N\n2\t\\\\x\tNULL\n3\t\t",
    );
    assert_eq!(
        r,
        vec![
            vec![v("1"), v("a\tb"), None],
            vec![v("2"), v("\\x"), v("NULL")],
            vec![v("3"), v(""), v("")],
        ]
    );
}

#[test]
fn csv_with_quotes() {
    let f = FileFormat {
        field_terminator: b",".to_vec(),
        enclosed_by: Some(b'"'),
        optionally: true,
        escaped_by: Some(b'\\'),
        line_starting: Vec::new(),
        line_terminator: b"\r\n".to_vec(),
    };
    let r = rows(
        f,
        b"1,\"a,b\",NULL\r\n2,\"say \"\"hi\"\"\r\nnow\",\\N\r\n3,\"x\"y\",\"\"\r\n",
    );
    assert_eq!(
        r,
        vec![
            vec![v("1"), v("a,b"), None],
            vec![v("2"), v("say \"hi\"\r\nnow"), None],
            vec![v("3"), v("x\"y"), v("")],
        ]
    );
}

#[test]
fn line_prefix_and_skipped_lines() {
    let f = FileFormat {
        field_terminator: b",".to_vec(),
        line_starting: b"xx".to_vec(),
        ..FileFormat::default()
    };
    let mut r = FieldReader::new(f.clone(), 1);
    let mut out = r.feed(b"xxhead,er\nno prefix\nabcxx1,2\nxx3,4").unwrap();
    out.extend(r.finish());
    assert_eq!(out, vec![vec![v("1"), v("2")], vec![v("3"), v("4")]]);
    assert_eq!(rows(f, b"zz\nxxa\n"), vec![vec![v("a")]]);
}

#[test]
fn rows_are_bounded() {
    let mut r = FieldReader::new(FileFormat::default(), 0);
    let chunk = vec![b'a'; 1 << 20];
    let mut failed = false;
    for _ in 0..8 {
        if r.feed(&chunk).is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed);
}
