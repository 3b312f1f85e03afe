//! Rows idgate writes itself on several backends (INSERT … SELECT, and any statement that places
//! rows it read first): each backend's share goes in bounded multi-row statements, one batch per
//! backend per round, sent to every backend before any answer is read, and the whole write is
//! all-or-nothing as one MariaDB statement is (the cursor's `begin`/`end`). The caller renders
//! each batch and reads the OKs; the primitive knows nothing of the statement's text.

use super::super::collect::Collected;
use crate::exec::cursor::WriteCursor;
use crate::wire::errors::SqlError;

/// The one OK the client gets for the whole statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkOk {
    pub affected: u64,
    pub insert_id: u64,
    pub warnings: u16,
    pub info: Vec<u8>,
}

/// One backend's share of the write: the items (rows) it gets, in order.
#[derive(Debug, Clone)]
pub struct Share {
    pub backend: String,
    pub items: Vec<usize>,
}

/// The OK of one batch.
#[derive(Debug)]
pub struct BatchOk {
    /// Which share the batch was of.
    pub share: usize,
    pub ok: Vec<u8>,
    /// How many items the batch carried.
    pub items: u64,
}

/// How a write on several backends ended (`W`: what a kept write gives back; here every
/// batch's OK, in the order they were read).
#[derive(Debug)]
pub enum Outcome<W = Vec<BatchOk>> {
    /// Kept everywhere.
    Written(W),
    /// A backend refused a batch (its ERR packet, the first one); nothing was kept.
    Failed(Vec<u8>),
    /// idgate's own error for the client: a backend idgate could not lease (nothing was
    /// written), or a COMMIT that failed after others committed.
    Refused(SqlError),
}

/// Writes `shares`, rendering each batch with `render(share, items)`, which gives the statement
/// for the first items of `items` and how many it took (at least one).
pub async fn write_batches<C: WriteCursor>(
    cursor: &mut C,
    shares: &[Share],
    mut render: impl FnMut(usize, &[usize]) -> (Vec<u8>, usize),
    savepoint: &'static str,
    what: &str,
) -> Result<Outcome, C::End> {
    let mut conns = Vec::with_capacity(shares.len());
    for s in shares {
        match cursor.lease(&s.backend).await? {
            Ok(c) => conns.push(c),
            Err(e) => return Ok(Outcome::Refused(e)),
        }
    }
    if shares.is_empty() {
        return Ok(Outcome::Written(Vec::new()));
    }
    let (txn, mut begin) = cursor.begin(&conns, savepoint).await?;
    let mut next = vec![0usize; shares.len()];
    let mut oks = Vec::new();
    let mut error: Option<Vec<u8>> = None;
    while error.is_none() && next.iter().zip(shares).any(|(n, s)| *n < s.items.len()) {
        // One batch per backend that has items left, sent to all before any answer is read.
        let mut sent = Vec::new();
        for (k, s) in shares.iter().enumerate() {
            if next[k] >= s.items.len() {
                continue;
            }
            let (sql, taken) = render(k, &s.items[next[k]..]);
            let taken = taken.clamp(1, s.items.len() - next[k]);
            next[k] += taken;
            let began = begin[k].take();
            if let Some(b) = &began {
                cursor.queue(conns[k], b);
            }
            cursor.queue(conns[k], &sql);
            sent.push((k, began.is_some(), taken as u64));
        }
        for &(k, _, _) in &sent {
            cursor.flush(conns[k]).await?;
        }
        for (k, began, items) in sent {
            // A transaction start's OK is not the batch's; its error still fails the write.
            if began {
                if let Collected::Err(e) = cursor.answer(conns[k]).await? {
                    error.get_or_insert(e);
                }
            }
            match cursor.answer(conns[k]).await? {
                Collected::Err(e) => {
                    error.get_or_insert(e);
                }
                Collected::Ok(ok) => oks.push(BatchOk {
                    share: k,
                    ok,
                    items,
                }),
                Collected::Rows { .. } => {}
            }
        }
    }
    let keep = error.is_none();
    let ended = cursor.end(&conns, &txn, keep, what).await?;
    Ok(match (error, ended) {
        (Some(e), _) => Outcome::Failed(e),
        (None, Some(e)) => Outcome::Refused(e),
        (None, None) => Outcome::Written(oks),
    })
}
