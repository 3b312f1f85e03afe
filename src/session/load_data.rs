//! `LOAD DATA LOCAL INFILE` into a table idgate places or fills ids for. idgate asks the client
//! for the file, cuts it into rows as MariaDB would, gives each row its id and its shard, and
//! streams each shard its rows as the file of that shard's own `LOAD DATA LOCAL`, so MariaDB
//! still converts values, applies IGNORE/REPLACE and counts warnings. Several backends load in
//! one transaction (XA in XA mode); the client gets one OK with the counts added up.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use super::query::Step;
use super::{End, Session};
use crate::exec::collect::{collect, Collected};
use crate::exec::primitives::load_rows::{self, RowPlan};
use crate::exec::{BackendError, StatementScope};
use crate::route::{Placement, TableRule};
use crate::sql::{self, FieldReader, LoadData, OnDuplicate, Target};
use crate::wire::errors::{self, SqlError};
use crate::wire::framing::FrameError;
use crate::wire::packets;

/// File bytes queued for a backend before they are sent as one packet.
const SEND_AT: usize = 64 << 10;

/// The savepoint that makes a load inside the client's transaction all-or-nothing.
const SAVEPOINT: &str = "idgate_load_data";

/// A backend's error packet, for the client.
fn backend_error(e: &[u8]) -> SqlError {
    let (code, state, msg) = packets::parse_err(e);
    SqlError::new(code, &state, String::from_utf8_lossy(msg).into_owned())
}

/// The local-infile request byte (a backend asking for a file, or idgate asking the client).
const LOCAL_INFILE: u8 = 0xfb;

fn failed(msg: impl Into<String>) -> SqlError {
    SqlError::new(errors::ER_UNKNOWN_ERROR, b"HY000", msg.into())
}

/// The statement each backend runs: the client's options for duplicates and character set,
/// idgate's own file format (hex literals, so no sql_mode changes how it reads).
fn backend_statement(ld: &LoadData, schema: &str, targets: &[Target]) -> Vec<u8> {
    let mut s = b"LOAD DATA LOCAL INFILE 'idgate' ".to_vec();
    match ld.on_duplicate {
        OnDuplicate::Replace => s.extend_from_slice(b"REPLACE "),
        OnDuplicate::Ignore => s.extend_from_slice(b"IGNORE "),
        OnDuplicate::Default => {}
    }
    s.extend_from_slice(b"INTO TABLE ");
    sql::push_name(&mut s, schema.as_bytes());
    s.push(b'.');
    sql::push_name(&mut s, ld.table.name.as_bytes());
    if let Some(cs) = &ld.charset {
        s.extend_from_slice(b" CHARACTER SET ");
        sql::push_name(&mut s, cs.as_bytes());
    }
    s.extend_from_slice(
        b" FIELDS TERMINATED BY X'09' ENCLOSED BY '' ESCAPED BY X'5C' \
          LINES STARTING BY '' TERMINATED BY X'0A' (",
    );
    for (k, t) in targets.iter().enumerate() {
        if k > 0 {
            s.push(b',');
        }
        match t {
            Target::Column(c) => sql::push_name(&mut s, c.as_bytes()),
            Target::Variable(v) => {
                s.push(b'@');
                sql::push_name(&mut s, v.as_bytes());
            }
        }
    }
    s.push(b')');
    s
}

/// Where each backend's part of the load stands.
struct Part {
    lease: usize,
    buf: Vec<u8>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Runs `LOAD DATA LOCAL INFILE` into `rule`'s table.
    pub(super) async fn run_load_data(
        &mut self,
        ld: LoadData,
        rule: Arc<TableRule>,
        more: bool,
        scope: StatementScope,
    ) -> Step {
        match self.load_data(ld, &rule, more, scope).await {
            Ok(Ok(())) => Step::Ok,
            Ok(Err(e)) => {
                self.send_error(&e);
                Step::Failed
            }
            Err(end) => Step::End(end),
        }
    }

    async fn load_data(
        &mut self,
        ld: LoadData,
        rule: &TableRule,
        more: bool,
        scope: StatementScope,
    ) -> Result<Result<(), SqlError>, End> {
        let schema = match (&ld.table.schema, &self.db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => return Ok(Err(SqlError::new(1046, b"3D000", "No database selected"))),
        };
        if self.proxy.unique.keys_of(&schema, &ld.table.name).is_some() {
            return Ok(Err(crate::unique::load_data_refusal(&ld.table.name)));
        }
        let (targets, row_plan) = match self.load_targets(&ld, rule, &schema).await {
            Ok(t) => t,
            Err(e) => return Ok(Err(e)),
        };
        let backends: Vec<String> = match &rule.placement {
            Placement::Single { backend } => vec![backend.clone()],
            Placement::Broadcast { backends } => backends.clone(),
            Placement::Sharded { shards, .. } => shards.clone(),
        };
        let mut parts = Vec::with_capacity(backends.len());
        for b in &backends {
            match self.lease_index(b).await {
                Ok(i) => parts.push(Part {
                    lease: i,
                    buf: Vec::new(),
                }),
                Err(e) => return Ok(Err(e)),
            }
        }
        let stmt = backend_statement(&ld, &schema, &targets);
        // The load is all-or-nothing, as MariaDB's own statement is (see `bulk_write`).
        let leases: Vec<usize> = parts.iter().map(|p| p.lease).collect();
        let (txn, begin) = self.bulk_begin(&leases, SAVEPOINT, scope).await?;
        // Each backend starts its LOAD and asks for its file before the client is asked.
        let asked = match self.start_loads(&parts, &stmt, &begin).await {
            Ok(a) => a,
            Err(e) => return Err(self.backend_lost(e)),
        };
        if let Some(refusal) = asked.iter().find_map(|a| a.clone()) {
            // A backend refused the LOAD: the others get an empty file, and all roll back.
            for (p, a) in parts.iter().zip(&asked) {
                if a.is_none() {
                    let be = self.leases.get_mut(p.lease);
                    let ended = match be.end_file().await {
                        Ok(()) => collect(be).await.map(|_| ()),
                        Err(e) => Err(e),
                    };
                    if let Err(e) = ended {
                        return Err(self.backend_lost(e));
                    }
                }
            }
            self.bulk_end(&leases, &txn, false, "LOAD DATA").await?;
            return Ok(Err(backend_error(&refusal)));
        }
        let streamed = self.stream_file(&ld, rule, &row_plan, &mut parts).await?;
        let results = match self.finish_loads(&mut parts).await {
            Ok(r) => r,
            Err(e) => return Err(self.backend_lost(e)),
        };
        let first_err = results.iter().find_map(|r| match r {
            Collected::Err(e) => Some(e.clone()),
            _ => None,
        });
        let ok = streamed.is_ok() && first_err.is_none();
        if let (true, Some(e)) = (ok, self.bulk_end(&leases, &txn, ok, "LOAD DATA").await?) {
            return Ok(Err(e));
        }
        let first_generated = match streamed {
            Err(e) => return Ok(Err(e)),
            Ok(first) => first,
        };
        if let Some(e) = first_err {
            return Ok(Err(backend_error(&e)));
        }
        let counted = if matches!(rule.placement, Placement::Broadcast { .. }) {
            &results[..1]
        } else {
            &results[..]
        };
        let ok = load_rows::answer(counted, first_generated);
        self.answer_bulk(&ok, first_generated, more);
        Ok(Ok(()))
    }

    /// The backends' column list and how each row maps onto it.
    async fn load_targets(
        &mut self,
        ld: &LoadData,
        rule: &TableRule,
        schema: &str,
    ) -> Result<(Vec<Target>, RowPlan), SqlError> {
        let meta = self.table_meta(rule, schema, &ld.table.name).await?;
        let client: Vec<Target> = match &ld.columns {
            Some(c) => c.clone(),
            None => meta
                .columns
                .iter()
                .map(|c| Target::Column(c.clone()))
                .collect(),
        };
        let field_of = |name: &str| {
            client
                .iter()
                .position(|t| matches!(t, Target::Column(c) if c.eq_ignore_ascii_case(name)))
        };
        let generator = match &rule.generator {
            Some(g) => Some(
                self.proxy
                    .idgen
                    .get(g)
                    .cloned()
                    .map_err(|e| failed(e.to_string()))?,
            ),
            None => None,
        };
        let id_field = field_of(&rule.id_column);
        let shard_fields = match &rule.placement {
            Placement::Sharded { columns, .. } => columns
                .iter()
                .map(|c| {
                    let generated = generator.is_some() && c.eq_ignore_ascii_case(&rule.id_column);
                    (c.clone(), if generated { None } else { field_of(c) })
                })
                .collect(),
            _ => Vec::new(),
        };
        let bias_field = rule.bias_column.as_deref().and_then(field_of);
        let mut targets = client.clone();
        if generator.is_some() {
            // The id goes first; the client's own id field (if any) lands in a variable, so
            // rows with fewer or more fields than columns keep MariaDB's meaning.
            if let Some(k) = id_field {
                targets[k] = Target::Variable("idgate_client_id".into());
            }
            targets.insert(0, Target::Column(rule.id_column.clone()));
        }
        let zero_is_value = generator.is_some()
            && (!meta.is_auto_increment(&rule.id_column) || self.no_auto_value_on_zero().await?);
        let binary_uuid = meta
            .column_type(&rule.id_column)
            .is_some_and(|t| t.starts_with("binary"));
        Ok((
            targets,
            RowPlan {
                generator,
                id_field,
                shard_fields,
                bias_field,
                zero_is_value,
                binary_uuid,
            },
        ))
    }

    /// Sends the optional transaction start and the LOAD to every backend; for each, `None`
    /// when it asked for its file, or the error packet it answered instead.
    async fn start_loads(
        &mut self,
        parts: &[Part],
        stmt: &[u8],
        begin: &[Option<Vec<u8>>],
    ) -> Result<Vec<Option<Vec<u8>>>, BackendError> {
        let packet = crate::wire::command::query_packet(stmt);
        for (p, b) in parts.iter().zip(begin) {
            let be = self.leases.get_mut(p.lease);
            if let Some(b) = b {
                be.write_command(&crate::wire::command::query_packet(b));
            }
            be.write_command(&packet);
        }
        for p in parts {
            self.leases.get_mut(p.lease).flush().await?;
        }
        let mut asked = Vec::with_capacity(parts.len());
        for (p, b) in parts.iter().zip(begin) {
            let be = self.leases.get_mut(p.lease);
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
    async fn stream_file(
        &mut self,
        ld: &LoadData,
        rule: &TableRule,
        plan: &RowPlan,
        parts: &mut [Part],
    ) -> Result<Result<Option<u64>, SqlError>, End> {
        let start = self.writer.begin();
        self.writer.payload().push(LOCAL_INFILE);
        self.writer.payload().extend_from_slice(&ld.file);
        self.writer.end(start);
        if self.writer.flush().await.is_err() {
            return Err(End::ClientGone);
        }
        self.reader.seq = self.writer.seq;
        let read_timeout = std::time::Duration::from_secs(self.live.config.net_read_timeout);
        let mut reader = FieldReader::new(ld.format.clone(), ld.skip_lines);
        let mut problem: Option<SqlError> = None;
        let mut first_generated = None;
        let mut line = 0u64;
        let mut buf = Vec::new();
        loop {
            match tokio::time::timeout(read_timeout, self.reader.read(&mut buf)).await {
                Ok(Ok(())) => {}
                Ok(Err(FrameError::TooLarge { limit, .. })) => {
                    self.send_error(&errors::packet_too_large(limit));
                    return Err(End::Fatal("file packet too large".into()));
                }
                Ok(Err(_)) | Err(_) => return Err(End::ClientGone),
            }
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
                        // Each line to its shard's file (every backend's, unsharded).
                        for (shard, encoded) in placed.lines {
                            let chosen = match shard {
                                Some(s) => s..s + 1,
                                None => 0..parts.len(),
                            };
                            for p in parts.get_mut(chosen).unwrap_or_default() {
                                p.buf.extend_from_slice(&encoded);
                                if p.buf.len() >= SEND_AT {
                                    let sent =
                                        self.leases.get_mut(p.lease).send_file_packet(&p.buf).await;
                                    if let Err(e) = sent {
                                        return Err(self.backend_lost(e));
                                    }
                                    p.buf.clear();
                                }
                            }
                        }
                    }
                    Err(e) => problem = Some(e),
                }
            }
            if end {
                break;
            }
        }
        self.writer.seq = self.reader.seq;
        Ok(match problem {
            Some(e) => Err(e),
            None => Ok(first_generated),
        })
    }

    /// Sends what is left of each backend's file and the empty packet that ends it, then reads
    /// each backend's answer.
    async fn finish_loads(&mut self, parts: &mut [Part]) -> Result<Vec<Collected>, BackendError> {
        for p in parts.iter_mut() {
            let be = self.leases.get_mut(p.lease);
            if !p.buf.is_empty() {
                be.send_file_packet(&p.buf).await?;
                p.buf.clear();
            }
            be.end_file().await?;
        }
        let mut out = Vec::with_capacity(parts.len());
        for p in parts.iter() {
            out.push(collect(self.leases.get_mut(p.lease)).await?);
        }
        Ok(out)
    }
}
