//! A cursor without servers for primitives' unit tests: the real planner over the rules it is
//! given, and canned answers for the SELECTs a primitive fetches, each fetch recorded.

use std::collections::HashMap;

use mysql_common::constants::{ColumnFlags, ColumnType};

use crate::exec::cursor::{Cursor, FetchLimits, Fetched};
use crate::route::{PlanCache, PlanContext, Route, Tables};
use crate::sql::BoundColumn;
use crate::wire::errors::SqlError;

/// Why a fake session ends (never, unless a test says so).
#[derive(Debug, PartialEq)]
pub struct Ended;

pub struct FakeCursor {
    tables: Tables,
    plans: PlanCache,
    answers: HashMap<Vec<u8>, Result<Fetched, SqlError>>,
    /// Each fetch: its SQL and the limits it ran under.
    pub fetched: Vec<(String, FetchLimits)>,
}

impl FakeCursor {
    pub fn new(tables: Tables) -> FakeCursor {
        FakeCursor {
            tables,
            plans: PlanCache::new(64),
            answers: HashMap::new(),
            fetched: Vec::new(),
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
        self.plan(|ctx| self.plans.route(stmt, ctx, 0))
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
