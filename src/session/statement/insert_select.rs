//! `INSERT … SELECT` into a table idgate fills ids for or places: the session finds the target
//! table's columns and reads the SELECT's whole answer (routed as the SELECT alone would be);
//! the primitive (`exec::primitives::insert_select`) gives the rows their ids and shards and
//! writes them; the session answers.

use tokio::io::{AsyncRead, AsyncWrite};

use super::fetch::FetchLimits;
use super::fetch::{FetchError, Fetched};
use super::StatementExec;
use crate::exec::primitives::bulk_write::BulkOk;
use crate::exec::primitives::insert_select::{self, Target, Written};
use crate::exec::primitives::insert_source::{self, malformed, too_large, Source};
use crate::route::Route;
use crate::route::TableRule;
use crate::session::End;
use crate::sql::{self, InsertAnalysis, InsertBody, StatementKind};
use crate::unique::GlobalKey;
use crate::wire::errors::SqlError;

/// The answer of the SELECT; a failure of the reader becomes INSERT … SELECT's own error.
fn source_of(got: Result<Fetched, FetchError>) -> Result<Source, SqlError> {
    match got {
        Ok(f) => Ok(Source::new(f)),
        Err(FetchError::TooManyBytes(limit)) => Err(too_large(limit)),
        Err(FetchError::Answer(e)) => Err(e),
        Err(FetchError::NotASelect) => Err(malformed("an OK instead of rows")),
        Err(e @ (FetchError::Malformed | FetchError::TooManyRows(_))) => {
            Err(malformed(&e.to_string()))
        }
    }
}

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs `INSERT … SELECT` (`a`'s body is a query) into `rule`'s table. `Ok(false)`: the
    /// client got an error.
    pub(super) async fn insert_select(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
        keys: Option<&[GlobalKey]>,
        more: bool,
    ) -> Result<bool, End> {
        let InsertBody::Select { query } = &a.body else {
            return Ok(false);
        };
        let query = &stmt[query.clone()];
        let shape = insert_select::refuse_shape(a)
            .and_then(|()| crate::route::unique_keys::per_shard_key_write(a, rule));
        let target = match shape {
            Ok(()) => self.insert_target(a, rule).await,
            Err(e) => Err(e),
        };
        let target = match target {
            Ok(t) => t,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        // Every source row is read before anything is written (the source may be the target).
        let Some(source) = self.read_source(query).await? else {
            return Ok(false);
        };
        if source.columns.len() != target.columns.len() {
            self.session.writer.send_error(&SqlError::new(
                1136,
                b"21S01",
                "Column count doesn't match value count at row 1",
            ));
            return Ok(false);
        }
        if let Some(keys) = keys {
            let (target, source) = (&target, &source);
            return self
                .insert_select_guarded(a, rule, keys, target, source, more)
                .await;
        }
        let planned = match insert_select::source_ids(rule, &target, &source).await {
            Ok(ids) => insert_select::shard_rows(rule, &target, &source, &ids).map(|s| (ids, s)),
            Err(e) => Err(e),
        };
        let (ids, shares) = match planned {
            Ok(p) => p,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(false);
            }
        };
        let written =
            insert_select::write_rows(self, a, rule, &target, (&source, &ids), &shares).await?;
        match written {
            Written::Done {
                ok,
                first_generated,
            } => {
                self.answer_bulk(&ok, first_generated, more);
                Ok(true)
            }
            Written::Failed(e) => {
                self.session.writer.write(&e);
                Ok(false)
            }
            Written::Refused(e) => {
                self.session.writer.send_error(&e);
                Ok(false)
            }
        }
    }

    /// Into a table whose unique keys hold through lookups (`unique: global`): the rows as one
    /// INSERT … VALUES, run row by row through the lookups as such an INSERT is.
    #[allow(clippy::too_many_arguments)]
    async fn insert_select_guarded(
        &mut self,
        a: &InsertAnalysis,
        rule: &TableRule,
        keys: &[GlobalKey],
        target: &Target,
        source: &Source,
        more: bool,
    ) -> Result<bool, End> {
        if source.rows.is_empty() {
            let ok = BulkOk {
                affected: 0,
                insert_id: 0,
                warnings: 0,
                info: b"Records: 0  Duplicates: 0  Warnings: 0".to_vec(),
            };
            self.answer_bulk(&ok, None, more);
            return Ok(true);
        }
        let text = insert_select::values_statement(a, target, source);
        let values = match sql::analyze_insert(&text) {
            Ok(v) => v,
            Err(e) => {
                self.session.writer.send_error(&SqlError::from(e));
                return Ok(false);
            }
        };
        // INSERT … SELECT reports Records/Duplicates even for one row.
        self.guarded_insert(&text, &values, rule, keys, (more, true, true))
            .await
    }

    /// The target table's columns, generator and id column.
    async fn insert_target(
        &mut self,
        a: &InsertAnalysis,
        rule: &TableRule,
    ) -> Result<Target, SqlError> {
        let schema = match (&a.table.schema, &self.session.db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => return Err(SqlError::new(1046, b"3D000", "No database selected")),
        };
        let meta = self.table_meta(rule, &schema, &a.table.name).await?;
        let columns: Vec<String> = match &a.columns {
            Some(cols) => cols.iter().map(|c| c.name.clone()).collect(),
            None => meta.columns.clone(),
        };
        let generator = self.generator_of(rule)?;
        if let Some(g) = &generator {
            crate::route::insert::check_id_type(rule, g.kind(), &meta, &a.table.name)?;
        }
        let id_pos = columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(&rule.id_column));
        // As in a VALUES INSERT: 0 asks for an id whatever the backend's column says.
        let zero_is_value =
            id_pos.is_some() && generator.is_some() && self.no_auto_value_on_zero().await?;
        Ok(Target {
            schema,
            meta,
            columns,
            generator,
            id_pos,
            zero_is_value,
        })
    }

    /// Reads the SELECT's whole answer, routed as the same SELECT alone would be. `None`: the
    /// client got an error (the connections stay in step).
    async fn read_source(&mut self, query: &[u8]) -> Result<Option<Source>, End> {
        let route = if self.session.proxy.tables.load().placed_mentioned_in(query) {
            if sql::classify(query) != StatementKind::Select {
                self.session.writer.send_error(&unsupported(
                    "the query of INSERT ... SELECT into a placed table must be a plain SELECT \
                     when it reads sharded or broadcast tables; write it as SELECT ... FROM"
                        .into(),
                ));
                return Ok(None);
            }
            match self.session.route_dml(query, false) {
                Ok(r) => r,
                Err(e) => {
                    self.session.writer.send_error(&e);
                    return Ok(None);
                }
            }
        } else {
            None
        };
        let route = match route {
            None => Route::One(self.session.proxy.default_pool.name.clone()),
            Some(r @ (Route::One(_) | Route::Concat(_) | Route::Merge(..))) => r,
            // ByKey: never here, internal reads take the general route.
            Some(Route::Write { .. } | Route::Everywhere(_) | Route::ByKey(_)) => {
                self.session.writer.send_error(&unsupported(
                    "the query of INSERT ... SELECT must be a SELECT".into(),
                ));
                return Ok(None);
            }
        };
        // Bytes are the only cap: merge_memory_limit, applied by the reader.
        let limits = FetchLimits {
            max_rows: u64::MAX,
            max_bytes: u64::MAX,
            enough: None,
        };
        let got = self
            .session
            .cursor(self.scope, self.obs)
            .fetch_routed(query, route, limits)
            .await?;
        let source = match source_of(got) {
            Ok(s) => s,
            Err(e) => {
                self.session.writer.send_error(&e);
                return Ok(None);
            }
        };
        let mut source = source;
        let default = self.session.proxy.default_pool.name.clone();
        if let Err(e) = insert_source::resolve_charsets(self, &default, &mut source).await? {
            self.session.writer.send_error(&e);
            return Ok(None);
        }
        Ok(Some(source))
    }
}
