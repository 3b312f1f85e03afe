//! One statement split over several backends (an INSERT whose rows go to several shards, an
//! UPDATE or DELETE of a broadcast table or over shards): each part sent to its backend at
//! once, all-or-nothing as MariaDB's own statement is (the cursor's `begin`/`end`: a savepoint
//! on each backend inside the client's transaction, a transaction or XA branch of each
//! otherwise), and answered with one OK, or the RETURNING rows in the statement's row order.

use std::borrow::Cow;

use mysql_common::constants::StatusFlags;
use tokio::io::AsyncWrite;

use crate::exec::collect::{merge_info, Collected};
use crate::exec::cursor::WriteCursor;
use crate::route::insert::InsertKind;
use crate::wire::framing::PacketWriter;
use crate::wire::packets;

/// The savepoint a part sits behind inside the client's transaction.
const SAVEPOINT: &str = "idgate_statement";

/// How the write ended; a kept write gives each part's answer, in the order of the parts.
pub type Outcome = super::bulk_write::Outcome<Vec<Collected>>;

/// Writes each part `(backend, statement)`; `what` names the statement in a failed COMMIT's
/// message.
pub async fn write<C: WriteCursor>(
    c: &mut C,
    parts: &[(&str, &[u8])],
    what: &str,
) -> Result<Outcome, C::End> {
    let mut conns = Vec::with_capacity(parts.len());
    for (backend, _) in parts {
        match c.lease(backend).await? {
            Ok(i) => conns.push(i),
            Err(e) => return Ok(Outcome::Refused(e)),
        }
    }
    let (txn, begin) = c.begin(&conns, SAVEPOINT).await?;
    for ((&conn, (_, sql)), start) in conns.iter().zip(parts).zip(&begin) {
        if let Some(s) = start {
            c.queue(conn, s);
        }
        c.queue(conn, sql);
    }
    for &conn in &conns {
        c.flush(conn).await?;
    }
    let mut answers = Vec::with_capacity(parts.len());
    let mut error: Option<Vec<u8>> = None;
    for (&conn, start) in conns.iter().zip(&begin) {
        // A start's OK is not the part's; its error still fails the write.
        if start.is_some() {
            if let Collected::Err(e) = c.answer(conn).await? {
                error.get_or_insert(e);
            }
        }
        let answer = c.answer(conn).await?;
        if let Collected::Err(e) = &answer {
            error.get_or_insert(e.clone());
        }
        answers.push(answer);
    }
    let keep = error.is_none();
    let ended = c.end(&conns, &txn, keep, what).await?;
    Ok(match (error, ended) {
        (Some(e), _) => Outcome::Failed(e),
        (None, Some(e)) => Outcome::Refused(e),
        (None, None) => Outcome::Written(answers),
    })
}

/// How the parts' answers become the client's.
pub struct Answering<'a> {
    /// For each part, the statement's row indices it carried (RETURNING rows are put back in
    /// that order); empty when the statement has no rows of its own.
    pub rows_of_parts: Vec<&'a [usize]>,
    /// Every part wrote the same rows (a broadcast table): the first part's counts are the
    /// statement's.
    pub broadcast: bool,
    /// The insert id the client is told; `insert_id_needs_rows`: 0 when no row was written.
    pub insert_id: u64,
    pub insert_id_needs_rows: bool,
    pub status: StatusFlags,
    pub deprecate_eof: bool,
    /// The statement is an INSERT of this kind: a one-row part's OK carries no info text, but
    /// one server's answer to the whole statement (more than one row) does.
    pub insert: Option<InsertKind>,
}

/// Writes the one answer of a write whose parts answered `answers`: an OK with the summed
/// counts and infos, or the RETURNING rows.
pub fn answer<W: AsyncWrite + Unpin>(
    writer: &mut PacketWriter<W>,
    how: &Answering<'_>,
    answers: &[Collected],
) {
    let counted = if how.broadcast {
        &answers[..answers.len().min(1)]
    } else {
        answers
    };
    if let Some(Collected::Rows { columns, .. }) = answers.first() {
        answer_rows(writer, how, counted, columns);
        return;
    }
    let mut affected = 0;
    let mut warnings = 0u16;
    let mut infos: Vec<Cow<'_, [u8]>> = Vec::new();
    // The statement's rows: a broadcast table's parts each carry all of them.
    let parts = if how.broadcast {
        1
    } else {
        how.rows_of_parts.len()
    };
    let rows: usize = how.rows_of_parts.iter().take(parts).map(|r| r.len()).sum();
    for (i, r) in counted.iter().enumerate() {
        if let Collected::Ok(p) = r {
            let Some(o) = packets::parse_ok(p) else {
                continue;
            };
            affected += o.affected_rows;
            warnings = warnings.saturating_add(o.warnings);
            let info = packets::ok_info(p);
            let one_row = how.rows_of_parts.get(i).is_some_and(|r| r.len() == 1);
            match how.insert {
                Some(kind) if info.is_empty() && one_row && rows > 1 => {
                    infos.push(one_row_info(kind, o.affected_rows, o.warnings).into());
                }
                _ => infos.push(info.into()),
            }
        }
    }
    let infos: Vec<&[u8]> = infos.iter().map(|i| i.as_ref()).collect();
    let info = merge_info(&infos);
    let insert_id = if how.insert_id_needs_rows && affected == 0 {
        0
    } else {
        how.insert_id
    };
    writer.send_ok_with(affected, insert_id, how.status, warnings, &info);
}

/// The info text of one row as MariaDB counts it in a multi-row INSERT. With CLIENT_FOUND_ROWS
/// an upsert's row left unchanged also counts 1 affected, as a new row does; it is counted new.
fn one_row_info(kind: InsertKind, affected: u64, warnings: u16) -> Vec<u8> {
    let duplicates = match kind {
        InsertKind::Plain => 0,
        InsertKind::Ignore => u64::from(affected == 0),
        InsertKind::Replace => u64::from(affected >= 2),
    };
    format!("Records: 1  Duplicates: {duplicates}  Warnings: {warnings}").into_bytes()
}

/// RETURNING rows of several backends, put back in the statement's row order.
fn answer_rows<W: AsyncWrite + Unpin>(
    writer: &mut PacketWriter<W>,
    how: &Answering<'_>,
    answers: &[Collected],
    columns: &[Vec<u8>],
) {
    let mut ordered: Vec<(usize, &Vec<u8>)> = Vec::new();
    let mut warnings = 0u16;
    for (part_rows, r) in how.rows_of_parts.iter().zip(answers) {
        if let Collected::Rows { rows, eof, .. } = r {
            warnings = warnings.saturating_add(packets::parse_eof(eof).0);
            // Each backend returns its rows in the order it got them; when a row is missing
            // (IGNORE), keep the backend's order after the others.
            if rows.len() == part_rows.len() {
                ordered.extend(part_rows.iter().copied().zip(rows));
            } else {
                ordered.extend(rows.iter().map(|row| (usize::MAX, row)));
            }
        }
    }
    ordered.sort_by_key(|(i, _)| *i);
    let rows: Vec<&[u8]> = ordered.into_iter().map(|(_, r)| r.as_slice()).collect();
    writer.send_result_set(columns, rows, warnings, how.status, how.deprecate_eof);
}
