//! INSERT into a configured table: ids generated as AUTO_INCREMENT would, the statement rewritten
//! (only the id column spliced in), each row sent to the shard that owns it, one answer back.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session};
use crate::config::tables::ExplicitIds;
use crate::exec::metadata::TableMeta;
use crate::exec::relay::{Adjust, Reply};
use crate::route::{Placement, ShardValue, TableRule};
use crate::sql::{self, IdFill, IdValue, InsertAnalysis, InsertBody, Value, ValueKind};
use crate::wire::errors::{self, SqlError};

/// Where one row's id comes from.
#[derive(Debug, Clone)]
pub(super) enum RowId {
    /// Generated: a numeric id, or the text of a UUID literal.
    Generated(u64),
    GeneratedText(Vec<u8>),
    /// The statement's own value, kept.
    Explicit(Option<i128>),
}

/// What the INSERT will send where.
pub(super) struct InsertPlan {
    /// (backend, rendered statement, the statement's row indices it carries).
    pub parts: Vec<(String, Vec<u8>, Vec<usize>)>,
    /// Every row on every backend: answer with one backend's counts, not the sum.
    pub broadcast: bool,
    /// The insert id the client is told, as MySQL reports it for AUTO_INCREMENT.
    pub insert_id: u64,
    /// The first generated numeric id, which becomes LAST_INSERT_ID().
    pub first_generated: Option<u64>,
    /// The backend whose part sets LAST_INSERT_ID() (it carries the first generated row).
    pub lid_backend: Option<String>,
}

fn err(code: u16, state: &[u8; 5], msg: impl Into<String>) -> SqlError {
    SqlError::new(code, state, msg)
}

fn unsupported(msg: impl Into<String>) -> SqlError {
    err(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

/// The value `a` gives `column` in row `row`.
fn value_of<'a>(
    a: &'a InsertAnalysis,
    meta: &TableMeta,
    row: usize,
    column: &str,
) -> Option<&'a Value> {
    match &a.body {
        InsertBody::Values { rows } => {
            let idx = match &a.columns {
                Some(cols) => cols
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(column))?,
                None => meta.position(column)?,
            };
            rows.get(row)?.values.get(idx)
        }
        InsertBody::Set { assignments } => assignments
            .iter()
            .find(|x| x.column.name.eq_ignore_ascii_case(column))
            .map(|x| &x.value),
        InsertBody::Select { .. } => None,
    }
}

/// Index of the id column in the statement's column/SET list, or in the table when the statement
/// has no column list; `None` when the statement leaves it out.
fn id_index(a: &InsertAnalysis, meta: &TableMeta, id_column: &str) -> Option<usize> {
    match (&a.body, &a.columns) {
        (InsertBody::Set { assignments }, _) => assignments
            .iter()
            .position(|x| x.column.name.eq_ignore_ascii_case(id_column)),
        (_, Some(cols)) => cols
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(id_column)),
        (_, None) => meta.position(id_column),
    }
}

fn row_count(a: &InsertAnalysis) -> usize {
    match &a.body {
        InsertBody::Values { rows } => rows.len(),
        InsertBody::Set { .. } => 1,
        InsertBody::Select { .. } => 0,
    }
}

/// Checks that the id column can hold what the generator makes.
pub(super) fn check_id_type(
    rule: &TableRule,
    kind: &str,
    meta: &TableMeta,
    table: &str,
) -> Result<(), SqlError> {
    let Some(ty) = meta.column_type(&rule.id_column) else {
        return Err(err(
            1054,
            b"42S22",
            format!(
                "Unknown column '{}' in '{table}': idgate's config names it as the id column; fix tables.{table}.id_column",
                rule.id_column
            ),
        ));
    };
    let ok = match kind {
        "uuidv7" => ty.starts_with("binary(16)") || ty.contains("char("),
        "segment" => ty.contains("int"),
        _ => ty.starts_with("bigint"),
    };
    if ok {
        return Ok(());
    }
    Err(err(
        errors::ER_UNKNOWN_ERROR,
        b"HY000",
        format!(
            "Column '{}' of '{table}' is {ty}, too small for the {kind} generator's ids; \
             make it {}",
            rule.id_column,
            if kind == "uuidv7" {
                "BINARY(16) or CHAR(36)"
            } else {
                "BIGINT"
            }
        ),
    ))
}

fn shard_value(v: &Value) -> Option<ShardValue> {
    match &v.kind {
        ValueKind::Int(i) => Some(ShardValue::Int(*i)),
        ValueKind::Str(s) => Some(ShardValue::Str(s.clone())),
        _ => None,
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    pub(super) async fn no_auto_value_on_zero(&mut self) -> Result<bool, SqlError> {
        if let Some(v) = self.no_auto_value_on_zero {
            return Ok(v);
        }
        let name = self.proxy.default_pool.name.clone();
        let i = self.lease_index(&name).await?;
        let rows = self
            .leases
            .get_mut(i)
            .query_rows("SELECT @@SESSION.sql_mode")
            .await
            .map_err(|e| err(errors::CR_SERVER_LOST, b"HY000", format!("idgate: {e}")))?;
        let mode = rows
            .first()
            .and_then(|r| r.first())
            .and_then(|v| v.as_deref())
            .unwrap_or_default();
        let on = String::from_utf8_lossy(mode)
            .to_ascii_uppercase()
            .contains("NO_AUTO_VALUE_ON_ZERO");
        self.no_auto_value_on_zero = Some(on);
        Ok(on)
    }

    pub(super) async fn table_meta(
        &mut self,
        rule: &TableRule,
        schema: &str,
        table: &str,
    ) -> Result<Arc<TableMeta>, SqlError> {
        let backend = rule.backends().first().map_or("", String::as_str);
        let i = self.lease_index(backend).await?;
        let proxy = self.proxy.clone();
        let meta = proxy
            .metadata
            .get_or_load(self.leases.get_mut(i), schema, table)
            .await
            .map_err(|e| err(errors::CR_SERVER_LOST, b"HY000", format!("idgate: {e}")))?;
        meta.ok_or_else(|| {
            err(
                1146,
                b"42S02",
                format!("Table '{schema}.{table}' doesn't exist"),
            )
        })
    }

    /// Decides ids and shards for an INSERT and renders what each backend runs.
    pub(super) async fn plan_insert(
        &mut self,
        stmt: &[u8],
        a: &InsertAnalysis,
        rule: &TableRule,
    ) -> Result<InsertPlan, SqlError> {
        let table = &a.table.name;
        if matches!(a.body, InsertBody::Select { .. }) {
            return Err(unsupported(format!(
                "INSERT ... SELECT into `{table}` is not supported: idgate gives each row its id and shard, \
                 so it must see the rows; insert them with VALUES"
            )));
        }
        if a.on_duplicate_update {
            refuse_moving_update(stmt, rule)?;
        }
        let schema = match (&a.table.schema, &self.db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => return Err(err(1046, b"3D000", "No database selected")),
        };
        let meta = self.table_meta(rule, &schema, table).await?;
        let generator = match &rule.generator {
            Some(g) => Some(
                self.proxy
                    .idgen
                    .get(g)
                    .cloned()
                    .map_err(|e| err(errors::ER_UNKNOWN_ERROR, b"HY000", e.to_string()))?,
            ),
            None => None,
        };
        if let Some(g) = &generator {
            check_id_type(rule, g.kind(), &meta, table)?;
        }
        let n = row_count(a);
        let existing = id_index(a, &meta, &rule.id_column);

        // Which rows get a generated id, as AUTO_INCREMENT decides.
        let mut wants = vec![false; n];
        let mut ids: Vec<RowId> = Vec::with_capacity(n);
        let mut zero_seen = false;
        for (row, want) in wants.iter_mut().enumerate() {
            let v = existing.and_then(|_| value_of(a, &meta, row, &rule.id_column));
            match v.map(|v| &v.kind) {
                None | Some(ValueKind::Null) | Some(ValueKind::Default) => *want = true,
                Some(k) if means_zero(k) => {
                    zero_seen = true;
                    *want = true;
                }
                Some(ValueKind::Placeholder(_)) => {
                    return Err(err(
                        sql::ER_PARSE_ERROR,
                        b"42000",
                        "a `?` placeholder outside a prepared statement",
                    ))
                }
                Some(_) => {}
            }
        }
        if zero_seen && self.no_auto_value_on_zero().await? {
            for (row, want) in wants.iter_mut().enumerate() {
                let v = existing.and_then(|_| value_of(a, &meta, row, &rule.id_column));
                if v.is_some_and(|v| means_zero(&v.kind)) {
                    *want = false;
                }
            }
        }
        let generate = generator.is_some();
        for (row, want) in wants.iter().enumerate() {
            if *want && generate {
                ids.push(RowId::Generated(0));
                continue;
            }
            let v = existing.and_then(|_| value_of(a, &meta, row, &rule.id_column));
            if generate && rule.explicit_ids == ExplicitIds::Reject {
                return Err(err(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!(
                        "Explicit value for `{}`.`{}` rejected (explicit_ids: reject): leave the column out or pass NULL and idgate generates it",
                        table, rule.id_column
                    ),
                ));
            }
            ids.push(RowId::Explicit(match v.map(|v| &v.kind) {
                Some(ValueKind::Int(i)) => Some(*i),
                _ => None,
            }));
        }
        let first_generated = match &generator {
            Some(g) => self.generate(g, rule, a, &meta, &mut ids).await?,
            None => None,
        };

        // Shards.
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        let mut broadcast = false;
        match &rule.placement {
            Placement::Single { backend } => groups.push((backend.clone(), (0..n).collect())),
            Placement::Broadcast { backends } => {
                broadcast = true;
                for b in backends {
                    groups.push((b.clone(), (0..n).collect()));
                }
            }
            Placement::Sharded {
                columns,
                algorithm,
                shards,
            } => {
                let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); shards.len()];
                for (row, id) in ids.iter().enumerate() {
                    let mut value = None;
                    let mut used = "";
                    for c in columns {
                        used = c;
                        if c.eq_ignore_ascii_case(&rule.id_column) {
                            value = match id {
                                RowId::Generated(id) => Some(ShardValue::Int(*id as i128)),
                                RowId::GeneratedText(t) => Some(ShardValue::Str(t.clone())),
                                RowId::Explicit(_) => {
                                    value_of(a, &meta, row, c).and_then(shard_value)
                                }
                            };
                        } else {
                            value = value_of(a, &meta, row, c).and_then(shard_value);
                        }
                        if value.is_some() {
                            break;
                        }
                    }
                    let Some(value) = value else {
                        return Err(err(
                            errors::ER_UNKNOWN_ERROR,
                            b"HY000",
                            format!(
                                "Row {} of the INSERT into `{table}` gives no literal value for its sharding column `{used}`; \
                                 idgate needs it to choose the shard",
                                row + 1
                            ),
                        ));
                    };
                    let s = algorithm
                        .shard_of(&value, shards.len(), used)
                        .map_err(|e| err(errors::ER_UNKNOWN_ERROR, b"HY000", e.to_string()))?;
                    by_shard[s].push(row);
                }
                for (s, rows) in by_shard.into_iter().enumerate() {
                    if !rows.is_empty() {
                        groups.push((shards[s].clone(), rows));
                    }
                }
            }
        }

        // Render each part with its rows' ids. The first generated id is written as
        // LAST_INSERT_ID(id): the backend then reports it and remembers it for the session,
        // exactly as after an AUTO_INCREMENT insert (also for LAST_INSERT_ID() inside later SQL).
        let lid_text = first_generated.map(|id| format!("LAST_INSERT_ID({id})").into_bytes());
        let mut lid_backend = None;
        let mut parts = Vec::with_capacity(groups.len());
        for (backend, rows) in groups {
            let sql = if generate {
                let values: Vec<IdValue> = rows
                    .iter()
                    .map(|&r| match (&ids[r], &lid_text) {
                        (RowId::Generated(id), Some(t))
                            if Some(*id) == first_generated
                                && lid_backend.get_or_insert_with(|| backend.clone())
                                    == &backend =>
                        {
                            IdValue::Text(t)
                        }
                        (RowId::Generated(id), _) => IdValue::Literal(*id),
                        (RowId::GeneratedText(t), _) => IdValue::Text(t),
                        (RowId::Explicit(_), _) => IdValue::Keep,
                    })
                    .collect();
                let fill = IdFill {
                    column: &rule.id_column,
                    existing,
                    values: &values,
                };
                if existing.is_none() && values.iter().all(|v| matches!(v, IdValue::Keep)) {
                    return Err(err(
                        errors::ER_UNKNOWN_ERROR,
                        b"HY000",
                        "idgate: no id to fill",
                    ));
                }
                sql::render_insert(stmt, a, &fill, &rows).map_err(SqlError::from)?
            } else if rows.len() == n {
                stmt.to_vec()
            } else {
                let values = vec![IdValue::Keep; rows.len()];
                let fill = IdFill {
                    column: &rule.id_column,
                    existing: Some(existing.unwrap_or(0)),
                    values: &values,
                };
                sql::render_insert(stmt, a, &fill, &rows).map_err(SqlError::from)?
            };
            parts.push((backend, sql, rows));
        }
        // MySQL reports the first generated id; with only explicit ids, the last row's value.
        let insert_id = match first_generated {
            Some(id) => id,
            None => ids
                .iter()
                .rev()
                .find_map(|r| match r {
                    RowId::Explicit(Some(v)) if *v > 0 => Some(*v as u64),
                    _ => None,
                })
                .unwrap_or(0),
        };
        Ok(InsertPlan {
            parts,
            broadcast,
            insert_id,
            first_generated,
            lid_backend,
        })
    }

    /// Fills the `Generated` slots of `ids`; returns the first numeric id.
    async fn generate(
        &mut self,
        g: &Arc<crate::idgen::Generator>,
        rule: &TableRule,
        a: &InsertAnalysis,
        meta: &TableMeta,
        ids: &mut [RowId],
    ) -> Result<Option<u64>, SqlError> {
        let slots: Vec<usize> = ids
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, RowId::Generated(_)))
            .map(|(i, _)| i)
            .collect();
        if slots.is_empty() {
            return Ok(None);
        }
        let gen_err = |e: crate::idgen::IdGenError| {
            err(errors::ER_UNKNOWN_ERROR, b"HY000", format!("idgate: {e}"))
        };
        match g.kind() {
            "uuidv7" => {
                let mut out = Vec::with_capacity(slots.len());
                g.next_uuids(slots.len(), &mut out).map_err(gen_err)?;
                let binary = meta
                    .column_type(&rule.id_column)
                    .is_some_and(|t| t.starts_with("binary"));
                for (slot, u) in slots.iter().zip(out) {
                    let text = if binary {
                        let hex: String = u.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
                        format!("x'{hex}'").into_bytes()
                    } else {
                        let mut t = b"'".to_vec();
                        t.extend_from_slice(&u.to_hyphenated());
                        t.push(b'\'');
                        t
                    };
                    ids[*slot] = RowId::GeneratedText(text);
                }
                Ok(None)
            }
            "biased" => {
                let column = rule.bias_column.clone().unwrap_or_default();
                let mut bias = Vec::with_capacity(slots.len());
                for &row in &slots {
                    let v = value_of(a, meta, row, &column).and_then(shard_value);
                    let b = match v {
                        Some(ShardValue::Int(i)) => Some(i as u64),
                        Some(ShardValue::Str(s)) => std::str::from_utf8(&s)
                            .ok()
                            .and_then(|s| s.trim().parse::<i128>().ok())
                            .map(|i| i as u64),
                        None => None,
                    };
                    let Some(b) = b else {
                        return Err(err(
                            errors::ER_UNKNOWN_ERROR,
                            b"HY000",
                            format!(
                                "Row {} of the INSERT into `{}` needs an integer literal for `{column}`: the id's low bits copy it",
                                row + 1,
                                a.table.name
                            ),
                        ));
                    };
                    bias.push(b);
                }
                let mut out = Vec::with_capacity(slots.len());
                g.next_biased(&bias, &mut out).await.map_err(gen_err)?;
                for (slot, id) in slots.iter().zip(&out) {
                    ids[*slot] = RowId::Generated(*id);
                }
                Ok(out.first().copied())
            }
            _ => {
                let block = match g.try_next_block(slots.len() as u64) {
                    Some(b) => b,
                    None => g.next_block(slots.len() as u64).await.map_err(gen_err)?,
                };
                for (slot, id) in slots.iter().zip(block.iter()) {
                    ids[*slot] = RowId::Generated(id);
                }
                Ok(Some(block.first))
            }
        }
    }

    /// Runs a planned INSERT. `Ok(false)`: the client got an error.
    pub(super) async fn run_insert(&mut self, plan: InsertPlan, more: bool) -> Result<bool, End> {
        let adj = Adjust {
            insert_id: Some(plan.insert_id),
            insert_id_needs_rows: plan.first_generated.is_none(),
            more_results: more,
            ..Adjust::default()
        };
        let ok = if plan.parts.len() == 1 {
            let (backend, sql, _) = &plan.parts[0];
            let i = match self.lease_index(backend).await {
                Ok(i) => i,
                Err(e) => {
                    self.send_error(&e);
                    return Ok(false);
                }
            };
            self.join_transaction(i).await?;
            if plan.first_generated.is_some()
                && plan.lid_backend.as_deref() == Some(self.proxy.default_pool.name.as_str())
            {
                // This INSERT writes LAST_INSERT_ID(id) on the default backend itself: a value
                // still waiting to be carried there is superseded, and sending it first would
                // only cost the backend a statement. If the INSERT fails, the session's value
                // is put back below.
                self.lid_sync = None;
            }
            let packet = crate::wire::command::query_packet(sql);
            if let Some(end) = self.relay_on(i, &packet, Reply::Results, None, adj).await {
                return Err(end);
            }
            self.last_ok
        } else {
            self.run_on_shards(&plan, adj).await?
        };
        if let Some(id) = plan.first_generated {
            let on_default =
                plan.lid_backend.as_deref() == Some(self.proxy.default_pool.name.as_str());
            if ok {
                self.last_insert_id = Some(id);
                // The default backend holds the id already when the first row went there (in a
                // single- or a multi-shard INSERT); a value still waiting to be carried there is
                // older and must not overwrite it.
                self.lid_sync = (!on_default).then_some(id);
            } else if on_default {
                // The failed statement may have set LAST_INSERT_ID(id) on the backend; MySQL
                // leaves it undefined after an error, idgate puts the session's value back.
                self.lid_sync = self.last_insert_id;
            }
        }
        Ok(ok)
    }
}

/// ON DUPLICATE KEY UPDATE of a sharding column (or the id of a sharded table) would leave the
/// row on a shard that no longer owns it.
fn refuse_moving_update(stmt: &[u8], rule: &TableRule) -> Result<(), SqlError> {
    let Placement::Sharded { columns, .. } = &rule.placement else {
        return Ok(());
    };
    let assigned = crate::sql::duplicate_update_columns(stmt).map_err(SqlError::from)?;
    match assigned.iter().find(|c| {
        columns.iter().any(|s| s.eq_ignore_ascii_case(c)) || c.eq_ignore_ascii_case(&rule.id_column)
    }) {
        Some(c) => Err(err(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            format!(
                "ON DUPLICATE KEY UPDATE of `{c}` in sharded table `{}` would move the row to another shard; \
                 update the other columns only, or delete the row and insert it again",
                rule.name
            ),
        )),
        None => Ok(()),
    }
}

/// A value MySQL stores as 0 in an integer id column, which AUTO_INCREMENT replaces with a new
/// id: `0`, and strings such as '0' or ' 00' that convert to it.
fn means_zero(k: &ValueKind) -> bool {
    match k {
        ValueKind::Int(0) => true,
        ValueKind::Str(s) => {
            std::str::from_utf8(s)
                .ok()
                .and_then(|t| t.trim().parse::<i128>().ok())
                == Some(0)
        }
        _ => false,
    }
}
