//! `SHOW [FULL] PROCESSLIST` answered with idgate's sessions. The ids are the ones their clients
//! got at login (what `CONNECTION_ID()` answers and `KILL` takes), users and hosts are idgate's,
//! and what a busy session runs (State, Info, Progress) is read from the backend threads it
//! holds. The columns are described as MariaDB 10.11 describes them. As on MariaDB without the
//! PROCESS right, a user sees its own user's sessions; an idgate admin sees every session.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mysql_common::collations::{Collation, CollationId};
use mysql_common::constants::{ColumnFlags, ColumnType};

use super::result_set::{num, text, ResultSet};
use crate::proxy::sessions::Row;
use crate::proxy::Proxy;
use crate::wire::packets;

/// The whole look at the backends (connections included) may take this long; past it busy
/// sessions show without State and Info.
pub(super) const BACKEND_LOOK: Duration = Duration::from_secs(3);

/// MariaDB's PROCESS_LIST_WIDTH: Info is cut to this many characters without FULL.
const INFO_WIDTH: usize = 100;

/// Who asks: the user, its session, the statement it sent (its own row's Info) and the
/// collation it logged in with (the text columns come in its character set, as MariaDB sends
/// them in `character_set_results`).
pub struct Caller<'a> {
    pub user: &'a [u8],
    pub session: u32,
    pub statement: &'a [u8],
    pub collation: u16,
}

/// What a backend says one of its threads is doing.
#[derive(Debug, Clone, Default)]
pub(super) struct Activity {
    pub state: Option<String>,
    pub info: Option<String>,
    pub progress: Option<String>,
    pub sleeping: bool,
    /// The backend whose thread this is.
    pub backend: String,
    /// TIME_MS, STAGE, MAX_STAGE, MEMORY_USED, MAX_MEMORY_USED, EXAMINED_ROWS, QUERY_ID, TID.
    pub figures: Vec<Option<String>>,
}

/// The sessions `user` may see: its own user's, or every one for an idgate admin.
pub(super) fn visible_to(proxy: &Proxy, user: &[u8]) -> Vec<Row> {
    let admin = proxy.user(user).is_some_and(|u| u.admin);
    let me = String::from_utf8_lossy(user);
    proxy
        .sessions
        .rows()
        .into_iter()
        .filter(|r| admin || r.user == me)
        .collect()
}

pub async fn answer(proxy: &Arc<Proxy>, caller: Caller<'_>, full: bool) -> ResultSet {
    let rows = visible_to(proxy, caller.user);
    let busy: Vec<u32> = rows
        .iter()
        .filter(|r| r.command != "Sleep" && r.id != caller.session)
        .map(|r| r.id)
        .collect();
    let activity = tokio::time::timeout(BACKEND_LOOK, activity(proxy, &busy, true))
        .await
        .unwrap_or_default();
    let mut rs = ResultSet {
        columns: columns(full, results_charset(caller.collation)),
        rows: Vec::new(),
    };
    for r in rows {
        let a = if r.id == caller.session {
            Activity {
                state: Some("starting".into()),
                info: Some(String::from_utf8_lossy(caller.statement).into_owned()),
                ..Default::default()
            }
        } else {
            activity.get(&r.id).cloned().unwrap_or_default()
        };
        let info = a.info.map(|i| {
            if full {
                i
            } else {
                i.chars().take(INFO_WIDTH).collect()
            }
        });
        rs.row(&[
            num(r.id),
            text(r.user),
            text(r.host),
            r.db,
            text(r.command),
            num(r.time_s),
            Some(a.state.unwrap_or_default()),
            info,
            Some(a.progress.unwrap_or_else(|| "0.000".into())),
        ]);
    }
    rs
}

/// For each of `sessions`, what the first of its backend threads that is not sleeping runs
/// (`busy_only`: only such threads; otherwise a sleeping one when none is busy).
pub(super) async fn activity(
    proxy: &Arc<Proxy>,
    sessions: &[u32],
    busy_only: bool,
) -> HashMap<u32, Activity> {
    // (Backend, node) -> its threads, and each thread's session.
    type Node = (String, Option<String>);
    let mut threads: HashMap<Node, Vec<(u32, u32)>> = HashMap::new();
    for &id in sessions {
        let Some(info) = proxy.sessions.find(id) else {
            continue;
        };
        let held = info.conns().lock().await.conns.clone();
        for t in held {
            threads
                .entry((t.backend, t.node))
                .or_default()
                .push((t.id, id));
        }
    }
    let mut out = HashMap::new();
    for ((backend, node), list) in threads {
        let found = backend_threads(proxy, &backend, node.as_deref(), &list, busy_only).await;
        let Ok(found) = found else {
            continue;
        };
        for (thread, session) in list {
            if let Some(a) = found.get(&thread) {
                let kept: &mut Activity = out.entry(session).or_insert_with(|| a.clone());
                if kept.sleeping && !a.sleeping {
                    *kept = a.clone();
                }
            }
        }
    }
    out
}

/// The threads of `list` on `backend` that are running something, over a connection of its
/// own (the sessions' are busy).
async fn backend_threads(
    proxy: &Proxy,
    backend: &str,
    node: Option<&str>,
    list: &[(u32, u32)],
    busy_only: bool,
) -> Result<HashMap<u32, Activity>, crate::exec::BackendError> {
    let ids: Vec<String> = list.iter().map(|(t, _)| t.to_string()).collect();
    let sql = format!(
        "SELECT ID, STATE, INFO, PROGRESS, COMMAND = 'Sleep', TIME_MS, STAGE, MAX_STAGE, \
         MEMORY_USED, MAX_MEMORY_USED, EXAMINED_ROWS, QUERY_ID, TID \
         FROM information_schema.PROCESSLIST WHERE {}ID IN ({})",
        if busy_only {
            "COMMAND <> 'Sleep' AND "
        } else {
            ""
        },
        ids.join(",")
    );
    let Some(mut c) = super::kill::side_connection(proxy, backend, node, BACKEND_LOOK).await?
    else {
        return Ok(HashMap::new());
    };
    let rows = c.query_rows(&sql).await;
    c.close().await;
    let value = |v: &Option<Vec<u8>>| v.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
    Ok(rows?
        .iter()
        .filter_map(|r| {
            let id = value(r.first()?)?.parse::<u32>().ok()?;
            let a = Activity {
                state: value(r.get(1)?),
                info: value(r.get(2)?),
                progress: value(r.get(3)?),
                sleeping: value(r.get(4)?).as_deref() == Some("1"),
                backend: backend.to_string(),
                figures: r.get(5..)?.iter().map(value).collect(),
            };
            Some((id, a))
        })
        .collect())
}

/// The default collation (MariaDB's) of `collation`'s character set and its longest character
/// in bytes: what MariaDB describes text columns of its own statements in.
fn results_charset(collation: u16) -> (u16, u32) {
    let asked = Collation::resolve(CollationId::from(collation));
    let charset = asked.charset();
    // MariaDB's defaults differ from MySQL 8's (utf8mb4_general_ci, not utf8mb4_0900_ai_ci):
    // latin1 keeps latin1_swedish_ci, most others are `<charset>_general_ci`.
    let general = format!("{charset}_general_ci");
    let all = || (1..=2047u16).map(|id| Collation::resolve(CollationId::from(id)));
    let default = if charset == "latin1" {
        Some(Collation::resolve(CollationId::from(8u16)))
    } else {
        all()
            .find(|c| c.collation() == general)
            .or_else(|| all().find(|c| c.is_default() && c.charset() == charset))
    };
    default.map_or((33, 3), |c| (c.id() as u16, u32::from(c.max_len())))
}

/// The columns of SHOW [FULL] PROCESSLIST, as MariaDB 10.11 sends them, the text ones in
/// `(collation, bytes per character)`.
fn columns(full: bool, (utf8, width): (u16, u32)) -> Vec<Vec<u8>> {
    const BINARY: u16 = 63;
    /// NOT_FIXED_DEC: what MariaDB puts in a string column's decimals.
    const STRING_DECIMALS: u8 = 39;
    let number = ColumnFlags::NOT_NULL_FLAG | ColumnFlags::BINARY_FLAG;
    let required = ColumnFlags::NOT_NULL_FLAG;
    let none = ColumnFlags::empty();
    let text = ColumnType::MYSQL_TYPE_VAR_STRING;
    let info = if full {
        // What MariaDB 10.11 (max_allowed_packet 16 MiB) sends for the two usual character sets.
        let units = match width {
            4 => 48,
            3 => 9,
            w => 3 * w,
        };
        (units << 24, ColumnType::MYSQL_TYPE_LONG_BLOB)
    } else {
        (INFO_WIDTH as u32 * width, text)
    };
    let defs = [
        ("Id", BINARY, 11, ColumnType::MYSQL_TYPE_LONGLONG, number, 0),
        ("User", utf8, 128 * width, text, required, STRING_DECIMALS),
        ("Host", utf8, 64 * width, text, required, STRING_DECIMALS),
        ("db", utf8, 64 * width, text, none, STRING_DECIMALS),
        ("Command", utf8, 16 * width, text, required, STRING_DECIMALS),
        ("Time", BINARY, 7, ColumnType::MYSQL_TYPE_LONG, number, 0),
        ("State", utf8, 30 * width, text, none, STRING_DECIMALS),
        ("Info", utf8, info.0, info.1, none, STRING_DECIMALS),
        (
            "Progress",
            BINARY,
            7,
            ColumnType::MYSQL_TYPE_DOUBLE,
            number,
            3,
        ),
    ];
    defs.iter()
        .map(|(name, charset, len, ty, flags, decimals)| {
            let mut def = Vec::new();
            packets::column_def(
                &mut def,
                name.as_bytes(),
                *charset,
                *len,
                *ty,
                *flags,
                *decimals,
            );
            def
        })
        .collect()
}
