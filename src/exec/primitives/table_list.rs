//! SHOW, DESCRIBE and information_schema statements about sharded or broadcast tables whose
//! backends do not include the default one: answered by a backend that holds the table, so the
//! application sees one table wherever its shards live. `SHOW TABLES` and `SHOW TABLE STATUS`
//! list the default backend's tables plus those placed elsewhere.

use crate::exec::collect::{collect, Collected};
use crate::exec::RelayCursor;
use crate::wire::packets;

/// The table name at the start of a text-protocol row.
fn first_column(row: &[u8]) -> Option<&[u8]> {
    let mut p = row;
    packets::get_lenenc_str(&mut p)
}

/// Runs a `SHOW TABLES`-like statement on `backends` (the default one first) and answers with
/// the default's rows plus the others' rows naming `names`, sorted by name as MariaDB sorts
/// them. `Ok(false)`: the client got an error.
pub async fn run<C: RelayCursor>(
    c: &mut C,
    packet: &[u8],
    backends: &[String],
    names: &[String],
    more: bool,
) -> Result<bool, C::End> {
    let Some(idx) = c.send_to_all_or_tell(backends, packet).await? else {
        return Ok(false);
    };
    let mut answers = Vec::with_capacity(idx.len());
    for &i in &idx {
        match collect(c.conn(i)).await {
            Ok(a) => answers.push(a),
            Err(e) => return Err(c.failed(e)),
        }
    }
    let mut columns = Vec::new();
    let mut rows: Vec<Vec<u8>> = Vec::new();
    let mut warnings = 0u16;
    for (n, a) in answers.iter().enumerate() {
        match a {
            Collected::Err(e) | Collected::Ok(e) => {
                c.client().writer.write(e);
                return Ok(!a.is_err());
            }
            Collected::Rows {
                columns: cols,
                rows: r,
                eof,
            } => {
                if n == 0 {
                    columns = cols.clone();
                    warnings = packets::parse_eof(eof).0;
                }
                rows.extend(
                    r.iter()
                        .filter(|row| {
                            n == 0
                                || first_column(row).is_some_and(|t| {
                                    names.iter().any(|m| t.eq_ignore_ascii_case(m.as_bytes()))
                                        && !already_listed(&answers[0], t)
                                })
                        })
                        .cloned(),
                );
            }
        }
    }
    rows.sort_by(|a, b| first_column(a).cmp(&first_column(b)));
    rows.dedup_by(|a, b| first_column(a) == first_column(b));
    let status = mysql_common::constants::StatusFlags::from_bits_retain(c.status(more));
    let client = c.client();
    client.writer.send_result_set(
        &columns,
        rows.iter().map(Vec::as_slice),
        warnings,
        status,
        client.deprecate_eof,
    );
    Ok(true)
}

/// True when the default backend's answer already has a row for table `t`.
fn already_listed(default: &Collected, t: &[u8]) -> bool {
    match default {
        Collected::Rows { rows, .. } => rows
            .iter()
            .any(|r| first_column(r).is_some_and(|n| n.eq_ignore_ascii_case(t))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{already_listed, first_column};
    use crate::exec::collect::Collected;
    use crate::wire::packets;

    fn row(cells: &[&[u8]]) -> Vec<u8> {
        let mut r = Vec::new();
        for c in cells {
            packets::put_lenenc_str(&mut r, c);
        }
        r
    }

    fn rows(names: &[&[u8]]) -> Collected {
        Collected::Rows {
            columns: Vec::new(),
            rows: names.iter().map(|n| row(&[n, b"BASE TABLE"])).collect(),
            eof: Vec::new(),
        }
    }

    #[test]
    fn the_first_column_of_a_row_is_its_table_name() {
        assert_eq!(
            first_column(&row(&[b"orders", b"BASE TABLE"])),
            Some(&b"orders"[..])
        );
        assert_eq!(first_column(&[]), None);
        assert_eq!(first_column(&[0x05, b'a']), None, "cut short");
    }

    #[test]
    fn a_table_the_default_backend_lists_is_not_listed_twice() {
        let default = rows(&[b"labels", b"Orders"]);
        // Case aside, as idgate matches table names to its configured tables.
        assert!(already_listed(&default, b"orders"));
        assert!(already_listed(&default, b"labels"));
        assert!(!already_listed(&default, b"items"));
        assert!(!already_listed(&default, b"order"));
    }

    #[test]
    fn an_answer_without_rows_lists_nothing() {
        assert!(!already_listed(&Collected::Ok(vec![0]), b"orders"));
        assert!(!already_listed(&Collected::Err(vec![0xff]), b"orders"));
        assert!(!already_listed(&rows(&[]), b"orders"));
    }
}
