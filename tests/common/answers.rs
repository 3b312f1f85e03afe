//! Comparing a query's answers from one MariaDB and from idgate: column metadata and rows, in
//! the text or the binary protocol, with the leeway a query's own definition allows.

use mysql::prelude::Queryable;
use mysql::Value;

/// A query over table `T` and how to compare its answers.
pub struct Case {
    pub sql: String,
    /// The ORDER BY fixes the order of every row.
    pub ordered: bool,
    /// Strings compare as the _ci collation sees them (a group's value may be any of its members).
    pub fold: bool,
    /// Only the row count is defined (LIMIT without ORDER BY).
    pub count_only: bool,
}

pub fn case(sql: String, ordered: bool) -> Case {
    Case {
        sql,
        ordered,
        fold: false,
        count_only: false,
    }
}

pub type Answer = Result<(Vec<String>, Vec<Vec<Option<Vec<u8>>>>), (u16, String)>;

pub fn run(c: &mut mysql::Conn, sql: &str) -> Answer {
    match c.query_iter(sql) {
        Ok(r) => collect(r, sql),
        Err(mysql::Error::MySqlError(e)) => Err((e.code, e.message)),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// The answer to `sql` as a server-side prepared statement (rows in the binary protocol).
pub fn run_prepared(c: &mut mysql::Conn, sql: &str, params: mysql::Params) -> Answer {
    match c.exec_iter(sql, params) {
        Ok(r) => collect(r, sql),
        Err(mysql::Error::MySqlError(e)) => Err((e.code, e.message)),
        Err(e) => panic!("{sql}: {e}"),
    }
}

pub fn collect<P: mysql::prelude::Protocol>(
    res: mysql::QueryResult<'_, '_, '_, P>,
    sql: &str,
) -> Answer {
    collect_with(res, sql, |col| {
        format!(
            "{} {:?} dec={} len={} cs={} flags={:?}",
            col.name_str(),
            col.column_type(),
            col.decimals(),
            col.column_length(),
            col.character_set(),
            col.flags()
        )
    })
}

/// Each column as `describe` renders it, and the rows (NULL as `None`, any other value as its
/// text); or the error's code and message.
pub fn collect_with<P: mysql::prelude::Protocol>(
    mut res: mysql::QueryResult<'_, '_, '_, P>,
    sql: &str,
    describe: impl Fn(&mysql::Column) -> String,
) -> Answer {
    let meta = res.columns().as_ref().iter().map(describe).collect();
    let mut rows = Vec::new();
    for row in res.by_ref() {
        let row = match row {
            Ok(r) => r,
            Err(mysql::Error::MySqlError(e)) => return Err((e.code, e.message)),
            Err(e) => panic!("{sql}: {e}"),
        };
        rows.push(
            row.unwrap()
                .into_iter()
                .map(|v| match v {
                    Value::NULL => None,
                    Value::Bytes(b) => Some(b),
                    other => Some(format!("{other:?}").into_bytes()),
                })
                .collect(),
        );
    }
    Ok((meta, rows))
}

pub fn fold(v: &Option<Vec<u8>>) -> Option<Vec<u8>> {
    v.as_ref().map(|b| {
        String::from_utf8_lossy(b)
            .to_lowercase()
            .trim_end_matches(' ')
            .as_bytes()
            .to_vec()
    })
}

/// Why two answers differ, if they do.
pub fn differs(c: &Case, want: &Answer, got: &Answer) -> Option<String> {
    let (want, got) = match (want, got) {
        (Err(a), Err(b)) if a.0 == b.0 => return None,
        (Ok(a), Ok(b)) => (a, b),
        _ => return Some(format!("want {want:?}\n got {got:?}")),
    };
    if want.0 != got.0 {
        return Some(format!("columns: want {:?}\n got {:?}", want.0, got.0));
    }
    if c.count_only {
        return (want.1.len() != got.1.len())
            .then(|| format!("{} rows, want {}", got.1.len(), want.1.len()));
    }
    let norm = |rows: &Vec<Vec<Option<Vec<u8>>>>| {
        let mut rows: Vec<Vec<Option<Vec<u8>>>> = rows
            .iter()
            .map(|r| {
                if c.fold {
                    r.iter().map(fold).collect()
                } else {
                    r.clone()
                }
            })
            .collect();
        if !c.ordered {
            rows.sort();
        }
        rows
    };
    let (w, g) = (norm(&want.1), norm(&got.1));
    if w == g {
        return None;
    }
    let show = |rows: &[Vec<Option<Vec<u8>>>]| {
        rows.iter()
            .take(12)
            .map(|r| {
                r.iter()
                    .map(|v| {
                        v.as_ref()
                            .map(|b| String::from_utf8_lossy(b).into_owned())
                            .unwrap_or("NULL".into())
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect::<Vec<_>>()
            .join("\n  ")
    };
    Some(format!(
        "{} rows, want {}\nwant:\n  {}\ngot:\n  {}",
        g.len(),
        w.len(),
        show(&w),
        show(&g)
    ))
}

/// The error `sql` gets (it must get one): code and message.
pub fn error_of(c: &mut mysql::Conn, sql: &str) -> (u16, String) {
    match c.query_drop(sql) {
        Err(mysql::Error::MySqlError(e)) => (e.code, e.message),
        other => panic!("{sql}: expected an error, got {other:?}"),
    }
}

/// Column names and rows, as a client reading by name sees them (the column types of a literal
/// table idgate builds may differ from one server's; see the book's differences page).
pub type NamedAnswer = Result<(Vec<String>, Vec<Vec<Option<Vec<u8>>>>), (u16, String)>;

/// The column names and rows `sql` gives.
pub fn run_named(c: &mut mysql::Conn, sql: &str) -> NamedAnswer {
    match c.query_iter(sql) {
        Ok(r) => collect_with(r, sql, |col| col.name_str().into_owned()),
        Err(mysql::Error::MySqlError(e)) => Err((e.code, e.message)),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// Why two [`NamedAnswer`]s differ (rows sorted first unless `ordered`), if they do; errors
/// must have the same code.
pub fn named_differs(ordered: bool, want: &NamedAnswer, got: &NamedAnswer) -> Option<String> {
    match (want, got) {
        (Err(a), Err(b)) if a.0 == b.0 => None,
        (Ok((wn, wr)), Ok((gn, gr))) => {
            if wn != gn {
                return Some(format!("columns: want {wn:?}\n got {gn:?}"));
            }
            let (mut w, mut g) = (wr.clone(), gr.clone());
            if !ordered {
                w.sort();
                g.sort();
            }
            (w != g).then(|| format!("want {w:?}\n got {g:?}"))
        }
        _ => Some(format!("want {want:?}\n got {got:?}")),
    }
}

/// A database `ref` on `db` holding `tables` (name, column list, VALUES rows) whole: what one
/// server answers from. The connection has `ref` selected.
pub fn reference_copy(db: &super::MariaDb, tables: &[(&str, &str, &str)]) -> mysql::Conn {
    let mut c = super::direct(db);
    c.query_drop("CREATE DATABASE ref").unwrap();
    for (t, cols, rows) in tables {
        c.query_drop(format!("CREATE TABLE ref.{t} {cols}"))
            .unwrap();
        c.query_drop(format!("INSERT INTO ref.{t} VALUES {rows}"))
            .unwrap();
    }
    c.query_drop("USE ref").unwrap();
    c
}

/// Runs each `(sql, ordered)` on the reference and through idgate; fails listing every
/// statement whose column names or rows differ. `check_reference` vets the reference's answer.
pub fn assert_named_alike<'a>(
    reference: &mut mysql::Conn,
    idgate: &mut mysql::Conn,
    cases: impl IntoIterator<Item = (&'a str, bool)>,
    check_reference: impl Fn(&NamedAnswer) -> bool,
) {
    let mut failures = Vec::new();
    for (sql, ordered) in cases {
        let want = run_named(reference, sql);
        assert!(
            check_reference(&want),
            "{sql}: the reference gives {want:?}"
        );
        let got = run_named(idgate, sql);
        if let Some(why) = named_differs(ordered, &want, &got) {
            failures.push(format!("{sql}\n{why}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ from one MariaDB:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
