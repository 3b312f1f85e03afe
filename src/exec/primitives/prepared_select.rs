//! A prepared SELECT executed on the shards its bound values route it to: prepared on each
//! shard on first use (the default backend prepared it when the client did), executed there
//! with the client's parameters, and the rows relayed in the binary protocol as they come.

use std::collections::HashMap;

use mysql_common::packets::ComStmtExecuteRequestBuilder;
use mysql_common::proto::MySerialize;
use mysql_common::value::Value;

use crate::exec::relay::{self, Adjust, Reply};
use crate::exec::{scatter, BackendError, RelayCursor};
use crate::wire::errors::SqlError;
use crate::wire::packets;

const COM_STMT_PREPARE: u8 = mysql_common::constants::Command::COM_STMT_PREPARE as u8;

/// The statement's ids on the backends: the default backend's, and those prepared elsewhere
/// (added to as it is prepared on more).
pub struct StatementIds<'a> {
    pub sql: &'a [u8],
    pub default: (&'a str, u32),
    pub prepared_on: &'a mut HashMap<String, u32>,
}

/// Executes the statement on `backends` (each joined to the client's transaction, prepared
/// there first where needed) and relays the rows. `Ok(false)`: the client got an error.
pub async fn run<C: RelayCursor>(
    c: &mut C,
    backends: &[String],
    ids: &mut StatementIds<'_>,
    values: &[Value],
) -> Result<bool, C::End> {
    let Some(idx) = execute_on(c, backends, ids, values).await? else {
        return Ok(false);
    };
    let relayed = {
        let (mut conns, mut client) = c.relay_parts(&idx);
        match conns.as_mut_slice() {
            [one] => relay::relay(one, &mut client, Reply::Results, Adjust::default()).await,
            _ => scatter::relay_concat(&mut conns, &mut client, 0).await,
        }
    };
    match relayed {
        Ok(r) => Ok(!r.error),
        Err(e) => Err(c.failed(e)),
    }
}

/// Executes the statement on `backend` alone and relays its answer when it holds a row.
/// `Ok(None)`: it held none, and the client was told nothing.
pub async fn run_if_rows<C: RelayCursor>(
    c: &mut C,
    backend: &str,
    ids: &mut StatementIds<'_>,
    values: &[Value],
) -> Result<Option<bool>, C::End> {
    let backends = [backend.to_string()];
    let Some(idx) = execute_on(c, &backends, ids, values).await? else {
        return Ok(Some(false));
    };
    let relayed = {
        let (mut conns, mut client) = c.relay_parts(&idx);
        match conns.first_mut() {
            Some(be) => scatter::relay_if_rows(be, &mut client, 0).await,
            None => Ok(None),
        }
    };
    match relayed {
        Ok(r) => Ok(r.map(|r| !r.error)),
        Err(e) => Err(c.failed(e)),
    }
}

/// Sends the execution to each of `backends`, preparing the statement there first where
/// needed; the connections to read the answers from. `Ok(None)`: the client got an error.
async fn execute_on<C: RelayCursor>(
    c: &mut C,
    backends: &[String],
    ids: &mut StatementIds<'_>,
    values: &[Value],
) -> Result<Option<Vec<usize>>, C::End> {
    let mut idx = Vec::with_capacity(backends.len());
    for b in backends {
        let i = match c.joined(b).await? {
            Ok(i) => i,
            Err(e) => {
                c.send_error(&e);
                return Ok(None);
            }
        };
        // Prepared everywhere before any execution is written: a failed prepare must not leave
        // an unsent command queued on another connection.
        match statement_on(c, ids, b, i).await {
            Ok(Ok(s)) => idx.push((i, s)),
            Ok(Err(e)) => {
                c.send_error(&e);
                return Ok(None);
            }
            Err(e) => return Err(c.failed(e)),
        }
    }
    for &(i, stmt_id) in &idx {
        let (req, _) = ComStmtExecuteRequestBuilder::new(stmt_id).build(values);
        let mut p = Vec::new();
        req.serialize(&mut p);
        c.conn(i).write_command(&p);
    }
    let idx: Vec<usize> = idx.into_iter().map(|(i, _)| i).collect();
    for &i in &idx {
        if let Err(e) = c.conn(i).flush().await {
            return Err(c.failed(e));
        }
    }
    Ok(Some(idx))
}

/// The statement's id on `backend` (connection `i`), preparing it there first if needed.
/// `Ok(Err(e))`: the backend refused to prepare it (`e` names the backend).
async fn statement_on<C: RelayCursor>(
    c: &mut C,
    ids: &mut StatementIds<'_>,
    backend: &str,
    i: usize,
) -> Result<Result<u32, SqlError>, BackendError> {
    if backend == ids.default.0 {
        return Ok(Ok(ids.default.1));
    }
    if let Some(sid) = ids.prepared_on.get(backend) {
        return Ok(Ok(*sid));
    }
    let mut p = vec![COM_STMT_PREPARE];
    p.extend_from_slice(ids.sql);
    let be = c.conn(i);
    be.write_command(&p);
    be.flush().await?;
    be.read().await?;
    if packets::is_err(&be.packet) {
        let (code, state, msg) = packets::parse_err(&be.packet);
        return Ok(Err(SqlError::new(
            code,
            &state,
            format!("{} (on backend `{backend}`)", String::from_utf8_lossy(msg)),
        )));
    }
    let head = be.packet.clone();
    if head.len() < 9 {
        return Err(BackendError::Protocol("statement prepare answer".into()));
    }
    let sid = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
    let columns = u16::from_le_bytes([head[5], head[6]]);
    let params = u16::from_le_bytes([head[7], head[8]]);
    for count in [params, columns] {
        if count > 0 {
            for _ in 0..=count {
                be.read().await?; // definitions, then their EOF
            }
        }
    }
    ids.prepared_on.insert(backend.to_string(), sid);
    Ok(Ok(sid))
}
