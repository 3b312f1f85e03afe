//! `LOAD DATA LOCAL INFILE` into a table idgate places or fills ids for, run through a
//! [`LoadCursor`]: every backend of the table starts its own `LOAD DATA LOCAL` and asks for its
//! file; then idgate asks the client for the file, cuts it into rows as MariaDB would, gives
//! each row its id and its shard (`load_rows`), and streams each backend its rows as that
//! backend's file, so MariaDB still converts values, applies IGNORE/REPLACE and counts
//! warnings. The backends load in one all-or-nothing write (a savepoint in the client's
//! transaction, XA in XA mode); the answer is one OK with the counts added up.

use crate::exec::collect::{collect, Collected};
use crate::exec::primitives::bulk_write::BulkOk;
use crate::exec::primitives::load_rows::{self, RowPlan};
use crate::exec::primitives::upsert_rows::{self, Candidates, IdTable};
use crate::exec::{BackendError, LoadCursor};
use crate::route::{Placement, TableRule};
use crate::sql::{FieldReader, LoadData, OnDuplicate};
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// File bytes queued for a backend before they are sent as one packet.
const SEND_AT: usize = 64 << 10;

/// The savepoint that makes a load inside the client's transaction all-or-nothing.
const SAVEPOINT: &str = "idgate_load_data";

/// The local-infile request byte (a backend asking for a file).
const LOCAL_INFILE: u8 = 0xfb;

/// A backend's error packet, for the client.
fn backend_error(e: &[u8]) -> SqlError {
    let (code, state, msg) = packets::parse_err(e);
    SqlError::new(code, &state, String::from_utf8_lossy(msg).into_owned())
}

fn failed(msg: impl Into<String>) -> SqlError {
    SqlError::new(errors::ER_UNKNOWN_ERROR, b"HY000", msg.into())
}

/// Where each backend's part of the load stands.
struct Part {
    conn: usize,
    buf: Vec<u8>,
    /// Rows sent to this backend.
    rows: u64,
    /// Its first rows with generated ids, as (line, id): where its first inserted row is when
    /// IGNORE skipped some (`upsert_rows`).
    generated: Vec<(usize, u64)>,
}

/// Generated ids kept per backend to find the first row a LOAD … IGNORE inserted: enough when
/// it skipped fewer rows than this before it.
const CANDIDATES: usize = 10_000;

/// Loads the client's file `ld` into `rule`'s table (in `schema`): `stmt` is the LOAD each
/// backend runs, `plan` how a row of the client's file becomes a row of a backend's. The
/// answer's OK and the first generated id it inserted, or the statement's error.
pub async fn load<C: LoadCursor>(
    c: &mut C,
    ld: &LoadData,
    rule: &TableRule,
    plan: &RowPlan,
    (stmt, schema): (&[u8], &str),
) -> Result<Result<(BulkOk, Option<u64>), SqlError>, C::End> {
    let mut parts = Vec::with_capacity(rule.backends().len());
    for b in rule.backends() {
        match c.lease(b).await? {
            Ok(conn) => parts.push(Part {
                conn,
                buf: Vec::new(),
                rows: 0,
                generated: Vec::new(),
            }),
            Err(e) => return Ok(Err(e)),
        }
    }
    let conns: Vec<usize> = parts.iter().map(|p| p.conn).collect();
    let (txn, begin) = c.begin(&conns, SAVEPOINT).await?;
    // Each backend starts its LOAD and asks for its file before the client is asked.
    let asked = match start(c, &parts, stmt, &begin).await {
        Ok(a) => a,
        Err(e) => return Err(c.lost(e)),
    };
    if let Some(refusal) = asked.iter().find_map(|a| a.clone()) {
        // A backend refused the LOAD: the others get an empty file, and all roll back.
        for (p, a) in parts.iter().zip(&asked) {
            if a.is_none() {
                let be = c.conn(p.conn);
                let ended = match be.end_file().await {
                    Ok(()) => collect(be).await.map(|_| ()),
                    Err(e) => Err(e),
                };
                if let Err(e) = ended {
                    return Err(c.lost(e));
                }
            }
        }
        c.end(&conns, &txn, false, "LOAD DATA").await?;
        return Ok(Err(backend_error(&refusal)));
    }
    let streamed = stream(c, ld, rule, plan, &mut parts).await?;
    let results = match finish(c, &mut parts).await {
        Ok(r) => r,
        Err(e) => return Err(c.lost(e)),
    };
    let first_err = results.iter().find_map(|r| match r {
        Collected::Err(e) => Some(e.clone()),
        _ => None,
    });
    let keep = streamed.is_ok() && first_err.is_none();
    if let (true, Some(e)) = (keep, c.end(&conns, &txn, keep, "LOAD DATA").await?) {
        return Ok(Err(e));
    }
    let first_generated = match streamed {
        Err(e) => return Ok(Err(e)),
        Ok(first) => first,
    };
    if let Some(e) = first_err {
        return Ok(Err(backend_error(&e)));
    }
    // Every backend of a broadcast table loaded the same rows: one counts.
    let counted = if matches!(rule.placement, Placement::Broadcast { .. }) {
        &results[..1]
    } else {
        &results[..]
    };
    // With LOCAL, duplicates are skipped unless REPLACE: the first row may be one of them.
    let first_generated = match first_generated {
        Some(_) if ld.on_duplicate != OnDuplicate::Replace => {
            let table = IdTable {
                schema,
                table: &ld.table.name,
                column: &rule.id_column,
            };
            first_loaded(c, &table, rule, &parts, counted).await?
        }
        first => first,
    };
    Ok(Ok((load_rows::answer(counted), first_generated)))
}

/// The first generated id a LOAD that may skip rows inserted, from each backend's counts or
/// read back. A read-back that fails is logged and reports none.
async fn first_loaded<C: LoadCursor>(
    c: &mut C,
    table: &IdTable<'_>,
    rule: &TableRule,
    parts: &[Part],
    counted: &[Collected],
) -> Result<Option<u64>, C::End> {
    let candidates: Vec<Candidates<'_>> = parts
        .iter()
        .zip(rule.backends())
        .zip(counted)
        .filter_map(|((p, backend), answer)| match answer {
            Collected::Ok(ok) => Some(Candidates {
                backend,
                inserted: upsert_rows::judge(
                    upsert_rows::SKIPPING,
                    (p.rows as usize, None, false),
                    ok,
                ),
                rows: p.generated.clone(),
            }),
            _ => None,
        })
        .collect();
    Ok(
        match upsert_rows::first_inserted(c, table, &candidates).await? {
            Ok(first) => first,
            Err(e) => {
                tracing::warn!(error = %e.message, "could not learn which rows a LOAD DATA inserted");
                None
            }
        },
    )
}

/// Sends the optional transaction start and the LOAD to every backend; for each, `None`
/// when it asked for its file, or the error packet it answered instead.
async fn start<C: LoadCursor>(
    c: &mut C,
    parts: &[Part],
    stmt: &[u8],
    begin: &[Option<Vec<u8>>],
) -> Result<Vec<Option<Vec<u8>>>, BackendError> {
    let packet = crate::wire::command::query_packet(stmt);
    for (p, b) in parts.iter().zip(begin) {
        let be = c.conn(p.conn);
        if let Some(b) = b {
            be.write_command(&crate::wire::command::query_packet(b));
        }
        be.write_command(&packet);
    }
    for p in parts {
        c.conn(p.conn).flush().await?;
    }
    let mut asked = Vec::with_capacity(parts.len());
    for (p, b) in parts.iter().zip(begin) {
        let be = c.conn(p.conn);
        if b.is_some() {
            let started = collect(be).await?;
            be.next_response();
            if let Collected::Err(e) = started {
                collect(be).await?;
                asked.push(Some(e));
                continue;
            }
        }
        be.read().await?;
        match be.packet.first() {
            Some(&LOCAL_INFILE) => {
                be.begin_file();
                asked.push(None);
            }
            Some(&packets::ERR_HEADER) => asked.push(Some(be.packet.clone())),
            _ => {
                return Err(BackendError::Protocol(
                    "LOAD DATA LOCAL answered without asking for the file".into(),
                ))
            }
        }
    }
    Ok(asked)
}

/// Asks the client for its file and streams its rows to the backends. `Ok(Err)`: the rows
/// could not be placed (the client's whole file was still read, so the protocol stays in
/// step); `Ok(Ok(first))`: the first generated id.
async fn stream<C: LoadCursor>(
    c: &mut C,
    ld: &LoadData,
    rule: &TableRule,
    plan: &RowPlan,
    parts: &mut [Part],
) -> Result<Result<Option<u64>, SqlError>, C::End> {
    c.ask_file(&ld.file).await?;
    let mut reader = FieldReader::new(ld.format.clone(), ld.skip_lines);
    let mut problem: Option<SqlError> = None;
    let mut first_generated = None;
    let mut line = 0u64;
    let mut buf = Vec::new();
    loop {
        c.file_packet(&mut buf).await?;
        let end = buf.is_empty();
        let rows = if end {
            reader.finish()
        } else {
            match reader.feed(&buf) {
                Ok(rows) => rows,
                Err(e) => {
                    problem.get_or_insert(failed(format!("LOAD DATA: {e}")));
                    Vec::new()
                }
            }
        };
        if problem.is_none() && !rows.is_empty() {
            let first_line = line + 1;
            line += rows.len() as u64;
            match load_rows::place(rule, plan, &rows, first_line).await {
                Ok(placed) => {
                    first_generated = first_generated.or(placed.first_generated);
                    note_rows(parts, &placed, first_line);
                    if let Err(e) = queue(c, parts, placed.lines).await {
                        return Err(c.lost(e));
                    }
                }
                Err(e) => problem = Some(e),
            }
        }
        if end {
            break;
        }
    }
    c.file_read();
    Ok(match problem {
        Some(e) => Err(e),
        None => Ok(first_generated),
    })
}

/// Counts each backend's rows and keeps its first generated ids (`Part::generated`).
fn note_rows(parts: &mut [Part], placed: &load_rows::Placed, first_line: u64) {
    for (shard, _) in &placed.lines {
        match shard.and_then(|s| parts.get_mut(s)) {
            Some(p) => p.rows += 1,
            None => parts.iter_mut().for_each(|p| p.rows += 1),
        }
    }
    for &(k, id) in &placed.generated {
        // A broadcast row is on every backend; the first backend's count is the statement's.
        let s = placed.lines.get(k).and_then(|(s, _)| *s).unwrap_or(0);
        if let Some(p) = parts.get_mut(s).filter(|p| p.generated.len() < CANDIDATES) {
            p.generated.push((first_line as usize + k, id));
        }
    }
}

/// Queues each line in its shard's file (every backend's, unsharded), sending a backend's
/// file packet once enough is queued.
async fn queue<C: LoadCursor>(
    c: &mut C,
    parts: &mut [Part],
    lines: Vec<load_rows::Line>,
) -> Result<(), BackendError> {
    for (shard, encoded) in lines {
        let chosen = match shard {
            Some(s) => s..s + 1,
            None => 0..parts.len(),
        };
        for p in parts.get_mut(chosen).unwrap_or_default() {
            p.buf.extend_from_slice(&encoded);
            if p.buf.len() >= SEND_AT {
                c.conn(p.conn).send_file_packet(&p.buf).await?;
                p.buf.clear();
            }
        }
    }
    Ok(())
}

/// Sends what is left of each backend's file and the empty packet that ends it, then reads
/// each backend's answer.
async fn finish<C: LoadCursor>(
    c: &mut C,
    parts: &mut [Part],
) -> Result<Vec<Collected>, BackendError> {
    for p in parts.iter_mut() {
        let be = c.conn(p.conn);
        if !p.buf.is_empty() {
            be.send_file_packet(&p.buf).await?;
            p.buf.clear();
        }
        be.end_file().await?;
    }
    let mut out = Vec::with_capacity(parts.len());
    for p in parts.iter() {
        out.push(collect(c.conn(p.conn)).await?);
    }
    Ok(out)
}
