//! `CREATE`/`DROP`/`ALTER DATABASE` (or `SCHEMA`) on every backend, answered as one server
//! would. The default backend runs it first and is the reference: its error is the client's
//! answer and no other backend is touched, so a CREATE of a database that exists, or a DROP of
//! one that does not, changes nothing anywhere. Once it succeeded the others follow; a shard
//! that already had the database (CREATE) or had none (DROP) is where the statement would
//! have left it, so that error is passed over, which also repairs backends left apart by an
//! earlier failure. Any other error there is reported with the backend's name and what to run
//! to complete it (the default backend's change cannot be undone: DDL commits). The client
//! gets the default backend's OK (its warnings, so SHOW WARNINGS agrees); a DROP counts the
//! tables every backend dropped, each name once, as one server holding them all would.

use std::collections::BTreeSet;

use crate::exec::collect::{collect, Collected};
use crate::exec::{BackendError, RelayCursor};
use crate::sql::{DatabaseDdl, DatabaseVerb};
use crate::wire::errors::{self, SqlError};
use crate::wire::packets;

/// MariaDB's "database exists" (CREATE) and "database doesn't exist" (DROP).
const ER_DB_CREATE_EXISTS: u16 = 1007;
const ER_DB_DROP_EXISTS: u16 = 1008;

/// `name` as a literal no sql_mode or character set reads differently.
fn name_literal(name: &[u8]) -> String {
    let hex: String = name.iter().map(|b| format!("{b:02X}")).collect();
    format!("CONVERT(X'{hex}' USING utf8mb4)")
}

/// The default backend's OK (a DROP's count made the union of every backend's), or the
/// client's error.
pub async fn run<C: RelayCursor>(
    c: &mut C,
    packet: &[u8],
    ddl: &DatabaseDdl,
    backends: &[String],
) -> Result<Result<packets::OkInfo, SqlError>, C::End> {
    let Some((default, others)) = backends.split_first() else {
        return Ok(Err(SqlError::new(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            "idgate: no backend",
        )));
    };
    // A DROP's count: the tables only other backends hold, read before they go.
    let mut elsewhere: BTreeSet<Vec<u8>> = BTreeSet::new();
    if let (DatabaseVerb::Drop, Some(name)) = (ddl.verb, ddl.name.as_deref()) {
        let list = format!(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = {}",
            name_literal(name)
        );
        let mut on_default = BTreeSet::new();
        for (k, b) in backends.iter().enumerate() {
            let i = match c.connection(b).await? {
                Ok(i) => i,
                Err(e) => return Ok(Err(e)),
            };
            let rows = match c.conn(i).query_rows(&list).await {
                Ok(rows) => rows,
                // No such database there: nothing of it to count.
                Err(BackendError::Server { .. }) => Vec::new(),
                Err(e) => return Err(c.failed(e)),
            };
            let names = rows
                .into_iter()
                .filter_map(|r| r.into_iter().next().flatten());
            if k == 0 {
                on_default.extend(names);
            } else {
                elsewhere.extend(names.filter(|n| !on_default.contains(n)));
            }
        }
    }
    let first = match run_collected(c, default, packet).await? {
        Ok(Collected::Ok(p)) => p,
        Ok(Collected::Err(p)) => return Ok(Err(backend_error(&p))),
        Ok(Collected::Rows { .. }) => {
            return Ok(Err(SqlError::new(
                errors::ER_UNKNOWN_ERROR,
                b"HY000",
                "idgate: the database statement returned rows",
            )))
        }
        Err(e) => return Ok(Err(e)),
    };
    let passed_over = match ddl.verb {
        DatabaseVerb::Create => Some(ER_DB_CREATE_EXISTS),
        DatabaseVerb::Drop => Some(ER_DB_DROP_EXISTS),
        DatabaseVerb::Alter => None,
    };
    for b in others {
        match run_collected(c, b, packet).await? {
            Ok(Collected::Err(p)) if Some(packets::parse_err(&p).0) != passed_over => {
                return Ok(Err(unfinished(backend_error(&p), b, default, ddl)));
            }
            Ok(_) => {}
            // Not reached (a pool timeout): the default backend has run it all the same.
            Err(e) => return Ok(Err(unfinished(e, b, default, ddl))),
        }
    }
    let Some(mut ok) = packets::parse_ok(&first) else {
        return Ok(Err(SqlError::new(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            "idgate: malformed OK packet from the default backend",
        )));
    };
    ok.affected_rows += elsewhere.len() as u64;
    Ok(Ok(ok))
}

/// Sends `packet` to `backend` and reads its whole answer. The inner error: the backend
/// could not be had (the client's answer).
async fn run_collected<C: RelayCursor>(
    c: &mut C,
    backend: &str,
    packet: &[u8],
) -> Result<Result<Collected, SqlError>, C::End> {
    let i = match c.joined(backend).await? {
        Ok(i) => i,
        Err(e) => return Ok(Err(e)),
    };
    let be = c.conn(i);
    be.write_command(packet);
    if let Err(e) = be.flush().await {
        return Err(c.failed(e));
    }
    match collect(c.conn(i)).await {
        Ok(answer) => Ok(Ok(answer)),
        Err(e) => Err(c.failed(e)),
    }
}

/// The default backend's error, as it is, for the client.
fn backend_error(p: &[u8]) -> SqlError {
    let (code, state, msg) = packets::parse_err(p);
    SqlError::new(code, &state, String::from_utf8_lossy(msg).into_owned())
}

/// Another backend's error `e`, with its name and what completes the statement there.
fn unfinished(e: SqlError, backend: &str, default: &str, ddl: &DatabaseDdl) -> SqlError {
    let again = match ddl.verb {
        DatabaseVerb::Create => "run it again with IF NOT EXISTS to complete it",
        DatabaseVerb::Drop => "run it again with IF EXISTS to complete it",
        DatabaseVerb::Alter => "run it again to complete it",
    };
    SqlError::new(
        e.code,
        &e.state,
        format!(
            "{} (on backend `{backend}`; the default backend `{default}` already ran the \
             statement: {again})",
            e.message
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::{name_literal, unfinished};
    use crate::sql::{DatabaseDdl, DatabaseVerb};
    use crate::wire::errors::SqlError;

    #[test]
    fn a_database_name_becomes_a_literal_no_quote_or_mode_can_break() {
        assert_eq!(name_literal(b"shop"), "CONVERT(X'73686F70' USING utf8mb4)");
        // A quote, a backslash (read as an escape without NO_BACKSLASH_ESCAPES) and a
        // non-ASCII name all stay inside the hex.
        assert_eq!(
            name_literal("a'\\é".as_bytes()),
            "CONVERT(X'61275CC3A9' USING utf8mb4)"
        );
        assert_eq!(name_literal(b""), "CONVERT(X'' USING utf8mb4)");
    }

    #[test]
    fn a_backend_left_unfinished_is_named_with_how_to_complete_it() {
        let e = SqlError::new(1044, b"42000", "Access denied for user 'app'");
        for (verb, again) in [
            (DatabaseVerb::Create, "IF NOT EXISTS"),
            (DatabaseVerb::Drop, "IF EXISTS"),
            (DatabaseVerb::Alter, "run it again to complete it"),
        ] {
            let ddl = DatabaseDdl {
                verb,
                name: Some(b"shop".to_vec()),
                if_exists: false,
            };
            let u = unfinished(e.clone(), "shard1", "shard0", &ddl);
            assert_eq!(
                (u.code, &u.state),
                (1044, b"42000"),
                "the backend's own error"
            );
            assert!(
                u.message.starts_with("Access denied for user 'app'"),
                "{}",
                u.message
            );
            assert!(u.message.contains("backend `shard1`"), "{}", u.message);
            assert!(u.message.contains("`shard0` already ran"), "{}", u.message);
            assert!(u.message.contains(again), "{}", u.message);
        }
    }
}
