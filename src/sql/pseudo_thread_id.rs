//! `@@pseudo_thread_id` in a client's SELECT: on MariaDB it is the connection id until the
//! session sets it, so through idgate it reads the session's idgate id (the one `CONNECTION_ID()`
//! answers and `KILL` takes), not the id of whichever backend connection runs the SELECT.

use std::ops::Range;

use super::bound_names::bound_item_aliases;
use super::subquery::splice;
use super::words::pseudo_thread_ids;

/// `stmt` (a SELECT) with the session's id, `id`, in place of each `@@[SESSION.|LOCAL.]
/// pseudo_thread_id` it reads while that is still `thread`, the id of the backend connection
/// that runs it (the client did not set it; MariaDB's CONNECTION_ID() follows a SET, so it
/// cannot tell), described as MariaDB describes the variable (BIGINT UNSIGNED, 21 wide,
/// nullable), which the `IF` of the variable and `CAST(id AS UNSIGNED)` is. A select item of
/// the statement without an alias keeps its name (the item as written), as a bound subquery's.
pub fn with_session_pseudo_thread_id(stmt: &[u8], id: u32, thread: u32) -> Vec<u8> {
    let spans = pseudo_thread_ids(stmt);
    let value =
        format!("IF(@@pseudo_thread_id = {thread}, CAST({id} AS UNSIGNED), @@pseudo_thread_id)");
    let mut parts: Vec<(Range<usize>, Vec<u8>)> = spans
        .iter()
        .map(|r| (r.clone(), value.as_bytes().to_vec()))
        .collect();
    parts.extend(bound_item_aliases(stmt, &spans));
    parts.sort_by_key(|(r, _)| (r.start, r.end));
    splice(stmt, &parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_select_reads_the_session_id_as_pseudo_thread_id() {
        let w = |s: &str| {
            String::from_utf8(with_session_pseudo_thread_id(s.as_bytes(), 7, 90)).unwrap()
        };
        let v = "IF(@@pseudo_thread_id = 90, CAST(7 AS UNSIGNED), @@pseudo_thread_id)";
        assert_eq!(
            w("SELECT @@pseudo_thread_id"),
            format!("SELECT {v} AS `@@pseudo_thread_id`")
        );
        assert_eq!(
            w("select @@SESSION.Pseudo_Thread_Id, 1 from t"),
            format!("select {v} AS `@@SESSION.Pseudo_Thread_Id`, 1 from t")
        );
        assert_eq!(
            w("SELECT @@pseudo_thread_id + 1 AS x"),
            format!("SELECT {v} + 1 AS x")
        );
        assert_eq!(w("SELECT @@pseudo_thread_id x"), format!("SELECT {v} x"));
        assert_eq!(
            w("SELECT @@pseudo_thread_id + `a``b`, 2"),
            format!("SELECT {v} + `a``b` AS `@@pseudo_thread_id + ``a````b```, 2")
        );
        assert_eq!(
            w("SELECT a FROM t WHERE b = @@pseudo_thread_id"),
            format!("SELECT a FROM t WHERE b = {v}")
        );
        assert_eq!(
            w("SELECT @@pseudo_thread_id - @@pseudo_thread_id;"),
            format!("SELECT {v} - {v} AS `@@pseudo_thread_id - @@pseudo_thread_id`;")
        );
        assert_eq!(
            w("SELECT '@@pseudo_thread_id', @@pseudo_thread_ids"),
            "SELECT '@@pseudo_thread_id', @@pseudo_thread_ids"
        );
    }
}
