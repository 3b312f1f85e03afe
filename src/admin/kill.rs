//! `KILL [CONNECTION | QUERY] id` with the ids idgate gives its sessions (the handshake's
//! connection id, which `mysql` and Connector/J send when a statement is cancelled): the
//! statement stops on every backend connection that session holds, as ProxySQL and MaxScale map
//! it; KILL CONNECTION also ends the session. Rights as MariaDB's: a user kills its own
//! sessions, an idgate admin (MariaDB's CONNECTION ADMIN) any.

use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use crate::exec::conns::Thread;
use crate::exec::BackendConn;
use crate::proxy::Proxy;
use crate::sql::KillUserName;
use crate::wire::errors::{self, SqlError};

/// How long the whole KILL may take, the backends' answers included.
const KILL_TIMEOUT: Duration = Duration::from_secs(5);

/// MariaDB's ER_NO_SUCH_THREAD and ER_KILL_DENIED_ERROR.
pub const ER_NO_SUCH_THREAD: u16 = 1094;
pub const ER_KILL_DENIED_ERROR: u16 = 1095;

/// Kills session `id`'s running statement (`query`) or the session itself, for `caller`.
pub async fn kill(proxy: &Arc<Proxy>, caller: &[u8], id: u64, query: bool) -> Result<(), SqlError> {
    let no_such = || {
        SqlError::new(
            ER_NO_SUCH_THREAD,
            b"HY000",
            format!("Unknown thread id: {id}"),
        )
    };
    let target = u32::try_from(id)
        .ok()
        .and_then(|id| proxy.sessions.find(id))
        .ok_or_else(no_such)?;
    let own = target.user().as_bytes() == caller;
    if !own && !proxy.user(caller).is_some_and(|u| u.admin) {
        return Err(SqlError::new(
            ER_KILL_DENIED_ERROR,
            b"HY000",
            format!("You are not owner of thread {id}"),
        ));
    }
    if !query {
        // Before its backend threads go: their connections closing under a running statement
        // must read as this KILL, not as a lost backend.
        target.mark_killed();
    }
    let killed = tokio::time::timeout(KILL_TIMEOUT, async {
        // Held while killing: the session lets none of these connections go meanwhile.
        let conns = target.conns().lock().await;
        let mut failed = None;
        for t in &conns.conns {
            if let Err(e) = kill_thread(proxy, t, query).await {
                failed = Some(format!("backend `{}`: {e}", t.backend));
            }
        }
        failed
    })
    .await;
    if !query {
        target.end();
    }
    match killed {
        Ok(None) => Ok(()),
        Ok(Some(e)) => Err(SqlError::new(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            format!("idgate: KILL of session {id} did not reach every backend: {e}"),
        )),
        Err(_) => Err(SqlError::new(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            format!(
                "idgate: KILL of session {id} timed out after {} s",
                KILL_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// MariaDB's ER_NO_SUCH_QUERY and ER_KILL_QUERY_DENIED_ERROR.
pub const ER_NO_SUCH_QUERY: u16 = 1957;
pub const ER_KILL_QUERY_DENIED_ERROR: u16 = 1979;

/// `KILL QUERY ID query_id` for `caller`. Query ids are the default backend's (what its
/// `information_schema.PROCESSLIST` shows a client through idgate): the statement is killed
/// there if a session of idgate runs it and the caller may kill that session's work, never a
/// backend thread no session holds. The backend itself kills it by its id while the session's
/// connection list is held, so a statement that ended meanwhile is not mistaken for another.
pub async fn kill_query_id(
    proxy: &Arc<Proxy>,
    caller: &[u8],
    query_id: u64,
) -> Result<(), SqlError> {
    let unknown = || {
        SqlError::new(
            ER_NO_SUCH_QUERY,
            b"HY000",
            format!("Unknown query id: {query_id}"),
        )
    };
    let backend = proxy.default_pool.name.clone();
    let failed = |e: crate::exec::BackendError| {
        SqlError::new(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            format!("idgate: KILL QUERY ID did not reach backend `{backend}`: {e}"),
        )
    };
    let done = tokio::time::timeout(KILL_TIMEOUT, async {
        let writer = proxy.default_pool.topology().and_then(|t| t.writer().ok());
        let Some(mut c) = side_connection(proxy, &backend, writer.as_deref(), KILL_TIMEOUT)
            .await
            .map_err(failed)?
        else {
            return Err(unknown());
        };
        let found = c
            .query_rows(&format!(
                "SELECT ID FROM information_schema.PROCESSLIST WHERE QUERY_ID = {query_id}"
            ))
            .await;
        let thread = found
            .map_err(failed)?
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|v| String::from_utf8(v).ok())
            .and_then(|v| v.parse::<u32>().ok());
        let Some(thread) = thread else {
            c.close().await;
            return Err(unknown());
        };
        for row in proxy.sessions.rows() {
            let Some(session) = proxy.sessions.find(row.id) else {
                continue;
            };
            // Held while killing: the session lets none of these connections go meanwhile.
            let held = session.conns().lock().await;
            if !held
                .conns
                .iter()
                .any(|t| t.backend == backend && t.node == writer && t.id == thread)
            {
                continue;
            }
            let own = session.user().as_bytes() == caller;
            if !own && !proxy.user(caller).is_some_and(|u| u.admin) {
                c.close().await;
                return Err(SqlError::new(
                    ER_KILL_QUERY_DENIED_ERROR,
                    b"HY000",
                    format!("You are not owner of query {query_id}"),
                ));
            }
            let sent = c.query_drop(&format!("KILL QUERY ID {query_id}")).await;
            drop(held);
            c.close().await;
            return match sent {
                Err(crate::exec::BackendError::Server { code, .. }) if code == ER_NO_SUCH_QUERY => {
                    Err(unknown())
                }
                other => other.map_err(failed),
            };
        }
        c.close().await;
        Err(unknown())
    })
    .await;
    done.unwrap_or_else(|_| {
        Err(SqlError::new(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            format!(
                "idgate: KILL QUERY ID timed out after {} s",
                KILL_TIMEOUT.as_secs()
            ),
        ))
    })
}

/// `KILL [QUERY] USER name` for `caller` (session `self_id`): every session of that idgate
/// user. As MariaDB: a caller may kill its own user's sessions (an idgate admin any user's),
/// others are passed over without an error, and the answer counts the sessions killed, the
/// caller's own included. idgate's accounts are `name`@'%', so another host names none.
/// Returns the count and whether the caller's own session was among them (it is not killed
/// here: with `query` false it ends after its answer).
pub async fn kill_user(
    proxy: &Arc<Proxy>,
    caller: &[u8],
    self_id: u32,
    user: &KillUserName,
    query: bool,
) -> Result<(u64, bool), SqlError> {
    let target = match user {
        KillUserName::Current => String::from_utf8_lossy(caller).into_owned(),
        KillUserName::Named { host: Some(h), .. } if h != "%" => return Ok((0, false)),
        KillUserName::Named { name, .. } => name.clone(),
    };
    let admin = proxy.user(caller).is_some_and(|u| u.admin);
    if target.as_bytes() != caller && !admin {
        return Ok((0, false));
    }
    let (mut killed, mut itself, mut failed) = (0, false, None);
    for row in proxy
        .sessions
        .rows()
        .into_iter()
        .filter(|r| r.user == target)
    {
        if row.id == self_id {
            killed += 1;
            itself = true;
            continue;
        }
        match kill(proxy, caller, u64::from(row.id), query).await {
            Ok(()) => killed += 1,
            // Gone meanwhile.
            Err(e) if e.code == ER_NO_SUCH_THREAD => {}
            Err(e) => failed = Some(e),
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok((killed, itself)),
    }
}

/// A connection of idgate's own to `backend` (a session's are busy), on its replication
/// group's `node` when given, within `limit`; `None` for a backend no longer configured.
pub(crate) async fn side_connection(
    proxy: &Proxy,
    backend: &str,
    node: Option<&str>,
    limit: Duration,
) -> Result<Option<BackendConn>, crate::exec::BackendError> {
    let Some(cfg) = proxy
        .live()
        .config
        .backends
        .get(backend)
        .map(|b| b.value.clone())
    else {
        return Ok(None);
    };
    let cfg = match node {
        Some(n) => cfg.at_node(n),
        None => cfg,
    };
    BackendConn::connect(backend, &cfg, Default::default(), limit)
        .await
        .map(Some)
}

/// Kills the backend thread of an abandoned connection (timed out, or its client left
/// mid-statement) in the background, so its statement stops and its locks go.
pub fn kill_in_background(proxy: Arc<Proxy>, thread: Thread) {
    tokio::spawn(async move {
        let killed = tokio::time::timeout(KILL_TIMEOUT, kill_thread(&proxy, &thread, false));
        let (backend, id) = (&thread.backend, thread.id);
        match killed.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                warn!(%backend, connection_id = id, error = %e, "could not kill an abandoned backend thread")
            }
            Err(_) => {
                warn!(%backend, connection_id = id, "killing an abandoned backend thread timed out")
            }
        }
    });
}

/// `KILL [QUERY] thread` on `backend`, over a connection of its own (the session's is busy).
async fn kill_thread(
    proxy: &Proxy,
    thread: &Thread,
    query: bool,
) -> Result<(), crate::exec::BackendError> {
    let node = thread.node.as_deref();
    let Some(mut c) = side_connection(proxy, &thread.backend, node, KILL_TIMEOUT).await? else {
        return Ok(());
    };
    let what = if query { "QUERY " } else { "" };
    let sent = c.query_drop(&format!("KILL {what}{}", thread.id)).await;
    c.close().await;
    match sent {
        // The statement ended, or the connection went, on its own meanwhile.
        Err(crate::exec::BackendError::Server { code, .. }) if code == ER_NO_SUCH_THREAD => Ok(()),
        other => other,
    }
}

/// What a KILL idgate cannot map to its sessions gets.
pub fn unsupported(form: &str) -> SqlError {
    SqlError::new(
        crate::sql::ER_NOT_SUPPORTED_YET,
        b"42000",
        format!(
            "This version of MariaDB doesn't yet support '{form}' through idgate: KILL \
             [CONNECTION | QUERY] takes a session's id as a number (the connection id its \
             client got at login, what CONNECTION_ID() and SHOW PROCESSLIST show) or USER \
             name"
        ),
    )
}
