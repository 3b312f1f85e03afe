//! `LOAD DATA LOCAL INFILE` into a table idgate places or fills ids for: the session finds the
//! table's columns, how a row of the client's file maps onto them and the LOAD each backend
//! runs; the load itself is a primitive (`exec::primitives::load_data`) run through the
//! session's cursor, and the session answers with its one OK.

use tokio::io::{AsyncRead, AsyncWrite};

use super::StatementExec;
use crate::exec::primitives::load_data;
use crate::exec::primitives::load_rows::RowPlan;
use crate::route::{Placement, TableRule};
use crate::session::End;
use crate::sql::{self, LoadData, OnDuplicate, Target};
use crate::wire::errors::SqlError;

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

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> StatementExec<'_, R, W> {
    /// Runs `LOAD DATA LOCAL INFILE` into `rule`'s table. `Ok(Err(e))`: the client is to get
    /// `e`.
    pub(super) async fn load_data(
        &mut self,
        ld: LoadData,
        rule: &TableRule,
        more: bool,
    ) -> Result<Result<(), SqlError>, End> {
        let schema = match (&ld.table.schema, &self.session.db) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => String::from_utf8_lossy(d).into_owned(),
            (None, None) => return Ok(Err(SqlError::new(1046, b"3D000", "No database selected"))),
        };
        if self
            .session
            .proxy
            .unique
            .keys_of(&schema, &ld.table.name)
            .is_some()
        {
            return Ok(Err(crate::unique::load_data_refusal(&ld.table.name)));
        }
        let replace = ld.on_duplicate == crate::sql::OnDuplicate::Replace;
        if let Err(e) = crate::route::unique_keys::per_shard_key_load(replace, rule) {
            return Ok(Err(e));
        }
        let (targets, row_plan) = match self.load_targets(&ld, rule, &schema).await {
            Ok(t) => t,
            Err(e) => return Ok(Err(e)),
        };
        let stmt = backend_statement(&ld, &schema, &targets);
        let loaded = load_data::load(self, &ld, rule, &row_plan, (&stmt, &schema)).await?;
        match loaded {
            Ok((ok, first_generated)) => {
                self.answer_bulk(&ok, first_generated, more);
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
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
        let generator = self.generator_of(rule)?;
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
        // As in an INSERT: 0 asks for an id whatever the backend's column says.
        let zero_is_value = generator.is_some() && self.no_auto_value_on_zero().await?;
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
}
