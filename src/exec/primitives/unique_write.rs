//! The write of a statement on a `unique: global` table: the connections to the lookup
//! backends and the table's shards, all-or-nothing as one statement (the cursor's
//! `begin`/`end`), each connection started only when a statement first goes there, and ended
//! with the others.

use tokio::io::AsyncWrite;

use crate::exec::collect::Collected;
use crate::exec::cursor::WriteCursor;
use crate::wire::errors::{self, SqlError};
use crate::wire::framing::PacketWriter;
use crate::wire::packets;

/// Why the statement stopped: the backend's own error, or idgate's.
#[derive(Debug)]
pub enum Failure {
    Packet(Vec<u8>),
    Sql(SqlError),
}

impl Failure {
    /// Tells the client.
    pub fn send<W: AsyncWrite + Unpin>(self, writer: &mut PacketWriter<W>) {
        match self {
            Failure::Packet(p) => writer.write(&p),
            Failure::Sql(e) => writer.send_error(&e),
        }
    }
}

/// The statement's connections, by backend name, and which of them it wrote to.
pub struct UniqueWrite<T> {
    names: Vec<String>,
    conns: Vec<usize>,
    used: Vec<bool>,
    /// What starts the write on each connection, sent with its first statement.
    begin: Vec<Option<Vec<u8>>>,
    txn: T,
}

/// Affected rows of an OK, or the failure.
pub fn affected(c: &Collected) -> Result<u64, Failure> {
    match c {
        Collected::Ok(p) => Ok(packets::parse_ok(p).map_or(0, |o| o.affected_rows)),
        Collected::Err(p) => Err(Failure::Packet(p.clone())),
        Collected::Rows { .. } => Ok(0),
    }
}

/// Holds a connection to each lookup backend and each of the table's shards (`shards`), and
/// makes the write all-or-nothing. `Ok(Err(e))`: a connection could not be had.
pub async fn open<'b, C: WriteCursor>(
    c: &mut C,
    lookup_backends: impl Iterator<Item = &'b str>,
    shards: &'b [String],
) -> Result<Result<UniqueWrite<C::Txn>, SqlError>, C::End> {
    let mut names: Vec<String> = Vec::new();
    for b in lookup_backends.chain(shards.iter().map(String::as_str)) {
        if !names.iter().any(|n| n == b) {
            names.push(b.to_string());
        }
    }
    let mut conns = Vec::with_capacity(names.len());
    for n in &names {
        match c.lease(n).await? {
            Ok(i) => conns.push(i),
            Err(e) => return Ok(Err(e)),
        }
    }
    let (txn, begin) = c.begin(&conns, "idgate_unique").await?;
    Ok(Ok(UniqueWrite {
        used: vec![false; conns.len()],
        names,
        conns,
        begin,
        txn,
    }))
}

impl<T> UniqueWrite<T> {
    /// Sends one statement on the write's connection to `backend` (after what starts the
    /// write there, the first time) and reads its whole answer.
    pub async fn collect_one<C: WriteCursor<Txn = T>>(
        &mut self,
        c: &mut C,
        backend: &str,
        sql: Vec<u8>,
    ) -> Result<Result<Collected, Failure>, C::End> {
        let Some(p) = self.names.iter().position(|n| n == backend) else {
            return Ok(Err(Failure::Sql(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                format!("idgate: no connection to backend `{backend}`"),
            ))));
        };
        self.used[p] = true;
        let conn = self.conns[p];
        let began = self.begin[p].take();
        if let Some(b) = &began {
            c.queue(conn, b);
        }
        c.queue(conn, &sql);
        c.flush(conn).await?;
        if began.is_some() {
            let started = c.answer(conn).await?;
            if started.is_err() {
                c.answer(conn).await?;
                return Ok(Ok(started));
            }
        }
        Ok(Ok(c.answer(conn).await?))
    }

    /// Keeps what the write did (`outcome` is `Ok`) or undoes it; only the connections a
    /// statement went to take part. `Err`: the client is to be told (the statement's failure,
    /// or a COMMIT that failed after others committed; `what` names the statement there).
    pub async fn close<C: WriteCursor<Txn = T>, V>(
        self,
        c: &mut C,
        outcome: Result<V, Failure>,
        what: &str,
    ) -> Result<Result<V, Failure>, C::End> {
        let mut used = Vec::with_capacity(self.conns.len());
        for (&i, &u) in self.conns.iter().zip(&self.used) {
            if u {
                used.push(i);
            } else {
                c.unused(i, &self.txn);
            }
        }
        let v = match outcome {
            Ok(v) => v,
            Err(f) => {
                c.end(&used, &self.txn, false, what).await?;
                return Ok(Err(f));
            }
        };
        Ok(match c.end(&used, &self.txn, true, what).await? {
            Some(e) => Err(Failure::Sql(e)),
            None => Ok(v),
        })
    }
}
