//! A cursor without servers for primitives' unit tests: the real planner over the rules it is
//! given, and canned answers for the SELECTs a primitive fetches, each fetch recorded.

use std::collections::HashMap;

use mysql_common::constants::{ColumnFlags, ColumnType, StatusFlags};

use crate::exec::collect::Collected;
use crate::exec::cursor::{Cursor, FetchLimits, Fetched, WriteCursor};
use crate::route::{PlanCache, PlanContext, Route, Tables};
use crate::sql::BoundColumn;
use crate::wire::errors::SqlError;
use crate::wire::packets;

/// Runs a primitive's future to its end, as the session's event loop would.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime for the test")
        .block_on(f)
}

/// Why a fake session ends (never, unless a test says so).
#[derive(Debug, PartialEq)]
pub struct Ended;

pub struct FakeCursor {
    tables: Tables,
    plans: PlanCache,
    answers: HashMap<Vec<u8>, Result<Fetched, SqlError>>,
    /// Each fetch: its SQL and the limits it ran under.
    pub fetched: Vec<(String, FetchLimits)>,
    /// Backends a write may lease (`s0`, `s1`), by connection index.
    conns: Vec<String>,
    /// Statements sent on connections (backend, SQL), in the order they were flushed.
    pub sent: Vec<(String, String)>,
    /// Queued, not yet flushed, per connection.
    queued: Vec<Vec<String>>,
    /// Flushed, not yet answered, per connection.
    unanswered: Vec<std::collections::VecDeque<String>>,
    /// Statements answered with a duplicate-key error.
    refused: Vec<String>,
    /// Statements answered as given (on one backend, or on any when `None`); the rest get an
    /// OK with one affected row.
    canned: Vec<(Option<String>, Vec<u8>, Collected)>,
    /// Each end of a write: its backends and whether it was kept.
    pub ended: Vec<(Vec<String>, bool)>,
}

impl FakeCursor {
    pub fn new(tables: Tables) -> FakeCursor {
        FakeCursor {
            tables,
            plans: PlanCache::new(64),
            answers: HashMap::new(),
            fetched: Vec::new(),
            conns: vec!["s0".into(), "s1".into()],
            sent: Vec::new(),
            queued: vec![Vec::new(); 2],
            unanswered: vec![Default::default(); 2],
            refused: Vec::new(),
            canned: Vec::new(),
            ended: Vec::new(),
        }
    }

    /// `select` answers one integer column `name` with `values` (`None`: NULL).
    pub fn answer_ints(&mut self, select: &str, name: &str, values: &[Option<i64>]) {
        let column = BoundColumn {
            name: name.as_bytes().to_vec(),
            ty: ColumnType::MYSQL_TYPE_LONGLONG,
            charset: 63,
            flags: ColumnFlags::NUM_FLAG,
            decimals: 0,
        };
        let rows = values
            .iter()
            .map(|v| vec![v.map(|v| v.to_string().into_bytes())])
            .collect();
        self.answers.insert(
            select.as_bytes().to_vec(),
            Ok(Fetched {
                columns: vec![column],
                rows,
            }),
        );
    }

    /// `sql` written on a connection is answered with ER_DUP_ENTRY.
    pub fn refuse_statement(&mut self, sql: &str) {
        self.refused.push(sql.into());
    }

    /// `sql` written on any connection is answered with `out`.
    pub fn answer_write(&mut self, sql: &[u8], out: Collected) {
        self.canned.push((None, sql.to_vec(), out));
    }

    /// `sql` written on a connection to `backend` is answered with `out`.
    pub fn answer_write_on(&mut self, backend: &str, sql: &[u8], out: Collected) {
        self.canned.push((Some(backend.into()), sql.to_vec(), out));
    }

    /// `select` answers with the error `e`.
    pub fn answer_error(&mut self, select: &str, e: SqlError) {
        self.answers.insert(select.as_bytes().to_vec(), Err(e));
    }
}

impl Cursor for FakeCursor {
    type End = Ended;

    fn plan<T>(&self, f: impl FnOnce(&PlanContext) -> T) -> T {
        f(&PlanContext {
            db: Some("app"),
            tables: &self.tables,
        })
    }

    fn route(&self, stmt: &[u8]) -> Result<Option<Route>, SqlError> {
        self.plan(|ctx| self.plans.route(stmt, ctx, 0, false))
    }

    async fn fetch_on(
        &mut self,
        backend: &str,
        select: &[u8],
        limits: FetchLimits,
    ) -> Result<Result<Fetched, SqlError>, Ended> {
        let on = format!("{backend}: {}", String::from_utf8_lossy(select));
        self.fetch(on.as_bytes(), limits).await
    }

    async fn fetch(
        &mut self,
        select: &[u8],
        limits: FetchLimits,
    ) -> Result<Result<Fetched, SqlError>, Ended> {
        self.fetched
            .push((String::from_utf8_lossy(select).into_owned(), limits));
        match self.answers.get(select) {
            Some(Ok(f)) => Ok(Ok(Fetched {
                columns: f.columns.clone(),
                rows: f.rows.clone(),
            })),
            Some(Err(e)) => Ok(Err(e.clone())),
            None => panic!(
                "the primitive fetched a SELECT the test gave no answer for: {}",
                String::from_utf8_lossy(select)
            ),
        }
    }
}

impl WriteCursor for FakeCursor {
    type End = Ended;
    type Txn = ();

    async fn lease(&mut self, backend: &str) -> Result<Result<usize, SqlError>, Ended> {
        Ok(self
            .conns
            .iter()
            .position(|c| c == backend)
            .ok_or_else(|| SqlError::new(1105, b"HY000", format!("no backend `{backend}`"))))
    }

    async fn begin(
        &mut self,
        conns: &[usize],
        _savepoint: &'static str,
    ) -> Result<((), Vec<Option<Vec<u8>>>), Ended> {
        Ok(((), vec![Some(b"START TRANSACTION".to_vec()); conns.len()]))
    }

    async fn end(
        &mut self,
        conns: &[usize],
        _txn: &(),
        keep: bool,
        _what: &str,
    ) -> Result<Option<SqlError>, Ended> {
        let names = conns.iter().map(|&c| self.conns[c].clone()).collect();
        self.ended.push((names, keep));
        Ok(None)
    }

    fn unused(&mut self, _conn: usize, _txn: &()) {}

    fn queue(&mut self, conn: usize, sql: &[u8]) {
        self.queued[conn].push(String::from_utf8_lossy(sql).into_owned());
    }

    async fn flush(&mut self, conn: usize) -> Result<(), Ended> {
        for sql in std::mem::take(&mut self.queued[conn]) {
            self.sent.push((self.conns[conn].clone(), sql.clone()));
            self.unanswered[conn].push_back(sql);
        }
        Ok(())
    }

    async fn answer(&mut self, conn: usize) -> Result<Collected, Ended> {
        let Some(sql) = self.unanswered[conn].pop_front() else {
            panic!("an answer read on {} with nothing sent", self.conns[conn]);
        };
        let mut p = Vec::new();
        if self.refused.contains(&sql) {
            packets::err(&mut p, 1062, b"23000", b"Duplicate entry '1' for key 'u'");
            return Ok(Collected::Err(p));
        }
        let backend = &self.conns[conn];
        let canned = self.canned.iter().find(|(on, s, _)| {
            s.as_slice() == sql.as_bytes() && on.as_ref().is_none_or(|b| b == backend)
        });
        if let Some((_, _, out)) = canned {
            return Ok(out.clone());
        }
        packets::ok(
            &mut p,
            packets::OK_HEADER,
            1,
            0,
            StatusFlags::empty(),
            0,
            b"",
        );
        Ok(Collected::Ok(p))
    }
}
