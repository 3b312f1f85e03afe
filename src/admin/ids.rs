//! The ID service's one operation, shared by its HTTP and Redis-protocol front ends: an
//! authenticated user asks a generator for `n` contiguous ids.

use crate::config::User;
use crate::idgen::{IdBlock, IdGenError};
use crate::proxy::Proxy;

/// Why a request got no ids. Each front end maps these to its own status words.
#[derive(Debug, thiserror::Error)]
pub enum IdError {
    #[error("user `{user}` may not call generator `{generator}`; add it to the user's `generators:` list in the idgate config")]
    Denied { user: String, generator: String },
    #[error("no generator named `{0}`; name a generator from idgate's config")]
    UnknownGenerator(String),
    #[error("generator `{generator}` is {kind}: its ids depend on the row (biased) or are not integers (uuidv7), so the ID service cannot hand them out; use a segment or snowflake generator")]
    WrongKind {
        generator: String,
        kind: &'static str,
    },
    #[error(
        "count must be a whole number from 1 to {max} (got {got}); ask for fewer ids per request"
    )]
    BadCount { got: String, max: u64 },
    #[error("{0}")]
    TooLarge(IdGenError),
    #[error("{0}")]
    Generator(IdGenError),
}

/// Parses a requested count: 1 ..= `max`.
pub fn parse_count(text: &str, max: u64) -> Result<u64, IdError> {
    match text.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(IdError::BadCount {
            got: text.chars().take(40).collect(),
            max,
        }),
    }
}

/// `n` contiguous ids from `generator` for `user` (whose rights are checked here).
pub async fn take(proxy: &Proxy, user: &User, generator: &str, n: u64) -> Result<IdBlock, IdError> {
    // An unknown generator is reported as denied to users with a list, so the list's holes do
    // not reveal which names exist.
    if !user.may_call(generator) {
        return Err(IdError::Denied {
            user: user.name.clone(),
            generator: generator.to_string(),
        });
    }
    let g = proxy
        .idgen
        .get(generator)
        .map_err(|_| IdError::UnknownGenerator(generator.to_string()))?;
    match g.kind() {
        "segment" | "snowflake" => {}
        kind => {
            return Err(IdError::WrongKind {
                generator: generator.to_string(),
                kind,
            })
        }
    }
    if let Some(b) = g.try_next_block(n) {
        return Ok(b);
    }
    match g.next_block(n).await {
        Ok(b) => Ok(b),
        Err(e @ IdGenError::BlockTooLarge { .. }) => Err(IdError::TooLarge(e)),
        Err(e) => Err(IdError::Generator(e)),
    }
}
