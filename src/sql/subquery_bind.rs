//! The rows of an inner SELECT written back into the outer statement as SQL literals: an IN
//! list, TRUE/FALSE for EXISTS, one value (or row) for a scalar subquery, and a literal table
//! for a derived table. Values come in the text protocol with their column definitions; each
//! is written so MariaDB reads back the same value: numbers bare, strings as hex in their
//! character set (`_utf8mb4 X'…'`: no escaping that depends on sql_mode, and still only
//! coercible, so the outer column's collation decides comparisons), binary strings as `X'…'`,
//! temporal values as CASTs of their text, NULL as NULL.

use mysql_common::collations::{Collation, CollationId};
use mysql_common::constants::{ColumnFlags, ColumnType};

use super::error::ER_NOT_SUPPORTED_YET;

/// MariaDB's ER_SUBQUERY_NO_1_ROW.
pub const ER_SUBQUERY_NO_1_ROW: u16 = 1242;

/// What the outer statement needs to know about one column of the inner answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundColumn {
    /// The column's name in the inner answer (its alias).
    pub name: Vec<u8>,
    pub ty: ColumnType,
    /// The collation id the values are in (63: binary).
    pub charset: u16,
    pub flags: ColumnFlags,
    pub decimals: u8,
}

/// One row of the inner answer: each value's text, `None` for NULL.
pub type BoundRow = Vec<Option<Vec<u8>>>;

/// Why rows cannot be bound: a MariaDB error code, its SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindError {
    pub code: u16,
    pub state: &'static [u8; 5],
    pub message: String,
}

/// How a column's values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Number,
    Float,
    Date,
    DateTime,
    Time,
    Binary,
    Text,
}

fn form(c: &BoundColumn) -> Form {
    use ColumnType::*;
    match c.ty {
        MYSQL_TYPE_TINY
        | MYSQL_TYPE_SHORT
        | MYSQL_TYPE_LONG
        | MYSQL_TYPE_INT24
        | MYSQL_TYPE_LONGLONG
        | MYSQL_TYPE_DECIMAL
        | MYSQL_TYPE_NEWDECIMAL
        | MYSQL_TYPE_YEAR => Form::Number,
        MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE => Form::Float,
        MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => Form::Date,
        MYSQL_TYPE_DATETIME
        | MYSQL_TYPE_TIMESTAMP
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIMESTAMP2 => Form::DateTime,
        MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => Form::Time,
        MYSQL_TYPE_BIT => Form::Binary,
        _ if c.charset == 63 => Form::Binary,
        _ => Form::Text,
    }
}

/// The character set name for an introducer: values come in their column's own character set
/// (idgate reads them with `character_set_results = NULL`). MariaDB's own collation ids above
/// 255 (UCA 14.0 and others) are taken as utf8mb4, which reads utf8mb3 text alike.
fn charset_name(id: u16) -> String {
    if id > 255 {
        return "utf8mb4".into();
    }
    match Collation::resolve(CollationId::from(id)).charset() {
        "" => "utf8mb4".into(),
        // `utf8` is utf8mb3 on every MariaDB; older ones do not know the `utf8mb3` name.
        "utf8mb3" => "utf8".into(),
        other => other.to_string(),
    }
}

/// The name of collation `id` when it is not its character set's default on MariaDB (a literal
/// with an introducer takes the default); `None` for a default one and for ids idgate cannot
/// name (MariaDB's own above 255).
fn non_default_collation(id: u16) -> Option<String> {
    if id > 255 {
        return None;
    }
    let c = Collation::resolve(CollationId::from(id));
    // mysql_common knows MySQL 8's defaults; MariaDB's utf8mb4 default is general_ci.
    let default = match c.charset() {
        "utf8mb4" => c.collation() == "utf8mb4_general_ci",
        "binary" | "" => true,
        _ => c.is_default(),
    };
    (!default && !c.collation().is_empty()).then(|| c.collation().to_string())
}

fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(b"X'");
    for b in bytes {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
    out.push(b'\'');
}

/// Whether `text` is a number MariaDB's text protocol writes (digits, sign, point, exponent):
/// safe to place bare.
fn is_plain_number(text: &[u8]) -> bool {
    !text.is_empty()
        && text.iter().any(u8::is_ascii_digit)
        && text
            .iter()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
}

/// Writes one value of column `c` as a literal.
pub fn render_value(c: &BoundColumn, v: Option<&[u8]>, out: &mut Vec<u8>) {
    let Some(v) = v else {
        out.extend_from_slice(b"NULL");
        return;
    };
    match form(c) {
        Form::Number if is_plain_number(v) => out.extend_from_slice(v),
        // A double keeps its type (`1.5e0`), not DECIMAL's.
        Form::Float if is_plain_number(v) => {
            out.extend_from_slice(v);
            if !v.iter().any(|b| matches!(b, b'e' | b'E')) {
                out.extend_from_slice(b"e0");
            }
        }
        Form::Date | Form::DateTime | Form::Time => {
            out.extend_from_slice(b"CAST(");
            push_hex_text(out, v, "latin1");
            out.extend_from_slice(cast_type(c).as_bytes());
            out.push(b')');
        }
        Form::Binary => push_hex(out, v),
        // Text, and numbers MariaDB wrote oddly (`inf`, `nan`): a string is what they are.
        _ => push_hex_text(out, v, &charset_name(c.charset)),
    }
}

fn push_hex_text(out: &mut Vec<u8>, v: &[u8], cs: &str) {
    out.push(b'_');
    out.extend_from_slice(cs.as_bytes());
    out.push(b' ');
    push_hex(out, v);
}

/// ` AS <type>)`-tail of a CAST giving column `c`'s type, as near as CAST can.
fn cast_type(c: &BoundColumn) -> String {
    let d = c.decimals.min(6);
    match form(c) {
        Form::Date => " AS DATE".into(),
        Form::DateTime => format!(" AS DATETIME({d})"),
        Form::Time => format!(" AS TIME({d})"),
        Form::Number
            if matches!(
                c.ty,
                ColumnType::MYSQL_TYPE_DECIMAL | ColumnType::MYSQL_TYPE_NEWDECIMAL
            ) =>
        {
            format!(" AS DECIMAL(65,{})", c.decimals.min(30))
        }
        Form::Number if c.flags.contains(ColumnFlags::UNSIGNED_FLAG) => " AS UNSIGNED".into(),
        Form::Number => " AS SIGNED".into(),
        Form::Float => " AS DOUBLE".into(),
        Form::Binary => " AS BINARY".into(),
        Form::Text => format!(" AS CHAR CHARACTER SET {}", charset_name(c.charset)),
    }
}

/// A value written with its column's type (the first row of a literal table decides the
/// types of the whole table).
fn render_typed(c: &BoundColumn, v: Option<&[u8]>, out: &mut Vec<u8>) {
    // Temporal values are CASTs already; a text literal keeps its coercibility (a CAST would
    // make it implicit and could clash with the collation of what it is compared with), unless
    // its column has a collation other than its character set's default: then the table's
    // column must sort and compare by that one, as the column it came from does.
    // A NULL is CAST too: a bare NULL would make the column a string's.
    if matches!(form(c), Form::Date | Form::DateTime | Form::Time) && v.is_some() {
        return render_value(c, v, out);
    }
    if form(c) == Form::Text && v.is_some() {
        render_value(c, v, out);
        if let Some(name) = non_default_collation(c.charset) {
            out.extend_from_slice(b" COLLATE ");
            out.extend_from_slice(name.as_bytes());
        }
        return;
    }
    out.extend_from_slice(b"CAST(");
    render_value(c, v, out);
    out.extend_from_slice(cast_type(c).as_bytes());
    out.push(b')');
}

fn render_row(cols: &[BoundColumn], row: &BoundRow, out: &mut Vec<u8>) {
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        render_value(c, row.get(i).and_then(|v| v.as_deref()), out);
    }
}

/// The parenthesized list `x IN (…)` takes: values, or rows of values for a row comparison
/// (`(a, b) IN (SELECT x, y …)`). No rows: a subquery without rows, so `x IN` is FALSE and
/// `x NOT IN` TRUE whatever `x` is, as with the real subquery.
pub fn render_in_list(cols: &[BoundColumn], rows: &[BoundRow]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + rows.len() * (cols.len() * 8 + 3));
    if rows.is_empty() {
        out.extend_from_slice(b"(SELECT ");
        for i in 0..cols.len().max(1) {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"NULL");
        }
        out.extend_from_slice(b" FROM DUAL WHERE FALSE)");
        return out;
    }
    out.push(b'(');
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if cols.len() > 1 {
            out.push(b'(');
        }
        render_row(cols, row, &mut out);
        if cols.len() > 1 {
            out.push(b')');
        }
    }
    out.push(b')');
    out
}

/// `EXISTS (…)`: whether the inner query gave a row.
pub fn render_exists(any_row: bool) -> Vec<u8> {
    if any_row {
        b"TRUE".to_vec()
    } else {
        b"FALSE".to_vec()
    }
}

/// A scalar subquery's value: the one row's value (or row of values), NULL without rows;
/// more than one row is MariaDB's ERROR 1242.
pub fn render_scalar(cols: &[BoundColumn], rows: &[BoundRow]) -> Result<Vec<u8>, BindError> {
    if rows.len() > 1 {
        return Err(BindError {
            code: ER_SUBQUERY_NO_1_ROW,
            state: b"21000",
            message: "Subquery returns more than 1 row".into(),
        });
    }
    let mut out = vec![b'('];
    match rows.first() {
        Some(row) => render_row(cols, row, &mut out),
        None => {
            for i in 0..cols.len().max(1) {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"NULL");
            }
        }
    }
    out.push(b')');
    Ok(out)
}

/// A derived table's rows as a literal table with the inner answer's column names: the first
/// row typed by CASTs and named, the rest as `VALUES`. No rows: a typed table without rows.
pub fn render_derived(cols: &[BoundColumn], rows: &[BoundRow]) -> Result<Vec<u8>, BindError> {
    if cols.is_empty() {
        return Err(BindError {
            code: ER_NOT_SUPPORTED_YET,
            state: b"42000",
            message: "a derived table without columns".into(),
        });
    }
    let mut out = Vec::with_capacity(64 + rows.len() * (cols.len() * 8 + 3));
    out.extend_from_slice(b"(SELECT ");
    let first = rows.first();
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let v = first.and_then(|r| r.get(i)).and_then(|v| v.as_deref());
        render_typed(c, v, &mut out);
        out.extend_from_slice(b" AS ");
        push_ident(&mut out, &c.name);
    }
    if first.is_none() {
        out.extend_from_slice(b" FROM DUAL WHERE FALSE)");
        return Ok(out);
    }
    if rows.len() > 1 {
        out.extend_from_slice(b" UNION ALL VALUES ");
        for (i, row) in rows[1..].iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'(');
            render_row(cols, row, &mut out);
            out.push(b')');
        }
    }
    out.push(b')');
    Ok(out)
}

/// The set `x > ALL (…)`, `x = ANY (…)` and the like compare with, as a subquery over a
/// literal table, so MariaDB applies its own rules: an empty set makes ALL TRUE and ANY FALSE,
/// a NULL in it makes a comparison that no other value settles NULL. The columns are named
/// `c1`, `c2`, … (the inner names may repeat), and a row without NULLs goes first, since the
/// first row types the table (a text value stays a literal that takes the outer collation).
pub fn render_quantified(
    cols: &[BoundColumn],
    rows: &mut [BoundRow],
) -> Result<Vec<u8>, BindError> {
    let named: Vec<BoundColumn> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| BoundColumn {
            name: format!("c{}", i + 1).into_bytes(),
            ..c.clone()
        })
        .collect();
    let nulls = |r: &BoundRow| r.iter().filter(|v| v.is_none()).count();
    if let Some(f) = (0..rows.len()).min_by_key(|&i| nulls(&rows[i])) {
        rows.swap(0, f);
    }
    let table = render_derived(&named, rows)?;
    let mut out = Vec::with_capacity(table.len() + 40);
    out.extend_from_slice(b"(SELECT * FROM ");
    out.extend_from_slice(&table);
    out.extend_from_slice(b" AS idgate_set)");
    Ok(out)
}

/// A backquoted identifier.
fn push_ident(out: &mut Vec<u8>, name: &[u8]) {
    out.push(b'`');
    for &b in name {
        if b == b'`' {
            out.push(b'`');
        }
        out.push(b);
    }
    out.push(b'`');
}
