//! A SELECT whose shards' rows are merged into one answer (ORDER BY, LIMIT, GROUP BY,
//! aggregates, DISTINCT): the plan's statement sent to every shard, the rows merged as the plan
//! says and written to the client in the text or binary protocol.

use std::sync::Arc;

use crate::exec::merge::NEEDS_WEIGHTS;
use crate::exec::RelayCursor;
use crate::route::{BoundMerge, KeyTypes, MergeMode, MergePlan};
use crate::sql;
use crate::wire::errors::SqlError;

/// One run of a merge: the plan, the statement each shard gets, the page, and where the plan
/// learns about its keys.
struct MergeRun<'a> {
    plan: &'a MergePlan,
    sql: &'a [u8],
    page: (u64, Option<u64>),
    learn: Option<&'a KeyTypes>,
}

fn unsupported(msg: String) -> SqlError {
    SqlError::new(sql::ER_NOT_SUPPORTED_YET, b"42000", msg)
}

/// Sends the plan's statement to every shard and merges their answers (`binary`: for a
/// prepared statement, rows in the binary protocol). A plan whose keys showed no string so far
/// runs without collation weights; if a key is a string after all (the table changed), nothing
/// has reached the client and the plan runs again with them. `Ok(false)`: the client got an
/// error.
pub async fn run<C: RelayCursor>(
    c: &mut C,
    backends: &[String],
    merge: &BoundMerge,
    more: bool,
    binary: bool,
) -> Result<bool, C::End> {
    let run = |plan, sql, learn| MergeRun {
        plan,
        sql,
        page: (merge.offset, merge.limit),
        learn,
    };
    if let Some((plan, sql)) = &merge.lean {
        match run_once(c, backends, run(plan, sql, None), more, binary).await? {
            Some(ok) => return Ok(ok),
            None => {
                if let Some(t) = &merge.key_types {
                    t.saw(true);
                }
            }
        }
    }
    let full = run(&merge.plan, &merge.shard_sql, merge.key_types.as_deref());
    match run_once(c, backends, full, more, binary).await? {
        Some(ok) => Ok(ok),
        None => {
            c.send_error(&unsupported(NEEDS_WEIGHTS.into()));
            Ok(false)
        }
    }
}

/// Runs `sql` as a text query on `backends` and writes their rows to the client in the binary
/// protocol, shard after shard (a merge plan that only concatenates): how a prepared statement
/// idgate bound and rewrote itself answers. `Ok(false)`: the client got an error.
pub async fn run_binary<C: RelayCursor>(
    c: &mut C,
    backends: &[String],
    sql: Vec<u8>,
) -> Result<bool, C::End> {
    let plan = MergePlan {
        shard_sql: sql.clone(),
        copied: Vec::new(),
        unread: 0..0,
        hidden: 0,
        mode: MergeMode::Stream,
        order: Vec::new(),
        offset: 0,
        limit: None,
        window: None,
    };
    let merge = BoundMerge {
        plan: Arc::new(plan),
        shard_sql: sql,
        offset: 0,
        limit: None,
        key_types: None,
        lean: None,
    };
    run(c, backends, &merge, false, true).await
}

/// One run of a merge. `None`: a key needs collation weights the plan did not ask for (nothing
/// was written to the client).
async fn run_once<C: RelayCursor>(
    c: &mut C,
    backends: &[String],
    run: MergeRun<'_>,
    more: bool,
    binary: bool,
) -> Result<Option<bool>, C::End> {
    let packet = crate::wire::command::query_packet(run.sql);
    let Some(idx) = c.send_to_all_or_tell(backends, &packet).await? else {
        return Ok(Some(false));
    };
    let status = c.status(more);
    let memory_limit = c.merge_memory_limit();
    let merged = {
        let (mut conns, mut client) = c.relay_parts(&idx);
        crate::exec::merge::relay_merged(
            &mut conns,
            &mut client,
            run.plan,
            run.page,
            status,
            binary,
            memory_limit,
            run.learn,
        )
        .await
    };
    match merged {
        Ok(Ok(r)) => {
            c.merged(r.rows);
            Ok(Some(!r.error))
        }
        Ok(Err(msg)) if msg == NEEDS_WEIGHTS => Ok(None),
        Ok(Err(msg)) => {
            c.send_error(&unsupported(msg));
            Ok(Some(false))
        }
        Err(e) => Err(c.failed(e)),
    }
}
