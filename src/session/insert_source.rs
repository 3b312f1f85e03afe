//! Reading the rows of an `INSERT … SELECT`'s query for the primitive
//! (`exec::primitives::insert_source`): the reader's failures as the statement's errors, and the
//! character sets of text columns idgate does not know, looked up on the default backend.

use tokio::io::{AsyncRead, AsyncWrite};

use super::fetch::{FetchError, Fetched};
use super::Session;
use crate::exec::primitives::insert_source::{malformed, too_large, Source};
use crate::wire::errors::SqlError;

/// The answer of the SELECT; a failure of the reader becomes INSERT … SELECT's own error.
pub(super) fn source_of(got: Result<Fetched, FetchError>) -> Result<Source, SqlError> {
    match got {
        Ok(f) => Ok(Source::new(f)),
        Err(FetchError::TooManyBytes(limit)) => Err(too_large(limit)),
        Err(FetchError::Answer(e)) => Err(e),
        Err(FetchError::NotASelect) => Err(malformed("an OK instead of rows")),
        Err(e @ (FetchError::Malformed | FetchError::TooManyRows(_))) => {
            Err(malformed(&e.to_string()))
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<R, W> {
    /// Names the character set of every text column (from the collation id in its definition;
    /// ids idgate does not know are looked up on the default backend).
    pub(super) async fn resolve_charsets(&mut self, source: &mut Source) -> Result<(), SqlError> {
        let unknown = source.name_charsets();
        if unknown.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = unknown.iter().map(u16::to_string).collect();
        let ids = ids.join(",");
        let default = self.proxy.default_pool.name.clone();
        let i = self.lease_index(&default).await?;
        let mut found: Vec<(u16, String)> = Vec::new();
        for table in ["COLLATION_CHARACTER_SET_APPLICABILITY", "COLLATIONS"] {
            let q = format!(
                "SELECT ID, CHARACTER_SET_NAME FROM information_schema.{table} WHERE ID IN ({ids})"
            );
            // A server without an ID column there answers with an error: try the other table.
            if let Ok(rows) = self.leases.get_mut(i).query_rows(&q).await {
                for r in rows {
                    let id = r.first().and_then(|v| v.as_deref());
                    let name = r.get(1).and_then(|v| v.as_deref());
                    let id = id.and_then(|v| std::str::from_utf8(v).ok()?.parse::<u16>().ok());
                    let name = name.and_then(|v| std::str::from_utf8(v).ok());
                    if let (Some(id), Some(name)) = (id, name) {
                        found.push((id, name.to_string()));
                    }
                }
            }
            if self.leases.get_mut(i).broken {
                return Err(malformed("the default backend was lost"));
            }
        }
        source.name_found_charsets(&found)
    }
}
