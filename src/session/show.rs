//! SHOW, DESCRIBE and information_schema statements about sharded or broadcast tables whose
//! backends do not include the default one: answered by a backend that holds the table, so the
//! application sees one table wherever its shards live. `SHOW TABLES` and `SHOW TABLE STATUS`
//! list the default backend's tables plus those placed elsewhere.

use mysql_common::constants::StatusFlags;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{End, Session};
use crate::exec::collect::{collect, Collected};
use crate::exec::{RelayCursor, StatementScope};
use crate::wire::packets;

/// The table name at the start of a text-protocol row.
fn first_column(row: &[u8]) -> Option<&[u8]> {
    let mut p = row;
    packets::get_lenenc_str(&mut p)
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Runs `SHOW TABLES`-like statements on the default backend and on `backends`, and answers
    /// with the default's rows plus the rows naming `names`, sorted by name as MariaDB sorts them.
    pub(super) async fn list_tables(
        &mut self,
        packet: &[u8],
        backends: &[String],
        names: &[String],
        more: bool,
        scope: StatementScope,
    ) -> Result<bool, End> {
        let mut all = vec![self.proxy.default_pool.name.clone()];
        all.extend(backends.iter().cloned());
        let idx = match self.cursor(scope).send_to_all(&all, packet).await? {
            Ok(idx) => idx,
            Err(e) => {
                self.writer.send_error(&e);
                return Ok(false);
            }
        };
        let mut answers = Vec::with_capacity(idx.len());
        for &i in &idx {
            match collect(self.leases.get_mut(i)).await {
                Ok(c) => answers.push(c),
                Err(e) => return Err(self.backend_lost(e)),
            }
        }
        let mut columns = Vec::new();
        let mut rows: Vec<Vec<u8>> = Vec::new();
        let mut warnings = 0u16;
        for (n, a) in answers.iter().enumerate() {
            match a {
                Collected::Err(e) | Collected::Ok(e) => {
                    self.writer.write(e);
                    return Ok(!a.is_err());
                }
                Collected::Rows {
                    columns: c,
                    rows: r,
                    eof,
                } => {
                    if n == 0 {
                        columns = c.clone();
                        warnings = packets::parse_eof(eof).0;
                    }
                    rows.extend(
                        r.iter()
                            .filter(|row| {
                                n == 0
                                    || first_column(row).is_some_and(|t| {
                                        names.iter().any(|m| t.eq_ignore_ascii_case(m.as_bytes()))
                                            && !already_listed(&answers[0], t)
                                    })
                            })
                            .cloned(),
                    );
                }
            }
        }
        rows.sort_by(|a, b| first_column(a).cmp(&first_column(b)));
        rows.dedup_by(|a, b| first_column(a) == first_column(b));
        let status: StatusFlags = self.status_with(more);
        let deprecate_eof = self.deprecate_eof();
        self.writer.send_result_set(
            &columns,
            rows.iter().map(Vec::as_slice),
            warnings,
            status,
            deprecate_eof,
        );
        Ok(true)
    }
}

/// True when the default backend's answer already has a row for table `t`.
fn already_listed(default: &Collected, t: &[u8]) -> bool {
    match default {
        Collected::Rows { rows, .. } => rows
            .iter()
            .any(|r| first_column(r).is_some_and(|n| n.eq_ignore_ascii_case(t))),
        _ => false,
    }
}
