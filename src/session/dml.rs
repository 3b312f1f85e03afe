//! SELECT, UPDATE, DELETE and DDL about sharded or broadcast tables: sent to the shards that own
//! the rows the WHERE pins down, or to all of them, and answered as one table would answer.
//! Shapes that would need a merge idgate does not do yet get a clear error, never a partial answer.

use std::collections::BTreeSet;

use tokio::io::{AsyncRead, AsyncWrite};

use super::insert::InsertPlan;
use super::{End, Session};
use crate::exec::relay::{Adjust, Client, Reply};
use crate::exec::scatter;
use crate::exec::BackendError;
use crate::route::{Placement, ShardValue, TableRule};
use crate::sql::{self, DmlAnalysis, DmlKind, KeyValue};
use crate::wire::errors::{self, SqlError};

/// Where a statement about placed tables goes and how the answers combine.
pub(super) enum Route {
    /// One backend answers as it is.
    One(String),
    /// A SELECT on several shards: rows concatenated.
    Concat(Vec<String>),
    /// UPDATE/DELETE on several shards, all-or-nothing; `broadcast`: every backend holds the
    /// same rows, so one backend's counts are the answer.
    Write {
        backends: Vec<String>,
        broadcast: bool,
    },
    /// DDL on every backend of the table, one after the other.
    Everywhere(Vec<String>),
    /// A SELECT on several shards whose answers merge (ORDER BY, LIMIT, GROUP BY, aggregates,
    /// HAVING, DISTINCT): each shard runs the plan's statement.
    Merge(Vec<String>, Box<sql::MergePlan>),
}

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

fn key_value(v: &KeyValue) -> Option<ShardValue> {
    match v {
        KeyValue::Int(i) => Some(ShardValue::Int(*i)),
        KeyValue::Str(s) => Some(ShardValue::Str(s.clone())),
        KeyValue::Placeholder(_) => None,
    }
}

/// The shards (indices) the WHERE restricts a sharded table to; `None`: all of them.
pub(super) fn pinned_shards(
    rule: &TableRule,
    a: &DmlAnalysis,
) -> Result<Option<BTreeSet<usize>>, SqlError> {
    let Placement::Sharded {
        columns,
        algorithm,
        shards,
    } = &rule.placement
    else {
        return Ok(None);
    };
    for c in columns {
        let Some((_, values)) = a.keys.iter().find(|(k, _)| k.eq_ignore_ascii_case(c)) else {
            continue;
        };
        let mut set = BTreeSet::new();
        for v in values {
            let Some(v) = key_value(v) else {
                return Ok(None);
            };
            // A value that is not plainly an integer ('12abc', 1.5) compares by MariaDB's
            // conversion rules: every shard decides for itself.
            if !v.pins_reads() {
                return Ok(None);
            }
            let Ok(s) = algorithm.shard_of(&v, shards.len(), c) else {
                return Ok(None);
            };
            set.insert(s);
        }
        return Ok(Some(set));
    }
    Ok(None)
}

/// Where rows of a sharded table live: tables placed alike keep equal sharding values together.
fn placement_key(rule: &TableRule) -> Option<(&crate::route::Algorithm, &[String], Vec<String>)> {
    match &rule.placement {
        Placement::Sharded {
            columns,
            algorithm,
            shards,
        } => {
            // Under `slot` every sharding column carries the same low bits (a biased id and its
            // bias column), so a join on any of them stays on one shard.
            let usable = match algorithm {
                crate::route::Algorithm::Slot { .. } => columns.len(),
                _ => 1,
            };
            let cols = columns
                .iter()
                .take(usable)
                .map(|c| c.to_lowercase())
                .collect();
            Some((algorithm, shards, cols))
        }
        _ => None,
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// A statement naming several sharded tables runs per shard only when every one is a table
    /// of its own FROM, joined (through `=` on sharding columns, in ON or WHERE) to the first,
    /// all placed alike: then each shard holds every pair of rows that can join.
    fn check_colocated(&self, a: &DmlAnalysis, rule: &TableRule) -> Result<(), SqlError> {
        if let Some(single) = a
            .relations
            .iter()
            .filter_map(|t| self.rule_for(t))
            .find(|r| matches!(r.placement, Placement::Single { .. }))
        {
            return Err(unsupported(format!(
                "statements over sharded table `{}` together with `{}` (on the default backend only) \
                 are not supported yet; join sharded tables only with broadcast tables",
                rule.name, single.name
            )));
        }
        let top: Vec<(&sql::TopTable, TableRule)> = a
            .from
            .iter()
            .filter_map(|f| Some((f, self.rule_for(&f.table)?)))
            .filter(|(_, r)| placement_key(r).is_some())
            .collect();
        let named: Vec<TableRule> = a
            .relations
            .iter()
            .filter_map(|t| self.rule_for(t))
            .filter(|r| placement_key(r).is_some())
            .collect();
        if named.len() > top.len() {
            let inner = named
                .iter()
                .find(|r| {
                    !top.iter()
                        .any(|(_, t)| t.name.eq_ignore_ascii_case(&r.name))
                })
                .unwrap_or(rule);
            return Err(unsupported(format!(
                "sharded table `{}` inside a subquery is not supported yet",
                inner.name
            )));
        }
        let mut linked = vec![false; top.len()];
        if let Some(first) = linked.first_mut() {
            *first = true;
        }
        let joined = |i: usize, j: usize| {
            let (Some(ki), Some(kj)) = (placement_key(&top[i].1), placement_key(&top[j].1)) else {
                return false;
            };
            let on_keys = ki.2.iter().any(|x| {
                kj.2.iter().any(|y| {
                    let ci = (top[i].0.qualifier.clone(), x.clone());
                    let cj = (top[j].0.qualifier.clone(), y.clone());
                    a.equal_columns
                        .iter()
                        .any(|(l, r)| (*l == ci && *r == cj) || (*l == cj && *r == ci))
                })
            });
            ki.0.places_like(kj.0, ki.1.len()) && ki.1 == kj.1 && on_keys
        };
        let mut grew = true;
        while grew {
            grew = false;
            for j in 0..top.len() {
                if !linked[j] && (0..top.len()).any(|i| linked[i] && joined(i, j)) {
                    linked[j] = true;
                    grew = true;
                }
            }
        }
        if let Some(j) = linked.iter().position(|l| !l) {
            return Err(unsupported(format!(
                "a join of sharded table `{}` with sharded table `{}` is not supported unless they \
                 are sharded alike (same algorithm and shards) and joined on their sharding columns \
                 (`{}.{}` = `{}.{}`)",
                top[0].1.name,
                top[j].1.name,
                top[0].0.qualifier,
                placement_key(&top[0].1).and_then(|k| k.2.first().cloned()).unwrap_or_default(),
                top[j].0.qualifier,
                placement_key(&top[j].1).and_then(|k| k.2.first().cloned()).unwrap_or_default(),
            )));
        }
        Ok(())
    }

    pub(super) fn rule_for(&self, t: &sql::TableRef) -> Option<TableRule> {
        let schema = t.schema.clone().or_else(|| {
            self.db
                .as_ref()
                .map(|d| String::from_utf8_lossy(d).into_owned())
        });
        self.proxy
            .tables
            .lookup(schema.as_deref(), &t.name)
            .cloned()
    }

    /// Routes a statement that names a configured table. `Ok(None)`: forward it as it is.
    pub(super) fn route_dml(&self, stmt: &[u8]) -> Result<Option<Route>, SqlError> {
        let a = match sql::analyze_dml(stmt) {
            Ok(a) => a,
            Err(e) => {
                // Unparsable: fine for tables on the default backend only.
                let mentions_placed = self.proxy.tables.placed_mentioned_in(stmt);
                return if mentions_placed {
                    Err(e.into())
                } else {
                    Ok(None)
                };
            }
        };
        let rules: Vec<TableRule> = if a.kind == DmlKind::Ddl {
            self.proxy
                .tables
                .placed_rules_named_in(stmt)
                .into_iter()
                .cloned()
                .collect()
        } else {
            a.relations
                .iter()
                .filter_map(|t| self.rule_for(t))
                .collect()
        };
        let placed: Vec<&TableRule> = rules
            .iter()
            .filter(|r| !matches!(r.placement, Placement::Single { .. }))
            .collect();
        if placed.is_empty() {
            return Ok(None);
        }
        if a.kind == DmlKind::Ddl {
            let mut backends: Vec<String> = Vec::new();
            for r in &placed {
                for b in r.backends() {
                    if !backends.contains(b) {
                        backends.push(b.clone());
                    }
                }
            }
            return Ok(Some(Route::Everywhere(backends)));
        }
        let sharded: Vec<&TableRule> = placed
            .iter()
            .copied()
            .filter(|r| matches!(r.placement, Placement::Sharded { .. }))
            .collect();
        let Some(rule) = sharded.first().copied() else {
            // Only broadcast tables: every backend has the rows.
            return Ok(match a.kind {
                DmlKind::Select => None,
                _ => Some(Route::Write {
                    backends: placed[0].backends().to_vec(),
                    broadcast: true,
                }),
            });
        };
        self.check_colocated(&a, rule)?;
        let is_target = a
            .target
            .as_ref()
            .is_some_and(|t| t.name.eq_ignore_ascii_case(&rule.name));
        if !is_target {
            return Err(unsupported(format!(
                "sharded table `{}` inside a subquery or join is not supported yet",
                rule.name
            )));
        }
        if let Placement::Sharded { columns, .. } = &rule.placement {
            if let Some(c) = a.assigned.iter().find(|c| {
                columns.iter().any(|s| s.eq_ignore_ascii_case(c))
                    || c.eq_ignore_ascii_case(&rule.id_column)
            }) {
                return Err(SqlError::new(
                    errors::ER_UNKNOWN_ERROR,
                    b"HY000",
                    format!(
                        "UPDATE of `{c}` in sharded table `{}` would move the row to another shard; \
                         delete the row and insert it again instead",
                        rule.name
                    ),
                ));
            }
        }
        let shards = rule.backends();
        let targets: Vec<String> = match pinned_shards(rule, &a)? {
            Some(set) => set.into_iter().map(|i| shards[i].clone()).collect(),
            None => shards.to_vec(),
        };
        if targets.len() == 1 {
            return Ok(Some(Route::One(targets[0].clone())));
        }
        if targets.is_empty() {
            return Ok(Some(Route::One(shards[0].clone())));
        }
        if let (DmlKind::Select, Some(plan)) = (a.kind, a.merge_plan(stmt)) {
            return match plan {
                Ok(p) => Ok(Some(Route::Merge(targets, Box::new(p)))),
                Err(what) => Err(unsupported(format!(
                    "this SELECT on sharded table `{}` reaches {} shards, and idgate cannot merge their \
                     answers for {what}; pin it to one shard with a condition on the sharding column",
                    rule.name,
                    targets.len()
                ))),
            };
        }
        if let Some(why) = a.needs_merge {
            return Err(unsupported(format!(
                "this statement on sharded table `{}` reaches {} shards and needs {why} across them, \
                 which idgate does not merge yet; pin it to one shard with a condition on the sharding column",
                rule.name,
                targets.len()
            )));
        }
        Ok(Some(match a.kind {
            DmlKind::Select => Route::Concat(targets),
            _ => Route::Write {
                backends: targets,
                broadcast: false,
            },
        }))
    }

    /// Runs a routed statement. `Ok(false)`: the client got an error.
    pub(super) async fn run_routed(
        &mut self,
        stmt: &[u8],
        packet: &[u8],
        route: Route,
        more: bool,
    ) -> Result<bool, End> {
        let adj = Adjust {
            more_results: more,
            ..Adjust::default()
        };
        match route {
            Route::One(backend) => self.run_one(&backend, packet, adj).await,
            Route::Write {
                backends,
                broadcast,
            } => {
                let plan = InsertPlan {
                    parts: backends
                        .into_iter()
                        .map(|b| (b, stmt.to_vec(), Vec::new()))
                        .collect(),
                    broadcast,
                    insert_id: 0,
                    first_generated: None,
                    lid_backend: None,
                };
                self.run_on_shards(&plan, adj).await
            }
            Route::Concat(backends) => self.run_concat(&backends, packet, adj).await,
            Route::Everywhere(backends) => self.run_everywhere(&backends, packet, adj).await,
            Route::Merge(backends, plan) => self.run_merge(&backends, &plan, adj, false).await,
        }
    }

    /// Sends `packet` to each backend (joining the client's transaction first), pipelined.
    /// `Ok(None)`: a connection could not be had and the client was told.
    pub(super) async fn send_to_all(
        &mut self,
        backends: &[String],
        packet: &[u8],
    ) -> Result<Option<Vec<usize>>, End> {
        let mut idx = Vec::with_capacity(backends.len());
        for b in backends {
            match self.lease_index(b).await {
                Ok(i) => idx.push(i),
                Err(e) => {
                    self.send_error(&e);
                    return Ok(None);
                }
            }
        }
        for &i in &idx {
            self.join_transaction(i).await?;
            self.leases.get_mut(i).write_command(packet);
        }
        for &i in &idx {
            if let Err(e) = self.leases.get_mut(i).flush().await {
                return Err(self.backend_lost(e));
            }
        }
        Ok(Some(idx))
    }

    /// Relays the statement on one backend (joining the client's transaction first).
    async fn run_one(&mut self, backend: &str, packet: &[u8], adj: Adjust) -> Result<bool, End> {
        let i = match self.lease_index(backend).await {
            Ok(i) => i,
            Err(e) => {
                self.send_error(&e);
                return Ok(false);
            }
        };
        self.join_transaction(i).await?;
        if let Some(end) = self.relay_on(i, packet, Reply::Results, None, adj).await {
            return Err(end);
        }
        Ok(self.last_ok)
    }

    async fn run_concat(
        &mut self,
        backends: &[String],
        packet: &[u8],
        adj: Adjust,
    ) -> Result<bool, End> {
        let Some(idx) = self.send_to_all(backends, packet).await? else {
            return Ok(false);
        };
        let deprecate_eof = self.deprecate_eof();
        // Answer in the order the shards are configured.
        let mut conns = self.leases.conns(&idx);
        let mut client = Client {
            writer: &mut self.writer,
            deprecate_eof,
        };
        let add = if adj.more_results {
            mysql_common::constants::StatusFlags::SERVER_MORE_RESULTS_EXISTS.bits()
        } else {
            0
        };
        match scatter::relay_concat(&mut conns, &mut client, add).await {
            Ok(r) => {
                self.last_ok = !r.error;
                Ok(!r.error)
            }
            Err(BackendError::ClientGone(_)) => Err(End::ClientGone),
            Err(e) => Err(self.backend_lost(e)),
        }
    }

    /// Sends the plan's statement to every shard and merges their answers (`binary`: for a
    /// prepared statement, rows in the binary protocol).
    pub(super) async fn run_merge(
        &mut self,
        backends: &[String],
        plan: &sql::MergePlan,
        adj: Adjust,
        binary: bool,
    ) -> Result<bool, End> {
        let mut packet = Vec::with_capacity(plan.shard_sql.len() + 1);
        packet.push(mysql_common::constants::Command::COM_QUERY as u8);
        packet.extend_from_slice(&plan.shard_sql);
        let Some(idx) = self.send_to_all(backends, &packet).await? else {
            return Ok(false);
        };
        let status = self.status_with(adj.more_results).bits();
        let deprecate_eof = self.deprecate_eof();
        let mut conns = self.leases.conns(&idx);
        let mut client = Client {
            writer: &mut self.writer,
            deprecate_eof,
        };
        let memory_limit = self.proxy.config.merge_memory_limit;
        let merged = crate::exec::merge::relay_merged(
            &mut conns,
            &mut client,
            plan,
            status,
            binary,
            memory_limit,
        )
        .await;
        match merged {
            Ok(Ok(r)) => {
                self.last_ok = !r.error;
                self.note_merged_rows(r.rows);
                Ok(!r.error)
            }
            Ok(Err(msg)) => {
                self.send_error(&unsupported(msg));
                Ok(false)
            }
            Err(BackendError::ClientGone(_)) => Err(End::ClientGone),
            Err(e) => Err(self.backend_lost(e)),
        }
    }

    /// DDL on each backend in turn; the first backend's answer is the client's, a failure on any
    /// backend stops there and names it.
    async fn run_everywhere(
        &mut self,
        backends: &[String],
        packet: &[u8],
        adj: Adjust,
    ) -> Result<bool, End> {
        let (first, rest) = match backends.split_first() {
            Some(x) => x,
            None => return Ok(true),
        };
        for b in rest {
            let i = match self.lease_index(b).await {
                Ok(i) => i,
                Err(e) => {
                    self.send_error(&e);
                    return Ok(false);
                }
            };
            let be = self.leases.get_mut(i);
            be.write_command(packet);
            if let Err(e) = be.flush().await {
                return Err(self.backend_lost(e));
            }
            match crate::exec::collect::collect(be).await {
                Ok(crate::exec::collect::Collected::Err(e)) => {
                    let (code, state, msg) = crate::wire::packets::parse_err(&e);
                    self.send_error(&SqlError::new(
                        code,
                        &state,
                        format!("{} (on backend `{b}`)", String::from_utf8_lossy(msg)),
                    ));
                    return Ok(false);
                }
                Ok(_) => {}
                Err(e) => return Err(self.backend_lost(e)),
            }
        }
        self.proxy.metadata.clear();
        self.run_one(first, packet, adj).await
    }
}
